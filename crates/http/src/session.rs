//! Legacy sessions: what an `Mcp-Session-Id` stands for.
//!
//! An [`HttpSession`] wraps the server's [`Session`] (the negotiated version, calls in
//! flight, requests to the client) with the session's streams: stream 0 is the standalone
//! GET stream, fed by the session's outbound (`tools/list_changed` and other unsolicited
//! messages); streams 1, 2, … are POSTs that turned into SSE. Every stream keeps its recent
//! messages, so a client that lost a connection resumes with `Last-Event-ID: <stream>-<n>`.
//!
//! [`Table`] is the table of live sessions, split into shards so that concurrent
//! requests of different sessions rarely meet on one lock. Handlers reach both through
//! the sessions interface (`sessions.rs`), never directly.

use crate::stream::Cell;
use parking_lot::{Mutex, MutexGuard};
use rand::Rng as _;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolwright_server::{Server, Session};

const SHARDS: usize = 16;

/// A fresh session id: 128 bits from the thread-local CSPRNG (ChaCha, seeded and reseeded
/// from the operating system), as 32 lowercase hex digits (visible ASCII, as the spec asks).
pub(crate) fn mint_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        id.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    id
}

struct Streams {
    next: u32,
    /// POST streams that may still be read or resumed, oldest first.
    open: VecDeque<(u32, Arc<Cell>)>,
}

/// One legacy session.
pub(crate) struct HttpSession {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The server's side of the session.
    pub mcp: Arc<Session>,
    /// Stream 0: the standalone GET stream.
    pub get: Arc<Cell>,
    /// True while a GET stream reads stream 0.
    pub get_open: AtomicBool,
    /// Cancelled when the session ends (DELETE, expiry, shutdown): ends its GET streams.
    pub stop: CancellationToken,
    streams: Mutex<Streams>,
    /// Woken when another replica appended to one of the session's streams (shared store).
    pub wake: tokio::sync::Notify,
    /// The session's state as last read from or written to the shared store.
    pub record: Mutex<Option<crate::store::SessionRecord>>,
    /// Milliseconds since the table's epoch at the last request or stream end.
    last_active: AtomicU64,
    /// Requests being handled and streams open; a busy session never expires.
    busy: AtomicUsize,
    epoch: Instant,
}

/// Marks a session busy while it lives.
pub(crate) struct Busy(Arc<HttpSession>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Keeps POST stream `n` (`cell`) among at most `keep` POST streams: finished, fully read
/// streams go first, then the oldest.
fn keep_stream(s: &mut Streams, cell: &Arc<Cell>, n: u32, keep: usize) {
    s.open.retain(|(_, c)| !c.is_drained());
    while s.open.len() >= keep.max(1) {
        s.open.pop_front();
    }
    cell.set_stream(n);
    cell.set_retain(true);
    s.open.push_back((n, cell.clone()));
}

impl HttpSession {
    /// A new session whose unsolicited messages go to its GET stream.
    pub(crate) fn new(
        server: &Server,
        capacity: usize,
        stop: CancellationToken,
        epoch: Instant,
    ) -> Arc<HttpSession> {
        let get = Arc::new(Cell::new(capacity, true));
        HttpSession::with_outbound(server, stop, epoch, mint_id(), get.clone(), get)
    }

    /// A session named `id` whose unsolicited messages go to `outbound` (a shared store's
    /// log) rather than to its own GET stream cell.
    pub(crate) fn with_outbound(
        server: &Server,
        stop: CancellationToken,
        epoch: Instant,
        id: String,
        outbound: Arc<dyn toolwright_server::Outbound>,
        get: Arc<Cell>,
    ) -> Arc<HttpSession> {
        let mcp = server.new_session(outbound);
        mcp.set_label(toolwright_server::telemetry::Transport::Tcp, Some(&id));
        Arc::new(HttpSession {
            id,
            mcp,
            get,
            get_open: AtomicBool::new(false),
            stop,
            streams: Mutex::new(Streams {
                next: 1,
                open: VecDeque::new(),
            }),
            wake: tokio::sync::Notify::new(),
            record: Mutex::new(None),
            last_active: AtomicU64::new(epoch.elapsed().as_millis() as u64),
            busy: AtomicUsize::new(0),
            epoch,
        })
    }

    fn streams(&self) -> MutexGuard<'_, Streams> {
        self.streams.lock()
    }

    /// Records activity now.
    pub(crate) fn touch(&self) {
        self.last_active
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Marks the session busy until the guard drops.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    fn idle_for(&self, now_ms: u64) -> Option<Duration> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(Duration::from_millis(
            now_ms.saturating_sub(self.last_active.load(Ordering::Relaxed)),
        ))
    }

    /// Gives a POST stream its number, keeping at most `keep` POST streams (finished,
    /// fully read streams go first, then the oldest).
    pub(crate) fn register_stream(&self, cell: &Arc<Cell>, keep: usize) -> u32 {
        let mut s = self.streams();
        let n = s.next;
        s.next = s.next.wrapping_add(1).max(1);
        keep_stream(&mut s, cell, n, keep);
        n
    }

    /// Keeps a POST stream numbered by the shared store, as [`HttpSession::register_stream`]
    /// does.
    pub(crate) fn register_numbered(&self, cell: &Arc<Cell>, n: u32, keep: usize) {
        keep_stream(&mut self.streams(), cell, n, keep);
    }

    /// The stream with this number, if it is still kept.
    pub(crate) fn stream(&self, n: u32) -> Option<Arc<Cell>> {
        if n == 0 {
            return Some(self.get.clone());
        }
        self.streams()
            .open
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, c)| c.clone())
    }

    /// Ends the session: calls in flight are cancelled, streams end.
    pub(crate) fn close(&self) {
        self.mcp.close();
        self.stop.cancel();
        self.get.finish(None);
        self.streams().open.clear();
    }
}

