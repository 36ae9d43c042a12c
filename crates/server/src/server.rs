//! The [`Server`]: a registry, settings and the sessions to tell about changes.

use crate::catalog::{
    Catalog, PromptHandler, ResourceHandler, TemplateEntry, TemplateHandler, UriTemplate,
};
use crate::config::Config;
use crate::error::RegisterError;
use crate::mrtr::StateKey;
use crate::registry::{Registry, Snapshot};
use crate::session::{Outbound, Session};
use crate::tool::Tool;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::broadcast;
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
    /// Set once a client's empty `roots/list` answer was logged (it is logged once).
    pub empty_client_roots_logged: Arc<AtomicBool>,
    pub registry: Registry,
    pub sessions: Mutex<Vec<Weak<Session>>>,
    /// Changes that `subscriptions/listen` streams may report; made by the first listener
    /// (its 1,024 slots are memory a server without listeners never needs).
    pub events: OnceLock<broadcast::Sender<Event>>,
    pub catalog: Catalog,
    pub state_key: StateKey,
    /// Set once the tools registered at start-up are in place (see `Server::new_warming`).
    pub ready: OnceLock<()>,
    /// The start-up registration nothing has begun yet.
    pub start_up: Mutex<Option<StartUp>>,
    /// Calls run as tasks (the Tasks extension).
    pub tasks: crate::task::Tasks,
}

/// What registers a server's start-up tools (see [`Server::new_warming`]).
pub(crate) type StartUp = Box<dyn FnOnce(&Server) + Send>;

/// A change a client may be told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The tool list changed.
    ToolsChanged,
    /// The resource or template list changed.
    ResourcesChanged,
    /// The prompt list changed.
    PromptsChanged,
    /// The contents of one resource changed.
    ResourceUpdated(String),
}

impl Server {
    /// A server with no tools yet.
    pub fn new(info: Implementation, config: Config) -> Self {
        let server = Self::unready(info, config);
        let _ = server.inner.ready.set(());
        server
    }

    /// A server whose start-up tools `register` adds later, without delaying the first answer:
    /// [`Server::warm_up`] runs it on a thread of its own (the stdio loop calls it once its
    /// first replies are written, so `initialize` never competes with schema compilation for
    /// the CPU), and whatever needs the tools first (`tools/list`, `tools/call`) runs it in
    /// place or waits for it. Tools registered that way announce nothing (no client has seen
    /// a list yet). `register` must not add resources or prompts: the capabilities sent at
    /// `initialize` do not wait for it.
    pub fn new_warming(
        info: Implementation,
        config: Config,
        register: impl FnOnce(&Server) + Send + 'static,
    ) -> Self {
        let server = Self::unready(info, config);
        *server.start_up() = Some(Box::new(register));
        server
    }

    /// Starts registering the start-up tools on a thread of their own; nothing when they
    /// are registered or being registered already.
    pub fn warm_up(&self) {
        let Some(register) = self.start_up().take() else {
            return;
        };
        let warming = self.clone();
        std::thread::Builder::new()
            .name("toolwright-warm-up".into())
            .spawn(move || {
                register(&warming);
                let _ = warming.inner.ready.set(());
            })
            .expect("spawning the warm-up thread");
    }

    /// True once the start-up tools are registered (at once for `Server::new`).
    pub fn is_ready(&self) -> bool {
        self.inner.ready.get().is_some()
    }

    /// Returns once the start-up tools are registered (at once for `Server::new`),
    /// registering them here if nothing has started to. On a worker of a multi-threaded
    /// runtime the wait gives up the worker's place first, so tasks the registration waits
    /// for (a gateway listing its upstreams, on the runtime the transport serves on) run.
    pub fn wait_ready(&self) {
        if self.inner.ready.get().is_some() {
            return;
        }
        let wait = || {
            let pending = self.start_up().take();
            match pending {
                Some(register) => {
                    register(self);
                    let _ = self.inner.ready.set(());
                }
                None => {
                    self.inner.ready.wait();
                }
            }
        };
        let on_worker = tokio::task::try_id().is_some()
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if on_worker {
            tokio::task::block_in_place(wait);
        } else {
            wait();
        }
    }

