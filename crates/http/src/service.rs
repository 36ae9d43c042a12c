//! Request handling: the checks, then POST, GET and DELETE for each protocol era.
//!
//! The era of a POST comes from its body: a request whose `params._meta` names a protocol
//! version is modern (2026-07-28), as is anything sent with a modern `MCP-Protocol-Version`
//! header; everything else is legacy. Modern requests stand alone (a throwaway server
//! session each, nothing shared, no lock taken). Legacy requests belong to the session their
//! `initialize` opened, unless the server is stateless.

use crate::body::{Body, OnDrop, SseSource, parse_event_id, priming_event};
use crate::config::HttpConfig;
use crate::guard::{Guard, Refusal};
use crate::headers::{self, HeaderVersion, LAST_EVENT_ID, SESSION_ID};
use crate::session::{HttpSession, Sessions};
use crate::stream::Cell;
use bytes::Bytes;
use http::header::{
    ACCEPT, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ORIGIN, VARY, WWW_AUTHENTICATE,
};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use memchr::memmem;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::Poll;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolwright_jsonrpc::{self as jsonrpc, ErrorObject, Message, Parsed, RequestId, code};
use toolwright_protocol::ProtocolVersion;
use toolwright_protocol::params::CallToolParams;
use toolwright_server::{Handled, Outbound, Server, Session};

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const ALLOWED_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, DELETE");
const ALLOWED_HEADERS: &str = "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, \
     mcp-method, mcp-name, last-event-id";
const EXPOSED_HEADERS: HeaderValue = HeaderValue::from_static("mcp-session-id, www-authenticate");

/// State shared by every connection.
pub(crate) struct Shared {
    pub server: Server,
    pub config: HttpConfig,
    pub guard: Guard,
    pub sessions: Sessions,
    /// SSE streams open now.
    pub sse_open: AtomicUsize,
    /// Cancelled when the server begins to shut down.
    pub shutdown: CancellationToken,
    /// Legacy calls that keep running after their client went away.
    pub calls: TaskTracker,
    /// Paths serving the Protected Resource Metadata, and the document (auth enabled only).
    pub metadata: Option<(Vec<String>, Bytes)>,
    /// The `WWW-Authenticate` challenge.
    pub challenge: HeaderValue,
    pub challenge_invalid: HeaderValue,
    /// Prebuilt `initialize` requests that negotiate each legacy version (stateless mode).
    stateless_init: Vec<(ProtocolVersion, Vec<u8>)>,
}

impl Shared {
    pub(crate) fn new(
        server: Server,
        config: HttpConfig,
        guard: Guard,
        metadata: Option<(Vec<String>, Bytes)>,
        metadata_url: &str,
    ) -> Shared {
        let stateless_init = ProtocolVersion::ALL
            .iter()
            .filter(|v| !v.is_modern())
            .map(|v| {
                let msg = serde_json::json!({
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": v.as_str(), "capabilities": {},
                               "clientInfo": {"name": "stateless-http", "version": "0"}}
                });
                (*v, serde_json::to_vec(&msg).expect("serializes"))
            })
            .collect();
        let challenge = format!("Bearer resource_metadata=\"{metadata_url}\"");
        let challenge_invalid =
            format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata_url}\"");
        Shared {
            server,
            guard,
            sessions: Sessions::new(),
            sse_open: AtomicUsize::new(0),
            shutdown: CancellationToken::new(),
            calls: TaskTracker::new(),
            metadata,
            challenge: HeaderValue::from_str(&challenge)
                .unwrap_or(HeaderValue::from_static("Bearer")),
            challenge_invalid: HeaderValue::from_str(&challenge_invalid)
                .unwrap_or(HeaderValue::from_static("Bearer")),
            stateless_init,
            config,
        }
    }

    /// Claims an SSE stream; the guard gives it back.
    fn open_stream(self: &Arc<Self>) -> Option<OnDrop> {
        let before = self.sse_open.fetch_add(1, Ordering::AcqRel);
        if before >= self.config.max_sse_streams {
            self.sse_open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let me = self.clone();
        Some(OnDrop(Some(Box::new(move || {
            me.sse_open.fetch_sub(1, Ordering::AcqRel);
        }))))
    }
}

// ---------------------------------------------------------------------------------------
// Responses

