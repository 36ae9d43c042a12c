use super::pg_types::{date, numeric, timestamp};
use super::rows::{Collector, Param, table};
use super::source::Sources;
use super::{Fetched, Limits};
use crate::RunContext;
use crate::tool::DeclaredTool;
use serde_json::{Map, Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolwright_toolfile::{Document, Format};

fn limits(rows: u64, bytes: u64) -> Limits {
    Limits {
        rows,
        bytes,
        timeout: Duration::from_secs(5),
    }
}

#[test]
fn params_take_their_json_type() {
    table! { |v: Value, want: Param| assert_eq!(Param::of(&v), want, "{v}");
        (json!(null), Param::Null);
        (json!(true), Param::Bool(true));
        (json!(-7), Param::Int(-7));
        (json!(1.5), Param::Float(1.5));
        (json!("1; drop table t"), Param::Text("1; drop table t".into()));
        (json!([1, "a"]), Param::Json(json!([1, "a"])));
        (json!({"a": 1}), Param::Json(json!({"a": 1})));
    }
}

#[test]
fn numerics_dates_and_timestamps_read_exactly() {
    // numeric's binary form: ndigits, weight, sign, dscale, then base-10000 digits.
    let num = |words: &[i16]| -> Vec<u8> { words.iter().flat_map(|w| w.to_be_bytes()).collect() };
    table! { |raw: Vec<u8>, want: &str| assert_eq!(numeric(&raw).as_deref(), Some(want));
        (num(&[0, 0, 0, 0]), "0");
        (num(&[2, 0, 0, 2, 12, 3400]), "12.34");
        (num(&[1, 1, 0x4000, 0, 5]), "-50000");
        (num(&[1, -1, 0, 5, 12]), "0.00120");
        (num(&[3, 2, 0, 0, 1, 2, 3]), "100020003");
        (num(&[0, 0, 0xC000u16 as i16, 0]), "NaN");
    }
    table! { |days: i64, want: &str| assert_eq!(date(days), want);
        (0, "2000-01-01");
        (-1, "1999-12-31");
        (59, "2000-02-29");
        (9_497, "2026-01-01");
    }
    table! { |micros: i64, want: &str| assert_eq!(timestamp(micros), want);
        (0, "2000-01-01T00:00:00");
        (86_399_000_001, "2000-01-01T23:59:59.000001");
        (-1_000_000, "1999-12-31T23:59:59");
    }
}

#[test]
fn limits_truncate_and_say_so() {
    let row = |n: i64| vec![json!(n), json!("x")];
    table! { |rows: u64, bytes: u64, offered: i64, kept: usize, truncated: bool| {
        let mut c = Collector::new(vec!["id".into(), "s".into()], limits(rows, bytes));
        for n in 0..offered {
            if !c.wants_more() || !c.push(row(n)) {
                break;
            }
        }
        let f = c.finish();
        assert_eq!((f.rows.len(), f.truncated), (kept, truncated), "{rows} {bytes} {offered}");
    };
        (10, 1 << 20, 3, 3, false);
        (2, 1 << 20, 3, 2, true);
        (10, 30, 3, 2, true);
        (10, 5, 3, 0, true);
    }
}

#[test]
fn the_text_table_aligns_columns() {
    let f = Fetched {
        columns: vec!["id".into(), "name".into()],
        rows: vec![
            [("id".into(), json!(1)), ("name".into(), json!("ada"))]
                .into_iter()
                .collect(),
            [("id".into(), json!(1234)), ("name".into(), Value::Null)]
                .into_iter()
                .collect(),
        ],
        truncated: false,
        affected: None,
    };
    assert_eq!(
        table(&f),
        "id   | name\n-----+-----\n1    | ada\n1234 | NULL\n(2 rows)"
    );
    let none = Fetched {
        affected: Some(3),
        ..Fetched::default()
    };
    assert_eq!(table(&none), "(3 rows affected)");
}

/// A tool file beside a SQLite database in a temp directory, compiled as the loader does.
fn sqlite_tools(dir: &std::path::Path, tools: Value) -> Vec<DeclaredTool> {
    let conn = rusqlite::Connection::open(dir.join("t.db")).unwrap();
    conn.execute_batch(
        "create table t (id integer primary key, name text, data blob);
         insert into t values (1, 'ada', x'0001'), (2, 'grace', null), (3, 'o''brien', null);",
    )
    .unwrap();
    let text = json!({"sources": {"db": {"sqlite": "t.db"}}, "tools": tools}).to_string();
    let doc = Document::parse(&dir.join("tools.json"), Format::Json, text).unwrap();
    let (sources, problems) = Sources::compile(std::slice::from_ref(&doc));
    assert!(problems.is_empty(), "{problems:?}");
    doc.tools
        .iter()
        .map(|v| DeclaredTool::compile_with(v, &sources).unwrap())
        .collect()
}

async fn call(tool: &DeclaredTool, args: Value) -> (Option<Value>, String, bool) {
    let cancel = CancellationToken::new();
    let ctx = RunContext {
        roots: &[],
        timeout: Duration::from_secs(10),
        cancel: &cancel,
        trace: None,
        observed: None,
    };
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let r = tool.run(&args, &ctx).await;
    let text = r
        .content
        .first()
        .and_then(|c| serde_json::to_value(c).ok())
        .and_then(|c| c["text"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (r.structured_content, text, r.is_error == Some(true))
}

#[tokio::test]
async fn sqlite_binds_arguments_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let tools = sqlite_tools(
        dir.path(),
        json!([
            {"name": "by_name", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
             "sql": {"source": "db", "statement": "select id, name, data from t where name = ?", "params": ["name"]},
             "annotations": {"readOnlyHint": true}},
            {"name": "one", "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
             "sql": {"source": "db", "statement": "select name from t where id = ?1", "params": ["id"], "result": "one"},
             "annotations": {"readOnlyHint": true}},
            {"name": "sneaky", "inputSchema": {"type": "object"},
             "sql": {"source": "db", "statement": "select 1; ", "params": []},
             "annotations": {"readOnlyHint": true}},
        ]),
    );
    let (v, text, err) = call(&tools[0], json!({"name": "o'brien"})).await;
    assert!(!err, "{text}");
    assert_eq!(
        v.unwrap(),
        json!({"rows": [{"id": 3, "name": "o'brien", "data": null}]})
    );
    for attack in [
        "' or 1=1 --",
        "1; drop table t",
        "\\'; delete from t; --",
        "ада\"'`",
    ] {
        let (v, text, err) = call(&tools[0], json!({"name": attack})).await;
        assert!(!err, "{text}");
        assert_eq!(v.unwrap(), json!({"rows": []}), "{attack}");
    }
    let (v, _, _) = call(&tools[0], json!({"name": "ada"})).await;
    assert_eq!(v.unwrap()["rows"][0]["data"], json!("AAE="));
    let (v, text, err) = call(&tools[1], json!({"id": 2})).await;
    assert!(!err, "{text}");
    assert_eq!(v.unwrap(), json!({"name": "grace"}));
    assert!(text.starts_with("name\n-----\ngrace\n"), "{text}");
    let (_, text, err) = call(&tools[1], json!({"id": 99})).await;
    assert!(err && text.contains("no row"), "{text}");
    let (v, _, err) = call(&tools[2], json!({})).await;
    assert!(!err);
    assert_eq!(v.unwrap(), json!({"rows": [{"1": 1}]}));
}

#[tokio::test]
async fn sqlite_read_only_refuses_writes_and_times_out() {
    let dir = tempfile::tempdir().unwrap();
    // The statement's first word reads; the database refuses the write all the same.
    let tools = sqlite_tools(
        dir.path(),
        json!([
            {"name": "sneaky_write", "inputSchema": {"type": "object"},
             "sql": {"source": "db", "statement": "with x as (select 1) select * from x", "params": []},
             "annotations": {"readOnlyHint": true}},
            {"name": "slow", "inputSchema": {"type": "object"},
             "sql": {"source": "db", "statement": "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c", "params": [], "timeout": "200ms"},
             "annotations": {"readOnlyHint": true}},
            {"name": "insert", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
             "sql": {"source": "db", "statement": "insert into t (name) values (?)", "params": ["name"]},
             "annotations": {"readOnlyHint": false}},
        ]),
    );
    let (_, text, err) = call(&tools[1], json!({})).await;
    assert!(err && text.contains("timed out after 200ms"), "{text}");
    let (v, text, err) = call(&tools[2], json!({"name": "x"})).await;
    assert!(!err, "{text}");
    assert_eq!(v.unwrap(), json!({"rows": []}));
    assert_eq!(text, "(1 rows affected)");
    let (_, text, err) = call(&tools[0], json!({})).await;
    assert!(!err, "{text}");
}

#[test]
fn compile_refuses_what_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = json!({"sources": {
        "db": {"sqlite": "t.db"},
        "both": {"sqlite": "a", "postgres": "b"},
        "arg": {"postgres": "postgres://u:{password}@127.0.0.1/db"},
        "typo": {"postgress": "postgres://127.0.0.1/db"},
    }})
    .to_string();
    let doc = Document::parse(&dir.path().join("t.json"), Format::Json, text).unwrap();
    let (sources, problems) = Sources::compile(std::slice::from_ref(&doc));
    let messages: Vec<&str> = problems
        .iter()
        .map(|p| p.problem.message.as_str())
        .collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].contains("exactly one"), "{messages:?}");
    assert!(messages[1].contains("takes `${VAR}`"), "{messages:?}");
    assert!(messages[2].contains("postgress"), "{messages:?}");
    let schema = json!({"type": "object", "properties": {"id": {"type": "integer"}}});
    table! { |sql: Value, read_only: bool, says: &str| {
        let tool = json!({"name": "t", "inputSchema": schema, "sql": sql, "annotations": {"readOnlyHint": read_only}});
        let e = DeclaredTool::compile_with(&tool, &sources).unwrap_err();
        assert!(e.message.contains(says), "{sql}: {}", e.message);
    };
        (json!({"source": "nope", "statement": "select 1"}), true, "no source is named \"nope\"");
        (json!({"source": "db", "statement": "select ?", "params": ["idd"]}), true, "`idd` names no property");
        (json!({"source": "db", "statement": "select ?, ?", "params": ["id"]}), true, "2 placeholder(s)");
        (json!({"source": "db", "statement": "delete from t where id = ?", "params": ["id"]}), true, "writing one (DELETE)");
        (json!({"source": "db", "statement": "select 1; drop table t"}), false, "more than one statement");
        (json!({"source": "both", "statement": "select 1"}), false, "no source is named \"both\"");
    }
}

#[test]
fn a_sql_tool_takes_no_output_shaping() {
    let dir = tempfile::tempdir().unwrap();
    let text = json!({"sources": {"db": {"sqlite": "t.db"}}}).to_string();
    let doc = Document::parse(&dir.path().join("t.json"), Format::Json, text).unwrap();
    let (sources, _) = Sources::compile(std::slice::from_ref(&doc));
    let tool = json!({"name": "t", "sql": {"source": "db", "statement": "select 1"}, "output": {"parse": "json"}});
    let e = DeclaredTool::compile_with(&tool, &sources).unwrap_err();
    assert!(
        e.message.contains("`output` does not apply"),
        "{}",
        e.message
    );
}