    fn start_up(&self) -> parking_lot::MutexGuard<'_, Option<StartUp>> {
        self.inner.start_up.lock()
    }

    fn unready(info: Implementation, config: Config) -> Self {
        let roots = config
            .roots
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .collect();
        let info_meta = serde_json::json!({ toolwright_protocol::meta::SERVER_INFO: info.clone() });
        Server {
            inner: Arc::new(Inner {
                registry: Registry::new(config.paging),
                info,
                info_meta,
                roots: Arc::new(roots),
                empty_client_roots_logged: Arc::default(),
                sessions: Mutex::new(Vec::new()),
                events: OnceLock::new(),
                catalog: Catalog::default(),
                ready: OnceLock::new(),
                start_up: Mutex::new(None),
                tasks: crate::task::Tasks::default(),
                state_key: match &config.state_secret {
                    Some(secret) => StateKey::from_secret(secret.as_bytes()),
                    None => StateKey::random(),
                },
                config,
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
        self.wait_ready();
        self.inner.registry.snapshot()
    }

    /// The tools registered so far, without waiting for the start-up tools: for the
    /// start-up closure itself, which would wait for its own end in [`Server::tools`].
    pub fn registered(&self) -> Arc<Snapshot> {
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

    /// Swaps a set of tools in one step ([`Registry::replace`](crate::registry::Registry::replace)):
    /// the tools named in `remove` go, `add` come, and clients are told once. On an error
    /// nothing changed.
    pub fn replace_tools(
        &self,
        remove: &[String],
        add: Vec<Arc<dyn Tool>>,
    ) -> Result<(), RegisterError> {
        self.inner.registry.replace(remove, add)?;
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
        let mut sessions = self.inner.sessions.lock();
        sessions.retain(|w| w.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// A receiver of every event published from now on.
    pub(crate) fn event_receiver(&self) -> broadcast::Receiver<Event> {
        self.inner
            .events
            .get_or_init(|| broadcast::Sender::new(1024))
            .subscribe()
    }

    fn tools_changed(&self) {
        self.publish(Event::ToolsChanged);
    }

    /// Tells clients about a change: legacy sessions past the handshake get the
    /// notification at once (resource updates only where subscribed); modern
    /// `subscriptions/listen` streams get it if they asked.
    pub fn publish(&self, event: Event) {
        if self.inner.ready.get().is_none() {
            return;
        }
        if let Some(events) = self.inner.events.get() {
            let _ = events.send(event.clone());
        }
        let sessions: Vec<Arc<Session>> = {
            let mut list = self.inner.sessions.lock();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut line = Vec::new();
        let method = match &event {
            Event::ToolsChanged => "notifications/tools/list_changed",
            Event::ResourcesChanged => "notifications/resources/list_changed",
            Event::PromptsChanged => "notifications/prompts/list_changed",
            Event::ResourceUpdated(_) => "notifications/resources/updated",
        };
        match &event {
            Event::ResourceUpdated(uri) => toolwright_jsonrpc::write_notification(
                &mut line,
                method,
                &serde_json::json!({"uri": uri}),
            )
            .expect("serializes"),
            _ => toolwright_jsonrpc::write_notification_no_params(&mut line, method),
        }
        for s in sessions {
            // Only legacy sessions past the handshake receive unsolicited notifications.
            if !(s.is_initialized() && s.negotiated().is_some() && !s.is_closed()) {
                continue;
            }
            if let Event::ResourceUpdated(uri) = &event
                && !s.is_subscribed(uri)
            {
                continue;
            }
            s.outbound().send(line.clone());
        }
    }

    /// Adds a resource with a fixed URI; refused if the URI is taken.
    pub fn register_resource(&self, handler: impl ResourceHandler) -> Result<(), RegisterError> {
        let def = handler.definition();
        {
            let mut list = self
                .inner
                .catalog
                .resources
                .write()
                .unwrap_or_else(|p| p.into_inner());
            if list.iter().any(|(r, _)| r.uri == def.uri) {
                return Err(RegisterError::DuplicateResource { uri: def.uri });
            }
            list.push((def, Arc::new(handler)));
            list.sort_by(|a, b| a.0.uri.cmp(&b.0.uri));
        }
        self.publish(Event::ResourcesChanged);
        Ok(())
    }

    /// Adds a resource template; refused if the template does not parse or is taken.
    pub fn register_template(&self, handler: impl TemplateHandler) -> Result<(), RegisterError> {
        let definition = handler.definition();
        let matcher = UriTemplate::parse(&definition.uri_template).ok_or_else(|| {
            RegisterError::InvalidTemplate {
                template: definition.uri_template.clone(),
            }
        })?;
        {
            let mut list = self
                .inner
                .catalog
                .templates
                .write()
                .unwrap_or_else(|p| p.into_inner());
            if list
                .iter()
                .any(|t| t.definition.uri_template == definition.uri_template)
            {
                return Err(RegisterError::DuplicateResource {
                    uri: definition.uri_template,
                });
            }
            list.push(Arc::new(TemplateEntry {
                definition,
                matcher,
                handler: Arc::new(handler),
            }));
            list.sort_by(|a, b| a.definition.uri_template.cmp(&b.definition.uri_template));
        }
        self.publish(Event::ResourcesChanged);
        Ok(())
    }

    /// Adds a prompt; refused if the name is taken.
    pub fn register_prompt(&self, handler: impl PromptHandler) -> Result<(), RegisterError> {
        let def = handler.definition();
        {
            let mut list = self
                .inner
                .catalog
                .prompts
                .write()
                .unwrap_or_else(|p| p.into_inner());
            if list.iter().any(|(p, _)| p.name == def.name) {
                return Err(RegisterError::Duplicate { name: def.name });
            }
            list.push((def, Arc::new(handler)));
            list.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        }
        self.publish(Event::PromptsChanged);
        Ok(())
    }

    /// Tells subscribed clients that the resource at `uri` changed.
    pub fn resource_updated(&self, uri: &str) {
        self.publish(Event::ResourceUpdated(uri.to_owned()));
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
