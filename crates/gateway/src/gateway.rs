//! The gateway: every upstream of the config, their tools in this server's tool set, and
//! keeping that set current.
//!
//! Upstream I/O runs on a small runtime of the gateway's own (one worker), so upstreams
//! are reached the same way whether the server serves stdio or HTTP, and from the warm-up
//! thread that registers the start-up tools. The serving transport runs its calls on that
//! same runtime ([`Gateway::runtime`]): an upstream's answer then wakes the call waiting
//! for it on the thread that reads it, with no hop to another thread. An upstream's tools are (re)listed when it connects and
//! when it says its list changed; each listing is linted, and every server's last listing
//! goes through the install plan (`plan.rs`, a pure function: named, checked against
//! the pins, given its effective annotations and standing), whose tools are swapped into
//! the server in one step ([`Server::replace_tools`]), which tells clients once.
//!
//! Their resources, resource templates and prompts are kept the same way (`catalog.rs`):
//! listed as each connection comes up and when the upstream says a list changed, and
//! swapped into the server in one step.
//!
//! What changes while the gateway runs is one `State` behind one lock. The upstreams are a
//! list swapped whole when the config's `servers:` change (`reload.rs`); a call holds its
//! upstream (through its tool), so a swap never reaches it.

use crate::catalog;
use crate::error::GatewayError;
use crate::hub::Hub;
use crate::install::{installed_digest, pinned_definitions, shell_word};
use crate::pin::Pins;
use crate::plan::{self, Inputs, Listing};
use crate::upstream::{Events, Shared, Upstream};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use toolwright_client::{BoxFuture, Peer};
use toolwright_server::catalog::CatalogKeys;
use toolwright_server::{Server, Tool};
use toolwright_toolfile::config::GatewayConfig;
use toolwright_toolfile::servers::StartSpec;

/// How long the first listing of the start-up servers may hold up the first `tools/list`.
pub(crate) const FIRST_LIST_WAIT: Duration = Duration::from_secs(20);
/// How often the state file is looked at for `toolwright trust accept`.
const PIN_POLL: Duration = Duration::from_millis(300);

/// What the gateway needs to know about the server it serves in.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The longest a call may take when the server spec does not say.
    pub call_timeout: Duration,
    /// Where each upstream session's duration is recorded (`mcp.client.session.duration`).
    pub telemetry: Option<Arc<toolwright_server::telemetry::Telemetry>>,
    /// Where tokens exchanged for upstreams are shared with other replicas (a Redis), if
    /// anywhere; else each process keeps its own.
    pub tokens: Option<Arc<dyn crate::exchange::TokenStore>>,
}

/// The gateway.
pub struct Gateway {
    /// Taken when the gateway is dropped, and shut down without waiting: a gateway may be
    /// dropped on a thread of another runtime.
    runtime: Option<tokio::runtime::Runtime>,
    /// The config files, for the commands the gateway suggests (`toolwright trust …`).
    files: Vec<PathBuf>,
    /// Set by [`Gateway::register_all`]; listings that arrive before are installed then.
    pub(crate) server: OnceLock<Server>,
    /// Set by [`Gateway::register_catalog`]: where upstream resources and prompts go.
    pub(crate) catalog_target: OnceLock<Server>,
    pub(crate) state_file: PathBuf,
    pub(crate) separator: String,
    /// In config order; swapped whole by a reload of `servers:`.
    pub(crate) upstreams: Mutex<Arc<Vec<Arc<Upstream>>>>,
    /// What a new upstream is made with (a reload's).
    pub(crate) shared: Shared,
    pub(crate) settings: Settings,
    pins: Pins,
    /// Everything that changes while the gateway runs, behind one lock.
    pub(crate) state: Mutex<State>,
    /// Upstream skills, verified and served (`skills.rs`).
    pub(crate) skills: crate::skills::Held,
}