fn respond(status: StatusCode, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

fn json(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut r = respond(status, Body::full(bytes));
    r.headers_mut().insert(CONTENT_TYPE, JSON);
    r
}

/// A JSON-RPC error as the whole response.
fn rpc_error(status: StatusCode, id: Option<&RequestId>, error: &ErrorObject) -> Response<Body> {
    let mut buf = Vec::with_capacity(96 + error.message.len());
    jsonrpc::write_error(&mut buf, id, error);
    json(status, buf)
}

fn refuse(
    status: StatusCode,
    id: Option<&RequestId>,
    message: impl Into<String>,
) -> Response<Body> {
    rpc_error(status, id, &ErrorObject::invalid_request(message))
}

fn accepted() -> Response<Body> {
    respond(StatusCode::ACCEPTED, Body::Empty)
}

fn method_not_allowed(message: &str) -> Response<Body> {
    let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, None, message);
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    r
}

fn event_stream(body: Body) -> Response<Body> {
    let mut r = respond(StatusCode::OK, body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, EVENT_STREAM);
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// The error code of a reply line, if it is an error. Reads the fixed layout the
/// `toolwright-jsonrpc` writers produce (`{"jsonrpc":"2.0","id":…,"error":{"code":…`), and
/// falls back to parsing for anything else.
pub(crate) fn error_code(line: &[u8]) -> Option<i64> {
    fn fast(line: &[u8]) -> Option<Option<i64>> {
        let mut rest = line.strip_prefix(b"{\"jsonrpc\":\"2.0\"")?;
        if let Some(r) = rest.strip_prefix(b",\"id\":") {
            let len = match r.first()? {
                b'"' => {
                    let mut i = 1;
                    loop {
                        match r.get(i)? {
                            b'\\' => i += 2,
                            b'"' => break i + 1,
                            _ => i += 1,
                        }
                    }
                }
                _ => r.iter().position(|b| *b == b',')?,
            };
            rest = &r[len..];
        }
        if rest.starts_with(b",\"result\":") {
            return Some(None);
        }
        let r = rest.strip_prefix(b",\"error\":{\"code\":")?;
        let end = r.iter().position(|b| !(b.is_ascii_digit() || *b == b'-'))?;
        Some(Some(std::str::from_utf8(&r[..end]).ok()?.parse().ok()?))
    }
    if let Some(c) = fast(line) {
        return c;
    }
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    v.get("error")?.get("code")?.as_i64()
}

/// The HTTP status of a modern reply: 400 for the modern protocol errors, 404 for an
/// unknown method, 200 for everything else (results, tool-level errors).
fn modern_status(line: &[u8]) -> StatusCode {
    match error_code(line) {
        Some(
            code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        Some(code::INVALID_REQUEST | code::PARSE_ERROR) => StatusCode::BAD_REQUEST,
        Some(code::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

// ---------------------------------------------------------------------------------------
// Routing and checks

/// Handles one request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    if let Err(r) = shared.guard.check_site(req.headers()) {
        return refusal(&shared, r);
    }
    let origin = req.headers().get(ORIGIN).cloned();
    let mut resp = route(&shared, req).await;
    if let Some(o) = origin {
        let h = resp.headers_mut();
        h.insert("access-control-allow-origin", o);
        h.insert(VARY, HeaderValue::from_static("origin"));
        h.insert("access-control-expose-headers", EXPOSED_HEADERS);
    }
    resp
}

fn refusal(shared: &Shared, r: Refusal) -> Response<Body> {
    match r {
        Refusal::MissingHost => refuse(StatusCode::BAD_REQUEST, None, "a Host header is required"),
        Refusal::ForeignHost => refuse(
            StatusCode::FORBIDDEN,
            None,
            "Host not allowed (DNS rebinding protection)",
        ),
        Refusal::ForeignOrigin => refuse(StatusCode::FORBIDDEN, None, "Origin not allowed"),
        Refusal::NoToken | Refusal::BadToken => {
            let mut resp = refuse(
                StatusCode::UNAUTHORIZED,
                None,
                "a valid bearer token is required",
            );
            let challenge = if r == Refusal::BadToken {
                shared.challenge_invalid.clone()
            } else {
                shared.challenge.clone()
            };
            resp.headers_mut().insert(WWW_AUTHENTICATE, challenge);
            resp
        }
    }
}

fn preflight(headers: &HeaderMap) -> Response<Body> {
    let mut r = respond(StatusCode::NO_CONTENT, Body::Empty);
    let h = r.headers_mut();
    h.insert("access-control-allow-methods", ALLOWED_METHODS);
    let asked = headers.get("access-control-request-headers").cloned();
    h.insert(
        "access-control-allow-headers",
        asked.unwrap_or(HeaderValue::from_static(ALLOWED_HEADERS)),
    );
    h.insert("access-control-max-age", HeaderValue::from_static("600"));
    r
}

async fn route(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    if path == shared.config.path {
        if req.method() == Method::OPTIONS {
            return preflight(req.headers());
        }
        if let Err(r) = shared.guard.check_token(req.headers()) {
            return refusal(shared, r);
        }
        return match *req.method() {
            Method::POST => post(shared, req).await,
            Method::GET => get(shared, req.headers()),
            Method::DELETE => delete(shared, req.headers()),
            _ => {
                let mut r = refuse(
                    StatusCode::METHOD_NOT_ALLOWED,
                    None,
                    "use POST, GET or DELETE",
                );
                r.headers_mut().insert(ALLOW, ALLOWED_METHODS);
                r
            }
        };
    }
    if let Some((paths, doc)) = &shared.metadata
        && paths.iter().any(|p| p == path)
    {
        return match *req.method() {
            Method::GET | Method::HEAD => {
                let mut r = respond(StatusCode::OK, Body::Full(Some(doc.clone())));
                r.headers_mut().insert(CONTENT_TYPE, JSON);
                r
            }
            Method::OPTIONS => preflight(req.headers()),
            _ => {
                let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, None, "use GET");
                r.headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("GET"));
                r
            }
        };
    }
    refuse(
        StatusCode::NOT_FOUND,
        None,
        format!("no such endpoint; MCP is served at {}", shared.config.path),
    )
}

/// True when an `Accept` header lists `what` (`type/subtype`), `type/*` or `*/*`.
fn accepts(headers: &HeaderMap, what: &str) -> bool {
    let kind = what.split_once('/').map_or(what, |(k, _)| k);
    headers.get_all(ACCEPT).iter().any(|v| {
        v.as_bytes().split(|&b| b == b',').any(|part| {
            let t = part
                .split(|&b| b == b';')
                .next()
                .unwrap_or_default()
                .trim_ascii();
            t.eq_ignore_ascii_case(what.as_bytes())
                || t == b"*/*"
                || t.strip_suffix(b"/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind.as_bytes()))
        })
    })
}

enum BodyError {
    TooLarge,
    Timeout,
    Broken,
}

async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, BodyError> {
    let limited = Limited::new(body, shared.config.max_body_bytes);
    let mut collect = std::pin::pin!(limited.collect());
    // A small body usually came with the headers: taken at once, no timer is armed.
    let first = std::future::poll_fn(|cx| Poll::Ready(collect.as_mut().poll(cx))).await;
    let collected = match first {
        Poll::Ready(r) => r,
        Poll::Pending => {
            match tokio::time::timeout(shared.config.body_read_timeout, collect).await {
                Ok(r) => r,
                Err(_) => return Err(BodyError::Timeout),
            }
        }
    };
    match collected {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(_) => Err(BodyError::Broken),
    }
}

// ---------------------------------------------------------------------------------------
// POST

async fn post(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    if let Some(ct) = headers.get(CONTENT_TYPE)
        && !ct.to_str().is_ok_and(|s| {
            s.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
    {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "Content-Type must be application/json",
        );
    }
    if headers.contains_key(ACCEPT)
        && !accepts(headers, "application/json")
        && !accepts(headers, "text/event-stream")
    {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            None,
            "Accept must list application/json and text/event-stream",
        );
    }
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > shared.config.max_body_bytes as u64) {
        return too_large(shared);
    }
    let bytes = match read_body(shared, body).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => return too_large(shared),
        Err(BodyError::Timeout) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                None,
                "the request body arrived too slowly",
            );
        }
        Err(BodyError::Broken) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                None,
                "the request body could not be read",
            );
        }
    };
    if shared.shutdown.is_cancelled() {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            &ErrorObject::internal("the server is shutting down"),
        );
    }
    let hv = headers::header_version(headers);
    let header_modern = matches!(hv, HeaderVersion::Known(v) if v.is_modern());
    let limits = &shared.server.config().limits;
    // A legacy `tools/call` (no protocol version anywhere in the body) is read in one pass
    // with its params; anything else, or a body that names a version, the general way.
    let parsed = if header_modern || PROTOCOL_VERSION_KEY.find(&bytes).is_some() {
        jsonrpc::parse(&bytes, limits)
    } else {
        match jsonrpc::parse_call::<CallToolParams>(&bytes, limits, "tools/call") {
            jsonrpc::Incoming::Call(id, params) => {
                let requests = vec![id.clone()];
                return legacy_post(shared, headers, Inbound::Call(id, params), requests, hv).await;
            }
            jsonrpc::Incoming::Other(parsed) => parsed,
        }
    };
    match parsed {
        Parsed::Invalid(e) => rpc_error(StatusCode::BAD_REQUEST, e.id.as_ref(), &e.error),
        Parsed::Batch(_) if header_modern => refuse(
            StatusCode::BAD_REQUEST,
            None,
            "JSON-RPC batches are not allowed in protocol version 2026-07-28: send one message per POST",
        ),
        Parsed::Batch(items) => {
            let requests: Vec<RequestId> = items
                .iter()
                .filter_map(|m| match m {
                    Message::Request(r) => Some(r.id.clone()),
                    _ => None,
                })
                .collect();
            legacy_post(shared, headers, Inbound::Batch(&bytes), requests, hv).await
        }
        Parsed::Single(msg) => {
            let modern = header_modern
                || match &msg {
                    Message::Request(r) => claims_modern(r.params.as_deref()),
                    Message::Notification(n) => claims_modern(n.params.as_deref()),
                    _ => false,
                };
            if modern {
                return modern_post(shared, headers, msg).await;
            }
            let requests = match &msg {
                Message::Request(r) => vec![r.id.clone()],
                _ => Vec::new(),
            };
            legacy_post(shared, headers, Inbound::Single(msg), requests, hv).await
        }
    }
}

