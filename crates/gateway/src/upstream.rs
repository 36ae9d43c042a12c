//! One upstream server: how to reach it, its connection, and starting it again with
//! backoff when it dies.
//!
//! A connection is made when something needs it ([`Upstream::peer`]): at start-up for an
//! `eager` server, else for the first list or call. When a stdio server exits, every call
//! waiting on it fails at once with the reason (the peer's `Closed` error, with the end
//! of its stderr), the gateway is told ([`Events::closed`]) and a new connection is made
//! after a backoff that doubles with each failure in a row (250 ms up to 30 s), so a
//! server that crashes on start is not started in a loop.
//!
//! An upstream is given roots only when its entry says so (`roots:`): without it the
//! `roots` capability is not declared to it and `roots/list` is refused, so it keeps what
//! its own settings name. A stdio upstream's environment carries the chain of gateways
//! above it ([`crate::chain`]), and one gateway runs at most
//! [`MAX_UPSTREAM_PROCESSES`] of them at once.

use crate::chain::{CHAIN_VAR, Chain, MAX_UPSTREAM_PROCESSES};
use crate::error::GatewayError;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use toolwright_client::{
    BoxFuture, ClientError, ConnectOptions, EraChoice, Peer, PeerHandler, PeerOptions, Target,
};
use toolwright_jsonrpc::ErrorObject;
use toolwright_protocol::{ClientCapabilities, Implementation};
use toolwright_server::telemetry::{Telemetry, UpstreamSession};
use toolwright_toolfile::config::{Roots, Server, Transport};
use toolwright_toolfile::servers::{EraSpec, ServerSpec};
use toolwright_toolfile::template::Template;

/// The first wait before starting a dead server again; it doubles per failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A call that arrives while the server waits to be started again waits this long at most
/// for the next attempt; a longer wait is refused with the reason.
const WAIT_FOR_RESTART: Duration = Duration::from_secs(5);

/// Variables a stdio server gets from the gateway's environment when set (as declared
/// tools do), besides its `inherit_env`.
pub use toolwright_toolfile::rules::ALLOWED_ENV;

/// What the gateway hears from an upstream.
pub trait Events: Send + Sync + 'static {
    /// The server said a list changed (`notifications/tools/list_changed` …).
    fn notification(&self, server: &str, method: &str, params: &Value);
    /// A new connection is up (the first, or one after a restart); the connection is
    /// handed out once this is done.
    fn connected(&self, server: &str) -> BoxFuture<'static, ()>;
    /// The connection died; `why` says how.
    fn closed(&self, server: &str, why: &str);
    /// A request from the server that belongs to no call.
    fn request(
        &self,
        server: &str,
        method: String,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>>;
}

