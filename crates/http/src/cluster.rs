//! Legacy sessions kept in a shared [`SessionStore`]: what a replica does so that any
//! replica can serve any request of any session.
//!
//! Each replica keeps a local copy of the sessions it serves (the server's [`Session`] with
//! the handshake restored from the store's record). The store is the truth: every session
//! request reads the record first (404 when it is gone, 503 when the store cannot answer
//! within [`HttpConfig::session_store_timeout`](crate::HttpConfig::session_store_timeout)).
//! Messages of a session's streams are copied, in order, to the store's logs by one writer
//! task; GET streams and `Last-Event-ID` resumptions of streams held elsewhere read those
//! logs, woken by the store's bus (with a one-second poll as a floor). Requests this replica
//! sends to a client carry ids `node << 32 | n`, so a replica that receives the answer knows
//! whose call waits for it.
//!
//! [`Replicated`] is the store-backed implementation of the sessions interface
//! ([`SessionBackend`]); without a store the server uses [`InProcess`] alone.

use crate::backend::{Replay, SessionBackend};
use crate::in_process::InProcess;
use crate::session::HttpSession;
use crate::store::{Append, BusMessage, SessionRecord, SessionStore, StoreError, StoreFuture};
use crate::stream::Cell;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{Message, RequestId};
use toolwright_protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};
use toolwright_server::{Discard, Inbound, Negotiated, Outbound, Session};

/// Most events read from a log at once.
const READ_BATCH: usize = 256;
/// How often a follower reads its log even when nothing woke it.
const POLL: Duration = Duration::from_secs(1);

/// Sessions kept in a shared store: this replica's copies (an [`InProcess`] table) and its
/// link to the store.
pub(crate) struct Replicated {
    local: InProcess,
    store: Arc<dyn SessionStore>,
    /// This replica's number (1 … 2^20 − 1), in the ids of its requests to clients.
    node: u32,
    timeout: Duration,
    writer: mpsc::UnboundedSender<Append>,
    pending: Mutex<Option<mpsc::UnboundedReceiver<Append>>>,
}

/// Runs a store operation within `timeout`.
async fn within<T>(timeout: Duration, f: StoreFuture<'_, T>) -> Result<T, StoreError> {
    match tokio::time::timeout(timeout, f).await {
        Ok(r) => r,
        Err(_) => Err(StoreError::Timeout),
    }
}

impl Replicated {
    pub(crate) fn new(
        local: InProcess,
        store: Arc<dyn SessionStore>,
        timeout: Duration,
    ) -> Replicated {
        let (writer, rx) = mpsc::unbounded_channel();
        Replicated {
            local,
            store,
            node: rand::random_range(1..(1u32 << 20)),
            timeout,
            writer,
            pending: Mutex::new(Some(rx)),
        }
    }

    /// Runs a store operation within the store timeout.
    async fn op<T>(&self, f: StoreFuture<'_, T>) -> Result<T, StoreError> {
        within(self.timeout, f).await
    }

    /// The base of the ids of requests this replica sends.
    fn id_base(&self) -> i64 {
        i64::from(self.node) << 32
    }

    /// A session named `id` whose unsolicited messages go to the store's log of its GET
    /// stream, and whose requests to the client carry this replica's ids.
    fn session(&self, id: String) -> Arc<HttpSession> {
        let sink = Arc::new(StreamZero {
            session: id.clone(),
            writer: self.writer.clone(),
        });
        let hs = HttpSession::with_outbound(
            &self.local.server,
            self.local.shutdown.child_token(),
            self.local.table.epoch,
            id,
            sink,
            Arc::new(Cell::new(1, false)),
        );
        hs.mcp.number_requests_from(self.id_base());
        hs
    }

    /// The replica waiting for the answer `inbound` carries, when it is another one.
    fn owner_of(&self, inbound: &Inbound) -> Option<u32> {
        let Inbound::Message(Message::Response(r)) = inbound else {
            return None;
        };
        let RequestId::Number(n) = r.id else {
            return None;
        };
        let node = u32::try_from(n >> 32).ok()?;
        (node != 0 && node != self.node).then_some(node)
    }
}

