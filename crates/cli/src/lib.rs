//! toolwright as a library: one dependency for writing MCP tools in Rust and serving them.
//!
//! The binary (`toolwright serve`, `call`, `lint`, …) is this package's `main.rs`; this
//! library re-exports what a tool author needs from the workspace's crates — the [`Tool`]
//! trait and its helpers ([`FnTool`], [`TypedTool`], [`ToolContext`]), results
//! ([`CallToolResult`], [`Content`]), [`Implementation`], [`Server`] and its [`Config`] — and
//! serves a server over stdio ([`serve_stdio`]) or Streamable HTTP ([`serve_http`]). The
//! crates themselves are re-exported whole as modules ([`server`], [`protocol`], [`http`],
//! …) for whatever the flat names leave out.
//!
//! # Example
//!
//! The snippet below is the README's library section, compiled as this crate's doctest.
//!
#![doc = include_str!("../README.md")]

use std::io;

pub use toolwright_http as http;
pub use toolwright_jsonrpc as jsonrpc;
pub use toolwright_lint as lint;
pub use toolwright_protocol as protocol;
pub use toolwright_server as server;

pub use toolwright_http::{HttpConfig, HttpServer};
pub use toolwright_protocol::{
    CallToolResult, Content, Implementation, Tool as ToolDefinition, ToolAnnotations,
};
pub use toolwright_server::{
    Config, FnTool, RegisterError, Server, Tool, ToolContext, ToolError, Typed, TypedTool,
};

/// Re-exported so a tool's JSON definition and results need no further dependency.
pub use serde_json::{Value, json};

/// Serves `server` on this process's stdin and stdout until stdin closes, on a tokio runtime
/// this function makes (use [`server::serve_stdio`] to bring your own). Blocks the calling
/// thread. Logs, if any, belong on stderr: stdout carries the protocol.
pub fn serve_stdio(server: &Server) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    toolwright_server::serve_stdio(server, runtime.handle())
}

/// Serves `server` over Streamable HTTP at `http://<addr>/mcp` (loopback-only Origin and
/// Host checks, sessions on, no authentication: [`HttpConfig::default`] with `addr`) until
/// SIGINT or SIGTERM. For other settings build an [`HttpConfig`] and use [`HttpServer`].
pub async fn serve_http(server: Server, addr: &str) -> Result<(), toolwright_http::Error> {
    let config = HttpConfig {
        addr: addr.to_owned(),
        ..HttpConfig::default()
    };
    HttpServer::bind(server, config).await?.run().await
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
