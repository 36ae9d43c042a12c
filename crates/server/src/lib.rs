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
//! # The path of a `tools/call`
//!
//! Over stdio, [`stdio`] splits what it reads into lines; each line goes through
//! [`Server::read`], which parses a `tools/call` in one pass with its params into
//! [`Inbound::Call`], and then to [`Server::handle`], the one entry point. Over HTTP,
//! `toolwright-http` reads the POST body with the same [`Server::read`], asks
//! [`era::claim`] (the one rule, from `params._meta` and the `MCP-Protocol-Version` header)
//! whether the message is modern or legacy, checks a modern request's headers against its
//! body, picks the session (a throwaway one for a modern request, the legacy session its
//! `Mcp-Session-Id` names, or [`Session::stateless`] at the header's version) and calls the
//! same [`Server::handle`]. There, `call.rs` resolves the request's [`Era`]
//! ([`Era::resolve`]: the modern `_meta` or the session's negotiated version), finds the
//! tool in the registry snapshot, checks required client capabilities, validates the
//! arguments against the compiled `inputSchema`, runs the tool (polled once at once; a
//! call that must wait is tracked, bounded by the call timeout and cancellable), validates
//! `structuredContent` against `outputSchema` and writes the line. What comes back is
//! [`Handled`]: nothing, a [`Reply`] (the line, its [`Outcome`] — result or error code, from
//! which HTTP picks its status without reading bytes — and what the call still holds, freed
//! after the write), or a future of one.
//!
//! # Layout
//!
//! - [`tool`]: the [`Tool`] trait, [`FnTool`] (definition as data + closure) and
//!   [`TypedTool`] (schemas derived from Rust types).
//! - [`context`]: [`ToolContext`] — cancellation, progress, logging, roots.
//! - [`registry`]: lock-free snapshots of the registered tools, cached `tools/list` pages.
//! - [`server`]: [`Server`], registration and change notifications.
//! - [`dispatch`]: [`Server::read`], [`Server::handle`] and the one `match` over methods.
//! - [`era`]: which era a request belongs to. [`reply`]: typed replies and line writers.
//! - `call.rs`: the `tools/call` pipeline; `lifecycle.rs`: `initialize`, `ping`,
//!   `server/discover`, `tools/list`, `logging/setLevel`, notifications; `listen.rs`:
//!   `subscriptions/listen`; `dispatch_catalog.rs`: resources, prompts and completion.
//! - [`session`]: per-connection state and the [`Outbound`] sink trait.
//! - [`view`]: [`View`]s, named sets of tools a session may be given (`tools/list`
//!   filtered, a call outside answered as an unknown tool), and the rule choosing one.
//! - [`caller`]: [`Caller`], the verified identity a session speaks for (set by the
//!   transport that checked a token; none over stdio), which a tool reads with
//!   [`ToolContext::identity`].
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout.
//! - [`catalog`]: resources, resource templates and prompts.
//! - [`skills`]: [`skills::SkillSet`], the skills served (SEP-2640), checked and indexed once;
//!   `dispatch_skills.rs`: `skills/list`, `skills/get`, `resources/directory/read`.
//! - [`mrtr`]: modern `input_required` round trips and the sealed `requestState`.
//! - [`roots`]: the roots one call may use (the client's, narrowed to the server's).
//! - [`digest`]: canonical JSON and its SHA-256 (`requestState`'s argument digest, the
//!   gateway's pins).
//! - `observe.rs`: telemetry's one hook, called from [`dispatch`] for every request and
//!   notification when [`Config::telemetry`] is set (spans of `tracing`, the
//!   `toolwright-telemetry` instruments, the trace context tools pass on).
//! - [`roots`]: the roots a call may use (the server's, narrowed by the client's).
//! - [`limit`]: [`Limits`], per caller and per tool (a token bucket and a cap on calls in
//!   flight), counted in this process or in a shared store.
//! - `gate.rs`: the one place every `tools/call` passes first (from [`dispatch`]): the view,
//!   the limits, then the call, and one audit line ([`AUDIT_TARGET`]) and one
//!   [`Decision`] counter for each.
//! - [`task`]: tasks (the `io.modelcontextprotocol/tasks` extension): what one is, how
//!   long it is kept; `task_call.rs`: a `tools/call` run as a task, and `tasks/get`,
//!   `tasks/update`, `tasks/cancel`.
//! - [`config`], [`error`].

mod call;
pub mod caller;
pub mod catalog;
pub mod config;
pub mod context;
pub mod digest;
pub mod dispatch;
mod dispatch_catalog;
mod dispatch_skills;
pub mod era;
pub mod error;
mod gate;
mod lifecycle;
pub mod limit;
mod listen;
pub mod mrtr;
mod observe;
pub mod registry;
pub mod reply;
pub mod roots;
pub mod server;
pub mod session;
pub mod skills;
pub mod stdio;
pub mod task;
mod task_call;
pub mod tool;
pub mod view;

pub use caller::{Caller, SubjectToken};
pub use catalog::{BoxFuture, PromptHandler, ResourceHandler, TemplateHandler, UriTemplate};
pub use config::{Config, InputErrorMode};
pub use context::ToolContext;
pub use dispatch::{Ambient, Inbound};
pub use era::Era;
pub use error::{ClientRequestError, RegisterError, SkillError, ToolError};
pub use gate::{AUDIT_TARGET, Decision};
pub use limit::Limits;
pub use reply::{Handled, Outcome, Refused, Reply, ReplyFuture, Spent};
pub use server::{Event, Server};
pub use session::{Discard, Negotiated, Outbound, Session};
pub use stdio::{serve_io, serve_stdio, serve_stdio_lazy, serve_stdio_on};
pub use tool::{FnTool, Tool, ToolFuture, Typed, TypedTool};
pub use toolwright_protocol::Tool as ToolDefinition;
pub use toolwright_telemetry as telemetry;
pub use view::{Override, View, Views, When};