/// True when `params._meta` names a protocol version (a modern message). A byte search
/// first keeps legacy messages from being parsed twice; its searcher is built once.
fn claims_modern(params: Option<&serde_json::value::RawValue>) -> bool {
    params.is_some_and(|p| {
        PROTOCOL_VERSION_KEY.find(p.get().as_bytes()).is_some()
            && headers::peek(Some(p)).version.is_some()
    })
}

/// Finds the `_meta` key that names a protocol version; built once.
static PROTOCOL_VERSION_KEY: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(toolwright_protocol::meta::PROTOCOL_VERSION));

fn too_large(shared: &Shared) -> Response<Body> {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        format!(
            "the request body is larger than {} bytes",
            shared.config.max_body_bytes
        ),
    )
}

fn new_cell(shared: &Shared, retain: bool) -> (Arc<Cell>, Arc<dyn Outbound>) {
    let cell = Arc::new(Cell::new(shared.config.event_store_capacity, retain));
    let sink: Arc<dyn Outbound> = cell.clone();
    (cell, sink)
}

/// A modern POST: headers checked against the body, a throwaway session, and the call
/// driven by the response itself (closing it cancels the call).
async fn modern_post(shared: &Arc<Shared>, headers: &HeaderMap, msg: Message) -> Response<Body> {
    let checked = match &msg {
        Message::Request(r) => {
            let p = headers::peek(r.params.as_deref());
            headers::check_modern(headers, &r.method, &p, true)
                .and_then(|()| check_tool_headers(shared, headers, &r.method, &p))
                .map_err(|e| rpc_error(StatusCode::BAD_REQUEST, Some(&r.id), &e))
        }
        Message::Notification(n) => {
            let p = headers::peek(n.params.as_deref());
            headers::check_modern(headers, &n.method, &p, false)
                .map_err(|e| rpc_error(StatusCode::BAD_REQUEST, None, &e))
        }
        Message::Invalid { id, error } => {
            Err(rpc_error(StatusCode::BAD_REQUEST, id.as_ref(), error))
        }
        // Modern servers send no requests, so a response answers nothing: accept, ignore.
        Message::Response(_) | Message::ErrorWithoutId(_) => return accepted(),
    };
    if let Err(resp) = checked {
        return resp;
    }
    let id = msg.id().cloned();
    let (cell, sink) = new_cell(shared, false);
    let session = Session::new(sink.clone());
    match shared.server.handle(&session, msg, &sink) {
        Handled::Nothing if id.is_none() => accepted(),
        Handled::Nothing => {
            cell.finish(None);
            stream_response(shared, cell, None, None, None, false)
        }
        Handled::Reply(line) | Handled::ReplyThen(line, _) => {
            if cell.decided().is_none() {
                return json(modern_status(&line), line);
            }
            cell.finish(Some(line));
            stream_response(shared, cell, None, None, None, false)
        }
        Handled::Later(mut call) => {
            let streaming = loop {
                let notified = cell.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if cell.decided().is_some() {
                    break true;
                }
                tokio::select! {
                    biased;
                    _ = &mut notified => {}
                    reply = &mut call => {
                        cell.finish(reply);
                        break false;
                    }
                }
            };
            if streaming {
                // A notification came first: the stream drives the rest of the call.
                return stream_response(shared, cell, None, Some(call), None, false);
            }
            if cell.decided() == Some(true)
                && let Some(line) = cell.take_only_reply()
            {
                return json(modern_status(&line), line);
            }
            stream_response(shared, cell, None, None, None, false)
        }
    }
}

