//! The gateway: every upstream of the config, their tools in this server's tool set, and
//! keeping that set current.
//!
//! Upstream I/O runs on a small runtime of the gateway's own, so upstreams are reached
//! the same way whether the server serves stdio or HTTP, and from the warm-up thread that
//! registers the start-up tools. An upstream's tools are (re)listed when it connects and
//! when it says its list changed; each listing is linted, checked against the pins, named,
//! given its effective annotations and standing, and swapped into the server in one step
//! ([`Server::replace_tools`]), which tells clients once.

use crate::catalog;
use crate::error::GatewayError;
use crate::install::{build_tool, installed_digest, pinned_definitions, shell_word};
use crate::naming;
use crate::pin::{Pins, Verdict};
use crate::tool::Standing;
use crate::upstream::{Events, Shared, Upstream};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use toolwright_client::BoxFuture;
use toolwright_jsonrpc::ErrorObject;
use toolwright_server::{Server, Tool};
use toolwright_toolfile::config::GatewayConfig;
use toolwright_toolfile::servers::StartSpec;

/// How long the first listing of the start-up servers may hold up the first `tools/list`.
const FIRST_LIST_WAIT: Duration = Duration::from_secs(20);
/// How often the state file is looked at for `toolwright trust accept`.
const PIN_POLL: Duration = Duration::from_millis(300);

/// What the gateway needs to know about the server it serves in.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The longest a call may take when the server spec does not say.
    pub call_timeout: Duration,
    /// Where each upstream session's duration is recorded (`mcp.client.session.duration`).
    pub telemetry: Option<Arc<toolwright_server::telemetry::Telemetry>>,
}

/// The gateway.
pub struct Gateway {
    /// Taken when the gateway is dropped, and shut down without waiting: a gateway may be
    /// dropped on a thread of another runtime.
    runtime: Option<tokio::runtime::Runtime>,
    /// The config files, for the commands the gateway suggests (`toolwright trust …`).
    files: Vec<PathBuf>,
    /// Set by [`Gateway::register_all`]; listings that arrive before are installed then.
    server: OnceLock<Server>,
    state_file: PathBuf,
    separator: String,
    upstreams: Mutex<Vec<Arc<Upstream>>>,
    pins: Pins,
    /// Names of built-in and declared tools: no upstream tool may take one.
    reserved: Mutex<BTreeSet<String>>,
    /// The upstream tools registered now, by exposed name.
    registered: Mutex<Vec<String>>,
    /// A digest of what is registered now (definitions and standing).
    installed: Mutex<Option<u64>>,
    /// The last listing of each server, as received (or as pinned, before it connects).
    listed: Mutex<BTreeMap<String, Vec<Value>>>,
    /// Reasons already reported for tools that are not served, so each is said once.
    reported: Mutex<BTreeSet<String>>,
    /// Servers whose lint findings were reported (once per definition set).
    linted: Mutex<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("separator", &self.separator)
            .finish_non_exhaustive()
    }
}

/// Forwards upstream events to the gateway without keeping it alive.
struct Hub(Weak<Gateway>);

impl Events for Hub {
    fn notification(&self, server: &str, method: &str, _params: &Value) {
        let Some(g) = self.0.upgrade() else { return };
        if method == "notifications/tools/list_changed" {
            let server = server.to_owned();
            let gw = g.clone();
            g.handle()
                .spawn(async move { gw.refresh_named(&server).await });
        }
    }

