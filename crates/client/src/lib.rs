//! An MCP client for both protocol eras, over stdio and Streamable HTTP.
//!
//! [`Client::connect`] starts a server command ([`Target::Stdio`]) or reaches an
//! `http://` or `https://` endpoint ([`Target::Http`]) and finds out which era it speaks, as the spec
//! advises: it sends a modern `server/discover`; a result, or an error only a modern server
//! gives (-32022, -32021, -32020, or -32602 about `_meta`), means modern; anything else
//! (another error, an HTTP 4xx, silence until the probe timeout) means legacy, and the
//! client performs the `initialize` handshake (with an `Mcp-Session-Id` session over HTTP).
//! A stdio server that exits on the probe is started again for the handshake.
//!
//! Then [`Client::list_tools`] follows every `tools/list` page and [`Client::call_tool`]
//! calls a tool. Modern requests carry `_meta` (version, capabilities, client info) and,
//! over HTTP, the `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
//! headers (their rules are `toolwright_protocol::headers`). Answers may be JSON or SSE streams. Requests from the server are refused
//! (-32601): this client declares no client capabilities.
//!
//! The crate also holds the client-side policies the spec leaves to clients:
//! [`trust`] (annotations are claims; untrusted servers get the worst case and a consent
//! gate) and [`check_output`] (validate `structuredContent` against `outputSchema`).
//!
//! Layout:
//! - `client.rs`: [`Client`], [`Target`], [`ConnectOptions`], era detection;
//! - `envelope.rs`: JSON-RPC lines written and read with toolwright-jsonrpc;
//! - `peer/`: [`Peer`], one concurrent connection in either era (what the gateway uses),
//!   and [`Observer`], what watches every message it sends (telemetry's hook);
//! - `stdio.rs`: the child process transport; `http.rs` and `sse.rs`: Streamable HTTP
//!   over hyper;
//! - `connect.rs`: where every connection is opened, plain or TLS (rustls, ring), and
//!   [`TlsRoots`], the CAs an `https://` server's certificate is checked against;
//! - [`auth`]: [`Authorizer`], what puts `Authorization` on HTTP requests and renews it;
//! - [`oauth`]: [`oauth::OAuth`], the OAuth 2.1 authorizer (discovery, registration,
//!   PKCE through a loopback redirect, refresh, step-up);
//! - [`trust`]: the trust configuration and what it changes;
//! - `validate.rs`: [`check_output`];
//! - `error.rs`: [`ClientError`], and [`TrustConfigError`] which it may carry.

pub mod auth;
mod client;
mod connect;
mod elicit;
mod envelope;
mod error;
mod http;
pub mod oauth;
mod peer;
mod skills;
mod sse;
pub mod trust;
mod validate;

pub use auth::{Authorizer, BearerToken, Challenge};
pub use client::{Client, ConnectOptions, Era, EraChoice, Target, ToolCall};
pub use connect::TlsRoots;
pub use elicit::ElicitAnswer;
pub use error::{ClientError, TlsFailure, TrustConfigError};
pub use peer::{
    BoxFuture, Call, NoHandler, Observer, Outcome, Outgoing, Peer, PeerHandler, PeerOptions,
    ProgressFn, Watch, known_result_type,
};
pub use tokio_util::sync::CancellationToken;
pub use trust::TrustConfig;
pub use validate::{OutputProblem, check_output};
