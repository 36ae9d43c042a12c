//! The MCP tool server: the [`Tool`] trait, the registry, dispatch for both protocol eras,
//! the session lifecycle and the stdio transport.
//!
//! A [`Server`] holds tools (tools are data: a definition plus a function) and settings.
//! Transports hand it messages: [`serve_stdio`] here, Streamable HTTP in `toolwright-http`.
//! Each request is placed in its era: modern (2026-07-28) requests carry their protocol
//! version and capabilities in `params._meta` and stand alone; legacy ones (2024-11-05 …
//! 2025-11-25) belong to the session their `initialize` opened.
//!
//! Arguments are validated against the tool's `inputSchema` (compiled once, at
//! registration) before the tool runs; `structuredContent` is validated against
//! `outputSchema` after it returns.
//!
//! Layout:
//! - [`tool`]: the [`Tool`] trait, [`FnTool`] (definition as data + closure) and
//!   [`TypedTool`] (schemas derived from Rust types).
//! - [`context`]: [`ToolContext`] — cancellation, progress, logging, roots.
//! - [`registry`]: lock-free snapshots of the registered tools, cached `tools/list` pages.
//! - [`server`]: [`Server`], registration and change notifications.
//! - [`dispatch`]: one `match` over the methods, era resolution, the call path.
//! - [`session`]: per-connection state and the [`Outbound`] sink trait.
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout.
//! - [`catalog`]: resources, resource templates and prompts.
//! - [`mrtr`]: modern `input_required` round trips and the sealed `requestState`.
//! - [`config`], [`error`].

pub mod catalog;
pub mod config;
pub mod context;
pub mod dispatch;
mod dispatch_catalog;
pub mod error;
pub mod mrtr;
pub mod registry;
pub mod server;
pub mod session;
pub mod stdio;
pub mod tool;

pub use catalog::{BoxFuture, PromptHandler, ResourceHandler, TemplateHandler, UriTemplate};
pub use config::{Config, InputErrorMode};
pub use context::ToolContext;
pub use dispatch::{Handled, Spent};
pub use error::{ClientRequestError, RegisterError, ToolError};
pub use server::{Event, Server};
pub use session::{Outbound, Session};
pub use stdio::{serve_io, serve_stdio, serve_stdio_lazy};
pub use tool::{FnTool, Tool, ToolFuture, Typed, TypedTool};
pub use toolwright_protocol::Tool as ToolDefinition;
