//! Settings of the HTTP transport.

use crate::store::SessionStore;
use std::sync::Arc;
use std::time::Duration;

/// What `/readyz` asks besides the server's own tools being loaded: the problems that keep
/// the server from being ready now (none: ready), such as a gateway's unreachable upstream.
#[derive(Clone)]
pub struct Readiness(pub Arc<dyn Fn() -> Vec<String> + Send + Sync>);

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Readiness(..)")
    }
}

/// A named static API key, kept as the SHA-256 digest of its bytes.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiKey {
    /// Its name: requests with it speak for `key:NAME`.
    pub name: String,
    /// SHA-256 of the key.
    pub sha256: [u8; 32],
    /// The scopes it grants.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    /// A key with these parts.
    pub fn new(name: &str, sha256: [u8; 32], scopes: Vec<String>) -> ApiKey {
        ApiKey {
            name: name.to_owned(),
            sha256,
            scopes,
        }
    }

    /// Who a request with the key speaks for: subject `key:NAME`, the key's scopes, and
    /// the claims `sub`, `scope` and `api_key` (its name) as a token would carry them.
    pub fn identity(&self) -> toolwright_auth::Identity {
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), format!("key:{}", self.name).into());
        claims.insert("scope".into(), self.scopes.join(" ").into());
        claims.insert("api_key".into(), self.name.clone().into());
        toolwright_auth::Identity::from_claims(claims)
    }
}

/// Bearer tokens checked as JWT access tokens of one authorization server (the MCP
/// authorization spec): its metadata and keys are fetched when the server binds, and every
/// request to the endpoint (and `/metrics`) needs a token it signed for this resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtAuth {
    /// The authorization server's issuer URL: its metadata's `issuer` and the tokens'
    /// `iss` must equal it; named in the Protected Resource Metadata.
    pub issuer: String,
    /// The audience tokens must name. `None`: the resource URL (RFC 8707), that is
    /// [`HttpConfig::resource_url`] or `http://<bound address><path>`.
    pub audience: Option<String>,
    /// Scopes every request needs; a token without one of them gets 403
    /// `insufficient_scope`. Listed as `scopes_supported` in the metadata.
    pub scopes: Vec<String>,
    /// How far a token's `exp` and `nbf` may be off. Default 60 s.
    pub leeway: Duration,
    /// Opaque tokens too, asked about at the issuer's introspection endpoint (RFC 7662).
    pub introspection: Option<toolwright_auth::Introspection>,
}

impl JwtAuth {
    /// Tokens of `issuer`, for the resource URL, with no scope required.
    pub fn new(issuer: impl Into<String>) -> JwtAuth {
        JwtAuth {
            issuer: issuer.into(),
            audience: None,
            scopes: Vec::new(),
            leeway: Duration::from_secs(60),
            introspection: None,
        }
    }
}

