//! Rules on a `sql` action, with the statement scanner the loader uses
//! (`toolwright_toolfile::sql`): each placeholder has a parameter and each parameter a
//! placeholder and a property; a read-only tool holds no writing statement.
//!
//! A tool names its source, whose engine lint does not look up: a statement with `$N`
//! placeholders is read as PostgreSQL's, any other as SQLite's. The loader, which knows the
//! source, reports the same problems (as `declared-invalid`, merged with these).

use serde_json::{Map, Value};
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::sql::{Engine, SqlSpec, scan};

use crate::finding::{Rule, Sink, push_pointer};

/// The statement's dialect, guessed from its placeholders.
fn engine_of(statement: &str) -> Engine {
    if scan(statement, Engine::Postgres).placeholders > 0 {
        Engine::Postgres
    } else {
        Engine::Sqlite
    }
}

pub(crate) fn check(
    spec: &SqlSpec,
    input: &InputInfo,
    annotations: Option<&Map<String, Value>>,
    sink: &mut Sink<'_>,
) {
    for (i, p) in spec.params.iter().enumerate() {
        if !input.properties.contains_key(p) {
            sink.add(
                Rule::PlaceholderUnknown,
                push_pointer("/sql/params", &i.to_string()),
                format!("parameter `{p}` names no property of inputSchema"),
                format!("add {p} to inputSchema's properties, or bind a property it has"),
            );
        }
    }
    let engine = engine_of(&spec.statement);
    let read_only = annotations.and_then(|a| a.get("readOnlyHint")) == Some(&Value::Bool(true));
    for message in toolwright_toolfile::sql::problems(spec, engine, read_only) {
        let (rule, fix) = if message.starts_with("readOnlyHint") {
            (
                Rule::HintReadOnlySql,
                "set readOnlyHint: false if the tool changes data; a read-only tool runs in a read-only transaction, where the statement fails",
            )
        } else {
            (
                Rule::SqlPlaceholders,
                "write one placeholder per parameter ($1, $2, ... for PostgreSQL; ? for SQLite) and list each bound argument once in `params`, in order",
            )
        };
        sink.add(rule, "/sql/statement", message, fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Options, lint_declared};
    use toolwright_toolfile::{Document, Format};

    fn rules_of(sql: &str, read_only: bool) -> Vec<String> {
        let text = format!(
            r#"{{"tools": [{{"name": "find_orders_by_id", "description": "Finds the orders with an id, for the shipping reports.",
              "inputSchema": {{"type": "object", "properties": {{"id": {{"type": "integer", "description": "The id."}}}}, "required": ["id"]}},
              "annotations": {{"readOnlyHint": {read_only}, "openWorldHint": false}},
              "sql": {sql}}}]}}"#
        );
        let doc = Document::parse("t.json".as_ref(), Format::Json, text).unwrap();
        let report = lint_declared(&doc, &Options::default());
        report
            .findings
            .iter()
            .map(|f| f.rule.id().to_owned())
            .collect()
    }

    #[test]
    fn placeholders_and_writes() {
        table! { |sql: &str, read_only: bool, want: &[&str]| assert_eq!(rules_of(sql, read_only), want, "{sql}");
            (r#"{"source": "s", "statement": "select * from t where id = $1", "params": ["id"]}"#, true, &[]);
            (r#"{"source": "s", "statement": "select * from t where id = ?", "params": ["id"]}"#, true, &[]);
            (r#"{"source": "s", "statement": "select * from t where id = $1 and $2", "params": ["id"]}"#, true, &["sql-placeholders"]);
            (r#"{"source": "s", "statement": "select * from t", "params": ["id"]}"#, true, &["sql-placeholders"]);
            (r#"{"source": "s", "statement": "select * from t where id = ?", "params": ["idd"]}"#, true, &["placeholder-unknown", "property-unused"]);
            (r#"{"source": "s", "statement": "delete from t where id = $1", "params": ["id"]}"#, true, &["hint-read-only-sql"]);
            (r#"{"source": "s", "statement": "delete from t where id = $1", "params": ["id"]}"#, false, &[]);
            (r#"{"source": "s", "statement": "with d as (delete from t where id = ? returning *) select * from d", "params": ["id"]}"#, true, &["hint-read-only-sql"]);
        }
    }
}
