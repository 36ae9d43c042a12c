//! POST: the body read once (with [`Server::read`]), its era claimed once (with
//! [`era::claim`], from `params._meta` and `MCP-Protocol-Version`), then a modern request on
//! a throwaway session or a legacy one in its session (or a stateless one).
//!
//! [`Server::read`]: toolwright_server::Server::read

use crate::accept::Accepts;
use crate::body::{Body, OnDrop, priming_event};
use crate::budget::{Budget, Client};
use crate::headers::{self, HeaderVersion, SESSION_ID};
use crate::read::{BodyError, id_of_oversized, read_body};
use crate::respond::{
    accepted, json, modern_status, not_acceptable, refuse, rpc_error, shutting_down, single_event,
    store_unavailable, stream_refused, unsupported_version,
};
use crate::session::{Busy, HttpSession};
use crate::sessions::SessionBackend as _;
use crate::shared::Shared;
use crate::stream::Cell;
use crate::streams::{named_session, primes, stream_response};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use toolwright_jsonrpc::{ErrorObject, Message, RequestId};
use toolwright_protocol::{Method, ProtocolVersion};
use toolwright_server::era::{self, Claim};
use toolwright_server::telemetry::Transport;
use toolwright_server::{
    Ambient, Caller, Handled, Inbound, Outbound, Outcome, Reply, Session, View,
};

/// POST: the body checked and read, its era claimed, then handled in that era.
pub(crate) async fn post(
    shared: &Arc<Shared>,
    (addr, from): (SocketAddr, IpAddr),
    req: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let http = http_version(parts.version);
    let headers = &parts.headers;
    let accepts = match media(headers) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let bytes = match read_request(shared, headers, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    if shared.shutdown.is_cancelled() {
        return shutting_down();
    }
    let hv = headers::header_version(headers);
    let header = match hv {
        HeaderVersion::Known(v) => Some(v),
        _ => None,
    };
    let inbound = shared.server.read(&bytes);
    let legacy = match claims_legacy(&inbound, header) {
        Ok(l) => l,
        Err(r) => return *r,
    };
    let caller = parts.extensions.get::<Arc<Caller>>();
    let view = parts.extensions.get::<Arc<View>>();
    let to = Peer {
        caller,
        token: parts.extensions.get::<toolwright_server::SubjectToken>(),
        view,
        client: Client::of(from),
        accepts,
        addr,
        from,
        http,
    };
    if legacy {
        legacy_post(shared, to, headers, (inbound, &bytes), hv).await
    } else {
        modern_post(shared, to, headers, inbound).await
    }
}

/// What the client accepts, once its `Content-Type` is JSON; `Err`: the refusal (415 for
/// another type, 406 when it accepts neither JSON nor an event stream).
fn media(headers: &HeaderMap) -> Result<Accepts, Box<Response<Body>>> {
    if let Some(ct) = headers.get(CONTENT_TYPE)
        && !ct.to_str().is_ok_and(|s| {
            s.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
    {
        return Err(Box::new(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "Content-Type must be application/json",
        )));
    }
    let accepts = Accepts::of(headers);
    if accepts.none() {
        return Err(Box::new(not_acceptable(
            "a POST is answered with application/json or text/event-stream (clients should \
             list both); this request's Accept allows neither",
            &["application/json", "text/event-stream"],
        )));
    }
    Ok(accepts)
}

/// The body, within the size limit and the body read timeout; `Err`: the refusal (413,
/// 408, or 400 for a body that broke off).
async fn read_request(
    shared: &Shared,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<bytes::Bytes, Box<Response<Body>>> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > shared.config.max_body_bytes as u64) {
        let id = id_of_oversized(&shared.config, body).await;
        return Err(Box::new(too_large(shared, id.as_ref())));
    }
    read_body(&shared.config, body).await.map_err(|e| {
        Box::new(match e {
            BodyError::TooLarge(id) => too_large(shared, id.as_ref()),
            BodyError::Timeout => refuse(
                StatusCode::REQUEST_TIMEOUT,
                None,
                "the request body arrived too slowly",
            ),
            BodyError::Broken => refuse(
                StatusCode::BAD_REQUEST,
                None,
                "the request body could not be read",
            ),
        })
    })
}

/// True unless the message claims the modern era (from `params._meta` and the
/// `MCP-Protocol-Version` header's `header`); an unknown version in `_meta` is answered by
/// the modern rules (-32022). `Err`: the refusal of an invalid message, or of a batch sent
/// as modern.
fn claims_legacy(
    inbound: &Inbound,
    header: Option<ProtocolVersion>,
) -> Result<bool, Box<Response<Body>>> {
    match inbound {
        Inbound::Invalid(e) => Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            e.id.as_ref(),
            &e.error,
        ))),
        Inbound::Batch(_) if header.is_some_and(ProtocolVersion::is_modern) => {
            Err(Box::new(refuse(
                StatusCode::BAD_REQUEST,
                None,
                "JSON-RPC batches are not allowed in protocol version 2026-07-28: send one message per POST",
            )))
        }
        Inbound::Batch(_) => Ok(true),
        Inbound::Call(_, p) => {
            let version = p.meta.as_ref().and_then(|m| m.protocol_version.as_deref());
            Ok(era::claim(version, header) == Claim::Legacy)
        }
        Inbound::Message(msg) => {
            let params = match msg {
                Message::Request(r) => r.params.as_deref(),
                Message::Notification(n) => n.params.as_deref(),
                _ => None,
            };
            let peek = headers::peek(params);
            Ok(era::claim(peek.version.as_deref(), header) == Claim::Legacy)
        }
    }
}

