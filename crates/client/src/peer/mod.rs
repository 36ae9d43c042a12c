//! [`Peer`]: one concurrent connection to one MCP server, in either era, over stdio or
//! Streamable HTTP.
//!
//! Unlike [`Client`](crate::Client), which sends one request at a time, a `Peer` is
//! shared (`Clone`, `Send + Sync`) and carries many requests at once: ids are allocated
//! atomically and answers are matched to their callers by id. It also plays the client
//! side of the protocol for a gateway: it declares client capabilities, routes requests
//! from the server (sampling, elicitation, roots) to a handler, reports progress and
//! list changes, and cancels requests upstream.
//!
//! Routing of what the server sends on its own:
//! - responses go to their request by id;
//! - `notifications/progress` with a token of ours goes to that call's
//!   [`Call::progress`]; `notifications/cancelled` stops the handler of the server's
//!   request it names; the listen acknowledgement is consumed; every other notification
//!   goes to [`PeerHandler::notification`];
//! - `ping` is answered here; any other request goes, over HTTP, by the stream it
//!   arrives on (a call's POST stream: that call's [`Call::on_request`]; the GET stream:
//!   the connection's handler), and over stdio to the one in-flight call that has an
//!   `on_request` (with none or several: the connection's handler). The handler's result
//!   or error is sent back as the JSON-RPC response; a request the server cancelled
//!   first gets none (its handler's future is dropped).
//!
//! List changes arrive as legacy stdio notifications, on the legacy HTTP GET stream
//! (opened after `initialize`; 405 means the server has none), or, in the modern era, on
//! a `subscriptions/listen` request kept open for the list kinds the server's
//! capabilities announce `listChanged` for. Both streams are re-opened with backoff
//! while the peer lives.
//!
//! Layout: `connect.rs` (era detection, shared with [`Client`](crate::Client), and the
//! background streams), `route.rs` (sending a request: ids, `_meta`, timeouts,
//! cancellation; dispatching what arrives), `stdio.rs` (the child process), `http.rs`
//! (Streamable HTTP: headers, sessions, the GET stream).

mod connect;
mod http;
mod observe;
mod route;
mod stdio;

pub use observe::{Observer, Outcome, Outgoing, Watch};
pub use route::known_result_type;

use std::borrow::Cow;
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
#[derive(Debug, Clone)]
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
    /// What this client declares upstream (sampling, elicitation, roots): in
    /// `initialize` (legacy) or in every request's `_meta` (modern).
    pub capabilities: ClientCapabilities,
    /// Open the streams that carry list changes (the legacy HTTP GET stream, the modern
    /// `subscriptions/listen`) [default: true]. Without them, legacy stdio notifications
    /// still reach the handler.
    pub listen: bool,
    /// What watches every request and notification this peer sends (unless a [`Call`]
    /// names its own).
    pub observer: Option<Arc<dyn Observer>>,
}

impl Default for PeerOptions {
    fn default() -> Self {
        PeerOptions {
            connect: ConnectOptions::default(),
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            capabilities: ClientCapabilities::default(),
            listen: true,
            observer: None,
        }
    }
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
    /// The method, e.g. `tools/call` (usually a constant, so not copied per call).
    pub method: Cow<'static, str>,
    /// Its params (an object); `_meta` is added or merged by the peer.
    pub params: Value,
    /// The `Mcp-Name` header on modern HTTP (the tool, prompt or resource named).
    pub name: Option<String>,
    /// More HTTP headers for this request (e.g. a tool's `Mcp-Param-*` headers on modern
    /// HTTP); ignored over stdio. An `Authorization` here replaces the connection's own.
    pub headers: Vec<(String, String)>,
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
    /// What watches this request instead of the peer's [`PeerOptions::observer`] (for
    /// example one that knows the span the request is made for).
    pub observer: Option<Arc<dyn Observer>>,
    /// The caller reads the whole result itself and checks what this client would (that
    /// it is an object, and a modern `resultType` one it knows): the client then passes
    /// the result on without a read of its own.
    pub result_checked_by_caller: bool,
}

impl Call {
    /// A call of `method` with `params` and nothing else set.
    pub fn new(method: impl Into<Cow<'static, str>>, params: Value) -> Call {
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
            .field("headers", &self.headers)
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("cancel", &self.cancel)
            .field("on_request", &self.on_request.is_some())
            .field("observer", &self.observer)
            .finish()
    }
}