#[derive(Default)]
struct State {
    peer: Option<Peer>,
    /// The session of `peer`, as telemetry records it (until the peer goes).
    session: Option<UpstreamSession>,
    /// Failures in a row (connecting, or the connection dying).
    failures: u32,
    /// Not before this instant may the next connection be tried.
    not_before: Option<Instant>,
    /// Bumped for each new connection, so a late `closed` of an old one is ignored.
    generation: u64,
    /// Attempts to connect that ended, so a caller that waited for one shares its outcome.
    attempts: u64,
    /// Why the last attempt, or the last connection, failed.
    last_failure: Option<String>,
    /// The process `peer` runs in, counted against the gateway's bound (stdio only).
    process: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// What every upstream of one gateway shares.
#[derive(Debug, Clone)]
pub struct Shared {
    /// The chain of gateways this one runs under, passed on to its stdio upstreams.
    pub chain: Chain,
    /// One permit per upstream process running now.
    pub processes: Arc<tokio::sync::Semaphore>,
    /// Where exchanged tokens are shared with other replicas, if anywhere.
    pub tokens: Option<Arc<dyn crate::exchange::TokenStore>>,
}

impl Shared {
    /// For a gateway of `chain`.
    pub fn new(chain: Chain) -> Shared {
        Shared {
            chain,
            processes: Arc::new(tokio::sync::Semaphore::new(MAX_UPSTREAM_PROCESSES)),
            tokens: None,
        }
    }
}

/// What an upstream gets when it asks `roots/list` (its entry's `roots:`).
#[derive(Debug, Clone)]
pub enum Offered {
    /// Nothing; the capability is not declared to it.
    None,
    /// These directories, as `file://` URIs.
    Dirs(Arc<Vec<String>>),
    /// The roots of the client whose call it serves; none outside a call.
    Client,
}

/// One upstream server.
pub struct Upstream {
    name: String,
    target: Target,
    options: PeerOptions,
    server: Server,
    /// The gateway's runtime: connections live there, whoever asked for them.
    handle: tokio::runtime::Handle,
    state: Mutex<State>,
    /// Held while connecting, so concurrent callers share one attempt.
    connecting: tokio::sync::Mutex<()>,
    events: Arc<dyn Events>,
    /// What it gets when it asks `roots/list`.
    roots: Offered,
    /// Upstream processes running now, shared by the gateway's upstreams.
    processes: Option<Arc<tokio::sync::Semaphore>>,
    /// Its tools the gateway refuses now (quarantined or denied), with why: a call that
    /// started before its tool was refused checks here once it has the connection.
    refused: Mutex<BTreeMap<String, String>>,
    telemetry: Option<Arc<Telemetry>>,
    /// How telemetry names this upstream (`network.transport`, `server.address` and
    /// `server.port`), worked out once from its target.
    seen_as: crate::observe::SeenAs,
    /// Its calls' token exchange (`exchange:`), if it has one.
    exchange: Option<Arc<crate::exchange::Exchanger>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Fills the value of `server`'s `setting` (`env.KEY`) from the gateway's environment; a
/// variable that is not set is an error naming it.
pub(crate) fn expand(t: &Template, server: &str, setting: &str) -> Result<String, GatewayError> {
    if let Some(var) = t.env_vars().find(|v| std::env::var_os(v).is_none()) {
        return Err(GatewayError::UnsetVariable {
            server: server.to_owned(),
            setting: setting.to_owned(),
            var: var.to_owned(),
        });
    }
    let rendered = t
        .render(&Map::new(), &|v| std::env::var(v).ok(), &|s| {
            Ok(Cow::Borrowed(s))
        })
        .map_err(|e| GatewayError::Config {
            server: server.to_owned(),
            reason: format!("{setting}: {e}"),
        })?;
    Ok(rendered.unwrap_or_default())
}

/// How to reach a server.
fn reach(
    server: &Server,
    connect: ConnectOptions,
    chain: &Chain,
) -> Result<(Target, PeerOptions), GatewayError> {
    let mut options = PeerOptions {
        connect,
        env: Vec::new(),
        env_clear: true,
        cwd: None,
        capabilities: relayed_capabilities(server.roots != Roots::None),
        listen: true,
        observer: None,
    };
    options.connect.era = match server.spec.era {
        EraSpec::Auto => EraChoice::Auto,
        EraSpec::Modern => EraChoice::Modern,
        EraSpec::Legacy => EraChoice::Legacy,
    };
    let target = match &server.transport {
        Transport::Stdio {
            argv,
            env,
            inherit_env,
            cwd,
        } => {
            options.env = stdio_env(server, env, inherit_env, chain)?;
            options.cwd.clone_from(cwd);
            Target::command(argv)
        }
        Transport::Http {
            url,
            bearer_env,
            ca_cert,
        } => {
            http_options(
                server,
                url,
                bearer_env.as_deref(),
                ca_cert.as_deref(),
                &mut options.connect,
            )?;
            Target::Http { url: url.clone() }
        }
    };
    Ok((target, options))
}

/// The environment of a stdio server: [`ALLOWED_ENV`] and its `inherit_env` from the
/// gateway's, its `env:` over them, and last the chain of gateways above it.
fn stdio_env(
    server: &Server,
    env: &[(String, Template)],
    inherit_env: &[String],
    chain: &Chain,
) -> Result<Vec<(String, String)>, GatewayError> {
    let name = &server.name;
    let mut out: Vec<(String, String)> = Vec::new();
    let passed = ALLOWED_ENV
        .iter()
        .copied()
        .chain(inherit_env.iter().map(String::as_str));
    for var in passed {
        if let Ok(v) = std::env::var(var) {
            out.push((var.to_owned(), v));
        }
    }
    for (k, t) in env {
        let value = expand(t, name, &format!("env.{k}"))?;
        out.retain(|(n, _)| n != k);
        out.push((k.clone(), value));
    }
    // Last, so no `env:` replaces it: a gateway this server starts (or is) knows which
    // gateways are above it.
    out.retain(|(n, _)| n != CHAIN_VAR);
    out.push((CHAIN_VAR.to_owned(), chain.marker_for(name, &server.file)));
    Ok(out)
}

/// The TLS roots and bearer token of an HTTP server. Only https needs roots (the gateway
/// does no OAuth): $SSL_CERT_FILE and `ca_cert` are read for https servers alone.
fn http_options(
    server: &Server,
    url: &str,
    bearer_env: Option<&str>,
    ca_cert: Option<&std::path::Path>,
    connect: &mut ConnectOptions,
) -> Result<(), GatewayError> {
    let name = &server.name;
    if url.to_ascii_lowercase().starts_with("https://") {
        let files: Vec<std::path::PathBuf> = ca_cert.iter().map(|p| p.to_path_buf()).collect();
        connect.tls = toolwright_client::TlsRoots::from_env_and_files(&files).map_err(|e| {
            GatewayError::Config {
                server: name.clone(),
                reason: e.to_string(),
            }
        })?;
    }
    if let Some(var) = bearer_env {
        let token = std::env::var(var).map_err(|_| GatewayError::UnsetVariable {
            server: name.clone(),
            setting: "bearer_env".into(),
            var: var.to_owned(),
        })?;
        connect.auth = Some(toolwright_client::BearerToken::new(token));
    }
    Ok(())
}

/// What the gateway declares upstream: it relays sampling and elicitation to its own
/// clients (each call asks its client, and one that lacks the capability is refused there),
/// declares roots only to a server whose entry gives it some (`roots:`), and takes up the
/// Tasks extension (a legacy server hears it at `initialize`, a modern one in every
/// request's `_meta`): a call the upstream runs as a task is driven to its end by the
/// gateway tool (`task.rs`), whatever the gateway's own client can do.
fn relayed_capabilities(roots: bool) -> ClientCapabilities {
    let mut caps = serde_json::json!({
        "sampling": {},
        "elicitation": {"form": {}},
        "extensions": {toolwright_server::task::EXTENSION: {}},
    });
    if roots {
        caps["roots"] = serde_json::json!({"listChanged": false});
    }
    serde_json::from_value(caps).expect("capabilities parse")
}

/// `path` as a `file://` URI.
fn file_uri(path: &std::path::Path) -> String {
    url::Url::from_file_path(path)
        .map_or_else(|()| format!("file://{}", path.display()), |u| u.to_string())
}

/// The handler a peer reports to: forwards to the gateway's [`Events`] with the server's
/// name, and marks the upstream down when the connection dies.
struct Relay {
    upstream: Weak<Upstream>,
    generation: u64,
}

impl PeerHandler for Relay {
    fn request(
        &self,
        method: String,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        match self.upstream.upgrade() {
            Some(u) if method == "roots/list" => {
                let answer = u.roots_outside_call();
                Box::pin(async move { answer })
            }
            Some(u) => u.events.request(&u.name, method, params),
            None => Box::pin(async { Err(ErrorObject::internal("the gateway is shutting down")) }),
        }
    }