/// `Mcp-Param-*` headers of the tool a modern `tools/call` names.
fn check_tool_headers(
    shared: &Shared,
    headers: &HeaderMap,
    method: &str,
    p: &headers::Peek<'_>,
) -> Result<(), ErrorObject> {
    if method != "tools/call" {
        return Ok(());
    }
    let Some(name) = p
        .name
        .and_then(|n| serde_json::from_str::<std::borrow::Cow<'_, str>>(n.get()).ok())
    else {
        return Ok(());
    };
    let tools = shared.server.tools();
    match tools.get(&name) {
        Some(entry) => {
            headers::check_param_headers(headers, &entry.definition.input_schema, p.arguments)
        }
        None => Ok(()),
    }
}

/// What a legacy POST carried.
enum Inbound<'a> {
    Single(Message),
    /// A `tools/call`, read with its params.
    Call(RequestId, CallToolParams),
    /// A 2025-03-26 batch, as sent (the dispatcher parses it again).
    Batch(&'a [u8]),
}

fn unsupported_version(id: Option<&RequestId>, v: &str) -> Response<Body> {
    let supported: Vec<&str> = ProtocolVersion::ALL
        .iter()
        .rev()
        .map(|v| v.as_str())
        .collect();
    let e = ErrorObject::invalid_request(format!("unsupported MCP-Protocol-Version {v:?}"))
        .with_data(serde_json::json!({"supported": supported, "requested": v}));
    rpc_error(StatusCode::BAD_REQUEST, id, &e)
}

/// A legacy POST: one message or a batch, in the session named by `Mcp-Session-Id`, a new
/// session (`initialize`), or no session at all (stateless).
async fn legacy_post(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    inbound: Inbound<'_>,
    requests: Vec<RequestId>,
    hv: HeaderVersion<'_>,
) -> Response<Body> {
    let first_id = requests.first();
    let version = match hv {
        HeaderVersion::Absent => ProtocolVersion::V2025_03_26,
        HeaderVersion::Known(v) => v,
        HeaderVersion::Unknown(v) => return unsupported_version(first_id, v),
    };
    let is_init =
        matches!(&inbound, Inbound::Single(Message::Request(r)) if r.method == "initialize");
    if shared.config.stateless {
        let (cell, sink) = new_cell(shared, false);
        let session = Session::new(sink.clone());
        if !is_init {
            let init = shared
                .stateless_init
                .iter()
                .find(|(v, _)| *v == version)
                .map(|(_, b)| b.as_slice());
            if let Some(init) = init {
                let _ = shared.server.handle_bytes(&session, init, &sink);
            }
        }
        let handled = dispatch(&shared.server, &session, inbound, &sink);
        return legacy_respond(shared, None, cell, handled, &requests, &session).await;
    }
    if is_init {
        return initialize(shared, inbound, first_id).await;
    }
    let Some(sid) = headers.get(SESSION_ID) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            first_id,
            "Mcp-Session-Id header required (send initialize first)",
        );
    };
    let Some(hs) = sid.to_str().ok().and_then(|s| shared.sessions.get(s)) else {
        return refuse(
            StatusCode::NOT_FOUND,
            first_id,
            "unknown or expired session; initialize again",
        );
    };
    let busy = hs.busy();
    let (cell, sink) = new_cell(shared, false);
    if primes(&hs) {
        // Resumable from its priming event, so a call may close it early (SSE polling).
        cell.set_closable();
    }
    let handled = dispatch(&shared.server, &hs.mcp, inbound, &sink);
    let session = hs.mcp.clone();
    legacy_respond(shared, Some((hs, busy)), cell, handled, &requests, &session).await
}

