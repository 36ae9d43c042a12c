//! [`InProcess`]: the sessions interface when a session lives in the process that opened
//! it (the default, without a session store), and the table of this replica's copies when
//! there is a store.

use crate::backend::{Replay, SessionBackend};
use crate::config::HttpConfig;
use crate::session::{HttpSession, Table};
use crate::store::StoreError;
use crate::stream::Cell;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolwright_server::{Inbound, Server};

/// Sessions in this process's memory: a session lives where it was opened.
pub(crate) struct InProcess {
    /// The live sessions (with a store: this replica's copies of them).
    pub table: Table,
    pub server: Server,
    /// Sessions' stop tokens are children of this one (the server's shutdown).
    pub shutdown: CancellationToken,
    /// Events kept per stream ([`HttpConfig::event_store_capacity`]).
    pub capacity: usize,
    /// POST streams kept per session ([`HttpConfig::max_stored_streams`]).
    pub keep: usize,
    /// [`HttpConfig::max_sessions`].
    pub max: usize,
    /// [`HttpConfig::session_idle_timeout`].
    pub idle: Duration,
}

impl InProcess {
    pub(crate) fn new(server: Server, config: &HttpConfig, shutdown: CancellationToken) -> Self {
        InProcess {
            table: Table::new(),
            server,
            shutdown,
            capacity: config.event_store_capacity,
            keep: config.max_stored_streams,
            max: config.max_sessions,
            idle: config.session_idle_timeout,
        }
    }
}

impl SessionBackend for InProcess {
    fn open(&self) -> Option<Arc<HttpSession>> {
        if !self.table.reserve(self.max) {
            return None;
        }
        Some(HttpSession::new(
            &self.server,
            self.capacity,
            self.shutdown.child_token(),
            self.table.epoch,
        ))
    }

    fn abandon(&self, hs: &HttpSession) {
        self.table.release();
        hs.close();
    }

    async fn keep(&self, hs: Arc<HttpSession>) -> Result<(), StoreError> {
        self.table.insert(hs);
        Ok(())
    }

    async fn find(&self, id: &str) -> Result<Option<Arc<HttpSession>>, StoreError> {
        Ok(self.table.get(id))
    }

    async fn forward(
        &self,
        _: &HttpSession,
        _: &Inbound,
        _: &[u8],
    ) -> Option<Result<(), StoreError>> {
        None
    }

    async fn save(&self, _: &HttpSession, _: bool) {}

    async fn register(
        &self,
        hs: &HttpSession,
        cell: &Arc<Cell>,
    ) -> Result<Option<u32>, StoreError> {
        Ok(Some(hs.register_stream(cell, self.keep)))
    }

    fn replay(&self, hs: &Arc<HttpSession>, stream: u32, _: Option<u64>) -> Option<Replay> {
        let cell = hs.stream(stream)?;
        Some(Replay {
            cell,
            feeding: None,
        })
    }

    async fn end(&self, hs: &HttpSession) -> Result<(), StoreError> {
        if let Some(hs) = self.table.remove(&hs.id) {
            hs.close();
        }
        Ok(())
    }

    fn start(&self) -> Vec<JoinHandle<()>> {
        Vec::new()
    }

    fn expire(&self) {
        for s in self.table.take_expired(self.idle) {
            tracing::debug!(session = %s.id, "session expired");
            s.close();
        }
    }

    fn close_all(&self) {
        for s in self.table.take_all() {
            s.close();
        }
    }
}