    fn notification(&self, method: &str, params: &Value) {
        if let Some(u) = self.upstream.upgrade() {
            u.events.notification(&u.name, method, params);
        }
    }

    fn closed(&self, why: &str) {
        if let Some(u) = self.upstream.upgrade() {
            u.died(self.generation, why);
        }
    }
}

/// A `roots/list` result naming `roots` (`file://` URIs).
pub fn roots_result(roots: &[String]) -> Value {
    serde_json::json!({
        "roots": roots.iter().map(|u| serde_json::json!({"uri": u})).collect::<Vec<_>>()
    })
}

fn backoff(failures: u32) -> Duration {
    let shift = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * (1u32 << shift)).min(MAX_BACKOFF)
}

impl Upstream {
    /// An upstream from its checked settings; nothing is started.
    ///
    /// # Errors
    ///
    /// When the spec names a variable that is not set, or is not a stdio or HTTP server.
    pub fn new(
        server: &Server,
        request_timeout: Duration,
        handle: tokio::runtime::Handle,
        events: Arc<dyn Events>,
        shared: &Shared,
        telemetry: Option<Arc<Telemetry>>,
    ) -> Result<Arc<Upstream>, GatewayError> {
        let mut connect = ConnectOptions {
            request_timeout,
            ..ConnectOptions::default()
        };
        let mut info = Implementation::new("toolwright-gateway", env!("CARGO_PKG_VERSION"));
        info.title = Some("toolwright gateway".into());
        connect.client_info = info;
        let (target, mut options) = reach(server, connect, &shared.chain)?;
        let exchange = crate::exchange::Exchanger::of(server, shared.tokens.clone())?.map(Arc::new);
        let seen_as = crate::observe::SeenAs::of(&target);
        options.observer = telemetry
            .as_ref()
            .map(|t| crate::observe::Watcher::upstream(t.clone(), seen_as.clone()));
        Ok(Arc::new(Upstream {
            name: server.name.clone(),
            seen_as,
            target,
            options,
            server: server.clone(),
            handle,
            state: Mutex::new(State::default()),
            connecting: tokio::sync::Mutex::new(()),
            events,
            roots: match &server.roots {
                Roots::None => Offered::None,
                Roots::Client => Offered::Client,
                Roots::Dirs(dirs) => {
                    Offered::Dirs(Arc::new(dirs.iter().map(|d| file_uri(d)).collect()))
                }
            },
            processes: matches!(server.transport, Transport::Stdio { .. })
                .then(|| shared.processes.clone()),
            refused: Mutex::new(BTreeMap::new()),
            telemetry,
            exchange,
        }))
    }

