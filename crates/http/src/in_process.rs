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

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_protocol::Implementation;
    use toolwright_server::Config;

    fn sessions(max: usize) -> InProcess {
        let server = Server::new(Implementation::new("t", "0"), Config::default());
        let config = HttpConfig {
            max_sessions: max,
            ..HttpConfig::default()
        };
        InProcess::new(server, &config, CancellationToken::new())
    }

    #[tokio::test]
    async fn a_session_is_found_once_kept_and_not_after_its_end() {
        let s = sessions(4);
        let hs = s.open().expect("room for one");
        let id = hs.id.clone();
        assert!(s.find(&id).await.unwrap().is_none(), "not before keep");
        s.keep(hs.clone()).await.unwrap();
        assert!(Arc::ptr_eq(&s.find(&id).await.unwrap().unwrap(), &hs));
        s.end(&hs).await.unwrap();
        assert!(s.find(&id).await.unwrap().is_none());
        assert!(hs.mcp.is_closed());
    }

    #[tokio::test]
    async fn places_are_capped_and_given_back() {
        let s = sessions(1);
        let first = s.open().expect("room for one");
        assert!(s.open().is_none(), "the one place is taken");
        s.abandon(&first);
        assert!(first.mcp.is_closed());
        let second = s.open().expect("the place is free again");
        s.keep(second).await.unwrap();
        assert!(s.open().is_none());
        s.close_all();
        assert!(s.open().is_some());
    }

    #[tokio::test]
    async fn streams_are_numbered_here_and_replayed_from_here() {
        let s = sessions(1);
        let hs = s.open().unwrap();
        let cell = Arc::new(Cell::new(8, false));
        assert_eq!(s.register(&hs, &cell).await.unwrap(), Some(1));
        let replay = s.replay(&hs, 1, Some(0)).expect("kept");
        assert!(Arc::ptr_eq(&replay.cell, &cell) && replay.feeding.is_none());
        assert!(Arc::ptr_eq(&s.replay(&hs, 0, None).unwrap().cell, &hs.get));
        assert!(s.replay(&hs, 2, None).is_none(), "never opened");
        assert!(s.start().is_empty());
    }
}
