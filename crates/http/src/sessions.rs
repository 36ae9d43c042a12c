//! The sessions the handlers speak to: one interface, [`SessionBackend`] (`backend.rs`),
//! with two implementations. [`InProcess`] (`in_process.rs`, the default) keeps a session
//! in the process that opened it; [`Replicated`] (`cluster.rs`) keeps it in a shared
//! [`SessionStore`](crate::store::SessionStore), so that any replica serves any request of
//! any session. [`Sessions`] is the one the server was configured with; `post.rs` and
//! `streams.rs` know nothing else.
//!
//! # Why an enum and not `Box<dyn SessionBackend>`
//!
//! Most methods are `async`. Behind a trait object each call would box its future: one
//! allocation per legacy request, where the in-process `find` is a lookup in a sharded
//! table and costs less than that allocation. [`Sessions`] dispatches with a `match`
//! instead: no box, the futures live inside the request's own future, and the in-process
//! arm does what the handlers did before the interface existed (the store-backed arm only
//! makes that future larger, never slower). The trait stays, so that both implementations
//! answer one method set and a third would have to answer it too.

pub(crate) use crate::backend::{Replay, SessionBackend};
use crate::cluster::Replicated;
use crate::config::HttpConfig;
use crate::in_process::InProcess;
use crate::session::HttpSession;
use crate::store::StoreError;
use crate::stream::Cell;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolwright_server::{Inbound, Server};

/// The sessions of a server: in this process, or in a shared store.
pub(crate) enum Sessions {
    InProcess(InProcess),
    Replicated(Arc<Replicated>),
}

impl Sessions {
    /// The sessions `config` asks for (a store when it names one).
    pub(crate) fn new(server: Server, config: &HttpConfig, shutdown: CancellationToken) -> Self {
        let local = InProcess::new(server, config, shutdown);
        match &config.session_store {
            None => Sessions::InProcess(local),
            Some(store) => Sessions::Replicated(Arc::new(Replicated::new(
                local,
                store.clone(),
                config.session_store_timeout,
            ))),
        }
    }
}

impl SessionBackend for Sessions {
    fn open(&self) -> Option<Arc<HttpSession>> {
        match self {
            Sessions::InProcess(s) => s.open(),
            Sessions::Replicated(s) => s.open(),
        }
    }

    fn abandon(&self, hs: &HttpSession) {
        match self {
            Sessions::InProcess(s) => s.abandon(hs),
            Sessions::Replicated(s) => s.abandon(hs),
        }
    }

    async fn keep(&self, hs: Arc<HttpSession>) -> Result<(), StoreError> {
        match self {
            Sessions::InProcess(s) => s.keep(hs).await,
            Sessions::Replicated(s) => s.keep(hs).await,
        }
    }

    async fn find(&self, id: &str) -> Result<Option<Arc<HttpSession>>, StoreError> {
        match self {
            Sessions::InProcess(s) => s.find(id).await,
            Sessions::Replicated(s) => s.find(id).await,
        }
    }

    async fn forward(
        &self,
        hs: &HttpSession,
        inbound: &Inbound,
        raw: &[u8],
    ) -> Option<Result<(), StoreError>> {
        match self {
            Sessions::InProcess(s) => s.forward(hs, inbound, raw).await,
            Sessions::Replicated(s) => s.forward(hs, inbound, raw).await,
        }
    }

    async fn save(&self, hs: &HttpSession, roots_changed: bool) {
        match self {
            Sessions::InProcess(s) => s.save(hs, roots_changed).await,
            Sessions::Replicated(s) => s.save(hs, roots_changed).await,
        }
    }

    async fn register(
        &self,
        hs: &HttpSession,
        cell: &Arc<Cell>,
    ) -> Result<Option<u32>, StoreError> {
        match self {
            Sessions::InProcess(s) => s.register(hs, cell).await,
            Sessions::Replicated(s) => s.register(hs, cell).await,
        }
    }

    fn replay(&self, hs: &Arc<HttpSession>, stream: u32, after: Option<u64>) -> Option<Replay> {
        match self {
            Sessions::InProcess(s) => s.replay(hs, stream, after),
            Sessions::Replicated(s) => s.replay(hs, stream, after),
        }
    }

    async fn end(&self, hs: &HttpSession) -> Result<(), StoreError> {
        match self {
            Sessions::InProcess(s) => s.end(hs).await,
            Sessions::Replicated(s) => s.end(hs).await,
        }
    }

    fn start(&self) -> Vec<JoinHandle<()>> {
        match self {
            Sessions::InProcess(s) => s.start(),
            Sessions::Replicated(s) => s.start(),
        }
    }

    fn expire(&self) {
        match self {
            Sessions::InProcess(s) => s.expire(),
            Sessions::Replicated(s) => s.expire(),
        }
    }

    fn close_all(&self) {
        match self {
            Sessions::InProcess(s) => s.close_all(),
            Sessions::Replicated(s) => s.close_all(),
        }
    }
}