/// The sink of a session's unsolicited messages: the store's log of its GET stream.
struct StreamZero {
    session: String,
    writer: mpsc::UnboundedSender<Append>,
}

impl Outbound for StreamZero {
    fn send(&self, line: Vec<u8>) {
        let _ = self.writer.send(Append {
            session: self.session.clone(),
            stream: 0,
            seq: None,
            line: Some(line),
        });
    }
}

fn level_name(l: LoggingLevel) -> String {
    serde_json::to_value(l)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "debug".into())
}

fn level_of(name: &str) -> LoggingLevel {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .unwrap_or(LoggingLevel::Debug)
}

/// The record of a session past its handshake.
fn record_of(mcp: &Session, roots_generation: u64) -> Option<SessionRecord> {
    let n = mcp.negotiated()?;
    Some(SessionRecord {
        version: n.version.as_str().to_owned(),
        client_capabilities: serde_json::to_value(&*n.client_capabilities).ok()?,
        client_info: serde_json::to_value(&n.client_info).ok()?,
        initialized: mcp.is_initialized(),
        log_level: level_name(mcp.log_level()),
        roots_generation,
        caller: mcp.caller().map(|c| (**c).clone()),
    })
}

/// Brings a local copy up to date with the store's record.
fn sync(hs: &HttpSession, rec: SessionRecord) {
    let mut last = hs.record.lock();
    if last.as_ref() == Some(&rec) {
        return;
    }
    if last
        .as_ref()
        .is_some_and(|l| l.roots_generation != rec.roots_generation)
    {
        hs.mcp.forget_roots();
    }
    hs.mcp.sync(rec.initialized, level_of(&rec.log_level));
    *last = Some(rec);
}

impl Replicated {
    /// Saves a session that just finished its handshake.
    async fn create(&self, hs: &HttpSession) -> Result<(), StoreError> {
        let Some(rec) = record_of(&hs.mcp, 0) else {
            return Err(StoreError::Unavailable("no handshake to save".into()));
        };
        self.op(self.store.create(&hs.id, &rec, self.local.idle))
            .await?;
        *hs.record.lock() = Some(rec);
        Ok(())
    }

    /// A copy of the session `id` stored as `rec`, with its handshake restored, in this
    /// replica's table (or the copy a concurrent request put there first).
    fn adopt(&self, id: &str, rec: SessionRecord) -> Result<Arc<HttpSession>, StoreError> {
        let Some(version) = ProtocolVersion::parse(&rec.version) else {
            return Err(StoreError::Unavailable(format!(
                "the stored session has an unknown version {:?}",
                rec.version
            )));
        };
        let caps: ClientCapabilities =
            serde_json::from_value(rec.client_capabilities.clone()).unwrap_or_default();
        let info: Implementation = serde_json::from_value(rec.client_info.clone())
            .unwrap_or_else(|_| Implementation::new("unknown", "0"));
        let hs = self.session(id.to_owned());
        hs.mcp.restore(
            Negotiated {
                version,
                client_capabilities: Arc::new(caps),
                client_info: info,
            },
            rec.initialized,
            level_of(&rec.log_level),
        );
        if let Some(caller) = &rec.caller {
            hs.mcp.set_caller(Arc::new(caller.clone()));
        }
        *hs.record.lock() = Some(rec);
        Ok(self.local.table.adopt(hs))
    }

    /// Saves what a request changed in the session.
    async fn update(&self, hs: &HttpSession, roots_changed: bool) -> Result<(), StoreError> {
        let next = {
            let last = hs.record.lock();
            let generation =
                last.as_ref().map_or(0, |r| r.roots_generation) + u64::from(roots_changed);
            let Some(now) = record_of(&hs.mcp, generation) else {
                return Ok(());
            };
            if last.as_ref() == Some(&now) {
                return Ok(());
            }
            now
        };
        self.op(self.store.update(&hs.id, &next)).await?;
        *hs.record.lock() = Some(next);
        Ok(())
    }