/// `network.protocol.version`'s value for an HTTP version.
fn http_version(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// Handles `inbound` for telemetry as the request from `to` carried it: with the trace
/// context of its `traceparent` and `tracestate` headers (the parent unless a message's own
/// `_meta` names one, then a link), its peer and its HTTP version.
fn traced(
    shared: &Shared,
    session: &Arc<Session>,
    inbound: Inbound,
    sink: &Arc<dyn Outbound>,
    (headers, to): (&HeaderMap, &Peer<'_>),
) -> Handled {
    if shared.server.config().telemetry.is_none() {
        return shared.server.handle(session, inbound, sink);
    }
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ambient = Ambient {
        traceparent: text("traceparent"),
        tracestate: text("tracestate"),
        peer: Some(to.addr),
        protocol_version: Some(to.http),
    };
    shared.server.handle_in(session, inbound, sink, ambient)
}

fn too_large(shared: &Shared, id: Option<&RequestId>) -> Response<Body> {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        id,
        format!(
            "the request body is larger than {} bytes",
            shared.config.max_body_bytes
        ),
    )
}

/// Who a POST answers: the client (for the stream budgets) and the types it accepts.
#[derive(Debug, Clone, Copy)]
struct Peer<'a> {
    /// Who the request's access token speaks for (none without JWT access tokens).
    caller: Option<&'a Arc<Caller>>,
    /// The access token that verified `caller`, when an authorization server issued it.
    token: Option<&'a toolwright_server::SubjectToken>,
    /// The view the request's path and caller chose (none without views).
    view: Option<&'a Arc<View>>,
    client: Client,
    accepts: Accepts,
    /// The client's address and port (telemetry's `client.address`, `client.port`).
    addr: SocketAddr,
    /// The address the request counts as (limits, audit): behind a trusted proxy, the
    /// client it names; else `addr`'s.
    from: IpAddr,
    /// The request's HTTP version (telemetry's `network.protocol.version`).
    http: &'static str,
}

/// A cell for one POST's messages; JSON-only when the client does not accept event streams.
fn new_cell(shared: &Shared, accepts: Accepts) -> (Arc<Cell>, Arc<dyn Outbound>) {
    let cell = Arc::new(Cell::new(shared.config.event_store_capacity, false));
    if !accepts.sse {
        cell.set_json_only();
    }
    let sink: Arc<dyn Outbound> = cell.clone();
    (cell, sink)
}

/// A reply that is the whole answer: JSON, or a one-event stream for a client that accepts
/// only `text/event-stream`. Error statuses (a modern 400 or 404) always carry JSON.
fn reply_only(status: StatusCode, line: Vec<u8>, accepts: Accepts) -> Response<Body> {
    reply_retry(status, line, accepts, None)
}

/// [`reply_only`] for a reply the server typed: a call refused by a limit says when to
/// retry in `Retry-After` (the body is still the tool error result, on 200).
fn reply_response(status: StatusCode, reply: Reply, accepts: Accepts) -> Response<Body> {
    let retry = reply.retry_after();
    reply_retry(status, reply.into_line(), accepts, retry)
}

