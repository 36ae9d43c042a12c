//! Request handling: routing, and the checks every request passes (Host, Origin, bearer
//! token, CORS preflight); POST is in `post.rs`, GET and DELETE in `streams.rs`, the
//! state they share in `shared.rs`.
//!
//! The era of a POST comes from its body: a request whose `params._meta` names a protocol
//! version is modern (2026-07-28), as is anything sent with a modern `MCP-Protocol-Version`
//! header; everything else is legacy. Modern requests stand alone (a throwaway server
//! session each, nothing shared, no lock taken). Legacy requests belong to the session their
//! `initialize` opened, unless the server is stateless.

use crate::body::Body;
use crate::budget::Client;
use crate::guard::Refusal;
use crate::ops::{self, Endpoint};
use crate::respond::{JSON, refuse, respond};
use crate::shared::Shared;
use crate::{post, streams};
use http::header::{ALLOW, CONTENT_TYPE, ORIGIN, RETRY_AFTER, VARY, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use toolwright_auth::Identity;
use toolwright_server::Caller;

const ALLOWED_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, DELETE");
const ALLOWED_HEADERS: &str = "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, \
     mcp-method, mcp-name, last-event-id";
const EXPOSED_HEADERS: HeaderValue = HeaderValue::from_static("mcp-session-id, www-authenticate");

/// Handles one request from `peer`.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Response<Body> {
    if let Err(r) = shared.guard.check_site(req.uri(), req.headers()) {
        return refusal(&shared, r);
    }
    let origin = req.headers().get(ORIGIN).cloned();
    // Who counts for budgets and limits: behind a trusted proxy, the client it names.
    let from =
        crate::forwarded::client_ip(peer.ip(), req.headers(), &shared.config.trusted_proxies);
    let mut resp = route(&shared, (peer, from), req).await;
    if let Some(o) = origin {
        let h = resp.headers_mut();
        h.insert("access-control-allow-origin", o);
        h.insert(VARY, HeaderValue::from_static("origin"));
        // The discovery documents expose their own (`ETag`).
        h.entry("access-control-expose-headers")
            .or_insert(EXPOSED_HEADERS);
    }
    resp
}

fn refusal(shared: &Shared, r: Refusal) -> Response<Body> {
    match r {
        Refusal::MissingHost => refuse(StatusCode::BAD_REQUEST, None, "a Host header is required"),
        Refusal::DuplicateHost => refuse(
            StatusCode::BAD_REQUEST,
            None,
            "more than one Host header (RFC 9112 §3.2 allows exactly one)",
        ),
        Refusal::ForeignHost => refuse(
            StatusCode::FORBIDDEN,
            None,
            "Host not allowed (DNS rebinding protection)",
        ),
        Refusal::ForeignTarget => refuse(
            StatusCode::MISDIRECTED_REQUEST,
            None,
            "the request target names a host this server does not serve",
        ),
        Refusal::TargetNotHost => refuse(
            StatusCode::BAD_REQUEST,
            None,
            "the request target's host and the Host header differ",
        ),
        Refusal::DuplicateOrigin => {
            refuse(StatusCode::FORBIDDEN, None, "more than one Origin header")
        }
        Refusal::ForeignOrigin => refuse(StatusCode::FORBIDDEN, None, "Origin not allowed"),
        Refusal::InsufficientScope => {
            let mut resp = refuse(
                StatusCode::FORBIDDEN,
                None,
                "the access token lacks a scope this endpoint requires",
            );
            resp.headers_mut()
                .insert(WWW_AUTHENTICATE, shared.challenge_scope.clone());
            resp
        }
        Refusal::IssuerUnavailable => {
            let mut resp = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the access token could not be checked: the authorization server's keys could \
                 not be fetched",
            );
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("30"));
            resp
        }
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

/// The server's view of a verified token: its subject, scopes and claims.
fn caller_of(identity: &Identity) -> Caller {
    Caller::new(
        identity.subject.clone(),
        identity.scopes.clone(),
        identity.claims.clone(),
    )
}

/// Routes `req`, which connected from `peer` and counts as `from` (the client behind a
/// trusted proxy, else `peer`'s address; its budgets' key).
async fn route(
    shared: &Arc<Shared>,
    (peer, from): (SocketAddr, IpAddr),
    mut req: Request<Incoming>,
) -> Response<Body> {
    let path = req.uri().path();
    // Before the views: `/mcp/server-card` is the card, not a view named `server-card`.
    if let Some(which) = shared.discovery.document(path) {
        return shared
            .discovery
            .serve(&shared.server, which, req.method(), req.headers());
    }
    let views = &shared.server.config().views;
    // `/mcp/NAME`: the view NAME, when there are views.
    let view_name = (!views.is_empty())
        .then(|| {
            path.strip_prefix(shared.config.path.as_str())?
                .strip_prefix('/')
        })
        .flatten()
        .map(str::to_owned);
    if path == shared.config.path || view_name.is_some() {
        if req.method() == Method::OPTIONS {
            return preflight(req.headers());
        }
        let caller = match shared.guard.check_token(req.headers()).await {
            // Where the handlers find who called: the server's `Caller`, which the session
            // and the call context carry on; the token's `Identity` stays beside it.
            Ok(Some(identity)) => {
                let caller = Arc::new(caller_of(&identity));
                // The token itself, for tools that exchange it (never logged).
                if let Some(token) = shared.guard.subject_token(req.headers(), &identity) {
                    req.extensions_mut().insert(token);
                }
                req.extensions_mut().insert(identity);
                req.extensions_mut().insert(caller.clone());
                Some(caller)
            }
            Ok(None) => None,
            Err(r) => return refusal(shared, r),
        };
        if !views.is_empty() {
            let view = match &view_name {
                Some(name) => views.for_path(name, caller.as_deref()),
                None => Some(views.choose(caller.as_deref())),
            };
            // A view the caller is not admitted to is a path that does not exist.
            let Some(view) = view else {
                return no_such_endpoint(shared);
            };
            req.extensions_mut().insert(view.clone());
        }
        let who = (req.headers(), caller.as_deref());
        return match *req.method() {
            Method::POST => post::post(shared, (peer, from), req).await,
            Method::GET => streams::get(shared, Client::of(from), who).await,
            Method::DELETE => streams::delete(shared, who).await,
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
    if shared.config.ops_endpoints
        && let Some(which) = Endpoint::of(path)
    {
        // Probes (a kubelet's, a load balancer's) send no token: /healthz and /readyz answer
        // without one, saying only whether the server is up and ready; the details of what
        // is not ready, and /metrics, need it.
        let authorized = shared.guard.check_token(req.headers()).await;
        if let Err(r) = authorized
            && which == Endpoint::Metrics
        {
            return refusal(shared, r);
        }
        return ops::serve(shared, which, req.method(), authorized.is_ok());
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
    no_such_endpoint(shared)
}

fn no_such_endpoint(shared: &Shared) -> Response<Body> {
    refuse(
        StatusCode::NOT_FOUND,
        None,
        format!("no such endpoint; MCP is served at {}", shared.config.path),
    )
}