    /// A cell fed from the store's log of `stream`, from the event after `after` on; the
    /// token stops the feeding (the reader went away).
    fn follow(
        &self,
        hs: &Arc<HttpSession>,
        stream: u32,
        after: u64,
    ) -> (Arc<Cell>, CancellationToken) {
        let cell = Arc::new(Cell::starting_after(self.local.capacity, false, after));
        cell.set_stream(stream);
        let done = CancellationToken::new();
        let feeder = Feeder {
            store: self.store.clone(),
            timeout: self.timeout,
            idle: self.local.idle,
            hs: hs.clone(),
            stream,
            feed: cell.clone(),
            stop: done.clone(),
        };
        tokio::spawn(feeder.run(after));
        (cell, done)
    }

    /// Copies batches of stream events to the store, in order, until the channel closes.
    async fn write(self: Arc<Self>, mut rx: mpsc::UnboundedReceiver<Append>) {
        let keep = self.local.capacity;
        let mut batch = Vec::with_capacity(64);
        while rx.recv_many(&mut batch, 512).await > 0 {
            if let Err(e) = self.op(self.store.append(&batch, keep)).await {
                tracing::warn!(
                    "{} stream events not copied to the session store: {e}",
                    batch.len()
                );
            }
            batch.clear();
        }
    }

    /// Acts on what the other replicas say, until the subscription ends.
    async fn listen(self: Arc<Self>, mut bus: mpsc::UnboundedReceiver<BusMessage>) {
        let table = &self.local.table;
        while let Some(msg) = bus.recv().await {
            match msg {
                BusMessage::Event { session, .. } => {
                    if let Some(hs) = table.get(&session) {
                        hs.wake.notify_waiters();
                    }
                }
                BusMessage::Closed { session } => {
                    if let Some(hs) = table.remove(&session) {
                        hs.close();
                    }
                }
                BusMessage::Response { session, line, .. } => {
                    if let Some(hs) = table.get(&session) {
                        let server = &self.local.server;
                        let inbound = server.read(&line);
                        let sink: Arc<dyn Outbound> = Arc::new(Discard);
                        let _ = server.handle(&hs.mcp, inbound, &sink);
                    }
                }
                BusMessage::Reconnected => {
                    tracing::info!("session store bus reconnected");
                }
            }
        }
    }
}

/// What feeds a cell from the store's log of one stream.
struct Feeder {
    store: Arc<dyn SessionStore>,
    timeout: Duration,
    idle: Duration,
    hs: Arc<HttpSession>,
    stream: u32,
    feed: Arc<Cell>,
    /// Cancelled when the reader went away.
    stop: CancellationToken,
}

impl Feeder {
    /// Reads the log from the event after `after` on, woken by the bus (or every
    /// [`POLL`]), keeping the session alive while it reads; ends the cell when the stream,
    /// the session or the store ends.
    async fn run(self, after: u64) {
        let hs = &self.hs;
        let touch_every = (self.idle / 3).max(Duration::from_millis(100));
        let mut touched = Instant::now();
        let mut cursor = after;
        loop {
            let woken = hs.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let read = self.store.read(&hs.id, self.stream, cursor, READ_BATCH);
            let events = match within(self.timeout, read).await {
                Ok(e) => e,
                Err(e) => {
                    // The client reconnects with Last-Event-ID once the store is back.
                    tracing::warn!("a stream of a session ended: {e}");
                    self.feed.finish(None);
                    return;
                }
            };
            let full = events.len() == READ_BATCH;
            for e in events {
                cursor = e.seq;
                match e.line {
                    Some(line) => self.feed.push_numbered(e.seq, line),
                    None => {
                        self.feed.finish(None);
                        return;
                    }
                }
            }
            if touched.elapsed() >= touch_every {
                touched = Instant::now();
                match within(self.timeout, self.store.touch(&hs.id, self.idle)).await {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => {
                        self.feed.finish(None);
                        return;
                    }
                }
            }
            if full {
                continue;
            }
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep(POLL) => {}
                _ = self.stop.cancelled() => return,
                _ = hs.stop.cancelled() => {
                    self.feed.finish(None);
                    return;
                }
            }
        }
    }
}

