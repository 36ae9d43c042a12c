//! The command line: `tools`, `call`, help and exit codes.

use crate::util::run_cli;
use serde_json::Value;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tools_json_lists_the_builtin_tools() {
    let o = run_cli(&["tools", "--json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for n in ["add", "multiply", "search_files", "take_screenshot"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn tools_table_is_for_people() {
    let o = run_cli(&["tools"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.starts_with("NAME"), "{out}");
    assert!(out.contains("add") && out.contains("HINTS"));
}

#[test]
fn call_runs_a_tool_in_process() {
    let o = run_cli(&["call", "add", "a=1", "b=2.5"]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 3.5);
    let o = run_cli(&["call", "multiply", "--json", r#"{"a": 3, "b": 4}"#]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 12);
}

#[test]
fn exit_codes() {
    // A tool failure (here: invalid arguments) is 1.
    let o = run_cli(&["call", "add", "a=x", "b=1"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("is not of type"));
    // Usage errors are 2.
    assert_eq!(run_cli(&["call", "nope"]).status.code(), Some(2));
    assert_eq!(run_cli(&["call", "add", "novalue"]).status.code(), Some(2));
    assert_eq!(
        run_cli(&["call", "add", "--json", "[1]"]).status.code(),
        Some(2)
    );
    assert_eq!(run_cli(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        run_cli(&["serve", "--root", "/definitely/not/here"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn help_for_every_command() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["tools", "--help"],
        &["call", "--help"],
    ] {
        let o = run_cli(args);
        assert!(o.status.success(), "{args:?}");
        assert!(stdout(&o).contains("Usage"), "{args:?}");
    }
}
