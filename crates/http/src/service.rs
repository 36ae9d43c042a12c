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
use crate::budget::{Budget, Budgets, Client, Full};
use crate::config::HttpConfig;
use crate::guard::{Guard, Refusal};
use crate::respond::{JSON, refuse, respond};
use crate::session::Sessions;
use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, ORIGIN, VARY, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
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
    /// The shared session store, when replicas share sessions.
    pub cluster: Option<crate::cluster::Cluster>,
    /// Event streams open now, per budget and client.
    pub budgets: Arc<Budgets>,
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
            cluster: config
                .session_store
                .clone()
                .map(|s| crate::cluster::Cluster::new(s, config.session_store_timeout)),
            budgets: Arc::new(Budgets::new(
                (config.max_sse_streams, config.max_sse_streams_per_client),
                (config.max_get_streams, config.max_get_streams_per_client),
            )),
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

    /// Claims an event stream from `budget` for `client`; the guard gives it back. `Err` is
    /// the response refusing the stream (503 or 429, with `Retry-After`).
    pub(crate) fn open_stream(&self, budget: Budget, client: Client) -> Result<OnDrop, Full> {
        self.budgets.claim(budget, client)
    }
}

// ---------------------------------------------------------------------------------------
// Routing and checks

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
    let mut resp = route(&shared, (Client::of(peer.ip()), peer), req).await;
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

/// Routes `req` from `client` (its budget's key, and its address and port).
async fn route(
    shared: &Arc<Shared>,
    (client, peer): (Client, SocketAddr),
    req: Request<Incoming>,
) -> Response<Body> {
    let path = req.uri().path();
    if path == shared.config.path {
        if req.method() == Method::OPTIONS {
            return preflight(req.headers());
        }
        if let Err(r) = shared.guard.check_token(req.headers()) {
            return refusal(shared, r);
        }
        return match *req.method() {
            Method::POST => crate::post::post(shared, client, peer, req).await,
            Method::GET => crate::streams::get(shared, client, req.headers()).await,
            Method::DELETE => crate::streams::delete(shared, req.headers()).await,
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
        && let Some(which) = crate::ops::Endpoint::of(path)
    {
        // Probes (a kubelet's, a load balancer's) send no token: /healthz and /readyz answer
        // without one, saying only whether the server is up and ready; the details of what
        // is not ready, and /metrics, need it.
        let authorized = shared.guard.check_token(req.headers());
        if let Err(r) = authorized
            && which == crate::ops::Endpoint::Metrics
        {
            return refusal(shared, r);
        }
        return crate::ops::serve(shared, which, req.method(), authorized.is_ok());
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

pub(crate) enum BodyError {
    /// Over the limit; the id of the request when the part read shows one.
    TooLarge(Option<toolwright_jsonrpc::RequestId>),
    Timeout,
    Broken,
}

/// How much of a body declared too large is read to find the request's id.
const ID_PREFIX_BYTES: usize = 64 * 1024;

/// Reads a body of at most `limit` bytes. Over it, the bytes read so far (never more than
/// `limit`) are kept, so that the refusal can name the request's id if they show one.
async fn collect_up_to(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let mut body = std::pin::pin!(body);
    // Most bodies are one frame, which is then kept as it came, without a copy.
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut held = 0;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyError::Broken)?.into_data() else {
            continue;
        };
        if held + data.len() > limit {
            let mut prefix = chunks.concat();
            prefix.extend_from_slice(&data[..limit - held]);
            return Err(BodyError::TooLarge(toolwright_jsonrpc::readable_id(
                &prefix,
            )));
        }
        held += data.len();
        chunks.push(data);
    }
    Ok(match chunks.len() {
        1 => chunks.pop().expect("one chunk"),
        _ => Bytes::from(chunks.concat()),
    })
}

pub(crate) async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, BodyError> {
    read_within(shared, collect_up_to(body, shared.config.max_body_bytes)).await
}

/// The id of a request whose body is declared larger than the limit, from its first bytes.
pub(crate) async fn id_of_oversized(
    shared: &Shared,
    body: Incoming,
) -> Option<toolwright_jsonrpc::RequestId> {
    match read_within(shared, collect_up_to(body, ID_PREFIX_BYTES)).await {
        Err(BodyError::TooLarge(id)) => id,
        Ok(all) => toolwright_jsonrpc::readable_id(&all),
        Err(_) => None,
    }
}

/// Runs a body read: a small body usually came with the headers and is taken at once, with
/// no timer armed; otherwise it must arrive within the body read timeout.
async fn read_within(
    shared: &Shared,
    read: impl Future<Output = Result<Bytes, BodyError>>,
) -> Result<Bytes, BodyError> {
    let mut read = std::pin::pin!(read);
    let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(r) => r,
        Poll::Pending => match tokio::time::timeout(shared.config.body_read_timeout, read).await {
            Ok(r) => r,
            Err(_) => Err(BodyError::Timeout),
        },
    }
}