    fn connected(&self, server: &str) -> BoxFuture<'static, ()> {
        // A server first served from its pins is listed once it is up, and after each
        // restart, before any call goes to it: what it lists now is what counts, and a
        // definition that changed meanwhile is quarantined before it can be called.
        let gw = self.0.upgrade();
        let server = server.to_owned();
        Box::pin(async move {
            if let Some(gw) = gw {
                gw.refresh_named(&server).await;
            }
        })
    }

    fn closed(&self, server: &str, _why: &str) {
        let Some(g) = self.0.upgrade() else { return };
        // Logged where the failure is counted (Upstream::failed), once.
        let server = server.to_owned();
        let gw = g.clone();
        // Started again after its backoff; its tools stay listed meanwhile, and a call
        // gets the reason it cannot be reached.
        g.handle().spawn(async move {
            let Some(up) = gw.upstream(&server) else {
                return;
            };
            if let Some(wait) = up.retry_in() {
                tokio::time::sleep(wait).await;
            }
            gw.refresh_named(&server).await;
        });
    }

    fn request(
        &self,
        server: &str,
        method: String,
        _params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        // `roots/list` is answered by the upstream itself (its entry's `roots:`).
        let server = server.to_owned();
        Box::pin(async move {
            Err(ErrorObject::internal(format!(
                "toolwright's gateway relays {method} from upstream {server} only during one of its tool calls, with one call in flight"
            )))
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // Dropping a runtime blocks until its tasks end, which panics on a thread of
        // another runtime; its tasks are cancelled either way (and stdio upstreams killed,
        // since their processes are dropped with them).
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Gateway {
    /// A gateway for `servers`, serving in `server`. Nothing is started yet.
    ///
    /// # Errors
    ///
    /// When a server's settings cannot be used, or the state file cannot be read;
    /// [`GatewayError::Loop`] when this gateway was started by one of the same config
    /// (it would start itself without end).
    pub fn new(config: &GatewayConfig, settings: Settings) -> Result<Arc<Gateway>, GatewayError> {
        let mut files: Vec<PathBuf> = config.files.clone();
        for s in &config.servers {
            if !files.contains(&s.file) {
                files.push(s.file.clone());
            }
        }
        let shared = Shared::new(crate::chain::Chain::check(&files)?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolwright-gateway")
            .enable_all()
            .build()
            .map_err(|e| GatewayError::Runtime(e.to_string()))?;
        let gateway = Arc::new(Gateway {
            runtime: Some(runtime),
            files,
            server: OnceLock::new(),
            state_file: config.state_file.clone(),
            separator: config.separator.clone(),
            upstreams: Mutex::new(Vec::new()),
            pins: Pins::new(config.state_file.clone()),
            reserved: Mutex::new(BTreeSet::new()),
            registered: Mutex::new(Vec::new()),
            installed: Mutex::new(None),
            listed: Mutex::new(BTreeMap::new()),
            reported: Mutex::new(BTreeSet::new()),
            linted: Mutex::new(BTreeMap::new()),
        });
        let events: Arc<dyn Events> = Arc::new(Hub(Arc::downgrade(&gateway)));
        let mut ups = Vec::with_capacity(config.servers.len());
        for server in &config.servers {
            let timeout = server
                .spec
                .timeout
                .map(|d| d.0)
                .unwrap_or(settings.call_timeout);
            ups.push(Upstream::new(
                server,
                timeout,
                gateway.handle().clone(),
                events.clone(),
                &shared,
                settings.telemetry.clone(),
            )?);
        }
        *gateway.upstreams.lock() = ups;
        Ok(gateway)
    }

    /// The gateway's runtime.
    fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("the runtime is there until the gateway is dropped")
            .handle()
    }

    /// `--config FILE` for each config file, for a command the gateway suggests; nothing
    /// when the file is the default `./toolwright.yaml`.
    fn config_flags(&self) -> String {
        let default = std::fs::canonicalize("toolwright.yaml").ok();
        let only_default = match self.files.as_slice() {
            [one] => default.is_some() && std::fs::canonicalize(one).ok() == default,
            _ => false,
        };
        if only_default {
            return String::new();
        }
        self.files
            .iter()
            .map(|f| {
                let abs = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
                format!(" --config {}", shell_word(&abs.display().to_string()))
            })
            .collect()
    }

    fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams
            .lock()
            .iter()
            .find(|u| u.name() == name)
            .cloned()
    }

    /// The upstreams, in config order.
    pub fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.upstreams.lock().clone()
    }

    /// What keeps the gateway from being ready (for `/readyz`): each `eager` upstream
    /// without a live connection. Lazy ones connect on first use and are not asked.
    pub fn problems(&self) -> Vec<String> {
        self.upstreams()
            .iter()
            .filter(|u| u.spec().start == StartSpec::Eager && u.current().is_none())
            .map(|u| format!("upstream {} is not connected", u.name()))
            .collect()
    }

    /// Starts the `eager` servers now, in the background, and watches the state file.
    pub fn start(self: &Arc<Self>) {
        for up in self.upstreams() {
            if up.spec().start == StartSpec::Eager {
                let gw = self.clone();
                self.handle().spawn(async move { gw.refresh(&up).await });
            }
        }
        let gw = Arc::downgrade(self);
        let path = self.state_file.clone();
        self.handle().spawn(async move {
            let stamp = |p: &Path| {
                std::fs::metadata(p)
                    .and_then(|m| Ok((m.modified()?, m.len())))
                    .ok()
            };
            let mut last = stamp(&path);
            let mut tick = tokio::time::interval(PIN_POLL);
            loop {
                tick.tick().await;
                let now = stamp(&path);
                if now != last {
                    last = now;
                    match gw.upgrade() {
                        Some(g) => g.reload_pins(),
                        None => return,
                    }
                }
            }
        });
    }

    /// Lists every server's tools into the server, waiting for them (at most
    /// 20 s): called where the start-up tools are registered, after the
    /// built-in and declared ones, whose names no upstream tool may take. A server that
    /// cannot be reached is logged and tried again with backoff; its tools join the list
    /// when it comes up.
    pub fn register_all(self: &Arc<Self>, server: &Server, reserved: BTreeSet<String>) {
        *self.reserved.lock() = reserved;
        let _ = self.server.set(server.clone());
        // A lazy server whose tools are pinned is served from its pins and started by the
        // first call that needs it; the others are listed now.
        let mut to_list = Vec::new();
        // Read once for every lazy server (an unreadable file pins nothing here; listing
        // reports it).
        let mut pins = None;
        for up in self.upstreams() {
            let already = self.listed.lock().contains_key(up.name());
            if already || up.current().is_some() {
                continue;
            }
            let pinned = match up.spec().start {
                StartSpec::Lazy => pins
                    .get_or_insert_with(|| self.pins.load().ok())
                    .as_ref()
                    .and_then(|state| pinned_definitions(state, up.name())),
                StartSpec::Eager => None,
            };
            match pinned {
                Some(defs) => {
                    self.listed.lock().insert(up.name().to_owned(), defs);
                }
                None => to_list.push(up),
            }
        }
        self.install_all();
        let gw = self.clone();
        let all = self.handle().spawn(async move {
            let mut tasks = Vec::new();
            for up in to_list {
                let gw = gw.clone();
                tasks.push(tokio::spawn(async move { gw.refresh(&up).await }));
            }
            for t in tasks {
                let _ = t.await;
            }
        });
        if !self.wait_off_runtime(async move { all.await.is_ok() }, FIRST_LIST_WAIT) {
            tracing::warn!(
                "some upstreams were not listed within {FIRST_LIST_WAIT:?}; their tools join when they answer"
            );
        }
    }

    /// Registers the resources, resource templates and prompts of the `eager` servers in
    /// `server`, waiting for them to start (at most 20 s). Call it before
    /// serving: the capabilities sent at `initialize` say whether there are any.
    pub fn register_catalog(self: &Arc<Self>, server: &Server) {
        let eager: Vec<Arc<Upstream>> = self
            .upstreams()
            .into_iter()
            .filter(|u| u.spec().start == StartSpec::Eager)
            .collect();
        if eager.is_empty() {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let separator = self.separator.clone();
        self.wait_off_runtime(
            async move {
                for up in eager {
                    let prefix = up.prefix().to_owned();
                    let sep = separator.clone();
                    let name_of = move |n: &str| naming::exposed_name(&prefix, &sep, n);
                    let offer = catalog::offer(&up, &name_of).await;
                    let _ = tx.send((up.name().to_owned(), offer));
                }
                true
            },
            FIRST_LIST_WAIT,
        );
        for (name, offer) in rx.try_iter() {
            for r in offer.resources {
                if let Err(e) = server.register_resource(r) {
                    eprintln!("toolwright: upstream {name}: {e}");
                }
            }
            for t in offer.templates {
                if let Err(e) = server.register_template(t) {
                    eprintln!("toolwright: upstream {name}: {e}");
                }
            }
            for p in offer.prompts {
                if let Err(e) = server.register_prompt(p) {
                    eprintln!("toolwright: upstream {name}: {e}");
                }
            }
        }
    }

    async fn refresh_named(self: &Arc<Self>, name: &str) {
        if let Some(up) = self.upstream(name) {
            self.refresh(&up).await;
        }
    }

    /// Lists one server's tools and swaps them into the server; on failure, logs and
    /// schedules another attempt after the backoff.
    fn refresh(self: &Arc<Self>, up: &Arc<Upstream>) -> BoxFuture<'static, ()> {
        let gw = self.clone();
        let up = up.clone();
        Box::pin(async move {
            let Err(e) = gw.try_refresh(&up).await else {
                return;
            };
            // A failure to connect was logged where it was counted (Upstream::failed).
            if !matches!(e, GatewayError::Unavailable { .. }) {
                tracing::warn!(server = %up.name(), "{e}");
            }
            if let Some(wait) = up.retry_in() {
                let again = gw.clone();
                gw.handle().spawn(async move {
                    tokio::time::sleep(wait).await;
                    if up.current().is_none() {
                        again.refresh(&up).await;
                    }
                });
            }
        })
    }

    async fn try_refresh(self: &Arc<Self>, up: &Arc<Upstream>) -> Result<(), GatewayError> {
        let fresh = up.current().is_none();
        let peer = up.peer().await?;
        if fresh {
            return Ok(()); // a new connection is listed as it comes up (Events::connected)
        }
        let defs =
            peer.list_all("tools/list", "tools")
                .await
                .map_err(|e| GatewayError::Upstream {
                    server: up.name().to_owned(),
                    reason: format!("tools/list failed: {e}"),
                })?;
        up.healthy();
        self.lint(up.name(), &defs);
        self.listed.lock().insert(up.name().to_owned(), defs);
        self.install_all();
        Ok(())
    }

    /// Reports lint findings on a server's definitions, once per distinct listing.
    fn lint(&self, server: &str, defs: &[Value]) {
        let digest = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            Value::Array(defs.to_vec()).to_string().hash(&mut h);
            h.finish()
        };
        if self.linted.lock().insert(server.to_owned(), digest) == Some(digest) {
            return;
        }
        let report = toolwright_lint::lint(defs, &toolwright_lint::Options::default());
        if !report.findings.is_empty() {
            // One line here; the findings at debug level, and from `toolwright lint`.
            tracing::warn!(
                server,
                "upstream {server}'s tools have lint findings ({}); `toolwright lint{}` shows them",
                report.summary(),
                self.config_flags(),
            );
            tracing::debug!(
                server,
                "lint of upstream {server}'s tools:\n{}",
                report.render_human(false)
            );
        }
    }

    /// Turns every server's last listing into tools and swaps them all in at once: names
    /// are only known to be free once every listing is merged.
    fn install_all(&self) {
        let Some(target) = self.server.get() else {
            return; // register_all installs what was listed before
        };
        let ups = self.upstreams();
        let listed = self.listed.lock().clone();
        let mut per_server = Vec::new();
        let mut verdicts: BTreeMap<String, BTreeMap<String, Verdict>> = BTreeMap::new();
        for up in &ups {
            let Some(defs) = listed.get(up.name()) else {
                continue;
            };
            let exposed = naming::expose(up.config(), &self.separator, defs);
            let pairs: Vec<(&str, &Value)> = exposed
                .tools
                .iter()
                .map(|t| (t.upstream.as_str(), &t.original))
                .collect();
            match self.pins.check(up.name(), &pairs) {
                Ok(v) => {
                    let by_name = pairs.iter().map(|(n, _)| (*n).to_owned()).zip(v);
                    verdicts.insert(up.name().to_owned(), by_name.collect());
                }
                Err(e) => {
                    // Without the pins nothing of this server can be checked: none served.
                    self.report(format!(
                        "upstream {}: its tools are not served: {e}",
                        up.name()
                    ));
                    continue;
                }
            }
            per_server.push(exposed);
        }
        let set = naming::merge(per_server, &self.reserved.lock());
        for d in set.dropped() {
            self.report(format!("upstream {d}"));
        }
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut names = Vec::new();
        let mut refused: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for e in set.tools() {
            let Some(up) = ups.iter().find(|u| u.name() == e.server) else {
                continue;
            };
            let verdict = verdicts.get(&e.server).and_then(|v| v.get(&e.upstream));
            match build_tool(up, e, verdict, &self.config_flags()) {
                Ok(t) => {
                    if let Standing::Refused(why) = &t.standing {
                        self.report(format!("upstream {}: {why}", e.server));
                        refused
                            .entry(e.server.clone())
                            .or_default()
                            .insert(e.upstream.clone(), why.clone());
                    }
                    names.push(t.definition.name.clone());
                    tools.push(Arc::new(t));
                }
                Err(reason) => self.report(format!("upstream {}: {reason}", e.server)),
            }
        }
        for up in &ups {
            if listed.contains_key(up.name()) {
                up.set_refused(refused.remove(up.name()).unwrap_or_default());
            }
        }
        // The same set again (a listing that changed nothing, pins re-read) is not swapped
        // in: clients would be told of a change there is not.
        let digest = installed_digest(&tools);
        if *self.installed.lock() == Some(digest) {
            return;
        }
        let mut registered = self.registered.lock();
        match target.replace_tools(&registered, tools) {
            Ok(()) => {
                *registered = names;
                *self.installed.lock() = Some(digest);
            }
            Err(e) => eprintln!("toolwright: the upstream tools cannot be served: {e}"),
        }
    }

    /// Says `text` on stderr, once.
    fn report(&self, text: String) {
        if self.reported.lock().insert(text.clone()) {
            eprintln!("toolwright: {text}");
        }
    }

    /// Re-reads the state file (after `toolwright trust accept`) and re-installs every
    /// server's last listing against it.
    pub fn reload_pins(&self) {
        self.install_all();
    }

    /// Starts every upstream and lists its tools, without serving them (for
    /// `toolwright lint`): each server's definitions as received, or why it could not be
    /// listed. Waits at most `limit` in all.
    pub fn list_each(
        self: &Arc<Self>,
        limit: Duration,
    ) -> Vec<(String, Result<Vec<Value>, String>)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let ups = self.upstreams();
        let names: Vec<String> = ups.iter().map(|u| u.name().to_owned()).collect();
        self.wait_off_runtime(
            async move {
                let mut tasks = Vec::new();
                for up in ups {
                    let tx = tx.clone();
                    tasks.push(tokio::spawn(async move {
                        let listed = match up.peer().await {
                            Ok(peer) => peer
                                .list_all("tools/list", "tools")
                                .await
                                .map_err(|e| format!("tools/list failed: {e}")),
                            Err(e) => Err(e.to_string()),
                        };
                        let _ = tx.send((up.name().to_owned(), listed));
                    }));
                }
                for t in tasks {
                    let _ = t.await;
                }
                true
            },
            limit,
        );
        let mut got: BTreeMap<String, Result<Vec<Value>, String>> = rx.try_iter().collect();
        names
            .into_iter()
            .map(|n| {
                let r = got
                    .remove(&n)
                    .unwrap_or_else(|| Err(format!("no answer within {limit:?}")));
                (n, r)
            })
            .collect()
    }

    /// Closes every upstream, all at once: a stdio server gets EOF, and its process group
    /// is killed when it has not exited after a grace (2 s).
    pub fn shutdown(&self) {
        let ups = self.upstreams();
        self.wait_off_runtime(
            async move {
                let closing: Vec<_> = ups
                    .into_iter()
                    .map(|up| tokio::spawn(async move { up.close().await }))
                    .collect();
                for c in closing {
                    let _ = c.await;
                }
                true
            },
            Duration::from_secs(3),
        );
    }

    /// Runs `fut` on the gateway's runtime and waits for it here, at most `limit`; true
    /// when it finished and said so. The wait happens on a thread of its own, so this may
    /// be called from anywhere, a thread of another runtime included.
    fn wait_off_runtime(
        &self,
        fut: impl std::future::Future<Output = bool> + Send + 'static,
        limit: Duration,
    ) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = self.handle().clone();
        std::thread::spawn(move || {
            let done = handle.block_on(async { tokio::time::timeout(limit, fut).await });
            let _ = tx.send(done.unwrap_or(false));
        });
        rx.recv_timeout(limit + Duration::from_millis(200))
            .unwrap_or(false)
    }
}
