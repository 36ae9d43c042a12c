//! Streamable HTTP for toolwright: one endpoint (`/mcp`) serving both protocol eras, secure
//! by default.
//!
//! ```no_run
//! # async fn demo(server: toolwright_server::Server) -> Result<(), toolwright_http::Error> {
//! use toolwright_http::{HttpConfig, HttpServer};
//! let http = HttpServer::bind(server, HttpConfig { addr: "127.0.0.1:0".into(), ..HttpConfig::default() }).await?;
//! eprintln!("listening on {}", http.url());
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
//! # Security and limits
//!
//! The default address is loopback. `Host` must be a loopback name (or the bound address,
//! or one of [`HttpConfig::allowed_hosts`]), else 403: DNS-rebinding protection. A present
//! `Origin` must be loopback or allowed, else 403. With [`HttpConfig::auth_token`], every
//! request needs `Authorization: Bearer <token>` (compared in constant time), else 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"` naming the RFC 9728 Protected Resource
//! Metadata, served at `/.well-known/oauth-protected-resource/mcp`. Bodies over the limit
//! get 413; oversized headers 431; slow request heads close the connection, slow bodies get
//! 408; sessions and SSE streams are capped (503 beyond). Shutdown stops accepting, ends GET
//! streams and lets requests in progress finish. Accepted sockets set `TCP_NODELAY`.
//!
//! # Layout
//!
//! - [`listener`](HttpServer): binding, the accept loop, hyper connections, shutdown.
//! - `service.rs`: shared state, routing, the checks every request passes.
//! - `post.rs`: POST in each era; `streams.rs`: SSE responses, GET and DELETE;
//!   `respond.rs`: response builders and the status of a modern reply.
//! - `headers.rs`: MCP headers and the modern mirroring rules.
//! - `guard.rs`: `Host`, `Origin`, bearer tokens, Protected Resource Metadata.
//! - `session.rs`: legacy sessions and their table.
//! - `stream.rs`: the cell a response stream reads from; `body.rs`: JSON and SSE bodies.
//! - [`config`], [`error`].

mod body;
pub mod config;
pub mod error;
mod guard;
pub mod headers;
mod listener;
mod post;
mod respond;
mod service;
mod session;
mod stream;
mod streams;

pub use config::HttpConfig;
pub use error::Error;
pub use listener::{HttpServer, shutdown_signal};