fn dispatch(
    server: &Server,
    session: &Arc<Session>,
    inbound: Inbound<'_>,
    sink: &Arc<dyn Outbound>,
) -> Handled {
    match inbound {
        Inbound::Single(msg) => server.handle(session, msg, sink),
        Inbound::Call(id, params) => server.handle_call(session, id, params, sink),
        Inbound::Batch(bytes) => server.handle_bytes(session, bytes, sink),
    }
}

async fn initialize(
    shared: &Arc<Shared>,
    inbound: Inbound<'_>,
    id: Option<&RequestId>,
) -> Response<Body> {
    if !shared.sessions.reserve(shared.config.max_sessions) {
        let e = ErrorObject::internal(format!(
            "too many sessions ({} open); try again later",
            shared.config.max_sessions
        ));
        return rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, &e);
    }
    let hs = HttpSession::new(
        &shared.server,
        shared.config.event_store_capacity,
        shared.shutdown.child_token(),
        shared.sessions.epoch,
    );
    let (_cell, sink) = new_cell(shared, false);
    let line = match dispatch(&shared.server, &hs.mcp, inbound, &sink) {
        Handled::Reply(line) | Handled::ReplyThen(line, _) => line,
        // `initialize` always answers at once; anything else is a bug worth a clear error.
        Handled::Nothing | Handled::Later(_) => {
            shared.sessions.release();
            hs.close();
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                id,
                &ErrorObject::internal("initialize did not answer"),
            );
        }
    };
    if error_code(&line).is_some() {
        shared.sessions.release();
        hs.close();
        return json(StatusCode::OK, line);
    }
    let sid = HeaderValue::from_str(&hs.id).expect("session ids are visible ASCII");
    shared.sessions.insert(hs);
    let mut r = json(StatusCode::OK, line);
    r.headers_mut().insert(SESSION_ID, sid);
    r
}

