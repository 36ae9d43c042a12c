//! The [`Server`]: a registry, settings and the sessions to tell about changes.

use crate::config::Config;
use crate::error::RegisterError;
use crate::registry::{Registry, Snapshot};
use crate::session::{Outbound, Session};
use crate::tool::Tool;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::watch;
use toolwright_protocol::{Implementation, ProtocolVersion};

/// An MCP server: tools plus the settings to serve them. Cheap to clone; every clone is
/// the same server. Transports ([`serve_stdio`](crate::serve_stdio), the HTTP crate) feed
/// it messages through [`Server::handle`].
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub info: Implementation,
    /// `{"io.modelcontextprotocol/serverInfo": …}`, serialized once.
    pub info_meta: serde_json::Value,
    pub config: Config,
    pub roots: Arc<Vec<PathBuf>>,
    pub registry: Registry,
    pub sessions: Mutex<Vec<Weak<Session>>>,
    /// Bumped on every change of the tool list; `subscriptions/listen` streams watch it.
    pub tools_changed: watch::Sender<u64>,
}

impl Server {
    /// A server with no tools yet.
    pub fn new(info: Implementation, config: Config) -> Self {
        let roots = config
            .roots
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .collect();
        let info_meta = serde_json::json!({ toolwright_protocol::meta::SERVER_INFO: info.clone() });
        Server {
            inner: Arc::new(Inner {
                registry: Registry::new(config.page_size),
                info,
                info_meta,
                roots: Arc::new(roots),
                config,
                sessions: Mutex::new(Vec::new()),
                tools_changed: watch::Sender::new(0),
            }),
        }
    }

    /// Who the server is.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The canonical roots file tools may touch.
    pub fn roots(&self) -> &Arc<Vec<PathBuf>> {
        &self.inner.roots
    }

    /// The current tools.
    pub fn tools(&self) -> Arc<Snapshot> {
        self.inner.registry.snapshot()
    }

    /// Registers a tool; connected legacy clients get `notifications/tools/list_changed`
    /// and modern `subscriptions/listen` streams that asked for it are told.
    pub fn register(&self, tool: impl Tool) -> Result<(), RegisterError> {
        self.register_arc(Arc::new(tool))
    }

    /// [`Server::register`] for a tool already behind an `Arc`.
    pub fn register_arc(&self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        self.inner.registry.register(tool)?;
        self.tools_changed();
        Ok(())
    }

    /// Removes a tool; returns whether it was registered. Clients are told as for
    /// [`Server::register`].
    pub fn unregister(&self, name: &str) -> bool {
        let removed = self.inner.registry.unregister(name);
        if removed {
            self.tools_changed();
        }
        removed
    }

    /// A new connection whose unsolicited messages go to `outbound`.
    pub fn new_session(&self, outbound: Arc<dyn Outbound>) -> Arc<Session> {
        let session = Session::new(outbound);
        let mut sessions = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        sessions.retain(|w| w.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    fn tools_changed(&self) {
        self.inner.tools_changed.send_modify(|g| *g += 1);
        let sessions: Vec<Arc<Session>> = {
            let mut list = self
                .inner
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut line = Vec::new();
        toolwright_jsonrpc::write_notification_no_params(
            &mut line,
            "notifications/tools/list_changed",
        );
        for s in sessions {
            // Only legacy sessions past the handshake receive unsolicited notifications.
            if s.is_initialized() && s.negotiated().is_some() && !s.is_closed() {
                s.outbound().send(line.clone());
            }
        }
    }

    /// Versions served, newest first (the modern one, then the legacy ones).
    pub fn supported_versions() -> Vec<&'static str> {
        ProtocolVersion::ALL
            .iter()
            .rev()
            .map(|v| v.as_str())
            .collect()
    }
}
