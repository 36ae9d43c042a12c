//! Session stores: where legacy sessions live when several replicas serve them.
//!
//! Without a store ([`HttpConfig::session_store`](crate::HttpConfig::session_store) is
//! `None`, the default) a session lives in the process that opened it, as it always did:
//! nothing on a request's path consults a store. With one, every replica can serve every
//! request of every session:
//!
//! - the session's [`SessionRecord`] (negotiated version, client capabilities and info,
//!   whether the client sent `notifications/initialized`, its log level, a generation
//!   counter of its roots, the identity it is bound to) is created at `initialize`, read (and its idle expiry pushed
//!   back) by every request on any replica, and updated when a request changes it;
//! - every event of every stream of the session is appended to a bounded per-stream log, so
//!   that `Last-Event-ID` resumes a stream on any replica, and a GET stream on replica C
//!   carries what replica A sent to the session (woken through [`BusMessage::Event`]);
//! - a client's answer to a request the server sent reaches the replica whose call waits
//!   for it ([`BusMessage::Response`]; the request's id names that replica);
//! - `DELETE` and idle expiry end the session on every replica ([`BusMessage::Closed`]).
//!
//! Two implementations: [`MemoryStore`] (one process, several servers sharing it; the
//! reference the same test suite holds the Redis one to) and `toolwright-sessions-redis`.

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What a store operation returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store that cannot answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// No answer within the store timeout.
    #[error("the session store did not answer in time")]
    Timeout,
    /// The store is unreachable or refused the operation.
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
}

/// The state of a legacy session that every replica must see alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The negotiated protocol version (`2025-11-25`, …).
    pub version: String,
    /// The client's capabilities, as it sent them in `initialize`.
    pub client_capabilities: serde_json::Value,
    /// The client's `clientInfo`.
    pub client_info: serde_json::Value,
    /// The client sent `notifications/initialized`.
    pub initialized: bool,
    /// The level set by `logging/setLevel` (`debug` until then).
    pub log_level: String,
    /// Bumped by `notifications/roots/list_changed`: replicas holding a copy of the
    /// client's roots drop it when this differs from theirs.
    pub roots_generation: u64,
    /// Who the session speaks for: the identity whose token opened it, to which every
    /// replica binds its copy (absent without JWT access tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<toolwright_server::Caller>,
}

/// One event to append to a stream's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append {
    /// The session.
    pub session: String,
    /// The stream (0: the GET stream).
    pub stream: u32,
    /// The event's number; `None`: the next number of the stream (streams that several
    /// replicas write to, the GET stream). A number at or below the last one is ignored.
    pub seq: Option<u64>,
    /// The message, one JSON-RPC line; `None` marks the end of the stream.
    pub line: Option<Vec<u8>>,
}

/// One event read back from a stream's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number within the stream.
    pub seq: u64,
    /// The message; `None`: the stream ended here.
    pub line: Option<Vec<u8>>,
}

/// What a replica hears from the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusMessage {
    /// Events were appended to this stream.
    Event {
        /// The session.
        session: String,
        /// The stream.
        stream: u32,
    },
    /// A client's answer to a request sent by the replica `node`.
    Response {
        /// The replica whose call waits.
        node: u32,
        /// The session.
        session: String,
        /// The client's message, as it came.
        line: Vec<u8>,
    },
    /// The session ended (DELETE).
    Closed {
        /// The session.
        session: String,
    },
    /// The store lost and regained its connection: messages may have been missed.
    Reconnected,
}

/// Where replicas keep legacy sessions. Every operation may fail; the HTTP layer bounds
/// each with a timeout and answers 503 when the store cannot help.
pub trait SessionStore: Debug + Send + Sync + 'static {
    /// Saves a new session, which expires after `idle` without a [`SessionStore::touch`].
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> StoreFuture<'a, ()>;

    /// The session's record, pushing its expiry back to `idle` from now; `None` when it
    /// is unknown, expired or deleted.
    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Replaces the record of a live session; false when the session is gone.
    fn update<'a>(&'a self, id: &'a str, record: &'a SessionRecord) -> StoreFuture<'a, bool>;

    /// Ends the session and its streams and tells every replica ([`BusMessage::Closed`]);
    /// false when it was not there.
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// Numbers a new POST stream of the session: 1, 2, … across every replica; `None` when
    /// the session is gone.
    fn next_stream<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<u32>>;

    /// Appends events, in order, keeping the newest `keep` of each stream, and wakes the
    /// replicas reading those streams ([`BusMessage::Event`]). Events of a session that is
    /// gone are dropped.
    fn append<'a>(&'a self, events: &'a [Append], keep: usize) -> StoreFuture<'a, ()>;

    /// The events of a stream numbered above `after`, oldest first (at most `limit`).
    fn read<'a>(
        &'a self,
        id: &'a str,
        stream: u32,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// Hands a client's answer to the replica `node` ([`BusMessage::Response`]).
    fn forward<'a>(&'a self, node: u32, id: &'a str, line: &'a [u8]) -> StoreFuture<'a, ()>;

    /// What replica `node` hears from now on: every [`BusMessage::Event`] and
    /// [`BusMessage::Closed`], and the [`BusMessage::Response`]s for `node`. The store keeps
    /// the subscription alive (reconnecting as needed) until the receiver is dropped.
    fn subscribe(&self, node: u32) -> mpsc::UnboundedReceiver<BusMessage>;
}