/// [`reply_only`], with `Retry-After: SECONDS` when `retry_after` is set.
fn reply_retry(
    status: StatusCode,
    line: Vec<u8>,
    accepts: Accepts,
    retry_after: Option<u64>,
) -> Response<Body> {
    let mut r = reply_whole(status, line, accepts);
    if let Some(secs) = retry_after {
        r.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

fn reply_whole(status: StatusCode, line: Vec<u8>, accepts: Accepts) -> Response<Body> {
    if accepts.json || status != StatusCode::OK {
        json(status, line)
    } else {
        single_event(&line)
    }
}

/// The modern mirroring rules: headers against the body, and the `Mcp-Param-*` headers the
/// named tool asks for. `Err` is the response refusing the request.
fn check_modern(
    (shared, view): (&Shared, Option<&Arc<View>>),
    headers: &HeaderMap,
    inbound: &Inbound,
) -> Result<(), Box<Response<Body>>> {
    let bad = |id: Option<&RequestId>, e: ErrorObject| {
        Box::new(rpc_error(StatusCode::BAD_REQUEST, id, &e))
    };
    match inbound {
        Inbound::Call(id, p) => {
            let peek = headers::Peek::of_call(p);
            headers::check_modern(headers, "tools/call", &peek, true)
                .and_then(|()| {
                    check_tool_headers(
                        (shared, view),
                        headers,
                        &p.name,
                        p.arguments.as_ref().map(|a| &a.value),
                    )
                })
                .map_err(|e| bad(Some(id), e))
        }
        Inbound::Message(Message::Request(r)) => {
            let p = headers::peek(r.params.as_deref());
            headers::check_modern(headers, &r.method, &p, true)
                .and_then(|()| match (Method::parse(&r.method), &p.name) {
                    (Method::ToolsCall, Some(name)) => {
                        let args: Option<Value> =
                            p.arguments.and_then(|a| serde_json::from_str(a.get()).ok());
                        check_tool_headers((shared, view), headers, name, args.as_ref())
                    }
                    _ => Ok(()),
                })
                .map_err(|e| bad(Some(&r.id), e))
        }
        Inbound::Message(Message::Notification(n)) => {
            let p = headers::peek(n.params.as_deref());
            headers::check_modern(headers, &n.method, &p, false).map_err(|e| bad(None, e))
        }
        Inbound::Message(Message::Invalid { id, error }) => Err(bad(id.as_ref(), error.clone())),
        _ => Ok(()),
    }
}

/// `Mcp-Param-*` headers of the tool a modern `tools/call` names (none for a tool outside
/// the request's `view`, which is then answered as an unknown tool).
fn check_tool_headers(
    (shared, view): (&Shared, Option<&Arc<View>>),
    headers: &HeaderMap,
    name: &str,
    args: Option<&Value>,
) -> Result<(), ErrorObject> {
    if view.is_some_and(|v| !v.shows(name)) {
        return Ok(());
    }
    match shared.server.tools().get(name) {
        Some(entry) if !entry.param_headers.is_empty() => {
            headers::check_param_headers(headers, &entry.param_headers, args)
        }
        _ => Ok(()),
    }
}

/// A modern POST: headers checked against the body, a throwaway session, and the call
/// driven by the response itself (closing it cancels the call).
async fn modern_post(
    shared: &Arc<Shared>,
    to: Peer<'_>,
    headers: &HeaderMap,
    inbound: Inbound,
) -> Response<Body> {
    if let Inbound::Message(Message::Response(_) | Message::ErrorWithoutId(_)) = inbound {
        // Modern servers send no requests, so a response answers nothing: accept, ignore.
        return accepted();
    }
    if let Err(resp) = check_modern((shared, to.view), headers, &inbound) {
        return *resp;
    }
    let id = inbound.id().cloned();
    let (cell, sink) = new_cell(shared, to.accepts);
    let session = Session::new(sink.clone());
    session.set_label(Transport::Tcp, None);
    bind(&session, &to);
    match traced(shared, &session, inbound, &sink, (headers, &to)) {
        Handled::Nothing if id.is_none() || !to.accepts.sse => accepted(),
        Handled::Nothing => {
            cell.finish(None);
            stream_response(shared, to.client, cell, None, None, None, false)
        }
        Handled::Reply(reply) => {
            if cell.decided().is_none() {
                let status = modern_status(reply.outcome());
                return reply_response(status, reply, to.accepts);
            }
            cell.finish_reply(Some(reply));
            stream_response(shared, to.client, cell, None, None, None, false)
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
                        cell.finish_reply(reply);
                        break false;
                    }
                }
            };
            if streaming {
                // A notification came first: the stream drives the rest of the call.
                return stream_response(shared, to.client, cell, None, Some(call), None, false);
            }
            if cell.decided() == Some(true)
                && let Some(line) = cell.take_only_reply()
            {
                let outcome = cell.outcome().unwrap_or(Outcome::Result);
                let retry = cell.retry_after();
                return reply_retry(modern_status(outcome), line, to.accepts, retry);
            }
            if !to.accepts.sse {
                // Finished without a reply (cancelled): nothing to send.
                return accepted();
            }
            stream_response(shared, to.client, cell, None, None, None, false)
        }
    }
}