/// What changes while the gateway runs. One lock: an install reads and writes most of it
/// at once, and never waits on anything but the state file's lock while it holds it.
#[derive(Default)]
pub(crate) struct State {
    /// Names of built-in and declared tools: no upstream tool may take one.
    pub(crate) reserved: BTreeSet<String>,
    /// The upstream tools registered now, by exposed name.
    pub(crate) registered: Vec<String>,
    /// A digest of what is registered now (definitions and standing).
    installed: Option<u64>,
    /// The last listing of each server, as received (or as pinned, before it connects).
    pub(crate) listed: BTreeMap<String, Vec<Value>>,
    /// What was reported already (tools that are not served, and why), so each is said once.
    pub(crate) reported: BTreeSet<String>,
    /// A digest of each server's definitions whose lint findings were reported.
    pub(crate) linted: BTreeMap<String, u64>,
    /// Servers with an attempt to start them again scheduled, so there is one at a time.
    pub(crate) retrying: BTreeSet<String>,
    /// The last catalog listing of each server (resources, templates, prompts).
    pub(crate) offers: BTreeMap<String, catalog::Offer>,
    /// Servers a client's catalog request started already (each is started once for it).
    pub(crate) catalog_tried: BTreeSet<String>,
    /// The upstream items in the server's catalog now.
    pub(crate) catalog_registered: CatalogKeys,
    /// True while a reload swaps the upstreams: installs wait for its end, then happen once.
    pub(crate) reloading: bool,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("separator", &self.separator)
            .finish_non_exhaustive()
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
        let mut shared = Shared::new(crate::chain::Chain::check(&files)?);
        shared.tokens.clone_from(&settings.tokens);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolwright-gateway")
            .enable_all()
            .build()
            .map_err(|e| GatewayError::Runtime(e.to_string()))?;
        let handle = runtime.handle().clone();
        let mut failure = None;
        let gateway = Arc::new_cyclic(|me: &Weak<Gateway>| {
            let events: Arc<dyn Events> = Arc::new(Hub(me.clone()));
            let made = config
                .servers
                .iter()
                .map(|server| {
                    let timeout = server
                        .spec
                        .timeout
                        .map(|d| d.0)
                        .unwrap_or(settings.call_timeout);
                    Upstream::new(
                        server,
                        timeout,
                        handle.clone(),
                        events.clone(),
                        &shared,
                        settings.telemetry.clone(),
                    )
                })
                .collect::<Result<Vec<_>, _>>();
            let upstreams = made.unwrap_or_else(|e| {
                failure = Some(e);
                Vec::new()
            });
            Gateway {
                runtime: Some(runtime),
                files,
                server: OnceLock::new(),
                catalog_target: OnceLock::new(),
                state_file: config.state_file.clone(),
                separator: config.separator.clone(),
                upstreams: Mutex::new(Arc::new(upstreams)),
                shared: shared.clone(),
                settings: settings.clone(),
                pins: Pins::new(config.state_file.clone()),
                state: Mutex::new(State::default()),
                skills: crate::skills::Held::default(),
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(gateway),
        }
    }

    /// The runtime that upstream connections live on, for the transport to run its calls
    /// on too: a forwarded call and the reader of its upstream then share one thread.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        self.handle()
    }

