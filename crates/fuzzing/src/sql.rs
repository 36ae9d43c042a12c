//! The `sql` action's parameter binding and statement checks, on a real SQLite file and on
//! PostgreSQL's binary value codec.

use crate::files::value_of;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_postgres::types::{FromSql, ToSql, Type};
use toolwright_declared::DeclaredTool;
use toolwright_declared::load::compile_all;
use toolwright_declared::sql::pg_types::{Bound, Column};
use toolwright_declared::sql::rows::Param;
use toolwright_server::{Tool, ToolContext};
use toolwright_toolfile::sql::{Engine, scan};
use toolwright_toolfile::{Document, Format};

/// The rows every run starts from, and must end with.
const ROWS: &[(&str, &str)] = &[("ada", "x"), ("grace", "y"), ("edsger", "z")];

/// The database file and the tools that always exist: `echo` (`select ? as a, ? as b`) and
/// `find` (`select count(*) as n from t where name = ?`).
struct Shop {
    dir: PathBuf,
    db: PathBuf,
    echo: Arc<DeclaredTool>,
    find: Arc<DeclaredTool>,
}

fn shop() -> &'static Shop {
    static SHOP: OnceLock<Shop> = OnceLock::new();
    SHOP.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("toolwright-fuzz-sql-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let db = dir.join("shop.db");
        let conn = rusqlite::Connection::open(&db).expect("the database opens");
        conn.execute_batch("create table t (id integer primary key, name text, tag text)")
            .expect("the table is made");
        for (name, tag) in ROWS {
            conn.execute("insert into t (name, tag) values (?1, ?2)", [name, tag])
                .expect("a row is added");
        }
        let mut tools = compile(
            &dir,
            &db,
            &[
                ("echo", "select ? as a, ? as b", 2, "one"),
                (
                    "find",
                    "select count(*) as n from t where name = ?",
                    1,
                    "one",
                ),
            ],
        );
        assert_eq!(tools.len(), 2, "the fixed tools compile");
        let find = tools.pop().expect("find");
        let echo = tools.pop().expect("echo");
        Shop {
            dir,
            db,
            echo,
            find,
        }
    })
}

/// Read-only tools over the shop's database, each `(name, statement, parameters, result)`;
/// what compiled.
fn compile(
    dir: &std::path::Path,
    db: &std::path::Path,
    tools: &[(&str, &str, usize, &str)],
) -> Vec<Arc<DeclaredTool>> {
    let tools: Vec<Value> = tools
        .iter()
        .map(|(name, statement, n, result)| {
            let params = &["a", "b"][..*n];
            // The fuzzed statement may run forever (a recursive query): 200 ms. The fixed
            // ones are quick, but a fuzzer starved of CPU must not see them time out.
            let timeout = if *name == "q" { "200ms" } else { "10s" };
            json!({
                "name": name,
                "description": "Runs one statement of the fuzzer's.",
                "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}},
                "sql": {"source": "db", "statement": statement, "params": params, "timeout": timeout, "result": result},
                "annotations": {"readOnlyHint": true},
            })
        })
        .collect();
    let file = json!({"sources": {"db": {"sqlite": db}}, "tools": tools});
    let Ok(doc) = Document::parse(&dir.join("tools.json"), Format::Json, file.to_string()) else {
        return Vec::new();
    };
    compile_all(&[doc]).0
}

/// The table's rows, the schema's size and the file's `user_version`: what no read-only tool
/// may change.
fn fingerprint(db: &std::path::Path) -> (Vec<(String, String)>, i64, i64) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("the database opens");
    let mut q = conn
        .prepare("select name, tag from t order by id")
        .expect("a select");
    let rows = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("text rows");
    let objects = conn
        .query_row("select count(*) from sqlite_master", [], |r| r.get(0))
        .expect("the schema");
    let version = conn
        .query_row("pragma user_version", [], |r| r.get(0))
        .expect("the version");
    (rows, objects, version)
}

