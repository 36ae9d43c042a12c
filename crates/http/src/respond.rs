//! Response builders: JSON bodies, JSON-RPC errors as whole responses, event streams, and
//! the status a modern reply gets from its outcome.

use crate::body::{Body, write_event};
use crate::budget::{Budget, Full};
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use toolwright_jsonrpc::{self as jsonrpc, ErrorObject, RequestId, code};
use toolwright_protocol::ProtocolVersion;
use toolwright_server::Outcome;

pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

pub(crate) fn respond(status: StatusCode, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

pub(crate) fn json(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut r = respond(status, Body::full(bytes));
    r.headers_mut().insert(CONTENT_TYPE, JSON);
    r
}

/// A JSON-RPC error as the whole response.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&RequestId>,
    error: &ErrorObject,
) -> Response<Body> {
    let mut buf = Vec::with_capacity(96 + error.message.len());
    jsonrpc::write_error(&mut buf, id, error);
    json(status, buf)
}

pub(crate) fn refuse(
    status: StatusCode,
    id: Option<&RequestId>,
    message: impl Into<String>,
) -> Response<Body> {
    rpc_error(status, id, &ErrorObject::invalid_request(message))
}

pub(crate) fn accepted() -> Response<Body> {
    respond(StatusCode::ACCEPTED, Body::Empty)
}

pub(crate) fn method_not_allowed(message: &str) -> Response<Body> {
    let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, None, message);
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    r
}

pub(crate) fn event_stream(body: Body) -> Response<Body> {
    let mut r = respond(StatusCode::OK, body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, EVENT_STREAM);
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// The HTTP status of a modern reply: 400 for the modern protocol errors, 404 for an
/// unknown method, 200 for everything else (results, tool-level errors).
pub(crate) fn modern_status(outcome: Outcome) -> StatusCode {
    match outcome {
        Outcome::Error(
            code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
            | code::INVALID_REQUEST
            | code::PARSE_ERROR,
        ) => StatusCode::BAD_REQUEST,
        Outcome::Error(code::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// 400 for a `MCP-Protocol-Version` this server does not speak.
pub(crate) fn unsupported_version(id: Option<&RequestId>, v: &str) -> Response<Body> {
    let supported: Vec<&str> = ProtocolVersion::ALL
        .iter()
        .rev()
        .map(|v| v.as_str())
        .collect();
    let e = ErrorObject::invalid_request(format!("unsupported MCP-Protocol-Version {v:?}"))
        .with_data(serde_json::json!({"supported": supported, "requested": v}));
    rpc_error(StatusCode::BAD_REQUEST, id, &e)
}

/// 503 while the server shuts down.
pub(crate) fn shutting_down() -> Response<Body> {
    rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        &ErrorObject::internal("the server is shutting down"),
    )
}

/// 503 for a session request while the shared session store cannot answer, with
/// `Retry-After: 1`.
pub(crate) fn store_unavailable(
    id: Option<&RequestId>,
    e: &crate::store::StoreError,
) -> Response<Body> {
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        &ErrorObject::internal(format!("{e}; try again shortly")),
    );
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// Seconds a client refused a stream is told to wait before trying again.
const STREAM_RETRY_SECS: HeaderValue = HeaderValue::from_static("5");

/// A stream refused by its budget: 503 when the total is reached, 429 when this client's
/// share is used up; both with `Retry-After`.
pub(crate) fn stream_refused(id: Option<&RequestId>, full: Full) -> Response<Body> {
    let what = |b: Budget| match b {
        Budget::Reply => "event streams carrying replies",
        Budget::Get => "GET streams",
    };
    let (status, message) = match full {
        Full::All { budget, cap } => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many open {} ({cap}, the server's limit); try again later",
                what(budget)
            ),
        ),
        Full::Client { budget, cap } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this client already has {cap} open {} (the limit per client); close one or try again later",
                what(budget)
            ),
        ),
    };
    let mut r = rpc_error(status, id, &ErrorObject::internal(message));
    r.headers_mut().insert(RETRY_AFTER, STREAM_RETRY_SECS);
    r
}

/// A whole event stream of one message (a reply that came first, to a client that accepts
/// only `text/event-stream`). Complete at once, so it holds no stream slot.
pub(crate) fn single_event(line: &[u8]) -> Response<Body> {
    let mut out = Vec::with_capacity(line.len() + 8);
    write_event(&mut out, None, line);
    event_stream(Body::full(out))
}

/// 406: `Accept` allows none of the types the request could be answered with
/// (`acceptable`, also listed in the error's data).
pub(crate) fn not_acceptable(message: &str, acceptable: &[&str]) -> Response<Body> {
    let e = ErrorObject::invalid_request(message)
        .with_data(serde_json::json!({"acceptable": acceptable}));
    rpc_error(StatusCode::NOT_ACCEPTABLE, None, &e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_statuses() {
        let check = |c: i64, s: StatusCode| assert_eq!(modern_status(Outcome::Error(c)), s, "{c}");
        check(-32020, StatusCode::BAD_REQUEST);
        check(-32021, StatusCode::BAD_REQUEST);
        check(-32022, StatusCode::BAD_REQUEST);
        check(-32600, StatusCode::BAD_REQUEST);
        check(-32700, StatusCode::BAD_REQUEST);
        check(-32601, StatusCode::NOT_FOUND);
        check(-32602, StatusCode::OK);
        check(-32603, StatusCode::OK);
        assert_eq!(modern_status(Outcome::Result), StatusCode::OK);
    }
}
