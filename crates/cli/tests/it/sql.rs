//! The `sql` action through the real binary: SQLite on a temp file and a real PostgreSQL
//! (Debian's `postgresql`), a throwaway cluster of the test's own on a free loopback port.
//! Injection attempts in every parameter arrive as data, a write is refused in a read-only
//! tool, a statement past its timeout is cancelled on the server, the limits truncate,
//! `outputSchema` is checked, the text table is beside the rows.
//!
//! PostgreSQL refuses to run as root: as root the cluster runs as `nobody` (`runuser`).
//! Without the server's binaries (/usr/lib/postgresql/*/bin) the PostgreSQL test prints the
//! install command and passes as skipped, unless `CI` is set, when it fails.

use crate::util::Server;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const V: &str = "2025-06-18";

/// Every value an attacker would try, each of which must arrive as data.
const ATTACKS: &[&str] = &[
    "1; drop table t",
    "' or 1=1 --",
    "x' or 'a'='a",
    "\"quoted\"",
    "back\\slash\\'",
    "$1 $$ ? :name",
    "ünïcødé ✓ 注入",
    "'); delete from t; --",
];

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.request("tools/call", json!({"name": name, "arguments": args}));
    r["result"].clone()
}

fn text_of(r: &Value) -> String {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_error(r: &Value) -> bool {
    r["isError"] == json!(true)
}

/// The tools every engine is tested with; `P1`, `P2` are its placeholders.
fn tools(p1: &str, p2: &str) -> String {
    format!(
        r#"
  - name: find
    description: Find rows of t by name and tag.
    inputSchema: {{type: object, properties: {{name: {{type: string}}, tag: {{type: string}}}}, required: [name, tag]}}
    sql: {{source: db, statement: "select id, name, tag from t where name = {p1} or tag = {p2} order by id", params: [name, tag]}}
    annotations: {{readOnlyHint: true}}
  - name: by_id
    description: One row of t by id.
    inputSchema: {{type: object, properties: {{id: {{type: integer}}}}, required: [id]}}
    outputSchema: {{type: object, properties: {{id: {{type: integer}}, name: {{type: string}}}}, required: [id, name]}}
    sql: {{source: db, statement: "select id, name from t where id = {p1}", params: [id], result: one}}
    annotations: {{readOnlyHint: true}}
  - name: bad_shape
    description: Rows whose shape breaks the outputSchema.
    inputSchema: {{type: object}}
    outputSchema: {{type: object, properties: {{rows: {{type: array, items: {{type: object, properties: {{id: {{type: string}}}}}}}}}}}}
    sql: {{source: db, statement: "select id from t"}}
    annotations: {{readOnlyHint: true}}
  - name: all
    description: Every row, within limits.
    inputSchema: {{type: object}}
    sql: {{source: db, statement: "select id, name from t order by id", max_rows: 2}}
    annotations: {{readOnlyHint: true}}
  - name: all_bytes
    description: Every row, within a byte limit.
    inputSchema: {{type: object}}
    sql: {{source: db, statement: "select id, name from t order by id", max_bytes: 40}}
    annotations: {{readOnlyHint: true}}
  - name: add
    description: Add a row.
    inputSchema: {{type: object, properties: {{name: {{type: string}}, tag: {{type: string}}}}, required: [name, tag]}}
    sql: {{source: db, statement: "insert into t (name, tag) values ({p1}, {p2})", params: [name, tag]}}
    annotations: {{readOnlyHint: false}}
"#
    )
}

/// The checks both engines pass; `write_in_read_only` names a read-only tool whose statement
/// writes.
fn check_engine(s: &mut Server, write_in_read_only: &str) {
    // Every attack, in every parameter, is data: found literally once added, the table intact.
    for attack in ATTACKS {
        let r = call(s, "find", json!({"name": attack, "tag": attack}));
        assert!(!is_error(&r), "{attack}: {r}");
        assert_eq!(r["structuredContent"], json!({"rows": []}), "{attack}");
        let r = call(s, "add", json!({"name": attack, "tag": "t"}));
        assert!(!is_error(&r), "{attack}: {r}");
        let r = call(s, "find", json!({"name": "nobody", "tag": "t"}));
        let names: Vec<&str> = r["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|row| row["name"].as_str())
            .collect();
        assert!(names.contains(attack), "{attack} not in {names:?}");
        let r = call(s, "add", json!({"name": "n", "tag": attack}));
        assert!(!is_error(&r), "{attack}: {r}");
        let r = call(s, "find", json!({"name": "-", "tag": attack}));
        assert_eq!(
            r["structuredContent"]["rows"][0]["tag"],
            json!(attack),
            "{r}"
        );
    }
    let r = call(s, "by_id", json!({"id": 1}));
    assert_eq!(
        r["structuredContent"],
        json!({"id": 1, "name": "ada"}),
        "{r}"
    );
    assert_eq!(text_of(&r), "id | name\n---+-----\n1  | ada\n(1 row)");
    let r = call(s, "by_id", json!({"id": 999}));
    assert!(is_error(&r) && text_of(&r).contains("no row"), "{r}");
    let r = call(s, "bad_shape", json!({}));
    assert!(is_error(&r) && text_of(&r).contains("outputSchema"), "{r}");
    let r = call(s, "all", json!({}));
    assert_eq!(
        r["structuredContent"]["rows"].as_array().unwrap().len(),
        2,
        "{r}"
    );
    assert_eq!(r["structuredContent"]["truncated"], json!(true), "{r}");
    assert!(
        text_of(&r).ends_with("(2 rows, truncated at the tool's limit)"),
        "{r}"
    );
    let r = call(s, "all_bytes", json!({}));
    assert_eq!(
        r["structuredContent"]["rows"],
        json!([{"id": 1, "name": "ada"}]),
        "{r}"
    );
    assert_eq!(r["structuredContent"]["truncated"], json!(true), "{r}");
    let r = call(s, write_in_read_only, json!({"name": "x"}));
    assert!(is_error(&r), "a write in a read-only tool: {r}");
    let r = call(s, "by_id", json!({"id": 1}));
    assert!(!is_error(&r), "the table survives: {r}");
}

#[test]
fn sqlite_tools_bind_refuse_writes_and_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("shop.db")).unwrap();
    conn.execute_batch(
        "create table t (id integer primary key, name text not null, tag text);
         insert into t (name, tag) values ('ada', 'x'), ('grace', 'y'), ('edsger', 'z');",
    )
    .unwrap();
    drop(conn);
    let file = dir.path().join("tools.yaml");
    let extra = r#"
  - name: sneaky_write
    description: A write the scanner does not see (a pragma that sets the file's header); the read-only connection refuses it.
    inputSchema: {type: object}
    sql: {source: db, statement: "pragma user_version = 5"}
    annotations: {readOnlyHint: true}
  - name: slow
    description: Runs forever.
    inputSchema: {type: object}
    sql: {source: db, statement: "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c", timeout: 300ms}
    annotations: {readOnlyHint: true}
"#;
    std::fs::write(
        &file,
        format!(
            "sources:\n  db: {{sqlite: shop.db}}\ntools:{}{extra}",
            tools("?", "?")
        ),
    )
    .unwrap();
    let mut s = Server::legacy(V, &["--config", file.to_str().unwrap()]);
    check_engine(&mut s, "sneaky_write");
    let started = Instant::now();
    let r = call(&mut s, "slow", json!({}));
    assert!(
        is_error(&r) && text_of(&r).contains("timed out after 300ms"),
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// The directory of the PostgreSQL server's programs (Debian's layout), when installed.
fn pg_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|b| b.join("postgres").is_file() && b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// A throwaway cluster: initdb in a temp directory, the server on a free loopback port,
/// stopped (immediately) when dropped.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_nobody: bool,
}

const SUPERUSER_PASSWORD: &str = "super-secret";

impl Cluster {
    fn start(bin: PathBuf) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
        let data = dir.path().join("data");
        std::fs::write(dir.path().join("pw"), SUPERUSER_PASSWORD).unwrap();
        if root {
            // PostgreSQL refuses root: the cluster is nobody's.
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
            std::os::unix::fs::chown(dir.path().join("pw"), Some(65534), Some(65534)).unwrap();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Cluster {
            bin,
            dir,
            port,
            as_nobody: root,
        };
        let pwfile = format!("--pwfile={}", c.dir.path().join("pw").display());
        c.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                &pwfile,
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {}",
            c.dir.path().display()
        );
        let log = c.dir.path().join("log");
        c.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        c
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let path = self.bin.join(program);
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.args(args).current_dir(self.dir.path());
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program, args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs SQL as the superuser (psql over TCP), the output unaligned.
    fn psql(&self, sql: &str) -> String {
        let psql = [self.bin.join("psql"), PathBuf::from("/usr/bin/psql")]
            .into_iter()
            .find(|p| p.is_file())
            .expect("psql");
        let out = Command::new(psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args([
                "-d",
                "postgres",
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .env("PGPASSWORD", SUPERUSER_PASSWORD)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self
            .command(
                "pg_ctl",
                &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"],
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn postgres_tools_bind_refuse_writes_and_cancel_on_the_server() {
    let Some(bin) = pg_bin() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: PostgreSQL is not installed (apt-get install postgresql)"
        );
        println!("skipped: PostgreSQL is not installed; apt-get install postgresql");
        return;
    };
    let pg = Cluster::start(bin);
    for sql in [
        "create role app login password 'app-pw'",
        "create table t (id serial primary key, name text not null, tag text, price numeric(8,2) default 1.50, seen timestamptz default '2026-01-02 03:04:05+00', doc jsonb default '{\"a\": [1]}')",
        "insert into t (name, tag) values ('ada', 'x'), ('grace', 'y'), ('edsger', 'z')",
        "grant select, insert on t to app",
        "grant usage on sequence t_id_seq to app",
    ] {
        pg.psql(sql);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    let extra = r#"
  - name: sneaky_write
    description: A write the scanner does not see (nextval); the read-only transaction refuses it.
    inputSchema: {type: object}
    sql: {source: db, statement: "select nextval('t_id_seq')"}
    annotations: {readOnlyHint: true}
  - name: slow
    description: Sleeps past its timeout.
    inputSchema: {type: object}
    sql: {source: db, statement: "select pg_sleep(10) as slept", timeout: 500ms}
    annotations: {readOnlyHint: true}
  - name: sleepy
    description: Sleeps well within its timeout, until the client cancels it.
    inputSchema: {type: object}
    sql: {source: db, statement: "select pg_sleep(30) as slept", timeout: 60s}
    annotations: {readOnlyHint: true}
  - name: endless
    description: Fifty million rows, of which three are kept.
    inputSchema: {type: object}
    sql: {source: db, statement: "select generate_series(1, 50000000) as n", max_rows: 3, timeout: 20s}
    annotations: {readOnlyHint: true}
  - name: typed
    description: The column types read as JSON.
    inputSchema: {type: object, properties: {id: {type: integer}}, required: [id]}
    sql: {source: db, statement: "select price, seen, doc, null::text as nothing from t where id = $1", params: [id], result: one}
    annotations: {readOnlyHint: true}
"#;
    std::fs::write(
        &file,
        format!(
            "sources:\n  db: {{postgres: \"postgres://app:${{SHOP_PASSWORD}}@127.0.0.1:{}/postgres\"}}\ntools:{}{extra}",
            pg.port,
            tools("$1", "$2")
        ),
    )
    .unwrap();
    let mut s = Server::start_with_env(
        &["--config", file.to_str().unwrap()],
        None,
        &[("SHOP_PASSWORD", Path::new("app-pw"))],
    )
    .handshake(V);
    check_engine(&mut s, "sneaky_write");
    let r = call(&mut s, "sneaky_write", json!({}));
    assert!(text_of(&r).contains("read-only transaction"), "{r}");
    let r = call(&mut s, "typed", json!({"id": 1}));
    assert_eq!(
        r["structuredContent"],
        json!({"price": "1.50", "seen": "2026-01-02T03:04:05Z", "doc": {"a": [1]}, "nothing": null}),
        "{r}"
    );
    let started = Instant::now();
    let r = call(&mut s, "slow", json!({}));
    assert!(
        is_error(&r) && text_of(&r).contains("timed out after 500ms"),
        "{r}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Cancelled on the server: no backend still sleeps.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let running = pg.psql(
            "select count(*) from pg_stat_activity where state = 'active' and query like '%pg_sleep(10)%' and pid <> pg_backend_pid()",
        );
        if running == "0" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pg_sleep still running: {running}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A call the client cancels (notifications/cancelled) is cancelled on the server too.
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "sleepy", "arguments": {}}}));
    let active = |pg: &Cluster| {
        pg.psql(
            "select count(*) from pg_stat_activity where state = 'active' and query like '%pg_sleep(30)%' and pid <> pg_backend_pid()",
        )
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while active(&pg) != "1" {
        assert!(Instant::now() < deadline, "pg_sleep(30) never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the user gave up"}),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while active(&pg) != "0" {
        assert!(
            Instant::now() < deadline,
            "a cancelled call's statement still runs on the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = call(&mut s, "by_id", json!({"id": 3}));
    assert_eq!(r["structuredContent"]["name"], json!("edsger"), "{r}");

    // A read-only statement past its row limit is not read to its end: the call answers
    // at once, the statement is cancelled on the server, and the pool serves the next call.
    let started = Instant::now();
    let r = call(&mut s, "endless", json!({}));
    assert_eq!(
        r["structuredContent"],
        json!({"rows": [{"n": 1}, {"n": 2}, {"n": 3}], "truncated": true}),
        "{r}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while pg.psql(
        "select count(*) from pg_stat_activity where state = 'active' and query like '%generate_series(1, 50000000)%' and pid <> pg_backend_pid()",
    ) != "0"
    {
        assert!(Instant::now() < deadline, "the endless statement still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = call(&mut s, "by_id", json!({"id": 2}));
    assert_eq!(r["structuredContent"]["name"], json!("grace"), "{r}");
    // The table survived every attack.
    assert!(pg.psql("select count(*) from t").parse::<u32>().unwrap() >= 3);
}
