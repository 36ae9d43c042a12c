//! The command line's documented forms: a stdio server's command goes last, after `--`
//! (`list [OPTIONS] -- CMD ARGS...`, `call TOOL KEY=VALUE... -- CMD ARGS...`,
//! `lint -- CMD ARGS...`), `--url` anywhere; options that do not apply to what the line
//! asks for are refused; `key=value` typing follows the tool's inputSchema.

use crate::client::{HttpPeer, code, s, stderr, stdout, toolwright_serve, with_server};
use crate::util::{bin, run_cli};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

/// An empty trust file, so a user's own never changes a test (kept alive by the dir).
fn no_trust() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trusted.json");
    std::fs::write(&path, r#"{"trusted": []}"#).unwrap();
    let p = s(&path);
    (dir, p)
}

/// A directory with `tools.yaml`: `say` (a string argument, echoed) and `count` (a result
/// that breaks its own outputSchema).
pub(crate) fn declared_tools() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(
        &file,
        r#"tools:
  - name: say
    description: Print the text given. Returns the text.
    inputSchema:
      type: object
      properties: {text: {type: string, description: What to print}}
      required: [text]
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [echo, "{text}"]
  - name: count
    description: Count nothing. Returns {n}, which is not the integer its schema says.
    inputSchema: {type: object}
    outputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [echo, '{{"n": "three"}}']
    output: {parse: json}
"#,
    )
    .unwrap();
    (dir, file)
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run toolwright")
}