/// The live sessions.
pub(crate) struct Table {
    shards: Vec<Mutex<HashMap<String, Arc<HttpSession>>>>,
    count: AtomicUsize,
    /// The clock sessions measure idleness against.
    pub epoch: Instant,
}

fn shard_of(id: &str) -> usize {
    // FNV-1a: ids are random, but unknown ids come from clients, so hash them all.
    let mut h: u32 = 0x811c_9dc5;
    for b in id.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h as usize % SHARDS
}

impl Table {
    pub(crate) fn new() -> Table {
        Table {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            count: AtomicUsize::new(0),
            epoch: Instant::now(),
        }
    }

    fn shard(&self, id: &str) -> MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.shards[shard_of(id)].lock()
    }

    /// Claims room for one more session; false when `max` are live.
    pub(crate) fn reserve(&self, max: usize) -> bool {
        let before = self.count.fetch_add(1, Ordering::AcqRel);
        if before >= max {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Gives back a claim that did not become a session.
    pub(crate) fn release(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }

    /// Adds a session (its room was reserved).
    pub(crate) fn insert(&self, s: Arc<HttpSession>) {
        self.shard(&s.id.clone()).insert(s.id.clone(), s);
    }

    /// Adds a copy of a session kept in the shared store, unless a copy is already there
    /// (then that one is returned).
    pub(crate) fn adopt(&self, s: Arc<HttpSession>) -> Arc<HttpSession> {
        let mut shard = self.shard(&s.id);
        if let Some(have) = shard.get(&s.id) {
            return have.clone();
        }
        self.count.fetch_add(1, Ordering::AcqRel);
        shard.insert(s.id.clone(), s.clone());
        s
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.shard(id).get(id).cloned()
    }

    /// Removes a session from the table (the caller closes it).
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.shard(id).remove(id);
        if s.is_some() {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
        s
    }

    /// Number of live sessions.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Removes and returns the sessions idle for longer than `idle`.
    pub(crate) fn take_expired(&self, idle: Duration) -> Vec<Arc<HttpSession>> {
        let now = self.epoch.elapsed().as_millis() as u64;
        let mut out = Vec::new();
        for shard in &self.shards {
            let mut map = shard.lock();
            map.retain(|_, s| {
                let expired = s.idle_for(now).is_some_and(|d| d > idle);
                if expired {
                    out.push(s.clone());
                }
                !expired
            });
        }
        self.count.fetch_sub(out.len(), Ordering::AcqRel);
        out
    }

    /// Removes and returns every session.
    pub(crate) fn take_all(&self) -> Vec<Arc<HttpSession>> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(shard.lock().drain().map(|(_, s)| s));
        }
        self.count.fetch_sub(out.len(), Ordering::AcqRel);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_protocol::Implementation;
    use toolwright_server::Config;

    fn server() -> Server {
        Server::new(Implementation::new("t", "0"), Config::default())
    }

    #[test]
    fn ids_are_long_random_and_visible_ascii() {
        let a = mint_id();
        let b = mint_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[test]
    fn table_counts_and_caps() {
        let t = Table::new();
        assert!(t.reserve(2));
        assert!(t.reserve(2));
        assert!(!t.reserve(2));
        let s = HttpSession::new(&server(), 8, CancellationToken::new(), t.epoch);
        let id = s.id.clone();
        t.insert(s);
        t.release();
        assert_eq!(t.len(), 1);
        assert!(t.get(&id).is_some());
        assert!(t.get("nope").is_none());
        assert!(t.remove(&id).is_some());
        assert!(t.remove(&id).is_none());
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn idle_sessions_expire_unless_busy() {
        let t = Table::new();
        let srv = server();
        let idle = HttpSession::new(&srv, 8, CancellationToken::new(), t.epoch);
        let busy = HttpSession::new(&srv, 8, CancellationToken::new(), t.epoch);
        let _guard = busy.busy();
        for s in [idle.clone(), busy.clone()] {
            assert!(t.reserve(10));
            t.insert(s);
        }
        std::thread::sleep(Duration::from_millis(30));
        let gone = t.take_expired(Duration::from_millis(10));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].id, idle.id);
        assert_eq!(t.len(), 1);
        assert_eq!(t.take_all().len(), 1);
    }

    #[test]
    fn streams_are_numbered_and_bounded() {
        let s = HttpSession::new(&server(), 8, CancellationToken::new(), Instant::now());
        let cells: Vec<Arc<Cell>> = (0..3).map(|_| Arc::new(Cell::new(8, false))).collect();
        assert_eq!(s.register_stream(&cells[0], 2), 1);
        assert_eq!(s.register_stream(&cells[1], 2), 2);
        assert_eq!(s.register_stream(&cells[2], 2), 3);
        assert!(s.stream(1).is_none(), "the oldest was dropped");
        assert!(s.stream(3).is_some());
        assert!(Arc::ptr_eq(&s.stream(0).unwrap(), &s.get));
        s.close();
        assert!(s.stream(3).is_none());
        assert!(s.mcp.is_closed());
    }
}