#[derive(Debug, Default)]
struct Log {
    last: u64,
    events: VecDeque<StoredEvent>,
}

#[derive(Debug)]
struct Entry {
    record: SessionRecord,
    expires: Instant,
    streams: u32,
    logs: HashMap<u32, Log>,
}

#[derive(Debug, Default)]
struct Memory {
    sessions: HashMap<String, Entry>,
    subscribers: Vec<(u32, mpsc::UnboundedSender<BusMessage>)>,
}

impl Memory {
    fn live(&mut self, id: &str) -> Option<&mut Entry> {
        let now = Instant::now();
        if self.sessions.get(id).is_some_and(|e| e.expires <= now) {
            self.sessions.remove(id);
        }
        self.sessions.get_mut(id)
    }

    fn tell(&mut self, msg: &BusMessage) {
        self.subscribers.retain(|(node, tx)| match msg {
            BusMessage::Response { node: to, .. } if to != node => !tx.is_closed(),
            _ => tx.send(msg.clone()).is_ok(),
        });
    }
}

/// A [`SessionStore`] in this process's memory: several servers in one process share
/// sessions through it (tests, and the reference behaviour of every store).
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

fn ready<'a, T: Send + 'a>(v: T) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(Ok(v)))
}

impl SessionStore for MemoryStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> StoreFuture<'a, ()> {
        self.inner.lock().sessions.insert(
            id.to_owned(),
            Entry {
                record: record.clone(),
                expires: Instant::now() + idle,
                streams: 0,
                logs: HashMap::new(),
            },
        );
        ready(())
    }

    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        let mut m = self.inner.lock();
        let found = m.live(id).map(|e| {
            e.expires = Instant::now() + idle;
            e.record.clone()
        });
        ready(found)
    }

    fn update<'a>(&'a self, id: &'a str, record: &'a SessionRecord) -> StoreFuture<'a, bool> {
        let mut m = self.inner.lock();
        let found = m.live(id).map(|e| e.record = record.clone()).is_some();
        ready(found)
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let mut m = self.inner.lock();
        let found = m.live(id).is_some();
        m.sessions.remove(id);
        if found {
            m.tell(&BusMessage::Closed {
                session: id.to_owned(),
            });
        }
        ready(found)
    }

    fn next_stream<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<u32>> {
        let mut m = self.inner.lock();
        let n = m.live(id).map(|e| {
            e.streams += 1;
            e.streams
        });
        ready(n)
    }

    fn append<'a>(&'a self, events: &'a [Append], keep: usize) -> StoreFuture<'a, ()> {
        let mut m = self.inner.lock();
        let mut woken: Vec<(String, u32)> = Vec::new();
        for a in events {
            let Some(entry) = m.live(&a.session) else {
                continue;
            };
            let log = entry.logs.entry(a.stream).or_default();
            let seq = a.seq.unwrap_or(log.last + 1);
            if seq <= log.last {
                continue;
            }
            log.last = seq;
            log.events.push_back(StoredEvent {
                seq,
                line: a.line.clone(),
            });
            while log.events.len() > keep.max(1) {
                log.events.pop_front();
            }
            if !woken.iter().any(|(s, n)| *s == a.session && *n == a.stream) {
                woken.push((a.session.clone(), a.stream));
            }
        }
        for (session, stream) in woken {
            m.tell(&BusMessage::Event { session, stream });
        }
        ready(())
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        stream: u32,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, Vec<StoredEvent>> {
        let mut m = self.inner.lock();
        let out = m
            .live(id)
            .and_then(|e| e.logs.get(&stream))
            .map(|log| {
                log.events
                    .iter()
                    .filter(|e| e.seq > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        ready(out)
    }

    fn forward<'a>(&'a self, node: u32, id: &'a str, line: &'a [u8]) -> StoreFuture<'a, ()> {
        self.inner.lock().tell(&BusMessage::Response {
            node,
            session: id.to_owned(),
            line: line.to_vec(),
        });
        ready(())
    }

    fn subscribe(&self, node: u32) -> mpsc::UnboundedReceiver<BusMessage> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner.lock().subscribers.push((node, tx));
        rx
    }
}
