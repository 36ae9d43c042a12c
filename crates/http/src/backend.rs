//! [`SessionBackend`]: what the handlers ask of legacy sessions, whatever keeps them.
//! Implemented by `InProcess` (`in_process.rs`: sessions in this process) and `Replicated`
//! (`cluster.rs`: sessions in a shared store); the server holds one of them as a
//! `Sessions` (`sessions.rs`). This module is below all three, so it names none of them.

use crate::session::HttpSession;
use crate::store::StoreError;
use crate::stream::Cell;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::DropGuard;
use toolwright_server::Inbound;

/// The cell a GET reads a stream from.
pub(crate) struct Replay {
    /// The stream's events.
    pub cell: Arc<Cell>,
    /// Keeps the cell fed from the shared store while held (`None`: the cell is this
    /// process's own).
    pub feeding: Option<DropGuard>,
}

/// What the handlers ask of legacy sessions.
pub(crate) trait SessionBackend {
    /// A new session, holding one of the `max_sessions` places, not yet found by
    /// [`SessionBackend::find`] (its handshake comes first); `None` when every place is
    /// taken.
    fn open(&self) -> Option<Arc<HttpSession>>;

    /// Gives up a session [`SessionBackend::open`] made (its handshake failed): the place
    /// is free again and the session closed.
    fn abandon(&self, hs: &HttpSession);

    /// Makes a session past its handshake one that requests find (saving it to the store
    /// first, when there is one). `Err`: the store refused it, and the session was
    /// abandoned.
    async fn keep(&self, hs: Arc<HttpSession>) -> Result<(), StoreError>;

    /// The live session `id` names (`None`: unknown, expired or deleted), its idle expiry
    /// pushed back.
    async fn find(&self, id: &str) -> Result<Option<Arc<HttpSession>>, StoreError>;

    /// Hands `inbound`, a client's answer (`raw` as it came), to the replica whose call
    /// waits for it. `None`: the answer is for this process, which handles it.
    async fn forward(
        &self,
        hs: &HttpSession,
        inbound: &Inbound,
        raw: &[u8],
    ) -> Option<Result<(), StoreError>>;

    /// Saves what a request changed in the session (`notifications/initialized`,
    /// `logging/setLevel`, and `notifications/roots/list_changed` when `roots_changed`).
    /// A failure is logged: the request was handled.
    async fn save(&self, hs: &HttpSession, roots_changed: bool);

    /// Numbers a POST stream of the session and keeps its events for `Last-Event-ID`.
    /// `None`: the session is gone.
    async fn register(&self, hs: &HttpSession, cell: &Arc<Cell>)
    -> Result<Option<u32>, StoreError>;

    /// Where a GET reads stream `stream` of the session from (0: the standalone stream),
    /// after event `after`; `None`: the stream is gone.
    fn replay(&self, hs: &Arc<HttpSession>, stream: u32, after: Option<u64>) -> Option<Replay>;

    /// Ends the session (DELETE) wherever it is served.
    async fn end(&self, hs: &HttpSession) -> Result<(), StoreError>;

    /// Starts what runs beside the requests (the store's writer and bus listener).
    fn start(&self) -> Vec<JoinHandle<()>>;

    /// Ends the sessions idle for longer than the idle timeout.
    fn expire(&self);

    /// Closes every session (shutdown).
    fn close_all(&self);
}