/// Answers a legacy POST once its first message is known: 202 when it carried no request,
/// JSON when the reply came first, SSE otherwise. The call runs as its own task, so a client
/// that goes away does not cancel it (legacy rule); its messages stay in the session's
/// stream for `Last-Event-ID`.
async fn legacy_respond(
    shared: &Arc<Shared>,
    hs: Option<(Arc<HttpSession>, crate::session::Busy)>,
    cell: Arc<Cell>,
    handled: Handled,
    requests: &[RequestId],
    session: &Arc<Session>,
) -> Response<Body> {
    match handled {
        Handled::Nothing if requests.is_empty() && cell.decided().is_none() => return accepted(),
        Handled::Nothing => cell.finish(None),
        Handled::Reply(line) | Handled::ReplyThen(line, _) => {
            if cell.decided().is_none() {
                return json(StatusCode::OK, line);
            }
            cell.finish(Some(line));
        }
        Handled::Later(call) => {
            let c = cell.clone();
            shared.calls.spawn(async move {
                let reply = call.await;
                c.finish(reply);
            });
        }
    }
    loop {
        let notified = cell.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match cell.decided() {
            Some(true) => {
                if let Some(line) = cell.take_only_reply() {
                    return json(StatusCode::OK, line);
                }
                break;
            }
            Some(false) => break,
            None => notified.await,
        }
    }
    let Some(slot) = shared.open_stream() else {
        for id in requests {
            session.cancel(id);
        }
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            requests.first(),
            &ErrorObject::internal("too many open event streams; try again later"),
        );
    };
    match hs {
        None => stream_response(shared, cell, None, None, Some(slot), false),
        Some((hs, busy)) => {
            let n = hs.register_stream(&cell, shared.config.max_stored_streams);
            let priming = primes(&hs).then(|| priming_event(n, 0, None));
            let guard = OnDrop(Some(Box::new(move || {
                drop(slot);
                drop(busy);
            })));
            stream_response(shared, cell, priming, None, Some(guard), true)
        }
    }
}

