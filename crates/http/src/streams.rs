//! Event streams: the SSE response of a POST, and a legacy session's GET stream (new or
//! resumed after `Last-Event-ID`); DELETE, which ends a session.

use crate::accept::{self, Kind};
use crate::body::{Body, OnDrop, SseSource, parse_event_id, priming_event};
use crate::budget::{Budget, Client};
use crate::headers::{self, HeaderVersion, LAST_EVENT_ID, SESSION_ID};
use crate::respond::{
    event_stream, method_not_allowed, not_acceptable, refuse, respond, shutting_down,
    store_unavailable, stream_refused, unsupported_version,
};
use crate::session::HttpSession;
use crate::sessions::{Replay, SessionBackend as _};
use crate::shared::Shared;
use crate::stream::Cell;
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use toolwright_jsonrpc::RequestId;
use toolwright_protocol::ProtocolVersion;
use toolwright_server::{Caller, ReplyFuture};

/// True when the session's version expects priming events (2025-11-25 and later).
pub(crate) fn primes(hs: &HttpSession) -> bool {
    hs.mcp
        .negotiated()
        .is_some_and(|n| n.version >= ProtocolVersion::V2025_11_25)
}

/// A response whose body streams `cell`. `slot` is the claim on the reply-stream budget
/// (taken here for `client` if absent); `ids` makes the events resumable.
pub(crate) fn stream_response(
    shared: &Arc<Shared>,
    client: Client,
    cell: Arc<Cell>,
    first: Option<Bytes>,
    call: Option<ReplyFuture>,
    slot: Option<OnDrop>,
    ids: bool,
) -> Response<Body> {
    let slot = match slot.map_or_else(|| shared.open_stream(Budget::Reply, client), Ok) {
        Ok(s) => s,
        Err(full) => return stream_refused(None, full),
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

/// The session a GET or DELETE names, or the response refusing it.
async fn session_of(
    shared: &Shared,
    (headers, caller): (&HeaderMap, Option<&Caller>),
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
    named_session(
        shared,
        (headers, caller),
        None,
        "Mcp-Session-Id header required",
    )
    .await
}

/// The live session `Mcp-Session-Id` names, or the response refusing the request (naming
/// the request `id`): 400 without the header (saying `missing`), 404 for a session unknown
/// or expired, or bound to another subject than the `caller`'s (a session answers only the
/// subject whose token opened it, and another one learns nothing of it), 503 while the
/// session store cannot answer.
pub(crate) async fn named_session(
    shared: &Shared,
    (headers, caller): (&HeaderMap, Option<&Caller>),
    id: Option<&RequestId>,
    missing: &str,
) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    let Some(sid) = headers.get(SESSION_ID) else {
        return Err(Box::new(refuse(StatusCode::BAD_REQUEST, id, missing)));
    };
    let found = match sid.to_str() {
        Ok(s) => shared.sessions.find(s).await,
        Err(_) => Ok(None),
    };
    match found {
        Ok(Some(hs)) if same_subject(&hs, caller) => Ok(hs),
        Ok(_) => Err(Box::new(refuse(
            StatusCode::NOT_FOUND,
            id,
            "unknown or expired session; initialize again",
        ))),
        Err(e) => Err(Box::new(store_unavailable(id, &e))),
    }
}

/// Whether the request's `caller` is the subject the session `hs` is bound to (both
/// without one when no token is checked).
fn same_subject(hs: &HttpSession, caller: Option<&Caller>) -> bool {
    let bound = hs.mcp.caller().and_then(|c| c.subject.as_deref());
    let bound_to_caller = hs.mcp.caller().is_some();
    let presented = caller.and_then(|c| c.subject.as_deref());
    bound_to_caller == caller.is_some() && bound == presented
}

/// GET: the session's standalone stream, or the resumption of any of its streams after
/// `Last-Event-ID`. The standalone stream draws on the GET budget, a resumed POST stream on
/// the reply budget.
pub(crate) async fn get(
    shared: &Arc<Shared>,
    client: Client,
    (headers, caller): (&HeaderMap, Option<&Caller>),
) -> Response<Body> {
    let hs = match session_of(shared, (headers, caller), "GET").await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if !accept::allows(headers, Kind::EventStream) {
        return not_acceptable(
            "a GET is answered with text/event-stream, which this request's Accept does not allow",
            &["text/event-stream"],
        );
    }
    if shared.shutdown.is_cancelled() {
        return shutting_down();
    }
    let resume = match last_event_id(headers) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let (stream, after) = match resume {
        Some((n, seq)) => (n, Some(seq)),
        None => (0, None),
    };
    let Some(Replay { cell, feeding }) = shared.sessions.replay(&hs, stream, after) else {
        return gone();
    };
    let standalone = stream == 0;
    let slot = match claim(shared, client, &hs, standalone, resume.is_some()) {
        Ok(slot) => slot,
        Err(r) => return *r,
    };
    let (ticket, before) = cell.attach(after);
    let first = primes(&hs).then(|| priming_event(stream, before, None));
    let busy = hs.busy();
    let hs2 = hs.clone();
    let guard = OnDrop(Some(Box::new(move || {
        if standalone {
            hs2.get_open.store(false, Ordering::Release);
        }
        drop(feeding);
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

/// The stream and event a `Last-Event-ID` names (`None` without one); `Err`: 400 for a
/// malformed one.
fn last_event_id(headers: &HeaderMap) -> Result<Option<(u32, u64)>, Box<Response<Body>>> {
    match headers.get(LAST_EVENT_ID) {
        None => Ok(None),
        Some(v) => match v.to_str().ok().and_then(parse_event_id) {
            Some(pos) => Ok(Some(pos)),
            None => Err(Box::new(refuse(
                StatusCode::BAD_REQUEST,
                None,
                "malformed Last-Event-ID",
            ))),
        },
    }
}

/// Claims the budget of a GET stream: the GET budget for the `standalone` stream (one per
/// session unless `resumed`, else 409), the reply budget for a POST stream resumed.
fn claim(
    shared: &Shared,
    client: Client,
    hs: &HttpSession,
    standalone: bool,
    resumed: bool,
) -> Result<OnDrop, Box<Response<Body>>> {
    if standalone && !resumed && hs.get_open.swap(true, Ordering::AcqRel) {
        return Err(Box::new(refuse(
            StatusCode::CONFLICT,
            None,
            "this session already has a GET stream open",
        )));
    }
    let budget = if standalone {
        Budget::Get
    } else {
        Budget::Reply
    };
    let slot = match shared.open_stream(budget, client) {
        Ok(slot) => slot,
        Err(full) => {
            if standalone && !resumed {
                // Set by the swap above: no GET stream is open after all.
                hs.get_open.store(false, Ordering::Release);
            }
            return Err(Box::new(stream_refused(None, full)));
        }
    };
    if standalone && resumed {
        hs.get_open.store(true, Ordering::Release);
    }
    Ok(slot)
}

fn gone() -> Response<Body> {
    refuse(
        StatusCode::NOT_FOUND,
        None,
        "that stream is gone; its events can no longer be replayed",
    )
}

/// DELETE: ends the session.
pub(crate) async fn delete(
    shared: &Arc<Shared>,
    (headers, caller): (&HeaderMap, Option<&Caller>),
) -> Response<Body> {
    let hs = match session_of(shared, (headers, caller), "DELETE").await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match shared.sessions.end(&hs).await {
        Ok(()) => respond(StatusCode::NO_CONTENT, Body::Empty),
        Err(e) => store_unavailable(None, &e),
    }
}