    /// Sets which of its tools are refused now, and why.
    pub fn set_refused(&self, refused: BTreeMap<String, String>) {
        *self.refused.lock() = refused;
    }

    /// Why `tool` (its upstream name) is refused now, if it is.
    pub fn refusal(&self, tool: &str) -> Option<String> {
        self.refused.lock().get(tool).cloned()
    }

    /// What it gets when it asks `roots/list`.
    pub fn roots(&self) -> &Offered {
        &self.roots
    }

    /// The answer to its `roots/list` outside any call: its directories, or an error
    /// saying why it gets none.
    pub fn roots_outside_call(&self) -> Result<Value, ErrorObject> {
        match &self.roots {
            Offered::Dirs(dirs) => Ok(roots_result(dirs)),
            Offered::None => Err(self.no_roots()),
            Offered::Client => Err(ErrorObject::internal(format!(
                "upstream {} is given the calling client's roots (`roots: client`), and no call is in progress",
                self.name
            ))),
        }
    }

    /// The refusal of `roots/list` to a server whose entry gives it no roots.
    pub(crate) fn no_roots(&self) -> ErrorObject {
        ErrorObject::new(
            toolwright_jsonrpc::code::METHOD_NOT_FOUND,
            format!(
                "the gateway gives upstream {} no roots (its entry has no `roots:`)",
                self.name
            ),
        )
    }

