//! Exit codes, as every `--help` and the README list them: 0 success; 1 findings, a tool
//! that failed (an `isError` result, an error reply, or a result that breaks the tool's
//! outputSchema, whoever's server ran it) or nothing to accept; 2 usage, I/O or connection
//! error. A closed stdout (`toolwright tools --json | head -c1`) exits 0, whichever command
//! was writing.

use crate::cli_forms::declared_tools;
use crate::client::{code, contract_breaker, s, stderr, stdout, toolwright_serve};
use crate::util::bin;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `toolwright ARGS…` with stdout a pipe whose reader is already gone: the first write
/// fails with EPIPE. `input` is written to stdin, which is then closed.
fn into_a_closed_pipe(args: &[String], input: &[u8]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolwright");
    let mut stdin = child.stdin.take().unwrap();
    // The process may exit before reading it all.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn a_broken_pipe_exits_0_from_every_command() {
    let (dir, tools) = declared_tools();
    let tools = s(&tools);
    let gateway = dir.path().join("gw.yaml");
    std::fs::write(
        &gateway,
        "servers:\n  ev:\n    command: [server-everything]\n",
    )
    .unwrap();
    let trust = dir.path().join("trusted.json");
    std::fs::write(&trust, r#"{"trusted": []}"#).unwrap();
    let server = |head: &[&str]| {
        let mut v = strings(head);
        v.extend(["--trusted-config".to_owned(), s(&trust), "--".to_owned()]);
        v.extend(toolwright_serve(&[]));
        v
    };
    let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    let cases: Vec<(Vec<String>, &[u8])> = vec![
        (strings(&["tools", "--json"]), b""),
        (strings(&["tools"]), b""),
        (strings(&["call", "add", "a=1", "b=2"]), b""),
        (strings(&["lint", "--rules"]), b""),
        (strings(&["lint", &tools]), b""),
        (strings(&["lint", "--format", "json", &tools]), b""),
        (strings(&["trust", "list", "--config", &s(&gateway)]), b""),
        (strings(&["--help"]), b""),
        (strings(&["call", "--help"]), b""),
        (server(&["list", "--json"]), b""),
        (server(&["list"]), b""),
        (server(&["call", "add", "a=1", "b=2"]), b""),
        (strings(&["serve"]), ping),
    ];
    for (args, input) in cases {
        let o = into_a_closed_pipe(&args, input);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_result_that_breaks_its_output_schema_exits_1_whoever_serves_it() {
    let breach = "tool bad_output returned structuredContent that violates its outputSchema";
    // In-process: the server's check turns it into an error reply.
    let o = Command::new(bin())
        .args(["call", "bad_output", "--fixtures", "testing"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!("toolwright: bad_output: {breach}")),
        "{}",
        stderr(&o)
    );
    // toolwright's own server over stdio, which refuses to send it (an error reply).
    let o = Command::new(bin())
        .args(["call", "bad_output", "--yes", "--"])
        .args(toolwright_serve(&["--fixtures", "testing"]))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains(breach), "{}", stderr(&o));
    // A declared tool checks its own output: an isError result.
    let (_d, tools) = declared_tools();
    let o = Command::new(bin())
        .args(["call", "count", "--config", &s(&tools)])
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("does not match the tool's outputSchema"),
        "{}",
        stdout(&o)
    );
    // Another server, which sends it: toolwright checks it.
    let Some(breaker) = contract_breaker(None) else {
        return;
    };
    let o = Command::new(bin())
        .args(["call", "total", "--"])
        .args(&breaker)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("structuredContent does not match the outputSchema"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn lint_findings_exit_1_and_a_clean_file_0() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"name": "bad name", "inputSchema": {"type": "object"}}"#,
    )
    .unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"name": "get_time", "description": "Returns the current time as RFC 3339 text.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}}"#,
    )
    .unwrap();
    let lint = |args: &[&str]| Command::new(bin()).arg("lint").args(args).output().unwrap();
    assert_eq!(code(&lint(&[&s(&bad)])), 1);
    let o = lint(&[&s(&good)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // An info finding (no word of what it returns) fails only under --deny info.
    let info = dir.path().join("info.json");
    std::fs::write(
        &info,
        r#"{"name": "get_time", "description": "Tells the current time for the local zone.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}}"#,
    )
    .unwrap();
    let o = lint(&[&s(&info)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("description-no-return"),
        "{}",
        stdout(&o)
    );
    assert_eq!(code(&lint(&["--deny", "info", &s(&info)])), 1);
    assert_eq!(code(&lint(&["--deny", "info", &s(&good)])), 0);
    // A file that cannot be read is an I/O error.
    assert_eq!(code(&lint(&[&s(&dir.path().join("missing.json"))])), 2);
}
