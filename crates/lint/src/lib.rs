//! Lint MCP tool definitions against the spec and the seeds' guidance on good tools.
//!
//! Pure functions over `serde_json::Value`s: no I/O, no async. Give [`lint`] the tool
//! definitions (as a server sends them in `tools/list`, typos and all) and get a
//! [`Report`]: one [`Finding`] per problem, each with a stable [`Rule`] id, a [`Severity`],
//! the tool, a JSON Pointer into its definition and a one-line fix. [`lint_document`] takes
//! any document shape a definition comes in (one tool, an array, a `tools/list` result, a
//! JSON-RPC response, JSON or YAML text via [`parse_document`]).
//!
//! ```
//! use serde_json::json;
//! let report = toolwright_lint::lint(&[json!({
//!     "name": "doThing",
//!     "description": "Searches files",
//!     "inputSchema": {"type": "object"}
//! })], &toolwright_lint::Options::default());
//! let ids: Vec<&str> = report.findings.iter().map(|f| f.rule.id()).collect();
//! assert!(ids.contains(&"name-snake-case") && ids.contains(&"description-short"));
//! ```
//!
//! Layout:
//! - `finding.rs`: [`Rule`] (ids and severities), [`Severity`], [`Finding`];
//! - `input.rs`: [`parse_document`] and [`extract_tools`] (document shapes);
//! - `names.rs`, `description.rs`, `hints.rs`: rules on the name, the description and
//!   the annotations; `words.rs`: the word lists and splitting they share;
//! - `schema_rules.rs`: rules on `inputSchema`/`outputSchema`, visiting every subschema
//!   with `toolwright_schema::walk_subschemas`, with `keywords.rs` (misspelled keywords)
//!   and `header.rs` (`x-mcp-header`);
//! - `declared.rs`: [`lint_declared`], files of declared tools (toolwright's own format:
//!   definitions plus an action), every finding placed by line and column; `actions.rs`:
//!   the rules on the actions (placeholders, argv, shells, HTTP methods, hints); `sql.rs`:
//!   a `sql` action's placeholders and read-only statements;
//! - `report.rs`: [`Report`], rendered for people or as JSON;
//! - `error.rs`: [`LintError`].

// The test-table helper (`table! { check; (a, b, ...); ... }`), for the test modules.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

mod actions;
mod declared;
mod description;
mod error;
mod finding;
mod header;
mod hints;
mod input;
mod keywords;
mod names;
mod report;
mod schema_rules;
mod sql;
mod words;

pub use declared::{
    add_refusals, is_declared, lint_declared, looks_like_a_tool_file, refused_file,
};
pub use error::LintError;
pub use finding::{Finding, Location, Rule, Severity};
pub use input::{extract_tools, parse_document};
pub use report::{Report, ToolEntry};

use std::collections::HashMap;

use serde_json::Value;

use finding::Sink;
use keywords::{ANNOTATION_FIELDS, TOOL_FIELDS, check_keys};
use schema_rules::Which;

/// What to lint.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Rules not to report.
    pub disabled: Vec<Rule>,
}

/// Lints tool definitions as one server's set (so duplicate names are found).
pub fn lint(tools: &[Value], options: &Options) -> Report {
    lint_set(tools, options, |_, _| {})
}

/// [`lint`], with `extra` adding the findings of more rules to each tool (by index).
pub(crate) fn lint_set(
    tools: &[Value],
    options: &Options,
    mut extra: impl FnMut(usize, &mut Sink<'_>),
) -> Report {
    let mut findings = Vec::new();
    let mut entries = Vec::with_capacity(tools.len());
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str);
        let label = name.map_or_else(|| format!("#{index}"), str::to_owned);
        entries.push(ToolEntry {
            index,
            name: label.clone(),
        });
        let mut sink = Sink {
            index,
            tool: &label,
            disabled: &options.disabled,
            out: &mut findings,
        };
        lint_tool(tool, &mut sink);
        extra(index, &mut sink);
        if let Some(name) = name {
            if let Some(&first) = first_seen.get(name) {
                sink.add(
                    Rule::NameDuplicate,
                    "/name",
                    format!("tool #{first} already has the name {name:?}; names must be unique per server"),
                    "give each tool its own name",
                );
            } else {
                first_seen.insert(name, index);
            }
        }
    }
    findings.sort_by(|a, b| {
        (a.index, a.rule, &a.pointer, &a.message).cmp(&(b.index, b.rule, &b.pointer, &b.message))
    });
    Report {
        tools: entries,
        findings,
        file: None,
        outside: Vec::new(),
    }
}

/// Parses `text` (JSON or YAML), finds the tool definitions in it and lints them.
///
/// # Errors
///
/// When the text does not parse or holds no tools: see [`parse_document`] and
/// [`extract_tools`].
pub fn lint_document(text: &str, options: &Options) -> Result<Report, LintError> {
    let doc = parse_document(text)?;
    let tools = extract_tools(&doc)?;
    Ok(lint(&tools, options))
}

fn lint_tool(tool: &Value, sink: &mut Sink<'_>) {
    let Value::Object(map) = tool else {
        sink.add(
            Rule::ToolShape,
            "",
            format!("the tool definition is {tool}, not an object"),
            "give each tool as an object with name, description and inputSchema",
        );
        return;
    };
    check_keys(map, "", TOOL_FIELDS, sink);
    match map.get("name") {
        Some(Value::String(name)) => names::check(name, sink),
        Some(other) => sink.add(
            Rule::ToolShape,
            "/name",
            format!("name is {other}, not a string"),
            "set name to a snake_case string",
        ),
        None => sink.add(
            Rule::ToolShape,
            "",
            "the tool has no name",
            "add a snake_case name that says what the tool does",
        ),
    }
    let name = map.get("name").and_then(Value::as_str).unwrap_or("");
    match map.get("description") {
        None | Some(Value::String(_)) => {
            description::check(name, map.get("description").and_then(Value::as_str), sink);
        }
        Some(other) => sink.add(
            Rule::ToolShape,
            "/description",
            format!("description is {other}, not a string"),
            "make the description a string",
        ),
    }
    match map.get("inputSchema") {
        Some(schema) => schema_rules::check(schema, Which::Input, sink),
        None => {
            let hint = if map.contains_key("parameters") {
                " (MCP calls OpenAI-style \"parameters\" inputSchema)"
            } else {
                ""
            };
            sink.add(
                Rule::ToolShape,
                "",
                format!("the tool has no inputSchema{hint}"),
                "add inputSchema, at least {\"type\": \"object\"}",
            );
        }
    }
    if let Some(schema) = map.get("inputSchema") {
        header::check(schema, sink);
    }
    if let Some(schema) = map.get("outputSchema") {
        schema_rules::check(schema, Which::Output, sink);
    }
    match map.get("annotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(a)) => {
            check_keys(a, "/annotations", ANNOTATION_FIELDS, sink);
            hints::check(name, a, sink);
        }
        Some(other) => sink.add(
            Rule::ToolShape,
            "/annotations",
            format!("annotations is {other}, not an object"),
            "make annotations an object of hints, or remove it",
        ),
    }
}

#[cfg(test)]
mod tests;
