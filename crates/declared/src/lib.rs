//! Tools declared in a file: a person writes the MCP `Tool` fields plus an action (a
//! program's argv, or one HTTP request) and how its output is shaped, and toolwright serves
//! them like its own tools, over both protocol eras and both transports, with arguments
//! validated against `inputSchema` before anything runs and results checked against
//! `outputSchema` before they are sent.
//!
//! Safe by construction: an argument becomes one argv element or one encoded URL part,
//! header, JSON value or bound SQL parameter, never text in a shell line or a statement; a program runs with a cleared
//! environment, in a directory beneath the server's roots, in its own process group that a
//! timeout kills whole; an HTTP request connects only to addresses the policy admits.
//!
//! The file itself (its model, placeholders, what actions need of `inputSchema`, reading
//! and placing problems, the rules lint shares) is `toolwright-toolfile`, which builds
//! without tokio; use its modules by their own paths (`toolwright_toolfile::template`).
//!
//! Layout:
//! - [`command`], [`http`], [`sql`]: the three actions.
//! - [`shape`]: text, JSON, regex and jq output shaping.
//! - [`tool`]: a declared tool as a server [`toolwright_server::Tool`].
//! - [`load`]: loading files all or nothing.
//! - [`watch`]: hot reload.
//! - [`skills`]: skills read from a directory, beneath it, for the Skills extension.
//! - [`error`]: call errors (and the file's, re-exported).

// The test-table helper (`table! { check; (a, b, ...); ... }`), for every test module.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

pub mod command;
pub mod error;
pub mod http;
pub mod load;
pub mod shape;
pub mod skills;
pub mod sql;
pub mod tool;
pub mod watch;

use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use error::{LoadError, Problem, RunError};
pub use load::{Checked, Document, Format, check_documents, compile_all, load_files, load_set};
pub use shape::jq_child_main;
pub use tool::DeclaredTool;

/// What an action may use while it runs.
#[derive(Debug)]
pub struct RunContext<'a> {
    /// The server's roots (canonical directories); a command's working directory must be
    /// inside one, and the first is the default.
    pub roots: &'a [PathBuf],
    /// How long the action may take in all.
    pub timeout: Duration,
    /// Cancelled when the client cancels the call or the server gives up on it.
    pub cancel: &'a CancellationToken,
    /// W3C `traceparent` (and `tracestate`) of the call's span, when telemetry observes it:
    /// an HTTP action sends them as headers (unless the tool sets its own), a command gets
    /// them as `TRACEPARENT` and `TRACESTATE` in its environment.
    pub trace: Option<(String, Option<String>)>,
    /// The telemetry observing the call, with the call's span: an HTTP action's request is
    /// a CLIENT span under it when spans are exported (and its `traceparent` that span's).
    pub observed: Option<(
        std::sync::Arc<toolwright_server::telemetry::Telemetry>,
        toolwright_server::telemetry::SpanContext,
    )>,
}

/// What an action produced: the bytes to shape, and facts for the result's `_meta` (exit
/// status, HTTP status).
#[derive(Debug, Default)]
pub struct Output {
    /// stdout, or the response body.
    pub bytes: Vec<u8>,
    /// Facts about the run.
    pub meta: Map<String, Value>,
}