impl SessionBackend for Arc<Replicated> {
    fn open(&self) -> Option<Arc<HttpSession>> {
        if !self.local.table.reserve(self.local.max) {
            return None;
        }
        Some(self.session(crate::session::mint_id()))
    }

    fn abandon(&self, hs: &HttpSession) {
        self.local.abandon(hs);
    }

    async fn keep(&self, hs: Arc<HttpSession>) -> Result<(), StoreError> {
        if let Err(e) = self.create(&hs).await {
            self.abandon(&hs);
            return Err(e);
        }
        self.local.keep(hs).await
    }

    /// The store's record (pushing its expiry back) and this replica's copy, made or
    /// brought up to date.
    async fn find(&self, id: &str) -> Result<Option<Arc<HttpSession>>, StoreError> {
        let Some(rec) = self.op(self.store.touch(id, self.local.idle)).await? else {
            if let Some(hs) = self.local.table.remove(id) {
                hs.close();
            }
            return Ok(None);
        };
        if let Some(hs) = self.local.table.get(id) {
            sync(&hs, rec);
            return Ok(Some(hs));
        }
        self.adopt(id, rec).map(Some)
    }

    async fn forward(
        &self,
        hs: &HttpSession,
        inbound: &Inbound,
        raw: &[u8],
    ) -> Option<Result<(), StoreError>> {
        let node = self.owner_of(inbound)?;
        Some(self.op(self.store.forward(node, &hs.id, raw)).await)
    }

    async fn save(&self, hs: &HttpSession, roots_changed: bool) {
        if let Err(e) = self.update(hs, roots_changed).await {
            tracing::warn!("a session change was not saved to the session store: {e}");
        }
    }

    /// Numbers the stream in the store and copies its messages there.
    async fn register(
        &self,
        hs: &HttpSession,
        cell: &Arc<Cell>,
    ) -> Result<Option<u32>, StoreError> {
        let Some(n) = self.op(self.store.next_stream(&hs.id)).await? else {
            return Ok(None);
        };
        hs.register_numbered(cell, n, self.local.keep);
        let session = hs.id.clone();
        let writer = self.writer.clone();
        cell.mirror(Box::new(move |seq, line| {
            let _ = writer.send(Append {
                session: session.clone(),
                stream: n,
                seq: Some(seq),
                line: line.map(<[u8]>::to_vec),
            });
        }));
        Ok(Some(n))
    }

    /// The GET stream, and streams another replica holds, are read from the store's logs.
    fn replay(&self, hs: &Arc<HttpSession>, stream: u32, after: Option<u64>) -> Option<Replay> {
        if stream != 0
            && let Some(cell) = hs.stream(stream)
        {
            return Some(Replay {
                cell,
                feeding: None,
            });
        }
        let (cell, feeding) = self.follow(hs, stream, after.unwrap_or(0));
        Some(Replay {
            cell,
            feeding: Some(feeding.drop_guard()),
        })
    }

    async fn end(&self, hs: &HttpSession) -> Result<(), StoreError> {
        self.op(self.store.delete(&hs.id)).await?;
        self.local.end(hs).await
    }

    /// The writer copying stream events to the store, and the bus listener.
    fn start(&self) -> Vec<JoinHandle<()>> {
        let Some(rx) = self.pending.lock().take() else {
            return Vec::new();
        };
        let writer = tokio::spawn(self.clone().write(rx));
        let bus = self.store.subscribe(self.node);
        let listener = tokio::spawn(self.clone().listen(bus));
        vec![writer, listener]
    }

    fn expire(&self) {
        self.local.expire();
    }

    fn close_all(&self) {
        self.local.close_all();
    }
}