    /// The gateway's runtime.
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
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

    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams_now()
            .iter()
            .find(|u| u.name() == name)
            .cloned()
    }

    /// The upstreams now, in config order.
    pub(crate) fn upstreams_now(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.upstreams.lock().clone()
    }

    /// The upstreams, in config order.
    pub fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.upstreams_now().to_vec()
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
        let _ = self.server.set(server.clone());
        let to_list = {
            let mut st = self.state.lock();
            st.reserved = reserved;
            self.list_from_pins(&mut st)
        };
        self.install_all();
        let gw = self.clone();
        let all = async move {
            let tasks: Vec<_> = to_list
                .into_iter()
                .map(|up| {
                    let gw = gw.clone();
                    tokio::spawn(async move { gw.refresh(&up).await })
                })
                .collect();
            for t in tasks {
                let _ = t.await;
            }
            true
        };
        if !self.wait_off_runtime(all, FIRST_LIST_WAIT) {
            tracing::warn!(
                "some upstreams were not listed within {FIRST_LIST_WAIT:?}; their tools join when they answer"
            );
        }
    }

    /// Lists each lazy server whose tools are pinned from its pins (it is started by the
    /// first call that needs it); the others, not listed yet, are what to list now.
    pub(crate) fn list_from_pins(&self, st: &mut State) -> Vec<Arc<Upstream>> {
        let mut to_list = Vec::new();
        // Read once for every lazy server (an unreadable file pins nothing here; listing
        // reports it).
        let mut pins = None;
        for up in self.upstreams_now().iter() {
            if st.listed.contains_key(up.name()) || up.current().is_some() {
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
                    st.listed.insert(up.name().to_owned(), defs);
                }
                None => to_list.push(up.clone()),
            }
        }
        to_list
    }

    /// Serves the upstreams' resources, resource templates and prompts in `server`: the
    /// `eager` servers' now (waiting for them to start, at most 20 s), a lazy server's
    /// once it is started (a client's first catalog request starts it); the `eager`
    /// servers' skills too (`skills.rs`). Call it before serving: the capabilities sent
    /// at `initialize` say whether there are any.
    pub fn register_catalog(self: &Arc<Self>, server: &Server) {
        catalog::register(self, server);
        self.list_skills_before_serving();
        self.install_skills();
    }

    pub(crate) async fn refresh_named(self: &Arc<Self>, name: &str) {
        if let Some(up) = self.upstream(name) {
            self.refresh(&up).await;
        }
    }

    /// Lists one server's tools and swaps them into the server; on failure, logs and
    /// schedules another attempt after the backoff.
    pub(crate) fn refresh(self: &Arc<Self>, up: &Arc<Upstream>) -> BoxFuture<'static, ()> {
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
                gw.retry_after(up, wait);
            }
        })
    }

    /// Lists `up` again after `wait`, unless it is up by then (its connection lists it),
    /// an attempt is scheduled already (one attempt per backoff, so each failure is said
    /// once), or it was removed from the config meanwhile (the wait does not keep it).
    pub(crate) fn retry_after(self: &Arc<Self>, up: Arc<Upstream>, wait: Duration) {
        let name = up.name().to_owned();
        if !self.state.lock().retrying.insert(name.clone()) {
            return;
        }
        let gw = self.clone();
        let up = Arc::downgrade(&up);
        self.handle().spawn(async move {
            tokio::time::sleep(wait).await;
            gw.state.lock().retrying.remove(&name);
            let Some(up) = up.upgrade() else { return };
            if gw.is_current(&up) && up.current().is_none() {
                gw.refresh(&up).await;
            }
        });
    }

    /// Whether `up` is one of the upstreams now (not one a reload replaced).
    pub(crate) fn is_current(&self, up: &Arc<Upstream>) -> bool {
        self.upstreams_now().iter().any(|u| Arc::ptr_eq(u, up))
    }

    async fn try_refresh(self: &Arc<Self>, up: &Arc<Upstream>) -> Result<(), GatewayError> {
        let fresh = up.current().is_none();
        let peer = up.peer().await?;
        if fresh {
            return Ok(()); // a new connection is listed as it comes up (Events::connected)
        }
        let defs = list_over(up, &peer).await?;
        up.healthy();
        self.lint(up.name(), &defs);
        self.state.lock().listed.insert(up.name().to_owned(), defs);
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
        let seen = self.state.lock().linted.insert(server.to_owned(), digest);
        if seen == Some(digest) {
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

    /// Turns every server's last listing into tools and swaps them all in at once (names
    /// are only known to be free once every listing is merged): the install plan
    /// ([`plan::plan`]) against the state file, read and written once, then applied. Under
    /// the state's lock throughout, so two installs never interleave.
    pub(crate) fn install_all(&self) {
        let Some(target) = self.server.get() else {
            return; // register_all installs what was listed before
        };
        let flags = self.config_flags();
        let mut st = self.state.lock();
        if st.reloading {
            return; // the reload installs once it is done
        }
        let upstreams = self.upstreams_now();
        let listings: Vec<Listing<'_>> = upstreams
            .iter()
            .filter_map(|up| {
                let tools = st.listed.get(up.name())?;
                Some(Listing {
                    server: up.config(),
                    tools,
                    tasks: up.takes_tasks(),
                })
            })
            .collect();
        let inputs = Inputs {
            listings: &listings,
            reserved: &st.reserved,
            separator: &self.separator,
            config_flags: &flags,
            reported: &st.reported,
        };
        let planned = if listings.is_empty() {
            // Nothing to check: the state file is not touched.
            plan::plan(&inputs, Ok(&mut crate::pin::State::default())).0
        } else {
            match self.pins.with_state(|state| plan::plan(&inputs, Ok(state))) {
                Ok(p) => p,
                Err(e) => plan::plan(&inputs, Err(&e)).0,
            }
        };
        drop(listings);
        self.apply(target, &mut st, planned);
    }

    /// Installs a plan: its reports said, its refusals told to their upstreams, its tools
    /// attached to their upstreams and swapped in (unless they are what is served now).
    fn apply(&self, target: &Server, st: &mut State, planned: plan::Plan) {
        for text in planned.reports {
            tracing::warn!("{text}");
            st.reported.insert(text);
        }
        let mut refused = planned.refused;
        for up in self.upstreams_now().iter() {
            if let Some(r) = refused.remove(up.name()) {
                up.set_refused(r);
            }
        }
        let mut names = Vec::with_capacity(planned.tools.len());
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(planned.tools.len());
        for t in planned.tools {
            let Some(up) = self.upstream(&t.server) else {
                continue;
            };
            names.push(t.definition.name.clone());
            tools.push(Arc::new(t.attach(up)));
        }
        // The same set again (a listing that changed nothing, pins re-read) is not swapped
        // in: clients would be told of a change there is not.
        let digest = installed_digest(&tools);
        if st.installed == Some(digest) {
            return;
        }
        match target.replace_tools(&st.registered, tools) {
            Ok(()) => {
                st.registered = names;
                st.installed = Some(digest);
            }
            Err(e) => tracing::error!("the upstream tools cannot be served: {e}"),
        }
    }

    /// Re-reads the state file (after `toolwright trust accept`) and re-installs every
    /// server's last listing against it.
    pub fn reload_pins(&self) {
        self.install_all();
        self.install_skills();
    }

    /// Starts every upstream and lists its tools, without serving them (for
    /// `toolwright lint`): each server's definitions as received, or why it could not be
    /// listed. Waits at most `limit` in all.
    pub fn list_each(
        self: &Arc<Self>,
        limit: Duration,
    ) -> Vec<(String, Result<Vec<Value>, GatewayError>)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let ups = self.upstreams();
        let names: Vec<String> = ups.iter().map(|u| u.name().to_owned()).collect();
        self.wait_off_runtime(
            async move {
                let tasks: Vec<_> = ups
                    .into_iter()
                    .map(|up| {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            let _ = tx.send((up.name().to_owned(), list_tools(&up).await));
                        })
                    })
                    .collect();
                for t in tasks {
                    let _ = t.await;
                }
                true
            },
            limit,
        );
        let mut got: BTreeMap<String, Result<Vec<Value>, GatewayError>> = rx.try_iter().collect();
        names
            .into_iter()
            .map(|server| {
                let r = got.remove(&server).unwrap_or_else(|| {
                    Err(GatewayError::NoAnswer {
                        server: server.clone(),
                        limit,
                    })
                });
                (server, r)
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

    /// Runs `fut` as a task on the gateway's runtime and waits here for what it says, at
    /// most `limit`; true when it finished in time and said so.
    ///
    /// No thread is made for the wait: the task runs on the gateway's own worker and the
    /// caller blocks on a channel, which works from anywhere, a thread of another runtime
    /// included (where `Handle::block_on` would panic). What remains is that the caller's
    /// thread blocks: the callers ([`Gateway::register_all`] from the server's warm-up,
    /// start-up, `toolwright lint`, shutdown) are synchronous by contract. On a worker of a
    /// multi-threaded runtime (the gateway's own, where the transport serves its calls) the
    /// wait gives the worker's place up first ([`tokio::task::block_in_place`]), so the task
    /// it waits for still runs.
    pub(crate) fn wait_off_runtime(
        &self,
        fut: impl std::future::Future<Output = bool> + Send + 'static,
        limit: Duration,
    ) -> bool {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let done = tokio::time::timeout(limit, fut).await.unwrap_or(false);
            let _ = tx.send(done);
        });
        // A little longer than the task's own limit, so its answer wins when both are due.
        let wait = || {
            rx.recv_timeout(limit + Duration::from_millis(200))
                .unwrap_or(false)
        };
        let on_worker = tokio::task::try_id().is_some()
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if on_worker {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        }
    }
}

/// One upstream's tools, as received (for [`Gateway::list_each`]).
async fn list_tools(up: &Arc<Upstream>) -> Result<Vec<Value>, GatewayError> {
    list_over(up, &up.peer().await?).await
}

/// `tools/list` over `peer`, every page, a failure named by the upstream's name.
async fn list_over(up: &Upstream, peer: &Peer) -> Result<Vec<Value>, GatewayError> {
    peer.list_all("tools/list", "tools")
        .await
        .map_err(|e| GatewayError::Request {
            server: up.name().to_owned(),
            method: "tools/list".into(),
            reason: e.to_string(),
        })
}
