//! Compile and validate JSON Schema, offline, with readable violations.
//!
//! This crate knows nothing of MCP: it turns a JSON Schema document into a
//! [`Validator`] once, then checks instances against it quickly, reporting
//! each failure as a [`Violation`] (a JSON Pointer into the instance plus a
//! message naming the value found and what was expected). It wraps the
//! `jsonschema` crate, built without any of its retrieval features, and adds
//! what a server that validates untrusted arguments needs:
//!
//! - **A closed set of dialects** ([`Dialect`]): drafts 4, 6, 7, 2019-09 and
//!   2020-12, read from `$schema` (absent means 2020-12). Anything else is
//!   refused rather than guessed.
//! - **No retrieval, ever.** Only references inside the document are allowed
//!   (`#...` fragments, or `$id`s and anchors it defines). A pre-scan refuses
//!   any other reference with the pointer of the offending keyword
//!   ([`SchemaError::ExternalRef`]), and the retriever given to `jsonschema`
//!   refuses every URI as a backstop. The meta-schemas `jsonschema` bundles
//!   may still be referenced.
//! - **Formats asserted by default** ([`Options::validate_formats`]).
//! - **Stable, bounded messages**: violations sorted by pointer (array
//!   indices numerically) then message, long values shortened.
//!
//! ```
//! use serde_json::json;
//! use toolwright_schema::{Validator, format_violations};
//!
//! let validator = Validator::compile(&json!({
//!     "type": "object",
//!     "properties": {"a": {"type": "number"}},
//!     "required": ["a"]
//! }))?;
//! let violations = validator.validate(&json!({"a": "x"})).unwrap_err();
//! assert_eq!(format_violations(&violations), r#"/a: "x" is not of type "number""#);
//! # Ok::<(), toolwright_schema::SchemaError>(())
//! ```
//!
//! Layout:
//! - [`dialect`](crate::Dialect) (`dialect.rs`): the dialects and [`dialect_of`];
//! - `refscan.rs`: the pre-scan that refuses references needing retrieval;
//! - `pointer.rs`: JSON Pointer building, decoding and report order;
//! - `validator.rs`: [`Options`], [`Validator`], and translating `jsonschema`'s errors;
//! - `violation.rs`: [`Violation`], its ordering and messages, [`format_violations`];
//! - `subschema.rs`: [`walk_subschemas`] (every subschema, keyword-aware) and
//!   [`resolve_local`], for tools that look into schemas (the MCP rules, the linter);
//! - `error.rs`: [`SchemaError`], the crate's one error type, and [`json_kind`].

mod dialect;
mod error;
mod pointer;
mod refscan;
mod subschema;
mod validator;
mod violation;

#[cfg(test)]
mod tests;

pub use dialect::{Dialect, dialect_of};
pub use error::{SchemaError, json_kind};
pub use pointer::push_segment;
pub use subschema::{MAX_WALK_DEPTH, Subschema, resolve_local, walk_subschemas};
pub use validator::{Options, Validator};
pub use violation::{Violation, format_violations};

use serde_json::Value;

/// Whether the schema's root `type` is exactly the string `"object"`, as
/// MCP requires of a tool's `inputSchema`. An array such as `["object"]`,
/// a missing `type`, or a boolean schema all give `false`.
#[must_use]
pub fn root_type_is_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}
