//! toolwright in front of other MCP servers.
//!
//! The `servers:` of a config file are upstream MCP servers, of either protocol era, over
//! stdio or Streamable HTTP. Their tools join the built-in and declared ones in one tool
//! set, namespaced by server, filtered, renamed and overridden as the file says, with
//! annotations the operator can believe and a policy that is enforced on every call.
//!
//! Layout:
//! - [`gateway`]: [`Gateway`], every upstream's tools in the server, kept current.
//! - `hub.rs`: what an upstream's connection tells the gateway (lists changed, up, closed).
//! - [`upstream`]: one upstream, its connection, restarts with backoff, the roots it gets.
//! - [`chain`]: a gateway never starts itself (the chain of gateways above a process),
//!   and the bound on upstream processes.
//! - [`tool`]: [`UpstreamTool`], the call path (policy, contracts, era bridging).
//! - `result.rs`: an upstream's `tools/call` result read once: what it asks of the call
//!   (final, questions, a task) and the form it goes on in.
//! - `park.rs`: a legacy upstream's call kept waiting across a modern client's
//!   `input_required` round trip.
//! - `task.rs`: an upstream call the upstream runs as a task (the Tasks extension), polled
//!   to its end, its questions asked of the gateway's client, cancelled with the call.
//! - [`catalog`]: upstream resources, templates and prompts, of lazy servers too, kept
//!   current.
//! - `reload.rs`: `servers:` hot reload, upstreams added, removed and replaced while the
//!   gateway runs ([`Reloaded`]).
//! - [`exchange`]: an upstream's calls authorized with the caller's identity (RFC 8693
//!   token exchange of the caller's token, the tokens kept per subject).
//! - [`naming`]: an upstream's tool list to the tools exposed (filters, renames, prefixes,
//!   overrides, fixed arguments), and every server's merged, collisions dropped.
//! - [`policy`]: the annotations clients see, allow/confirm/deny, the confirmation form.
//! - `plan.rs`: the install plan, a pure function from every server's listing, the pins
//!   and the reserved names to the tools installed, refused and reported; `install.rs`
//!   builds each tool of it.
//! - `skills.rs`: upstream skills (SEP-2640) read, verified, namespaced, pinned and
//!   served.
//! - [`pin`]: fingerprints, the state file, quarantine and acceptance.
//! - [`error`]: the gateway's error, [`GatewayError`].

// The test-table helper (`table! { check; (a, b, ...); ... }`), for every test module.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

pub mod catalog;
pub mod chain;
pub mod error;
pub mod exchange;
pub mod gateway;
mod hub;
mod install;
pub mod naming;
mod observe;
mod park;
pub mod pin;
mod plan;
pub mod policy;
mod reload;
mod result;
mod skills;
mod task;
pub mod tool;
pub mod upstream;

pub use error::{GatewayError, ToolProblem};
pub use gateway::Gateway;
pub use install::shell_word;
pub use reload::Reloaded;
pub use tool::UpstreamTool;