/// The ids of the requests a legacy POST carries.
fn request_ids(inbound: &Inbound) -> Vec<RequestId> {
    match inbound {
        Inbound::Call(id, _)
        | Inbound::Message(Message::Request(toolwright_jsonrpc::Request { id, .. })) => {
            vec![id.clone()]
        }
        Inbound::Batch(items) => items
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some(r.id.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A legacy POST: one message or a batch, in the session named by `Mcp-Session-Id`, a new
/// session (`initialize`), or no session at all (stateless).
async fn legacy_post(
    shared: &Arc<Shared>,
    to: Peer<'_>,
    headers: &HeaderMap,
    (inbound, raw): (Inbound, &[u8]),
    hv: HeaderVersion<'_>,
) -> Response<Body> {
    let requests = request_ids(&inbound);
    let first_id = requests.first();
    let version = match hv {
        HeaderVersion::Absent => ProtocolVersion::V2025_03_26,
        HeaderVersion::Known(v) => v,
        HeaderVersion::Unknown(v) => return unsupported_version(first_id, v),
    };
    let is_init = matches!(&inbound, Inbound::Message(Message::Request(_)))
        && inbound.method() == Some(Method::Initialize);
    if shared.config.stateless {
        return stateless_post(
            shared,
            (headers, to),
            inbound,
            (!is_init).then_some(version),
            &requests,
        )
        .await;
    }
    if is_init {
        return initialize(shared, (headers, &to), inbound, first_id).await;
    }
    let missing = "Mcp-Session-Id header required (send initialize first)";
    let named = (headers, to.caller.map(|c| &**c));
    let hs = match named_session(shared, named, first_id, missing).await {
        Ok(hs) => hs,
        Err(r) => return *r,
    };
    if let Some(sent) = shared.sessions.forward(&hs, &inbound, raw).await {
        // The call waiting for this answer runs on another replica.
        return match sent {
            Ok(()) => accepted(),
            Err(e) => store_unavailable(None, &e),
        };
    }
    let busy = hs.busy();
    let (cell, sink) = new_cell(shared, to.accepts);
    if primes(&hs) {
        // Resumable from its priming event, so a call may close it early (SSE polling).
        cell.set_closable();
    }
    let roots_changed = inbound.method() == Some(Method::RootsListChanged);
    // A session another replica opened is counted by the address of its first request here.
    hs.mcp.set_address(to.from);
    // The session answers only its own subject; this request's token is the newest one.
    if let Some(t) = to.token {
        hs.mcp.set_token(t.clone());
    }
    let handled = traced(shared, &hs.mcp, inbound, &sink, (headers, &to));
    shared.sessions.save(&hs, roots_changed).await;
    let session = hs.mcp.clone();
    legacy_respond(
        shared,
        to,
        Some((hs, busy)),
        cell,
        handled,
        &requests,
        &session,
    )
    .await
}

/// A legacy POST on a stateless server: a session of its own for this request, negotiated
/// at `version` unless it is `initialize` (`version` is `None`).
async fn stateless_post(
    shared: &Arc<Shared>,
    (headers, to): (&HeaderMap, Peer<'_>),
    inbound: Inbound,
    version: Option<ProtocolVersion>,
    requests: &[RequestId],
) -> Response<Body> {
    let (cell, sink) = new_cell(shared, to.accepts);
    let session = match version {
        None => Session::new(sink.clone()),
        Some(v) => Session::stateless(sink.clone(), v),
    };
    session.set_label(Transport::Tcp, None);
    bind(&session, &to);
    let handled = traced(shared, &session, inbound, &sink, (headers, &to));
    legacy_respond(shared, to, None, cell, handled, requests, &session).await
}

async fn initialize(
    shared: &Arc<Shared>,
    (headers, to): (&HeaderMap, &Peer<'_>),
    inbound: Inbound,
    id: Option<&RequestId>,
) -> Response<Body> {
    let Some(hs) = shared.sessions.open() else {
        let e = ErrorObject::internal(format!(
            "too many sessions ({} open); try again later",
            shared.config.max_sessions
        ));
        return rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, &e);
    };
    let (_cell, sink) = new_cell(shared, to.accepts);
    bind(&hs.mcp, to);
    let reply = match traced(shared, &hs.mcp, inbound, &sink, (headers, to)) {
        Handled::Reply(reply) => reply,
        // `initialize` always answers at once; anything else is a bug worth a clear error.
        Handled::Nothing | Handled::Later(_) => {
            shared.sessions.abandon(&hs);
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                id,
                &ErrorObject::internal("initialize did not answer"),
            );
        }
    };
    if reply.error_code().is_some() {
        shared.sessions.abandon(&hs);
        return reply_only(StatusCode::OK, reply.into_line(), to.accepts);
    }
    let sid = HeaderValue::from_str(&hs.id).expect("session ids are visible ASCII");
    if let Err(e) = shared.sessions.keep(hs).await {
        return store_unavailable(id, &e);
    }
    let mut r = reply_only(StatusCode::OK, reply.into_line(), to.accepts);
    r.headers_mut().insert(SESSION_ID, sid);
    r
}

/// Answers a legacy POST once its first message is known: 202 when it carried no request,
/// JSON when the reply came first, SSE otherwise. The call runs as its own task, so a client
/// that goes away does not cancel it (legacy rule); its messages stay in the session's
/// stream for `Last-Event-ID`.
async fn legacy_respond(
    shared: &Arc<Shared>,
    to: Peer<'_>,
    hs: Option<(Arc<HttpSession>, Busy)>,
    cell: Arc<Cell>,
    handled: Handled,
    requests: &[RequestId],
    session: &Arc<Session>,
) -> Response<Body> {
    if let Some(answer) = answer_without_stream(shared, to, &cell, handled, requests).await {
        return answer;
    }
    let slot = match shared.open_stream(Budget::Reply, to.client) {
        Ok(slot) => slot,
        Err(full) => {
            cancel_all(session, requests);
            return stream_refused(requests.first(), full);
        }
    };
    let Some((hs, busy)) = hs else {
        return stream_response(shared, to.client, cell, None, None, Some(slot), false);
    };
    let n = match shared.sessions.register(&hs, &cell).await {
        Ok(Some(n)) => n,
        Ok(None) => {
            cancel_all(session, requests);
            return refuse(
                StatusCode::NOT_FOUND,
                requests.first(),
                "unknown or expired session; initialize again",
            );
        }
        Err(e) => {
            cancel_all(session, requests);
            return store_unavailable(requests.first(), &e);
        }
    };
    let priming = primes(&hs).then(|| priming_event(n, 0, None));
    let guard = OnDrop(Some(Box::new(move || {
        drop(slot);
        drop(busy);
    })));
    stream_response(shared, to.client, cell, priming, None, Some(guard), true)
}

/// The answer of a legacy POST that needs no event stream: 202 when it carried no request
/// (or ended without a reply and the client takes no stream), the reply alone when it came
/// first. `None`: the answer is an event stream. A call still running goes on as a task of
/// its own.
async fn answer_without_stream(
    shared: &Shared,
    to: Peer<'_>,
    cell: &Arc<Cell>,
    handled: Handled,
    requests: &[RequestId],
) -> Option<Response<Body>> {
    match handled {
        Handled::Nothing if requests.is_empty() && cell.decided().is_none() => {
            return Some(accepted());
        }
        Handled::Nothing => cell.finish(None),
        Handled::Reply(reply) => {
            if cell.decided().is_none() {
                return Some(reply_response(StatusCode::OK, reply, to.accepts));
            }
            cell.finish_reply(Some(reply));
        }
        Handled::Later(call) => {
            let c = cell.clone();
            shared.calls.spawn(async move {
                let reply = call.await;
                c.finish_reply(reply);
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
                    let retry = cell.retry_after();
                    return Some(reply_retry(StatusCode::OK, line, to.accepts, retry));
                }
                break;
            }
            Some(false) => break,
            None => notified.await,
        }
    }
    // Finished without a reply (cancelled): nothing to send.
    (!to.accepts.sse).then(accepted)
}

/// Binds `session` to the request's caller, if its token named one, and gives it the view
/// chosen for the request, if there are views.
fn bind(session: &Session, to: &Peer<'_>) {
    if let Some(c) = to.caller {
        session.set_caller(c.clone());
    }
    // Every request's own: a legacy session's client renews its token.
    if let Some(t) = to.token {
        session.set_token(t.clone());
    }
    session.set_address(to.from);
    if let Some(v) = to.view {
        session.set_view(v.clone());
    }
}

/// Cancels the calls of `requests` (their answer cannot be streamed).
fn cancel_all(session: &Session, requests: &[RequestId]) {
    for id in requests {
        session.cancel(id);
    }
}