/// One concurrent connection to one MCP server. Cheap to clone; all clones share the
/// connection. When the last clone is dropped, the background streams stop and a stdio
/// child is killed.
#[derive(Clone)]
pub struct Peer {
    handle: Arc<Handle>,
}

/// What the clones of a [`Peer`] share; dropping it stops the background tasks (which
/// hold the [`route::Inner`] themselves).
struct Handle {
    inner: Arc<route::Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.shutdown.cancel();
    }
}

impl Peer {
    /// Starts or reaches the server and finds its era (as [`Client::connect`] does:
    /// a `server/discover` probe, falling back to `initialize`), then keeps the
    /// connection: the stdio reader, and the streams that carry list changes.
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
        let inner = connect::connect(target, options, handler).await?;
        Ok(Peer {
            handle: Arc::new(Handle { inner }),
        })
    }

    fn inner(&self) -> &Arc<route::Inner> {
        &self.handle.inner
    }

    /// The era the server speaks.
    pub fn era(&self) -> Era {
        self.inner().state.read().era
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner().state.read().version
    }

    /// The session the server gave (`MCP-Session-Id` of a legacy HTTP server), if any.
    pub fn session_id(&self) -> Option<String> {
        self.inner().state.read().session_id.clone()
    }

    /// Who the server says it is (unverified).
    pub fn server_info(&self) -> Option<Implementation> {
        self.inner().state.read().server_info.clone()
    }

    /// What the server says it can do.
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        self.inner().state.read().capabilities.clone()
    }

    /// The target this peer is connected to.
    pub fn target(&self) -> &Target {
        &self.inner().target
    }

    /// Sends one request and returns its `result` object. A modern `input_required`
    /// result is RETURNED (with its `resultType`), not an error, and so is a Tasks
    /// extension `CreateTaskResult` (`resultType: "task"`).
    ///
    /// # Errors
    ///
    /// A JSON-RPC error, a timeout ([`ClientError::Timeout`]), a cancellation
    /// ([`ClientError::Cancelled`]), a dead connection ([`ClientError::Closed`]), an
    /// HTTP failure.
    pub async fn request(&self, call: Call) -> Result<Value, ClientError> {
        let timeout = call
            .timeout
            .unwrap_or(self.inner().options.connect.request_timeout);
        self.inner()
            .request(&call, route::Send::timeout(timeout))
            .await
    }

    /// [`request`](Self::request), returning the `result` object as the server wrote it
    /// (checked to be an object, and in the modern era to have a `resultType` this client
    /// knows), for a caller that passes it on without building it. `call` is only read,
    /// so a caller that sends it again (another round) changes what it needs and no more.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub async fn request_raw(
        &self,
        call: &Call,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        let timeout = call
            .timeout
            .unwrap_or(self.inner().options.connect.request_timeout);
        self.inner()
            .request_raw(call, route::Send::timeout(timeout))
            .await
    }

    /// Follows every page of `tools/list`, `resources/list`, `resources/templates/list`
    /// or `prompts/list` and returns the items under `key`, as sent.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request); also when a page has no `key` array, the cursors
    /// loop, or there are more than 1000 pages.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        let bad = |detail: String| ClientError::Malformed {
            what: format!("{method} result"),
            detail,
        };
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => serde_json::json!({"cursor": c}),
                None => serde_json::json!({}),
            };
            let result = self.request(Call::new(method.to_owned(), params)).await?;
            let page = result
                .get(key)
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("it has no {key:?} array")))?;
            items.extend(page.iter().cloned());
            match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(items),
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(bad(format!(
                            "nextCursor {next:?} came back again; the pages loop"
                        )));
                    }
                    cursor = Some(next.clone());
                }
                Some(other) => return Err(bad(format!("nextCursor is {other}, not a string"))),
            }
        }
        Err(bad(format!("more than {MAX_PAGES} pages")))
    }

    /// True once the connection has died (or was closed).
    pub fn is_closed(&self) -> bool {
        self.inner().dead.is_cancelled()
    }

    /// Resolves when the connection has died (or was closed).
    pub async fn closed(&self) {
        self.inner().dead.cancelled().await;
    }

    /// Ends the connection: a stdio child gets EOF and is killed if it lingers; a legacy
    /// HTTP session is deleted. [`PeerHandler::closed`] is not called for a close asked
    /// for here.
    pub async fn close(&self) {
        self.inner().close().await;
    }
}

/// The most pages [`Peer::list_all`] follows.
const MAX_PAGES: usize = 1000;
