//! The written tools lint clean: the importer runs the project's linter (the rules
//! `toolwright lint` applies to a tool file) over what it made, and a tool with any finding
//! of warning or error severity is moved to the skipped list with the findings, so the file
//! passes `toolwright lint --deny warn` as written.

use crate::error::Error;
use crate::import::{Import, Skipped};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use toolwright_lint::{Options, Severity, lint_declared};
use toolwright_toolfile::{Document, Format};

/// Lints `import.tools` as one file and moves each tool with a warning or an error to
/// `import.skipped`, named by its operation's label in `labels` (one per tool).
///
/// # Errors
///
/// [`Error::Written`] when the tools do not read back as a tool file (an importer bug).
pub fn keep_lint_clean(import: &mut Import, labels: &[String]) -> Result<(), Error> {
    if import.tools.is_empty() {
        return Ok(());
    }
    // Pretty: findings are placed by line and column, and a column is counted from its
    // line's start, so one line of megabytes would make placing them quadratic.
    let text = serde_json::to_string_pretty(&json!({"tools": import.tools})).map_err(|e| {
        Error::Written {
            reason: e.to_string(),
        }
    })?;
    let doc = Document::parse(Path::new("imported.json"), Format::Json, text).map_err(|p| {
        Error::Written {
            reason: p.problem.message.clone(),
        }
    })?;
    let report = lint_declared(&doc, &Options::default());
    let mut bad: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for f in &report.findings {
        if f.severity >= Severity::Warning {
            bad.entry(f.index).or_default().push(format!(
                "{} at {}: {}",
                f.rule.id(),
                f.pointer,
                f.message
            ));
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let tools = std::mem::take(&mut import.tools);
    for (i, tool) in tools.into_iter().enumerate() {
        match bad.get(&i) {
            None => import.tools.push(tool),
            Some(findings) => import.skipped.push(Skipped {
                operation: labels.get(i).cloned().unwrap_or_else(|| label(&tool)),
                reason: crate::text::one_line(&format!(
                    "the tool made of it does not lint clean: {}",
                    findings.join("; ")
                )),
            }),
        }
    }
    Ok(())
}

/// `GET https://…/pets/{id} (tool list_pets)` for a tool with no operation's label.
fn label(tool: &Value) -> String {
    let method = tool
        .pointer("/http/method")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let url = tool
        .pointer("/http/url")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    crate::text::one_line(&format!("{method} {url} (tool {name})"))
}
