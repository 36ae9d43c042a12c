//! Server settings.

use std::path::PathBuf;
use std::time::Duration;
use toolwright_jsonrpc::Limits;
use toolwright_protocol::lifecycle::CacheScope;

/// How argument validation failures reach the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputErrorMode {
    /// A `CallToolResult` with `isError: true` naming each violation, so the model can
    /// correct itself (the spec since 2025-11-25, SEP-1303). The default, for every version.
    #[default]
    ToolError,
    /// A JSON-RPC -32602 error, as versions up to 2025-06-18 described it.
    ProtocolError,
}

/// Settings of a [`Server`](crate::Server).
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a tool call may run before it is cancelled and answered with an error.
    pub call_timeout: Duration,
    /// How long the server waits for a client to answer a request it sent.
    pub client_request_timeout: Duration,
    /// Largest message and deepest nesting accepted.
    pub limits: Limits,
    /// How `tools/list` is cut into pages.
    pub paging: crate::registry::Paging,
    /// How argument validation failures are reported.
    pub input_errors: InputErrorMode,
    /// `ttlMs` on modern cacheable results.
    pub ttl_ms: u64,
    /// `cacheScope` on modern cacheable results.
    pub cache_scope: CacheScope,
    /// Guidance for the model, sent at `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// Directories file tools may touch; canonicalized when the server is built.
    pub roots: Vec<PathBuf>,
    /// How long calls in flight may still run after the client hung up.
    pub shutdown_grace: Duration,
    /// Secret that seals modern `requestState`s; replicas behind one load balancer must
    /// share it. `None`: a random key per process.
    pub state_secret: Option<String>,
    /// How long a `requestState` stays valid.
    pub request_state_ttl: Duration,
    /// Most `subscriptions/listen` streams one session may hold open at once; more are
    /// refused with an error (on stdio the whole connection is one session).
    pub max_listens_per_session: usize,
    /// Where every request and notification is observed (metrics, spans); `None`, the
    /// default: telemetry is off and costs one check per message.
    pub telemetry: Option<std::sync::Arc<toolwright_telemetry::Telemetry>>,
    /// Named sets of tools a transport gives its sessions ([`crate::view`]); none, the
    /// default: every session sees every tool.
    pub views: std::sync::Arc<crate::view::Views>,
    /// The view a stdio session gets, by name (whatever its `when`: whoever started the
    /// process chose it). `None`: the view named `default` if there is one, else every
    /// tool.
    pub stdio_view: Option<String>,
    /// Limits on `tools/call` per caller and per tool ([`crate::limit`]); none, the
    /// default: no limit.
    pub call_limits: Option<std::sync::Arc<crate::limit::Limits>>,
    /// How long a task (the Tasks extension, [`crate::task`]) is kept once it stopped
    /// changing: `tasks/get` finds it for this long after its last update (so at least this
    /// long after it was created), then it is forgotten. Sent as the task's `ttlMs`.
    pub task_ttl: Duration,
    /// How long a task may run before it is cancelled and fails with a timeout error (the
    /// call timeout does not apply to tasks: they are for work that outlasts a request).
    pub task_timeout: Duration,
    /// The `pollIntervalMs` suggested to clients polling a task.
    pub task_poll_interval: Duration,
    /// Most tasks kept at once (running or finished); past it a tool that may run either
    /// way runs as a plain call, and one that must run as a task is refused.
    pub max_tasks: usize,
    /// Where tasks are copied for other replicas to read with `tasks/get` (none, the
    /// default: a task is known to the process that runs it only).
    pub task_mirror: Option<std::sync::Arc<dyn crate::task::TaskMirror>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            call_timeout: Duration::from_secs(60),
            client_request_timeout: Duration::from_secs(30),
            limits: Limits::default(),
            paging: crate::registry::Paging::default(),
            input_errors: InputErrorMode::default(),
            ttl_ms: 60_000,
            cache_scope: CacheScope::Public,
            instructions: None,
            roots: Vec::new(),
            shutdown_grace: Duration::from_secs(5),
            state_secret: None,
            request_state_ttl: Duration::from_secs(600),
            max_listens_per_session: 16,
            telemetry: None,
            views: std::sync::Arc::default(),
            stdio_view: None,
            call_limits: None,
            task_ttl: Duration::from_secs(3600),
            task_timeout: Duration::from_secs(3600),
            task_poll_interval: Duration::from_millis(500),
            max_tasks: 10_000,
            task_mirror: None,
        }
    }
}
