//! Snapshots of what people read and clients parse: every `--help`, `tools --json`, and
//! the payloads of the main refusals, on the command line and over stdio in both eras.
//!
//! A change to any of them shows up here as a snapshot diff to review (`cargo insta review`).

use crate::util::{Server, bin, modern_meta};
use serde_json::{Value, json};
use std::process::Command;

/// Runs `toolwright ARGS…` with colours off and no log directives, so that the bytes do not
/// depend on the caller's environment.
fn run(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("TOOLWRIGHT_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("run toolwright")
}

/// Exit code, stdout and stderr of one run, as one text.
fn transcript(args: &[&str]) -> String {
    let o = run(args);
    let code = o.status.code().expect("exited, not killed");
    let mut text = format!("$ toolwright {}\nexit: {code}\n", args.join(" "));
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        if !bytes.is_empty() {
            text.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
        }
    }
    text
}

// ---------------------------------------------------------------- help

#[test]
fn help() {
    for (name, args) in [
        ("help", &["--help"][..]),
        ("help_serve", &["serve", "--help"]),
        ("help_tools", &["tools", "--help"]),
        ("help_call", &["call", "--help"]),
        ("help_lint", &["lint", "--help"]),
        ("help_list", &["list", "--help"]),
        ("help_list_short", &["list", "-h"]),
        ("help_call_short", &["call", "-h"]),
        ("help_trust", &["trust", "--help"]),
        ("help_trust_accept", &["trust", "accept", "--help"]),
        ("help_trust_list", &["trust", "list", "--help"]),
        ("help_skills", &["skills", "--help"]),
        ("help_skills_get", &["skills", "get", "--help"]),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(o.stderr.is_empty(), "{args:?}");
        insta::assert_snapshot!(name, String::from_utf8(o.stdout).unwrap());
    }
}

/// Scaffolding stays out of sight: the flags it once had are unknown, with no tip that
/// points at them.
#[test]
fn removed_scaffolding_flags_are_unknown() {
    insta::assert_snapshot!(
        "removed_probe_tools",
        transcript(&["serve", "--probe-tools"])
    );
    insta::assert_snapshot!("near_probe", transcript(&["serve", "--probe"]));
    insta::assert_snapshot!(
        "removed_bench_extra_tools",
        transcript(&["serve", "--bench-extra-tools", "1000"])
    );
}

// ---------------------------------------------------------------- tools --json

