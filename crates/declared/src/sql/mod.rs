//! The `sql` action: one fixed statement against a named source of the file's `sources:`,
//! each parameter an argument's value bound by the driver (never text in the statement).
//!
//! A tool with `readOnlyHint: true` runs in a read-only transaction (PostgreSQL `BEGIN READ
//! ONLY`; SQLite on a connection opened read-only, with `PRAGMA query_only`). Every call has
//! a statement timeout, enforced on the server (PostgreSQL `SET LOCAL statement_timeout`)
//! and by the client (a cancel request at the deadline; SQLite's interrupt), a row limit and
//! a byte limit: rows past either are not returned and the result says `truncated: true`.
//!
//! Layout:
//! - [`source`]: `sources:` compiled into connection pools, shared by the tools naming them.
//! - `postgres`, `sqlite`: running a statement on each engine; [`pg_types`]: PostgreSQL
//!   values bound and read.
//! - [`rows`]: parameters as bound values, rows as JSON, the limits and the text table.

pub mod pg_types;
mod postgres;
pub mod rows;
pub mod source;
mod sqlite;
#[cfg(test)]
mod tests;

use crate::RunContext;
use crate::error::{Problem, RunError};
use rows::Param;
use serde_json::{Map, Value};
use source::{Source, Sources};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::sql::{ResultShape, SqlSpec, problems};

/// Rows returned when the tool does not say.
pub const DEFAULT_MAX_ROWS: u64 = 1000;
/// Bytes of row data (as JSON) returned when the tool does not say.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// How long a statement may run when the tool does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A compiled `sql` action.
#[derive(Debug)]
pub struct SqlAction {
    source: Arc<Source>,
    statement: String,
    params: Vec<String>,
    result: ResultShape,
    read_only: bool,
    limits: Limits,
}

/// The bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most rows returned.
    pub rows: u64,
    /// Most bytes of row data (as JSON) returned.
    pub bytes: u64,
    /// How long the statement may run.
    pub timeout: Duration,
}

/// What a statement returned: the rows as JSON objects, whether any were left out, and the
/// columns' names in order (for the text table).
#[derive(Debug, Default)]
pub struct Fetched {
    /// The column names.
    pub columns: Vec<String>,
    /// The rows kept.
    pub rows: Vec<Map<String, Value>>,
    /// Whether rows past a limit were left out.
    pub truncated: bool,
    /// Rows changed, for a statement that returns none.
    pub affected: Option<u64>,
}

impl SqlAction {
    /// Compiles the action of a tool (`read_only` is its `readOnlyHint`) against the file's
    /// sources.
    ///
    /// # Errors
    ///
    /// A [`Problem`] under `sql`: an unknown source, a parameter that is no property of
    /// `inputSchema`, placeholders that do not match `params`, a writing statement in a
    /// read-only tool.
    pub fn compile(
        spec: &SqlSpec,
        input: &InputInfo,
        read_only: bool,
        sources: &Sources,
    ) -> Result<SqlAction, Problem> {
        let source = sources.get(&spec.source).ok_or_else(|| {
            Problem::new(
                ["sql", "source"],
                format!(
                    "no source is named {:?} (the file's `sources:` has {})",
                    spec.source,
                    sources.names()
                ),
            )
        })?;
        for (i, p) in spec.params.iter().enumerate() {
            if !input.properties.contains_key(p) {
                return Err(Problem::new(
                    [
                        "sql".into(),
                        "params".into(),
                        toolwright_toolfile::error::Seg::Index(i),
                    ],
                    format!("parameter `{p}` names no property of inputSchema"),
                ));
            }
        }
        if let Some(first) = problems(spec, source.engine(), read_only)
            .into_iter()
            .next()
        {
            return Err(Problem::new(["sql", "statement"], first));
        }
        Ok(SqlAction {
            source,
            statement: spec.statement.clone(),
            params: spec.params.clone(),
            result: spec.result,
            read_only,
            limits: Limits {
                rows: spec.max_rows.unwrap_or(DEFAULT_MAX_ROWS),
                bytes: spec.max_bytes.map_or(DEFAULT_MAX_BYTES, |b| b.0),
                timeout: spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
            },
        })
    }

    /// The arguments the action binds.
    pub fn args_used(&self) -> BTreeSet<String> {
        self.params.iter().cloned().collect()
    }

    /// Runs the statement: the structured result and the text table.
    ///
    /// # Errors
    ///
    /// [`RunError::Sql`] for what the database refused, [`RunError::Timeout`] past the
    /// statement timeout (the statement cancelled), [`RunError::Cancelled`].
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
    ) -> Result<(Value, String), RunError> {
        let params: Vec<Param> = self
            .params
            .iter()
            .map(|p| Param::of(args.get(p).unwrap_or(&Value::Null)))
            .collect();
        let mut limits = self.limits;
        limits.timeout = limits.timeout.min(ctx.timeout);
        if self.result == ResultShape::One {
            // One more than wanted, to tell one row from several.
            limits.rows = 2;
        }
        let fetched = self
            .source
            .run(&self.statement, params, self.read_only, limits, ctx.cancel)
            .await?;
        let text = rows::table(&fetched);
        let value = match self.result {
            ResultShape::Rows => {
                let mut out = Map::new();
                out.insert(
                    "rows".into(),
                    Value::Array(fetched.rows.into_iter().map(Value::Object).collect()),
                );
                if fetched.truncated {
                    out.insert("truncated".into(), Value::Bool(true));
                }
                Value::Object(out)
            }
            ResultShape::One => match <[_; 1]>::try_from(fetched.rows) {
                Ok([row]) => Value::Object(row),
                Err(rows) if rows.is_empty() => {
                    return Err(RunError::Sql("the statement returned no row".into()));
                }
                Err(_) => {
                    return Err(RunError::Sql(
                        "the statement returned more than one row (`result: one` wants exactly one)"
                            .into(),
                    ));
                }
            },
        };
        Ok((value, text))
    }
}