/// True when the session's version expects priming events (2025-11-25 and later).
fn primes(hs: &HttpSession) -> bool {
    hs.mcp
        .negotiated()
        .is_some_and(|n| n.version >= ProtocolVersion::V2025_11_25)
}

/// A response whose body streams `cell`. `slot` is the claim on the stream cap (taken here
/// if absent); `ids` makes the events resumable.
fn stream_response(
    shared: &Arc<Shared>,
    cell: Arc<Cell>,
    first: Option<Bytes>,
    call: Option<toolwright_server::dispatch::ReplyFuture>,
    slot: Option<OnDrop>,
    ids: bool,
) -> Response<Body> {
    let slot = match slot.or_else(|| shared.open_stream()) {
        Some(s) => s,
        None => {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                &ErrorObject::internal("too many open event streams; try again later"),
            );
        }
    };
    let (ticket, _) = cell.attach(None);
    let src = SseSource {
        cell,
        ticket,
        ids,
        call,
        first,
        keep_alive: Some(SseSource::ticker(shared.config.keep_alive_interval)),
        stop: None,
        _guard: slot,
    };
    event_stream(src.into_body())
}

// ---------------------------------------------------------------------------------------
// GET and DELETE

/// The session a GET or DELETE names, or the response refusing it.
fn session_of(
    shared: &Shared,
    headers: &HeaderMap,
    what: &str,
) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    match headers::header_version(headers) {
        HeaderVersion::Known(v) if v.is_modern() => {
            return Err(Box::new(method_not_allowed(&format!(
                "{what} is not part of protocol version 2026-07-28; use POST"
            ))));
        }
        HeaderVersion::Unknown(v) => return Err(Box::new(unsupported_version(None, v))),
        _ => {}
    }
    if shared.config.stateless {
        return Err(Box::new(method_not_allowed(&format!(
            "{what}: this server is stateless (no sessions); use POST"
        ))));
    }
    let Some(sid) = headers.get(SESSION_ID) else {
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            None,
            "Mcp-Session-Id header required",
        )));
    };
    sid.to_str()
        .ok()
        .and_then(|s| shared.sessions.get(s))
        .ok_or_else(|| {
            Box::new(refuse(
                StatusCode::NOT_FOUND,
                None,
                "unknown or expired session; initialize again",
            ))
        })
}

/// GET: the session's standalone stream, or the resumption of any of its streams after
/// `Last-Event-ID`.
fn get(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<Body> {
    let hs = match session_of(shared, headers, "GET") {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if !accepts(headers, "text/event-stream") {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            None,
            "GET needs Accept: text/event-stream",
        );
    }
    if shared.shutdown.is_cancelled() {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            &ErrorObject::internal("the server is shutting down"),
        );
    }
    let resume = match headers.get(LAST_EVENT_ID) {
        None => None,
        Some(v) => match v.to_str().ok().and_then(parse_event_id) {
            Some(pos) => Some(pos),
            None => return refuse(StatusCode::BAD_REQUEST, None, "malformed Last-Event-ID"),
        },
    };
    let (stream, after) = match resume {
        Some((n, seq)) => (n, Some(seq)),
        None => (0, None),
    };
    let Some(cell) = hs.stream(stream) else {
        return refuse(
            StatusCode::NOT_FOUND,
            None,
            "that stream is gone; its events can no longer be replayed",
        );
    };
    let standalone = stream == 0;
    if standalone && resume.is_none() && hs.get_open.swap(true, Ordering::AcqRel) {
        return refuse(
            StatusCode::CONFLICT,
            None,
            "this session already has a GET stream open",
        );
    }
    if standalone && resume.is_some() {
        hs.get_open.store(true, Ordering::Release);
    }
    let Some(slot) = shared.open_stream() else {
        if standalone {
            hs.get_open.store(false, Ordering::Release);
        }
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            &ErrorObject::internal("too many open event streams; try again later"),
        );
    };
    let (ticket, before) = cell.attach(after);
    let first = primes(&hs).then(|| priming_event(stream, before, None));
    let busy = hs.busy();
    let hs2 = hs.clone();
    let guard = OnDrop(Some(Box::new(move || {
        if standalone {
            hs2.get_open.store(false, Ordering::Release);
        }
        drop(busy);
        drop(slot);
    })));
    let src = SseSource {
        cell,
        ticket,
        ids: true,
        call: None,
        first,
        keep_alive: Some(SseSource::ticker(shared.config.keep_alive_interval)),
        stop: Some(hs.stop.clone()),
        _guard: guard,
    };
    event_stream(src.into_body())
}

