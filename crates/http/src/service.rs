//! Request handling: the state every connection shares, routing, and the checks every
//! request passes (Host, Origin, bearer token, CORS preflight); POST is in `post.rs`, GET
//! and DELETE in `streams.rs`.
//!
//! The era of a POST comes from its body: a request whose `params._meta` names a protocol
//! version is modern (2026-07-28), as is anything sent with a modern `MCP-Protocol-Version`
//! header; everything else is legacy. Modern requests stand alone (a throwaway server
//! session each, nothing shared, no lock taken). Legacy requests belong to the session their
//! `initialize` opened, unless the server is stateless.

use crate::body::{Body, OnDrop};
use crate::config::HttpConfig;
use crate::guard::{Guard, Refusal};
use crate::respond::{JSON, refuse, respond};
use crate::session::Sessions;
use bytes::Bytes;
use http::header::{ACCEPT, ALLOW, CONTENT_TYPE, ORIGIN, VARY, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolwright_server::Server;

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
}

impl Shared {
    pub(crate) fn new(
        server: Server,
        config: HttpConfig,
        guard: Guard,
        metadata: Option<(Vec<String>, Bytes)>,
        metadata_url: &str,
    ) -> Shared {
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
            config,
        }
    }

    /// Claims an SSE stream; the guard gives it back.
    pub(crate) fn open_stream(self: &Arc<Self>) -> Option<OnDrop> {
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
            Method::POST => crate::post::post(shared, req).await,
            Method::GET => crate::streams::get(shared, req.headers()),
            Method::DELETE => crate::streams::delete(shared, req.headers()),
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
pub(crate) fn accepts(headers: &HeaderMap, what: &str) -> bool {
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

pub(crate) enum BodyError {
    TooLarge,
    Timeout,
    Broken,
}

pub(crate) async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, BodyError> {
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