fn run(tool: &DeclaredTool, args: Value) -> Option<Value> {
    let dir = shop().dir.clone();
    let call = tool.call(args, ToolContext::detached(vec![dir], None));
    let outcome = crate::runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), call).await });
    let result = outcome.expect("a call ends within its timeout").ok()?;
    if result.is_error == Some(true) {
        return None;
    }
    match (result.structured_content, result.structured_text) {
        (Some(v), _) => Some(v),
        (None, Some(text)) => Some(serde_json::from_str(text.get()).expect("structured JSON")),
        (None, None) => None,
    }
}

/// What SQLite gives back for a bound value, when it gives it back exactly.
fn echoed(v: &Value) -> Option<Value> {
    match Param::of(v) {
        Param::Text(s) => Some(Value::String(s)),
        Param::Int(i) => Some(Value::from(i)),
        Param::Null => Some(Value::Null),
        _ => None,
    }
}

/// The input's pieces, split at each 0xFF byte: a statement, the values of `a` and `b`, and
/// raw bytes for PostgreSQL's column decoder.
///
/// - The statement is scanned for both engines and, when it compiles as a read-only tool
///   (placeholders matching at most two parameters), run on the read-only connection: the
///   file's rows, schema and header must be unchanged afterwards, whatever it says.
/// - `a` and `b` are bound to `select ? as a, ? as b` and come back exactly (text, integers,
///   NULL); bound to `where name = ?` they match only a name that is in the table.
/// - Both values are encoded as every PostgreSQL type a parameter may have, and the raw bytes
///   decoded as every type a column may have: an error, never a panic.
pub fn sql(data: &[u8]) {
    let mut pieces = data.split(|&b| b == 0xFF);
    let statement = String::from_utf8_lossy(pieces.next().unwrap_or_default()).into_owned();
    let a = value_of(pieces.next().unwrap_or_default());
    let b = value_of(pieces.next().unwrap_or_default());
    let raw = pieces.next().unwrap_or_default();
    let shop = shop();
    let before = fingerprint(&shop.db);

    for engine in [Engine::Postgres, Engine::Sqlite] {
        let s = scan(&statement, engine);
        assert!(s.gaps.iter().all(|g| *g < s.placeholders), "{s:?}");
    }
    let n = scan(&statement, Engine::Sqlite).placeholders;
    if n <= 2
        && let [tool] = compile(&shop.dir, &shop.db, &[("q", &statement, n, "rows")]).as_slice()
    {
        let _ = run(tool, json!({"a": a, "b": b}));
        assert_eq!(
            fingerprint(&shop.db),
            before,
            "a read-only tool changed the database: {statement:?}"
        );
    }

    let row = run(&shop.echo, json!({"a": a, "b": b})).expect("echo answers");
    for (name, sent) in [("a", &a), ("b", &b)] {
        if let Some(want) = echoed(sent) {
            assert_eq!(row[name], want, "{name} came back changed: {row}");
        }
    }
    let found = run(&shop.find, json!({"a": a})).expect("find answers");
    let known = a
        .as_str()
        .is_some_and(|s| ROWS.iter().any(|(name, _)| *name == s));
    assert_eq!(found["n"], json!(i64::from(known)), "{a} matched: {found}");
    assert_eq!(fingerprint(&shop.db), before);

    let types = [
        Type::BOOL,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::OID,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::NAME,
        Type::JSON,
        Type::JSONB,
        Type::BYTEA,
        Type::UUID,
        Type::DATE,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::NUMERIC,
        Type::INET,
    ];
    for ty in &types {
        for v in [&a, &b] {
            let p = Param::of(v);
            let mut out = bytes::BytesMut::new();
            let _ = Bound(&p).to_sql_checked(ty, &mut out);
        }
        let _ = Column::from_sql(ty, raw);
    }
}
