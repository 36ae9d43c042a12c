//! MCP data types for both protocol eras, with no I/O.
//!
//! toolwright speaks the *legacy* era (2024-11-05 … 2025-11-25, with the `initialize`
//! handshake) and the *modern* era (2026-07-28: stateless, `server/discover`, every request
//! carrying its own `_meta`). This crate holds what both sides of a connection need to agree
//! on, and nothing that touches a socket:
//!
//! - [`version`]: the protocol versions and what each one allows.
//! - [`error`]: [`ToolNameError`] and [`ParamHeaderError`], the rules a tool definition can
//!   break.
//! - [`method`]: method names parsed once into an enum, so dispatch is a `match`.
//! - [`tool`]: the `Tool` definition with every field of the latest spec, its annotations,
//!   and the tool-name rule ([`tool::check_name`]).
//! - [`headers`]: modern HTTP header values and the `x-mcp-header` parameters
//!   ([`ParamHeaders`]).
//! - [`content`]: content blocks and `CallToolResult`.
//! - [`lifecycle`]: `initialize`, capabilities, `server/discover`, implementation info.
//! - [`meta`]: the modern per-request `_meta` keys and their parsing.
//! - [`logging`]: log levels (RFC 5424) and `notifications/message`.
//! - [`params`]: parameters of the requests and notifications a server receives.
//! - [`resources`]: resources, resource templates, prompts and completion.
//! - [`skills`]: the Skills extension (SEP-2640): skill entries, digests, frontmatter.
//!
//! Types serialize to the exact wire shape (camelCase, optional fields omitted). Unknown
//! fields in JSON Schemas are kept: schemas are plain `serde_json::Value`s.

pub mod content;
pub mod error;
pub mod headers;
pub mod lifecycle;
pub mod logging;
pub mod meta;
pub mod method;
pub mod params;
pub mod resources;
pub mod skills;
pub mod tool;
pub mod version;

pub use content::{
    COMPLETE_FIRST, CallToolResult, Content, ContentAnnotations, JsonText, ResourceContents, Role,
};
pub use error::{ParamHeaderError, ToolNameError};
pub use headers::{ParamHeader, ParamHeaders};
pub use lifecycle::{
    ClientCapabilities, DiscoverResult, Implementation, InitializeParams, InitializeResult,
    ServerCapabilities,
};
pub use logging::LoggingLevel;
pub use meta::RequestMeta;
pub use method::Method;
pub use tool::{Icon, TaskSupport, Tool, ToolAnnotations, ToolExecution};
pub use version::ProtocolVersion;

/// A JSON object, as used for `_meta` maps and other open-ended objects.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
