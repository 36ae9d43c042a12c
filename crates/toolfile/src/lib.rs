//! The tool file: what a person writes to declare tools (the MCP `Tool` fields, an action, how
//! its output is shaped), read from YAML, JSON or TOML into one model, with every problem
//! placed by file, line and column. Nothing here runs anything and nothing needs tokio: the
//! runtime (`toolwright-declared`) compiles and serves what is read here, and
//! `toolwright lint` checks it with the same rules.
//!
//! Layout:
//! - [`model`]: the file's shape, as serde reads it.
//! - [`template`]: placeholders (`{arg}`, `{arg:dash}`, `{arg:path}`, `{arg...}`, `${VAR}`).
//! - [`fill`]: the one filler of templates, each piece through the caller's hook (encode,
//!   check, mark secret).
//! - [`input`]: what actions need of `inputSchema`.
//! - [`paths`]: `{name:path}` arguments opened beneath the roots, handed over as descriptors.
//! - [`rules`]: what the loader and `toolwright lint` both read of a spec without compiling
//!   its action (templates by position, shells, shared refusals).
//! - [`servers`]: the gateway's `servers:` and `gateway:` settings, as serde reads them.
//! - [`sql`]: the `sql` action and `sources:`, and the statement scanner (placeholders,
//!   writing statements) the loader and lint share.
//! - [`exchange`]: an HTTP upstream's `exchange:` (RFC 8693 token exchange of the
//!   caller's token), read and checked.
//! - [`config`]: those settings checked and the files merged ([`read_config`]).
//! - [`builtins`]: which built-in tools the files ask for (`builtins:`).
//! - [`bound`]: identity-bound arguments (`{claims.sub}`), the one rule of declared and
//!   gateway tools.
//! - [`views`]: named sets of the exposed tools (`views:`), read by [`read_config`].
//! - [`api_keys`]: named static API keys kept as SHA-256 digests (`api_keys:`), read by
//!   [`read_config`].
//! - [`limits`]: calls a minute and in flight per caller and tool (`limits:`), read by
//!   [`read_config`].
//! - [`json`]: JSON text as a value, a key written twice refused.
//! - [`document`]: reading a file and placing problems in it (`locate`).
//! - [`uri`]: RFC 3986's character classes, as the URL encoders' sets.
//! - [`error`]: load, compile and template errors.

// The test-table helper (`table! { check; (a, b, ...); ... }`), for every test module.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

pub mod api_keys;
pub mod bound;
pub mod builtins;
pub mod config;
pub mod document;
pub mod error;
pub mod exchange;
pub mod fill;
pub mod input;
pub mod json;
pub mod limits;
mod locate;
pub mod model;
pub mod paths;
pub mod rules;
pub mod servers;
pub mod skills;
pub mod sql;
pub mod template;
pub mod uri;
pub mod views;
pub mod yaml;

pub use config::{GatewayConfig, Server, read_config};
pub use document::{Document, Format};
pub use error::{FileProblem, LoadError, Problem};
