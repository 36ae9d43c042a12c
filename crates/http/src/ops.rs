//! The operator's endpoints beside MCP: `/metrics` (OpenMetrics text of the server's
//! telemetry), `/healthz` (the process answers) and `/readyz` (the start-up tools are
//! loaded and every configured readiness check passes). They sit behind the same Host and
//! Origin checks as the MCP endpoint; `/metrics` behind its bearer token too, while
//! `/healthz` and `/readyz` answer probes without one (which send none), saying no more
//! than the status until the token is shown.

use crate::body::Body;
use crate::respond::{JSON, refuse, respond};
use crate::shared::Shared;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Method, Response, StatusCode};
use serde_json::json;

/// One of the operator's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Metrics,
    Health,
    Ready,
}

impl Endpoint {
    /// The endpoint served at `path`, if any.
    pub(crate) fn of(path: &str) -> Option<Endpoint> {
        match path {
            "/metrics" => Some(Endpoint::Metrics),
            "/healthz" => Some(Endpoint::Health),
            "/readyz" => Some(Endpoint::Ready),
            _ => None,
        }
    }
}

fn json_body(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut r = respond(status, Body::full(value.to_string()));
    r.headers_mut().insert(CONTENT_TYPE, JSON);
    r
}

/// The answer of `which` to a request with `method`; `authorized`: it showed the bearer
/// token (or none is needed), so `/readyz` may say what is not ready.
pub(crate) fn serve(
    shared: &Shared,
    which: Endpoint,
    method: &Method,
    authorized: bool,
) -> Response<Body> {
    if !matches!(*method, Method::GET | Method::HEAD) {
        let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, None, "use GET");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let server = &shared.server;
    match which {
        Endpoint::Metrics => match &server.config().telemetry {
            Some(t) => {
                let mut r = respond(StatusCode::OK, Body::full(t.render()));
                r.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(toolwright_server::telemetry::CONTENT_TYPE),
                );
                r
            }
            None => refuse(
                StatusCode::NOT_FOUND,
                None,
                "metrics are off on this server",
            ),
        },
        Endpoint::Health => json_body(StatusCode::OK, &json!({"status": "ok"})),
        Endpoint::Ready => {
            let mut problems = Vec::new();
            if !server.is_ready() {
                // Start loading them if nothing has (a no-op when loading already began).
                server.warm_up();
                problems.push("the start-up tools are still loading".to_owned());
            }
            if let Some(check) = &shared.config.readiness {
                problems.extend((check.0)());
            }
            if shared.shutdown.is_cancelled() {
                problems.push("the server is shutting down".to_owned());
            }
            match (problems.is_empty(), authorized) {
                (true, true) => {
                    let tools = server.registered().len();
                    json_body(StatusCode::OK, &json!({"status": "ready", "tools": tools}))
                }
                (true, false) => json_body(StatusCode::OK, &json!({"status": "ready"})),
                (false, true) => {
                    let body = json!({"status": "not ready", "problems": problems});
                    json_body(StatusCode::SERVICE_UNAVAILABLE, &body)
                }
                (false, false) => json_body(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &json!({"status": "not ready"}),
                ),
            }
        }
    }
}