#[test]
fn tools_json() {
    let o = run(&["tools", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    let v: Value = serde_json::from_str(&text).expect("tools --json prints JSON");
    assert!(v["tools"].is_array());
    insta::assert_snapshot!("tools_json", text);
}

// ---------------------------------------------------------------- refusals on the command line

#[test]
fn command_line_refusals() {
    for (name, args) in [
        ("fixtures_bogus", &["serve", "--fixtures", "bogus"][..]),
        ("fixtures_bulk_zero", &["serve", "--fixtures", "bulk:0"]),
        (
            "fixtures_twice",
            &["tools", "--fixtures", "probe,testing,probe"],
        ),
        ("unknown_subcommand", &["frobnicate"]),
        ("call_unknown_tool", &["call", "nope"]),
        ("call_invalid_arguments", &["call", "add", "a=x", "b=1"]),
        ("call_bad_pair", &["call", "add", "novalue"]),
        (
            "call_bad_output",
            &["call", "bad_output", "--fixtures", "testing"],
        ),
        (
            "call_era_in_process",
            &["call", "add", "a=1", "b=2", "--era", "modern"],
        ),
        (
            "call_root_with_url",
            &[
                "call",
                "add",
                "--root",
                "/tmp",
                "--url",
                "http://127.0.0.1:9/mcp",
            ],
        ),
        (
            "call_server_option",
            &["call", "add", "--server", "npx", "x"],
        ),
        ("list_server_option", &["list", "--server", "npx", "x"]),
        ("list_no_server", &["list"]),
        ("list_cannot_start", &["list", "--", "/nonexistent/server"]),
        (
            "lint_era_with_files",
            &["lint", "tools.json", "--era", "legacy"],
        ),
        ("lint_no_file", &["lint", "/nonexistent/tools.json"]),
        ("tools_root", &["tools", "--root", "/tmp"]),
        ("http_port_alone", &["serve", "--http", "9997"]),
        ("http_host_name", &["serve", "--http", "localhost:9997"]),
        ("http_not_an_address", &["serve", "--http", "everywhere"]),
        (
            "era_bogus",
            &["list", "--era", "2025", "--url", "http://127.0.0.1:9/mcp"],
        ),
        (
            "lint_ignore_bogus",
            &["lint", "--ignore", "no-such-rule", "x.json"],
        ),
        (
            "trusted_config_missing",
            &[
                "list",
                "--trusted-config",
                "/nonexistent/trusted.json",
                "--url",
                "http://127.0.0.1:9/mcp",
            ],
        ),
    ] {
        insta::assert_snapshot!(name, transcript(args));
    }
}

#[test]
fn lint_refusals() {
    let dir = tempfile::tempdir().unwrap();
    for (name, file, text) in [
        ("lint_empty_file", "empty.json", ""),
        ("lint_only_comments", "later.yaml", "# tools come later\n"),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let shown = transcript(&["lint", path.to_str().unwrap()])
            .replace(dir.path().to_str().unwrap(), "<dir>");
        insta::assert_snapshot!(name, shown);
    }
}

// ---------------------------------------------------------------- refusals over stdio

/// Sends one raw line and returns the server's answer to it.
fn answer_to_line(s: &mut Server, line: &str) -> Value {
    s.send_raw(format!("{line}\n").as_bytes());
    s.recv()
}

#[test]
fn stdio_legacy_refusals() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let cases = [
        (
            "legacy_unknown_tool",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "nope", "arguments": {}}}),
        ),
        (
            "legacy_invalid_arguments",
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": "x", "c": 1}}}),
        ),
        (
            "legacy_unknown_method",
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/destroy", "params": {}}),
        ),
        (
            "legacy_initialize_twice",
            json!({"jsonrpc": "2.0", "id": 4, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}}}),
        ),
    ];
    for (name, request) in cases {
        s.send(&request);
        let reply = s.response_to(&request["id"]);
        insta::assert_json_snapshot!(name, reply);
    }
    let malformed = [
        (
            "malformed_json",
            r#"{"jsonrpc": "2.0", "id": 5, "method": "#,
        ),
        (
            "invalid_request",
            r#"{"jsonrpc": "1.0", "id": 6, "method": "ping"}"#,
        ),
    ];
    for (name, line) in malformed {
        insta::assert_json_snapshot!(name, answer_to_line(&mut s, line));
    }
    s.assert_alive();
}

#[test]
fn stdio_refusals_before_initialize() {
    let mut s = Server::start(&[]);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    s.send(&request);
    insta::assert_json_snapshot!("before_initialize", s.response_to(&json!(1)));
}

#[test]
fn stdio_modern_refusals() {
    let mut s = Server::start(&["--fixtures", "testing"]);
    let call = |id: i64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments, "_meta": modern_meta()}})
    };
    let mut unsupported = call(4, "add", json!({"a": 1, "b": 2}));
    unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let cases = [
        ("modern_unknown_tool", call(1, "nope", json!({}))),
        (
            "modern_invalid_arguments",
            call(2, "add", json!({"a": "x", "c": 1})),
        ),
        (
            "modern_missing_capability",
            call(3, "needs_elicitation", json!({})),
        ),
        ("modern_unsupported_version", unsupported),
    ];
    for (name, request) in cases {
        s.send(&request);
        let reply = s.response_to(&request["id"]);
        insta::assert_json_snapshot!(name, reply);
    }
}
