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

use crate::service::Shared;
use crate::session::HttpSession;
use crate::store::{Append, BusMessage, SessionRecord, SessionStore, StoreError, StoreFuture};
use crate::stream::Cell;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{Message, RequestId};
use toolwright_protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};
use toolwright_server::{Discard, Inbound, Negotiated, Outbound, Session};

/// Most events read from a log at once.
const READ_BATCH: usize = 256;
/// How often a follower reads its log even when nothing woke it.
const POLL: Duration = Duration::from_secs(1);

/// A replica's link to the shared store.
pub(crate) struct Cluster {
    pub store: Arc<dyn SessionStore>,
    /// This replica's number (1 … 2^20 − 1), in the ids of its requests to clients.
    pub node: u32,
    timeout: Duration,
    writer: mpsc::UnboundedSender<Append>,
    pending: Mutex<Option<mpsc::UnboundedReceiver<Append>>>,
}

impl Cluster {
    pub(crate) fn new(store: Arc<dyn SessionStore>, timeout: Duration) -> Cluster {
        let (writer, rx) = mpsc::unbounded_channel();
        Cluster {
            store,
            node: rand::random_range(1..(1u32 << 20)),
            timeout,
            writer,
            pending: Mutex::new(Some(rx)),
        }
    }

    /// Runs a store operation within the store timeout.
    pub(crate) async fn op<T>(&self, f: StoreFuture<'_, T>) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Timeout),
        }
    }

    /// The base of the ids of requests this replica sends.
    pub(crate) fn id_base(&self) -> i64 {
        i64::from(self.node) << 32
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

/// Starts the replica's writer and bus listener.
pub(crate) fn start(shared: &Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    let Some(c) = &shared.cluster else {
        return Vec::new();
    };
    let Some(mut rx) = c.pending.lock().take() else {
        return Vec::new();
    };
    let keep = shared.config.event_store_capacity;
    let s = shared.clone();
    let writer = tokio::spawn(async move {
        let Some(c) = &s.cluster else { return };
        let mut batch = Vec::with_capacity(64);
        while rx.recv_many(&mut batch, 512).await > 0 {
            if let Err(e) = c.op(c.store.append(&batch, keep)).await {
                tracing::warn!(
                    "{} stream events not copied to the session store: {e}",
                    batch.len()
                );
            }
            batch.clear();
        }
    });
    let mut bus = c.store.subscribe(c.node);
    let s = shared.clone();
    let listener = tokio::spawn(async move {
        while let Some(msg) = bus.recv().await {
            match msg {
                BusMessage::Event { session, .. } => {
                    if let Some(hs) = s.sessions.get(&session) {
                        hs.wake.notify_waiters();
                    }
                }
                BusMessage::Closed { session } => {
                    if let Some(hs) = s.sessions.remove(&session) {
                        hs.close();
                    }
                }
                BusMessage::Response { session, line, .. } => {
                    if let Some(hs) = s.sessions.get(&session) {
                        let inbound = s.server.read(&line);
                        let sink: Arc<dyn Outbound> = Arc::new(Discard);
                        let _ = s.server.handle(&hs.mcp, inbound, &sink);
                    }
                }
                BusMessage::Reconnected => {
                    tracing::info!("session store bus reconnected");
                }
            }
        }
    });
    vec![writer, listener]
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
pub(crate) fn record_of(mcp: &Session, roots_generation: u64) -> Option<SessionRecord> {
    let n = mcp.negotiated()?;
    Some(SessionRecord {
        version: n.version.as_str().to_owned(),
        client_capabilities: serde_json::to_value(&*n.client_capabilities).ok()?,
        client_info: serde_json::to_value(&n.client_info).ok()?,
        initialized: mcp.is_initialized(),
        log_level: level_name(mcp.log_level()),
        roots_generation,
    })
}

/// A new session whose unsolicited messages go to the store.
pub(crate) fn new_session(shared: &Shared, c: &Cluster) -> Arc<HttpSession> {
    let id = crate::session::mint_id();
    let sink = Arc::new(StreamZero {
        session: id.clone(),
        writer: c.writer.clone(),
    });
    let get = Arc::new(Cell::new(1, false));
    let hs = HttpSession::with_outbound(
        &shared.server,
        shared.shutdown.child_token(),
        shared.sessions.epoch,
        id,
        sink,
        get,
    );
    hs.mcp.number_requests_from(c.id_base());
    hs
}

/// Saves a session that just finished its handshake.
pub(crate) async fn create(
    shared: &Shared,
    c: &Cluster,
    hs: &HttpSession,
) -> Result<(), StoreError> {
    let Some(rec) = record_of(&hs.mcp, 0) else {
        return Err(StoreError::Unavailable("no handshake to save".into()));
    };
    c.op(c
        .store
        .create(&hs.id, &rec, shared.config.session_idle_timeout))
        .await?;
    *hs.record.lock() = Some(rec);
    Ok(())
}

/// The session `id` names: today's table lookup without a store; with one, the store's
/// record (pushing its expiry back) and this replica's copy, made or brought up to date.
pub(crate) async fn lookup(
    shared: &Shared,
    id: &str,
) -> Result<Option<Arc<HttpSession>>, StoreError> {
    let Some(c) = &shared.cluster else {
        return Ok(shared.sessions.get(id));
    };
    let Some(rec) = c
        .op(c.store.touch(id, shared.config.session_idle_timeout))
        .await?
    else {
        if let Some(hs) = shared.sessions.remove(id) {
            hs.close();
        }
        return Ok(None);
    };
    if let Some(hs) = shared.sessions.get(id) {
        sync(&hs, rec);
        return Ok(Some(hs));
    }
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
    let sink = Arc::new(StreamZero {
        session: id.to_owned(),
        writer: c.writer.clone(),
    });
    let hs = HttpSession::with_outbound(
        &shared.server,
        shared.shutdown.child_token(),
        shared.sessions.epoch,
        id.to_owned(),
        sink,
        Arc::new(Cell::new(1, false)),
    );
    hs.mcp.number_requests_from(c.id_base());
    hs.mcp.restore(
        Negotiated {
            version,
            client_capabilities: Arc::new(caps),
            client_info: info,
        },
        rec.initialized,
        level_of(&rec.log_level),
    );
    *hs.record.lock() = Some(rec);
    Ok(Some(shared.sessions.adopt(hs)))
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

/// Saves what a request changed in the session: `notifications/initialized`,
/// `logging/setLevel`, `notifications/roots/list_changed` (`roots_changed`).
pub(crate) async fn save(
    c: &Cluster,
    hs: &HttpSession,
    roots_changed: bool,
) -> Result<(), StoreError> {
    let next = {
        let last = hs.record.lock();
        let generation = last.as_ref().map_or(0, |r| r.roots_generation) + u64::from(roots_changed);
        let Some(now) = record_of(&hs.mcp, generation) else {
            return Ok(());
        };
        if last.as_ref() == Some(&now) {
            return Ok(());
        }
        now
    };
    c.op(c.store.update(&hs.id, &next)).await?;
    *hs.record.lock() = Some(next);
    Ok(())
}

/// The replica waiting for the answer `msg` carries, when it is another one.
pub(crate) fn owner_of(c: &Cluster, inbound: &Inbound) -> Option<u32> {
    let Inbound::Message(Message::Response(r)) = inbound else {
        return None;
    };
    let RequestId::Number(n) = r.id else {
        return None;
    };
    let node = u32::try_from(n >> 32).ok()?;
    (node != 0 && node != c.node).then_some(node)
}

/// Numbers a POST stream in the store and copies its messages there. `None`: the session
/// is gone.
pub(crate) async fn register(
    shared: &Shared,
    c: &Cluster,
    hs: &HttpSession,
    cell: &Arc<Cell>,
) -> Result<Option<u32>, StoreError> {
    let Some(n) = c.op(c.store.next_stream(&hs.id)).await? else {
        return Ok(None);
    };
    hs.register_numbered(cell, n, shared.config.max_stored_streams);
    let session = hs.id.clone();
    let writer = c.writer.clone();
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

/// A cell fed from the store's log of `stream`, from the event after `after` on; the
/// token stops the feeding (the reader went away).
pub(crate) fn follow(
    shared: &Arc<Shared>,
    hs: &Arc<HttpSession>,
    stream: u32,
    after: u64,
) -> (Arc<Cell>, CancellationToken) {
    let cell = Arc::new(Cell::starting_after(
        shared.config.event_store_capacity,
        false,
        after,
    ));
    cell.set_stream(stream);
    let done = CancellationToken::new();
    let (s, hs, feed, stop) = (shared.clone(), hs.clone(), cell.clone(), done.clone());
    tokio::spawn(async move {
        let Some(c) = &s.cluster else { return };
        let idle = s.config.session_idle_timeout;
        let touch_every = (idle / 3).max(Duration::from_millis(100));
        let mut touched = Instant::now();
        let mut cursor = after;
        loop {
            let woken = hs.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let events = match c.op(c.store.read(&hs.id, stream, cursor, READ_BATCH)).await {
                Ok(e) => e,
                Err(e) => {
                    // The client reconnects with Last-Event-ID once the store is back.
                    tracing::warn!("a stream of a session ended: {e}");
                    feed.finish(None);
                    return;
                }
            };
            let full = events.len() == READ_BATCH;
            for e in events {
                cursor = e.seq;
                match e.line {
                    Some(line) => feed.push_numbered(e.seq, line),
                    None => {
                        feed.finish(None);
                        return;
                    }
                }
            }
            if touched.elapsed() >= touch_every {
                touched = Instant::now();
                match c.op(c.store.touch(&hs.id, idle)).await {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => {
                        feed.finish(None);
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
                _ = stop.cancelled() => return,
                _ = hs.stop.cancelled() => {
                    feed.finish(None);
                    return;
                }
            }
        }
    });
    (cell, done)
}
