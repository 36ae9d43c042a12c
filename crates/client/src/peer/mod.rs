//! [`Peer`]: one concurrent connection to one MCP server, in either era, over stdio or
//! Streamable HTTP.
//!
//! Unlike [`Client`](crate::Client), which sends one request at a time, a `Peer` is
//! shared (`Clone`, `Send + Sync`) and carries many requests at once: ids are allocated
//! atomically and answers are matched to their callers by id. It also plays the client
//! side of the protocol for a gateway: it declares client capabilities, routes requests
//! from the server (sampling, elicitation, roots) to a handler, reports progress and
//! list changes, and cancels requests upstream.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::ErrorObject;
use toolwright_protocol::{
    ClientCapabilities, Implementation, ProtocolVersion, ServerCapabilities,
};

use crate::{ClientError, ConnectOptions, Era, Target};

/// A boxed, sendable future (what [`PeerHandler::request`] returns).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The progress callback of a [`Call`]: `(progress, total, message)`.
pub type ProgressFn = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

/// How to connect a [`Peer`].
#[derive(Debug, Clone, Default)]
pub struct PeerOptions {
    /// Era choice, timeouts, client info.
    pub connect: ConnectOptions,
    /// stdio: variables set in the child's environment (after clearing it when
    /// `env_clear`).
    pub env: Vec<(String, String)>,
    /// stdio: start the child with an empty environment (plus `env`).
    pub env_clear: bool,
    /// stdio: the child's working directory.
    pub cwd: Option<PathBuf>,
    /// HTTP: sent as `Authorization: Bearer …` on every request.
    pub bearer: Option<String>,
    /// What this client declares upstream (sampling, elicitation, roots): in
    /// `initialize` (legacy) or in every request's `_meta` (modern).
    pub capabilities: ClientCapabilities,
}

/// What a [`Peer`] does with what the server sends on its own.
pub trait PeerHandler: Send + Sync + 'static {
    /// A request from the server that belongs to no call (or to a call without its own
    /// handler). The default refuses it (-32601).
    fn request(
        &self,
        method: String,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let _ = params;
        Box::pin(async move {
            Err(ErrorObject::new(
                toolwright_jsonrpc::code::METHOD_NOT_FOUND,
                format!("{method} is not offered by this client"),
            ))
        })
    }

    /// Any notification other than progress for our own calls and cancellations:
    /// `notifications/tools/list_changed`, `resources/list_changed`,
    /// `prompts/list_changed`, `resources/updated`, `message`.
    fn notification(&self, method: &str, params: &Value) {
        let _ = (method, params);
    }

    /// The connection died (stdio child exited, listen stream ended for good). Called
    /// once.
    fn closed(&self, why: &str) {
        let _ = why;
    }
}

/// A handler that refuses every request and ignores everything else.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl PeerHandler for NoHandler {}

/// One request to send with [`Peer::request`].
#[derive(Clone, Default)]
pub struct Call {
    /// The method, e.g. `tools/call`.
    pub method: String,
    /// Its params (an object); `_meta` is added or merged by the peer.
    pub params: Value,
    /// The `Mcp-Name` header on modern HTTP (the tool, prompt or resource named).
    pub name: Option<String>,
    /// How long to wait for the answer; default `connect.request_timeout`.
    pub timeout: Option<Duration>,
    /// Called with each `notifications/progress` for this request; setting it adds a
    /// unique `_meta.progressToken`.
    pub progress: Option<ProgressFn>,
    /// When it fires before the answer, the request is cancelled upstream
    /// (`notifications/cancelled`, or closing the modern HTTP stream) and
    /// [`Peer::request`] returns [`ClientError::Cancelled`].
    pub cancel: Option<CancellationToken>,
    /// Server→client requests that belong to THIS call (see the module doc for how
    /// they are told apart).
    pub on_request: Option<Arc<dyn PeerHandler>>,
}

impl Call {
    /// A call of `method` with `params` and nothing else set.
    pub fn new(method: impl Into<String>, params: Value) -> Call {
        Call {
            method: method.into(),
            params,
            ..Call::default()
        }
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method)
            .field("params", &self.params)
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("cancel", &self.cancel)
            .field("on_request", &self.on_request.is_some())
            .finish()
    }
}

/// One concurrent connection to one MCP server. Cheap to clone; all clones share the
/// connection.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<()>,
}

impl Peer {
    /// Starts or reaches the server and finds its era (as [`Client::connect`] does),
    /// then keeps the connection: a reader task (stdio), the listen or GET stream for
    /// list changes.
    ///
    /// [`Client::connect`]: crate::Client::connect
    ///
    /// # Errors
    ///
    /// When the server cannot be started or reached, or shares no version with us.
    pub async fn connect(
        target: Target,
        options: PeerOptions,
        handler: Arc<dyn PeerHandler>,
    ) -> Result<Peer, ClientError> {
        let _ = (target, options, handler);
        todo!()
    }

    /// The era the server speaks.
    pub fn era(&self) -> Era {
        todo!()
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> ProtocolVersion {
        todo!()
    }

    /// Who the server says it is (unverified).
    pub fn server_info(&self) -> Option<Implementation> {
        todo!()
    }

    /// What the server says it can do.
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        todo!()
    }

    /// Sends one request and returns its `result` object. A modern `input_required`
    /// result is RETURNED (with its `resultType`), not an error.
    ///
    /// # Errors
    ///
    /// A JSON-RPC error, a timeout ([`ClientError::Timeout`]), a cancellation
    /// ([`ClientError::Cancelled`]), a dead connection ([`ClientError::Closed`]), an
    /// HTTP failure.
    pub async fn request(&self, call: Call) -> Result<Value, ClientError> {
        let _ = call;
        todo!()
    }

    /// Follows every page of `tools/list`, `resources/list`, `resources/templates/list`
    /// or `prompts/list` and returns the items under `key`, as sent.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request); also when a page has no `key` array, the cursors
    /// loop, or there are more than 1000 pages.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        let _ = (method, key);
        todo!()
    }

    /// True once the connection has died (or was closed).
    pub fn is_closed(&self) -> bool {
        todo!()
    }

    /// Resolves when the connection has died (or was closed).
    pub async fn closed(&self) {
        todo!()
    }

    /// Ends the connection: a stdio child gets EOF and is killed if it lingers; a legacy
    /// HTTP session is deleted.
    pub async fn close(&self) {
        todo!()
    }
}