/// DELETE: ends the session.
fn delete(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<Body> {
    let hs = match session_of(shared, headers, "DELETE") {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Some(hs) = shared.sessions.remove(&hs.id) {
        hs.close();
    }
    respond(StatusCode::NO_CONTENT, Body::Empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &[u8]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_bytes(value).unwrap());
        h
    }

    #[test]
    fn accept_lists_are_matched_by_media_type() {
        let h = accept(b"application/json, text/event-stream");
        assert!(accepts(&h, "application/json"));
        assert!(accepts(&h, "text/event-stream"));
        assert!(!accepts(&h, "text/html"));
        // Parameters, case and spacing do not matter; wildcards do.
        let h = accept(b" Application/JSON ;q=0.9 ,text/*;q=0.1");
        assert!(accepts(&h, "application/json"));
        assert!(accepts(&h, "text/event-stream"));
        assert!(!accepts(&h, "image/png"));
        assert!(accepts(&accept(b"*/*"), "text/event-stream"));
        assert!(!accepts(&accept(b"application/jsonx"), "application/json"));
        assert!(!accepts(&accept(b"application/*x"), "application/json"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
        // Bytes that are not visible ASCII match nothing and break nothing.
        assert!(!accepts(
            &accept(b"application/\xc3\xa9"),
            "application/json"
        ));
        // Several Accept headers count together.
        let mut h = accept(b"text/event-stream");
        h.append(ACCEPT, HeaderValue::from_static("application/json"));
        assert!(accepts(&h, "application/json"));
    }

    #[test]
    fn only_a_protocol_version_in_meta_makes_a_message_modern() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        let modern = raw(
            r#"{"name":"add","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert!(claims_modern(Some(&modern)));
        // The key named elsewhere (an argument's value) is not a claim.
        let legacy =
            raw(r#"{"name":"add","arguments":{"s":"io.modelcontextprotocol/protocolVersion"}}"#);
        assert!(!claims_modern(Some(&legacy)));
        assert!(!claims_modern(Some(&raw(r#"{"name":"add"}"#))));
        assert!(!claims_modern(None));
    }

    #[test]
    fn error_codes_of_reply_lines() {
        let check =
            |line: &str, want: Option<i64>| assert_eq!(error_code(line.as_bytes()), want, "{line}");
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"error\":{\"code\":1}}}\n",
            None,
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"x\"}}\n",
            Some(-32601),
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\",\\\"error\",\"error\":{\"code\":-32020,\"message\":\"x\"}}",
            Some(-32020),
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"x\"}}",
            Some(-32700),
        );
        check(
            "{\"id\":1,\"jsonrpc\":\"2.0\",\"error\":{\"message\":\"x\",\"code\":-32602}}",
            Some(-32602),
        );
        check("{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{}}", None);
        check("not json", None);
    }

    #[test]
    fn modern_statuses() {
        let line = |c: i64| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{{\"code\":{c},\"message\":\"m\"}}}}")
        };
        let check = |c: i64, s: StatusCode| assert_eq!(modern_status(line(c).as_bytes()), s, "{c}");
        check(-32020, StatusCode::BAD_REQUEST);
        check(-32021, StatusCode::BAD_REQUEST);
        check(-32022, StatusCode::BAD_REQUEST);
        check(-32601, StatusCode::NOT_FOUND);
        check(-32602, StatusCode::OK);
        check(-32603, StatusCode::OK);
        assert_eq!(
            modern_status(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
            StatusCode::OK
        );
    }

    #[test]
    fn accept_lists() {
        let check = |v: &str, what: &str, want: bool| {
            let mut h = HeaderMap::new();
            h.insert(ACCEPT, HeaderValue::from_str(v).unwrap());
            assert_eq!(accepts(&h, what), want, "{v} {what}");
        };
        check(
            "application/json, text/event-stream",
            "text/event-stream",
            true,
        );
        check("application/json;q=0.9", "application/json", true);
        check("*/*", "text/event-stream", true);
        check("text/*", "text/event-stream", true);
        check("text/html", "text/event-stream", false);
        assert!(!accepts(&HeaderMap::new(), "text/event-stream"));
    }
}