/// Settings of [`HttpServer`](crate::HttpServer). [`HttpConfig::default`] is loopback-only,
/// stateful, without authentication.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Where to listen (`host:port`; port 0 picks a free one). Default `127.0.0.1:8080`.
    pub addr: String,
    /// The MCP endpoint's path. Default `/mcp`.
    pub path: String,
    /// No sessions: every POST stands alone, so any replica can answer any request. Legacy
    /// clients then get no `Mcp-Session-Id`, no GET stream, no resumption, and no
    /// server-to-client requests (sampling, elicitation, roots).
    pub stateless: bool,
    /// A legacy session with no request and no open stream for this long ends.
    pub session_idle_timeout: Duration,
    /// Origins allowed besides the loopback ones (`http(s)://localhost`, `127.0.0.1`,
    /// `[::1]`, any port), as `scheme://host[:port]`; `*` allows any.
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides the loopback names (and the address the server is
    /// bound to): `name` (any port) or `name:port`; `*` allows any.
    pub allowed_hosts: Vec<String>,
    /// Reverse proxies whose `X-Forwarded-For` is believed: a request from one of these
    /// networks counts against the client that header names (its limits, stream budget and
    /// audit line), read from the right past every trusted hop. Empty (the default): the
    /// header is ignored and a request counts against the address that connected.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// When set, every request to the endpoint needs `Authorization: Bearer <token>`.
    /// Exclusive with [`HttpConfig::jwt`].
    pub auth_token: Option<String>,
    /// When set, every request to the endpoint needs `Authorization: Bearer <JWT>`, an
    /// access token of this authorization server: the server is an OAuth 2.1 protected
    /// resource. Exclusive with [`HttpConfig::auth_token`].
    pub jwt: Option<JwtAuth>,
    /// Named API keys (by SHA-256 digest), accepted besides [`HttpConfig::auth_token`] or
    /// [`HttpConfig::jwt`], or alone: a request with one speaks for `key:NAME`.
    pub api_keys: Vec<ApiKey>,
    /// Authorization servers named in the Protected Resource Metadata (RFC 9728) beside a
    /// static [`HttpConfig::auth_token`] (with [`HttpConfig::jwt`], its issuer is the one).
    pub authorization_servers: Vec<String>,
    /// This server's canonical URL (the PRM `resource`); default `http://<bound address><path>`.
    pub resource_url: Option<String>,
    /// Most legacy sessions at once; `initialize` gets 503 beyond it.
    pub max_sessions: usize,
    /// Most event streams carrying call replies (a POST answered with SSE, or the
    /// `Last-Event-ID` resumption of one) open at once; more get 503. GET streams have a
    /// budget of their own ([`HttpConfig::max_get_streams`]).
    pub max_sse_streams: usize,
    /// Most reply streams one client (IP address; IPv6: its /64) has open at once; more get
    /// 429.
    pub max_sse_streams_per_client: usize,
    /// Most standalone GET streams (one per legacy session at most) open at once; more get
    /// 503.
    pub max_get_streams: usize,
    /// Most standalone GET streams one client (IP address; IPv6: its /64) has open at once;
    /// more get 429.
    pub max_get_streams_per_client: usize,
    /// Largest request body; larger ones get 413.
    pub max_body_bytes: usize,
    /// Serving threads. 1 (the default): connections are served on the runtime that runs
    /// the server. N > 1: N listeners share the address (`SO_REUSEPORT`, the kernel
    /// spreads connections over them), each served by its own thread and single-threaded
    /// runtime, the caller's runtime being the first; a connection stays on one thread.
    pub threads: usize,
    /// Most bytes of request line and headers; more get 431.
    pub max_header_bytes: usize,
    /// Most request headers; more get 431.
    pub max_headers: usize,
    /// A connection that does not send a complete request head within this time (slow
    /// clients, idle keep-alive connections) is closed.
    pub header_read_timeout: Duration,
    /// A request body that does not arrive within this time gets 408.
    pub body_read_timeout: Duration,
    /// Interval of `:` comments on idle SSE streams.
    pub keep_alive_interval: Duration,
    /// Messages kept per stream of a legacy session, for replay after `Last-Event-ID`.
    pub event_store_capacity: usize,
    /// Finished-but-unread POST streams kept per legacy session for resumption.
    pub max_stored_streams: usize,
    /// Where legacy sessions live. `None` (the default): in this process only. A shared
    /// store ([`MemoryStore`](crate::store::MemoryStore), Redis) lets replicas serve each
    /// other's sessions, see [`store`](crate::store).
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Longest wait for one session store operation; a session request whose store does
    /// not answer in time gets 503.
    pub session_store_timeout: Duration,
    /// Serve `/metrics` (the server's [`Config::telemetry`](toolwright_server::Config::telemetry)
    /// as OpenMetrics text; 404 when it has none), `/healthz` and `/readyz`, behind the same
    /// Host, Origin and bearer-token checks as the MCP endpoint. Default true.
    pub ops_endpoints: bool,
    /// More readiness checks for `/readyz`.
    pub readiness: Option<Readiness>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            addr: "127.0.0.1:8080".into(),
            path: "/mcp".into(),
            stateless: false,
            session_idle_timeout: Duration::from_secs(30 * 60),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            trusted_proxies: Vec::new(),
            auth_token: None,
            jwt: None,
            api_keys: Vec::new(),
            authorization_servers: Vec::new(),
            resource_url: None,
            max_sessions: 10_000,
            max_sse_streams: 1_000,
            max_sse_streams_per_client: 500,
            max_get_streams: 1_000,
            max_get_streams_per_client: 100,
            max_body_bytes: 16 * 1024 * 1024,
            threads: 1,
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            keep_alive_interval: Duration::from_secs(15),
            event_store_capacity: 1_024,
            max_stored_streams: 64,
            session_store: None,
            session_store_timeout: Duration::from_secs(2),
            ops_endpoints: true,
            readiness: None,
        }
    }
}