#[test]
fn list_takes_its_options_before_the_servers_command() {
    let (_d, cfg) = no_trust();
    let server = toolwright_serve(&[]);
    let o = with_server(&["list", "--json", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["server"]["name"], "toolwright");
    // The table form.
    let o = with_server(&["list", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("NOT trusted"), "{}", stdout(&o));
    // Everything after `--` is the server's: --json here goes to toolwright serve, which
    // refuses it, so the listing fails instead of printing JSON.
    let mut after = server.clone();
    after.push("--json".into());
    let o = with_server(&["list", "--trusted-config", &cfg], &after);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
}

#[test]
fn a_further_double_dash_belongs_to_the_server() {
    // `env -- PROGRAM ARGS` runs PROGRAM: the second `--` reaches env untouched.
    let (_d, cfg) = no_trust();
    let mut server = vec!["env".to_owned(), "--".to_owned()];
    server.extend(toolwright_serve(&[]));
    let o = with_server(&["list", "--json", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["tools"].as_array().unwrap().len(), 4);
}

#[test]
fn call_takes_the_tool_and_pairs_before_the_servers_command() {
    let (_d, cfg) = no_trust();
    let o = with_server(
        &["call", "add", "a=1", "b=2", "--trusted-config", &cfg],
        &toolwright_serve(&["--call-timeout", "5"]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["structuredContent"]["result"], 3);
    // Options between the pairs and the `--` are toolwright's.
    let o = with_server(
        &[
            "call",
            "add",
            "a=1",
            "b=2",
            "--era",
            "legacy",
            "--trusted-config",
            &cfg,
        ],
        &toolwright_serve(&[]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(json_of(&o).get("resultType").is_none(), "a legacy result");
}

#[test]
fn url_forms_work_with_options_anywhere() {
    let http = HttpPeer::toolwright();
    let (_d, cfg) = no_trust();
    let o = run(&[
        "list",
        "--url",
        &http.url,
        "--json",
        "--trusted-config",
        &cfg,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["tools"].as_array().unwrap().len(), 4);
    let o = run(&[
        "call",
        "--url",
        &http.url,
        "multiply",
        "a=6",
        "b=7",
        "--trusted-config",
        &cfg,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["structuredContent"]["result"], 42);
    let o = run(&["lint", "--url", &http.url, "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["source"], http.url);
}

#[test]
fn lint_takes_the_servers_command_last() {
    let o = with_server(&["lint", "--format", "json"], &toolwright_serve(&[]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["era"], "modern");
}

#[test]
fn the_server_and_a_url_are_one_or_the_other() {
    let o = with_server(
        &["list", "--url", "http://127.0.0.1:9/mcp"],
        &toolwright_serve(&[]),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// Exit 2 with a message naming the option and why it does not apply.
fn refused(o: &Output, option: &str, why: &str) {
    assert_eq!(code(o), 2, "{}", stdout(o));
    let err = stderr(o);
    assert!(
        err.starts_with(&format!("error: {option} {why}")),
        "{option}: {err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let url = "http://127.0.0.1:9/mcp";
    let with_a_server = "applies to tools run in-process";
    for (option, extra) in [
        ("--root", &["--root", "/tmp"][..]),
        ("--config", &["--config", "x.yaml"]),
        ("--call-timeout", &["--call-timeout", "5"]),
        ("--arith-max-digits", &["--arith-max-digits", "5"]),
        ("--chromium", &["--chromium", "/bin/true"]),
        ("--fixtures", &["--fixtures", "testing"]),
    ] {
        let mut args = vec!["call", "add", "a=1", "--url", url];
        args.extend(extra);
        refused(&run(&args), option, with_a_server);
        let mut args = vec!["call", "add", "a=1"];
        args.extend(extra);
        refused(
            &with_server(&args, &toolwright_serve(&[])),
            option,
            with_a_server,
        );
    }
    let without = "applies only when calling a server";
    for (option, extra) in [
        ("--era", &["--era", "modern"][..]),
        ("--timeout", &["--timeout", "3"]),
        ("--probe-timeout", &["--probe-timeout", "3"]),
        ("--yes", &["--yes"]),
        ("--trusted-config", &["--trusted-config", "t.json"]),
    ] {
        let mut args = vec!["call", "add", "a=1", "b=2"];
        args.extend(extra);
        refused(&run(&args), option, without);
    }
    let files = "applies only when linting a server";
    for (option, extra) in [
        ("--era", &["--era", "legacy"][..]),
        ("--timeout", &["--timeout", "3"]),
    ] {
        let mut args = vec!["lint", "tools.json"];
        args.extend(extra);
        refused(&run(&args), option, files);
    }
    // Defaults are not "given": the same lines without the options run.
    let o = run_cli(&["call", "add", "a=1", "b=2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn each_subcommand_offers_only_its_own_options() {
    // `tools` lists definitions: how tools run and what the protocol allows are serve's
    // (and, for how they run, call's).
    for (option, who) in [
        ("--root", "`serve` and `call` take it"),
        ("--call-timeout", "`serve` and `call` take it"),
        ("--chromium", "`serve` and `call` take it"),
        ("--max-depth", "`serve` takes it"),
        ("--page-size", "`serve` takes it"),
    ] {
        let o = run(&["tools", option, "1"]);
        assert_eq!(code(&o), 2, "{option}");
        let want = format!("error: {option} is not an option of `tools`; {who}\n");
        assert!(stderr(&o).starts_with(&want), "{option}: {}", stderr(&o));
    }
    // The protocol's limits are not call's either.
    for option in ["--max-message-bytes", "--page-bytes", "--max-listens"] {
        let o = run(&["call", "add", option, "1"]);
        assert_eq!(code(&o), 2, "{option}");
        let want = format!("error: {option} is not an option of `call`; `serve` takes it\n");
        assert!(stderr(&o).starts_with(&want), "{option}: {}", stderr(&o));
    }
    // An option no subcommand has gets clap's own message.
    let o = run(&["tools", "--bogus"]);
    assert!(
        stderr(&o).starts_with("error: unexpected argument '--bogus'"),
        "{}",
        stderr(&o)
    );
    // What does apply still works.
    let (_d, file) = declared_tools();
    let o = run(&["tools", "--json", "--config", &s(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("\"say\""));
}

#[test]
fn server_is_not_an_option_and_says_where_the_command_goes() {
    for (args, example) in [
        (
            &["list", "--server", "npx", "x"][..],
            "toolwright list --json -- npx",
        ),
        (
            &["call", "add", "--server=npx"],
            "toolwright call get-sum a=2 b=3 -- npx",
        ),
        (&["lint", "--server", "npx"], "toolwright lint -- npx"),
    ] {
        let o = run(args);
        assert_eq!(code(&o), 2);
        let err = stderr(&o);
        assert!(
            err.starts_with("error: there is no --server: a stdio server's command and its arguments go last, after `--`"),
            "{err}"
        );
        assert!(err.contains(example), "{args:?}: {err}");
    }
}

#[test]
fn pairs_follow_the_input_schema_in_process_and_remotely() {
    let (_d, file) = declared_tools();
    let (_t, cfg) = no_trust();
    let config = s(&file);
    // `text` is a string property: 123 stays the text "123".
    let o = run(&["call", "say", "text=123", "--config", &config]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["content"][0]["text"], "123\n");
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let o = with_server(
        &["call", "say", "text=true", "--trusted-config", &cfg],
        &toolwright_serve(&["--config", &config]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["content"][0]["text"], "true\n");
    // search_files' pattern is a string too.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("123"), "").unwrap();
    let o = run(&[
        "call",
        "search_files",
        "pattern=123",
        "directory=.",
        "--root",
        &s(dir.path()),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&o)["structuredContent"]["matches"], json!(["123"]));
}

#[test]
fn pairs_that_fail_the_schema_get_a_hint_at_args() {
    let hint = "toolwright: hint: key=value gave {\"a\":\"x\",\"b\":1}; a value is typed by the \
                tool's inputSchema";
    let o = run_cli(&["call", "add", "a=x", "b=1"]);
    assert_eq!(code(&o), 1);
    assert_eq!(json_of(&o)["isError"], true);
    assert!(stderr(&o).starts_with(hint), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--args '{\"a\": …, \"b\": …}'"),
        "{}",
        stderr(&o)
    );
    let (_d, cfg) = no_trust();
    let o = with_server(
        &["call", "add", "a=x", "b=1", "--trusted-config", &cfg],
        &toolwright_serve(&[]),
    );
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).starts_with(hint), "{}", stderr(&o));
    // --args says exactly what is meant: no hint.
    let o = run_cli(&["call", "add", "--args", r#"{"a": "x", "b": 1}"#]);
    assert_eq!(code(&o), 1);
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    // Nor for pairs that pass.
    let o = run_cli(&["call", "add", "a=1", "b=1"]);
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}