    /// Its calls' token exchange (`exchange:`), if it has one.
    pub fn exchange(&self) -> Option<&Arc<crate::exchange::Exchanger>> {
        self.exchange.as_ref()
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its settings as written.
    pub fn spec(&self) -> &ServerSpec {
        &self.server.spec
    }

    /// Its settings, checked.
    pub fn config(&self) -> &Server {
        &self.server
    }

    /// The namespace of its tools and prompts.
    pub fn prefix(&self) -> &str {
        &self.server.prefix
    }

    /// How telemetry names this upstream.
    pub(crate) fn seen_as(&self) -> &crate::observe::SeenAs {
        &self.seen_as
    }

    /// Whether the server, as last connected, advertises the Tasks extension (and so may
    /// answer any `tools/call` with a task).
    pub fn takes_tasks(&self) -> bool {
        self.current()
            .and_then(|p| p.capabilities())
            .and_then(|c| c.extensions)
            .is_some_and(|e| e.contains_key(toolwright_server::task::EXTENSION))
    }

    /// The live connection, if there is one.
    pub fn current(&self) -> Option<Peer> {
        self.state.lock().peer.clone().filter(|p| !p.is_closed())
    }

    /// The connection, made now if there is none. Concurrent callers share one attempt,
    /// its failure too: a caller that waited while another's attempt failed gets that
    /// failure rather than making (and logging) one more. While a dead server waits out
    /// its backoff, a caller waits for the next attempt when it is near, and is refused
    /// with the reason when it is not.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Unavailable`] with why the server cannot be reached.
    pub async fn peer(self: &Arc<Self>) -> Result<Peer, GatewayError> {
        if let Some(p) = self.current() {
            return Ok(p);
        }
        let seen = self.state.lock().attempts;
        let _guard = self.connecting.lock().await;
        if let Some(p) = self.current() {
            return Ok(p);
        }
        if let Some(why) = self.failed_meanwhile(seen) {
            return Err(self.unavailable(why));
        }
        let wait = {
            let s = self.state.lock();
            s.not_before
                .map(|t| t.saturating_duration_since(Instant::now()))
                .unwrap_or_default()
        };
        if wait > WAIT_FOR_RESTART {
            return Err(self.unavailable(format!(
                "it is started again in {:.1} s",
                wait.as_secs_f64()
            )));
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let generation = {
            let mut s = self.state.lock();
            s.generation += 1;
            s.generation
        };
        let process = match &self.processes {
            None => None,
            Some(p) => Some(p.clone().try_acquire_owned().map_err(|_| {
                self.unavailable(format!(
                    "the gateway runs at most {MAX_UPSTREAM_PROCESSES} upstream processes at once, and that many are running"
                ))
            })?),
        };
        let relay = Arc::new(Relay {
            upstream: Arc::downgrade(self),
            generation,
        });
        let connect = Peer::connect(self.target.clone(), self.options.clone(), relay);
        let joined = self.handle.spawn(connect).await;
        self.state.lock().attempts += 1;
        let connected = joined.unwrap_or_else(|e| {
            Err(ClientError::Io {
                context: "connecting".into(),
                source: std::io::Error::other(e.to_string()),
            })
        });
        match connected {
            Ok(peer) => {
                {
                    let mut s = self.state.lock();
                    s.peer = Some(peer.clone());
                    s.process = process;
                    s.not_before = None;
                    s.last_failure = None;
                    s.session = self.telemetry.as_ref().map(|t| {
                        let version = Some(peer.protocol_version().as_str());
                        t.upstream_session(version, self.seen_as.transport)
                    });
                }
                tracing::info!(server = %self.name, era = peer.era().as_str(), "upstream connected");
                self.events.connected(&self.name).await;
                Ok(peer)
            }
            Err(e) => {
                let why = e.to_string();
                self.failed(&why);
                Err(self.unavailable(why))
            }
        }
    }

    /// Why the attempt that ended after `seen` failed, when one did while this caller
    /// waited.
    fn failed_meanwhile(&self, seen: u64) -> Option<String> {
        let s = self.state.lock();
        (s.attempts != seen)
            .then(|| s.last_failure.clone())
            .flatten()
    }

    fn unavailable(&self, why: String) -> GatewayError {
        GatewayError::Unavailable {
            server: self.name.clone(),
            target: self.target.describe(),
            reason: why,
        }
    }

    /// Counts a failure and sets the backoff.
    fn failed(&self, why: &str) {
        let mut s = self.state.lock();
        s.peer = None;
        s.session = None;
        s.process = None;
        s.failures = s.failures.saturating_add(1);
        let wait = backoff(s.failures);
        s.not_before = Some(Instant::now() + wait);
        s.last_failure = Some(why.to_owned());
        tracing::warn!(server = %self.name, "upstream unavailable ({why}); next attempt in {wait:?}");
    }

    /// The connection of `generation` died.
    fn died(&self, generation: u64, why: &str) {
        if self.state.lock().generation != generation {
            return;
        }
        self.failed(why);
        self.events.closed(&self.name, why);
    }

    /// Counts the connection as healthy: the next failure starts the backoff afresh.
    pub fn healthy(&self) {
        self.state.lock().failures = 0;
    }

    /// The wait before the next attempt, if one is pending.
    pub fn retry_in(&self) -> Option<Duration> {
        self.state
            .lock()
            .not_before
            .map(|t| t.saturating_duration_since(Instant::now()))
    }

    /// Closes the connection (a stdio server gets EOF).
    pub async fn close(&self) {
        let (peer, session, process) = {
            let mut s = self.state.lock();
            (s.peer.take(), s.session.take(), s.process.take())
        };
        if let Some(p) = peer {
            p.close().await;
        }
        drop((session, process));
    }
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
