//! Streamable HTTP for toolwright: one endpoint (`/mcp`) serving both protocol eras, secure
//! by default.
//!
//! ```no_run
//! # async fn demo(server: toolwright_server::Server) -> Result<(), toolwright_http::Error> {
//! use toolwright_http::{HttpConfig, HttpServer};
//! let http = HttpServer::bind(server, HttpConfig { addr: "127.0.0.1:0".into(), ..HttpConfig::default() }).await?;
//! tracing::info!(url = %http.url(), "listening");
//! http.run().await // until SIGINT or SIGTERM
//! # }
//! ```
//!
//! # The two eras on one endpoint
//!
//! A POST whose body is a request with `params._meta["io.modelcontextprotocol/protocolVersion"]`
//! (or that carries a modern `MCP-Protocol-Version` header) is **modern** (2026-07-28): its
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers (and any `Mcp-Param-*` a tool
//! asks for with `x-mcp-header`) must mirror the body, or it gets 400 with -32020; it runs
//! on a throwaway server session, shares nothing with other requests and takes no lock;
//! closing the response cancels the call. GET and DELETE with a modern version get 405.
//!
//! Everything else is **legacy** (2025-03-26 … 2025-11-25): `initialize` opens a session and
//! its `Mcp-Session-Id` (128 random bits from a CSPRNG); every later request must name it
//! (400 when missing, 404 when unknown or expired); DELETE ends it; idle sessions expire.
//! A GET opens the session's stream for unsolicited messages (`tools/list_changed`). Every
//! SSE event of a session carries an id `<stream>-<n>`; a client that reconnects with
//! `Last-Event-ID` gets what it missed from a bounded per-session store. A client that
//! disconnects does not cancel its call (a legacy rule): the call finishes and its messages
//! wait in the store. 2025-03-26 batches are accepted. A missing `MCP-Protocol-Version`
//! means 2025-03-26; an unknown one gets 400.
//!
//! Each request is answered with `application/json` when its reply is the first thing it
//! produces, and with `text/event-stream` when a notification (progress, a log message) or a
//! request to the client comes first: the stream then carries those, the reply, and ends.
//!
//! # Replies only in a type the client accepts
//!
//! A POST's `Accept` (RFC 9110 media ranges with weights: `*/*`, `application/*`, `;q=0` for
//! "not this one"; no `Accept` at all allows both) decides what the reply may be:
//!
//! - **Both** `application/json` and `text/event-stream` (what the spec asks clients to
//!   send): as above, the server picks per request.
//! - **Only `text/event-stream`**: always an event stream, even when the reply comes first
//!   (then a stream of that one event). Replies whose protocol error maps to an HTTP error
//!   status (a modern 400 or 404) keep their JSON body, as every refusal does.
//! - **Only `application/json`**: always JSON. Progress and log notifications that would have
//!   needed a stream are **dropped**; a tool's request to the client (sampling, elicitation,
//!   roots) fails at once as a tool error saying the client must accept `text/event-stream`;
//!   a call that ends without a reply (cancelled) gets 202 and no body.
//! - **Neither**: 406, whose JSON-RPC error names the acceptable types (also in
//!   `error.data.acceptable`).
//!
//! A GET is an event stream or nothing: its `Accept` must allow `text/event-stream`, else
//! 406.
//!
//! # Stateless mode
//!
//! With [`HttpConfig::stateless`], legacy requests need no session: `initialize` is answered
//! without an `Mcp-Session-Id`, and every request is handled on its own, negotiated at the
//! version its `MCP-Protocol-Version` header names. Any replica behind a load balancer can
//! answer any request, with no sticky routing and no shared store. The price: no GET stream
//! (so no `tools/list_changed` for legacy clients), no `Last-Event-ID` resumption, no
//! DELETE, `logging/setLevel` lasts one request, and tools cannot send requests to the
//! client (sampling, elicitation, roots: the client's capabilities are unknown, so such
//! tools report that the client lacks them). Modern clients lose nothing: that era is
//! stateless by design.
//!
//! # Sessions shared by replicas
//!
//! With [`HttpConfig::session_store`] (a [`SessionStore`]: [`MemoryStore`] in one process,
//! `toolwright-sessions-redis` across machines), legacy sessions keep their state in the
//! store and any replica serves any request of any session, with no sticky routing: the
//! session's record is read (and its idle expiry pushed back) by every session request;
//! every stream's events are copied, in order, to bounded logs, so `Last-Event-ID` resumes
//! a stream anywhere and a GET stream carries what another replica sent; a client's answer
//! to a request the server sent is handed to the replica whose call waits for it; `DELETE`
//! and idle expiry hold everywhere. Each store operation is bounded by
//! [`HttpConfig::session_store_timeout`]; a session request the store cannot answer gets 503
//! with `Retry-After`, while stateless and modern requests never touch the store. Without a
//! store (the default) nothing on a request's path consults one. See [`store`].
//!
//! # Security and limits
//!
//! The default address is loopback. `Host` must be a loopback name (or the bound address,
//! or one of [`HttpConfig::allowed_hosts`]), else 403: DNS-rebinding protection; more than
//! one `Host` is 400 (RFC 9112 §3.2). An absolute-form request target (`POST
//! http://name/mcp`) names the host that counts (RFC 9112 §3.2.2): its authority passes the
//! same check, else 421 (Misdirected Request), and a `Host` naming anything else is 400. A
//! present `Origin` must be one loopback or allowed origin, else 403; more than one `Origin`
//! header, or a list in one, is 403 too. With [`HttpConfig::auth_token`], every
//! request needs `Authorization: Bearer <token>` (compared in constant time), else 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"` naming the RFC 9728 Protected Resource
//! Metadata, served at `/.well-known/oauth-protected-resource/mcp`.
//!
//! With [`HttpConfig::jwt`] instead, the server is an OAuth 2.1 protected resource (the MCP
//! authorization spec): the bearer token must be a JWT access token of that issuer, for
//! this resource (`toolwright-auth` checks it; the issuer's keys are fetched when the
//! server binds, and a token whose key is cached is checked without waiting). No token:
//! 401 with the challenge above, plus `scope="…"` when scopes are required; a token that
//! fails: 401 `error="invalid_token"`; a valid token without a required scope: 403
//! `error="insufficient_scope"` naming the scopes needed; the issuer's keys unreachable
//! for a token whose key is not cached: 503. The verified [`Identity`] is put in the
//! request's extensions (an `Arc<Identity>`, and the server's view of it, an
//! `Arc<toolwright_server::Caller>`) before it is handled; the session that handles it is
//! bound to that caller (a tool reads it with `ToolContext::identity`). A legacy session
//! stays bound to the subject of its `initialize`: a request bearing another subject's
//! token is answered as for an unknown session (404), on POST, GET and DELETE, on every
//! replica (the session record carries the caller).
//!
//! With views (`toolwright_server::Views` in the server's config), each view is also served
//! at `PATH/NAME` (`/mcp/support`): a request there gets that view when its `when` admits
//! the caller, and is answered as a path that does not exist (404) otherwise; a request to
//! `PATH` gets the first view whose `when` admits the caller, else the view named `default`,
//! else no tool at all. The session that handles the request is given the view (a legacy
//! session keeps the view of its `initialize`). The metadata names
//! the issuer in `authorization_servers` and the required scopes in `scopes_supported`.
//!
//! # Discovery before connecting
//!
//! The Server Card (SEP-2127) is served at `PATH/server-card` (`/mcp/server-card`) as
//! `application/mcp-server-card+json`, and the AI Catalog that lists it at
//! `/.well-known/ai-catalog.json`: GET and HEAD, a strong `ETag`, 304 for a matching
//! `If-None-Match`, no token asked (public metadata) but the `Host` and `Origin` checks
//! above. The card says what `server/discover` says (see [`card`]); with views, a view
//! cannot be named `server-card`, the card's path.
//!
//! Bodies over the limit get 413; oversized headers 431; slow request heads close the
//! connection, slow bodies get 408; sessions are capped (503 beyond).
//!
//! Event streams draw on two budgets that cannot take from each other, so that idle GET
//! streams never starve calls: **reply** streams (a POST answered with SSE, and its
//! `Last-Event-ID` resumption; [`HttpConfig::max_sse_streams`]) and standalone **GET**
//! streams ([`HttpConfig::max_get_streams`]; one per session, 409 for a second). Each budget
//! also has a share per client address (an IPv6 client counts by its /64; behind one of
//! [`HttpConfig::trusted_proxies`], the address its `X-Forwarded-For` names):
//! [`HttpConfig::max_sse_streams_per_client`], [`HttpConfig::max_get_streams_per_client`].
//! A full budget is 503, a client over its share 429, both with `Retry-After`. Shutdown stops accepting, ends GET
//! streams and lets requests in progress finish. Accepted sockets set `TCP_NODELAY`.
//!
//! # Layout
//!
//! Modules depend one way, from the listener down to the data structures:
//!
//! - [`listener`](HttpServer): binding, the accept loop, hyper connections, shutdown.
//! - `service.rs`: routing and the checks every request passes.
//! - `post.rs`: POST in each era; `streams.rs`: SSE responses, GET and DELETE; `ops.rs`:
//!   `/metrics`, `/healthz`, `/readyz`; [`card`]: the Server Card and the AI Catalog.
//! - `shared.rs`: the state every connection shares; `read.rs`: request bodies;
//!   `respond.rs`: response builders and the status of a modern reply.
//! - `sessions.rs`: the sessions the handlers speak to, one of the two implementations of
//!   the sessions interface (`backend.rs`): `in_process.rs`, and `cluster.rs` on a shared
//!   [`store`] (the trait of shared session stores, and the in-memory one).
//! - `session.rs`: one legacy session and the table of them.
//! - `headers.rs`: MCP headers and the modern mirroring rules; `accept.rs`: `Accept`.
//! - `budget.rs`: the stream budgets, in total and per client; `forwarded.rs`: the client
//!   behind a trusted reverse proxy.
//! - `guard.rs`: `Host`, `Origin`, Protected Resource Metadata; `bearer.rs`: the bearer
//!   token (static, or a JWT access token checked by `toolwright-auth`).
//! - `stream.rs`: the cell a response stream reads from; `body.rs`: JSON and SSE bodies.
//! - [`config`], [`error`].

mod accept;
mod backend;
mod bearer;
mod body;
mod budget;
pub mod card;
mod cluster;
pub mod config;
pub mod error;
mod forwarded;
mod guard;
pub mod headers;
mod in_process;
mod listener;
mod ops;
mod post;
mod read;
mod respond;
mod service;
mod session;
mod sessions;
mod shared;
pub mod store;
mod stream;
mod streams;

pub use bearer::check_auth_token;
pub use config::{ApiKey, HttpConfig, JwtAuth, Readiness};
pub use error::Error;
pub use listener::{HttpServer, shutdown_signal};
pub use store::{MemoryStore, SessionStore};
pub use toolwright_auth::Identity;
pub use toolwright_auth::Introspection;
