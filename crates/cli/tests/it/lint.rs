//! `toolwright lint`: the seed lesson's examples, the built-in tools, exit codes, input
//! shapes, and the reports of real servers (snapshots), over stdio and HTTP in both eras.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::client::{
    HttpPeer, code, everything, filesystem, python_sdk, stderr, stdout, toolwright_serve,
    with_server, with_url,
};
use crate::util::bin;

/// Runs `toolwright lint ARGS…` with `input` on stdin.
fn lint(args: &[&str], input: Option<&str>) -> Output {
    let mut child = Command::new(bin())
        .arg("lint")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolwright lint");
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        std::io::Write::write_all(&mut stdin, text.as_bytes()).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Writes `doc` to a file in `dir` and returns its path.
fn file(dir: &Path, name: &str, doc: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, doc).unwrap();
    p
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The seed lesson's `add` and `multiply` (its Python `TOOLS` list), verbatim.
fn seed_tools() -> Value {
    let numbers = json!({
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "First number"},
            "b": {"type": "number", "description": "Second number"}
        },
        "required": ["a", "b"]
    });
    json!([
        {"name": "add", "description": "Add two numbers together and return the sum", "inputSchema": numbers},
        {"name": "multiply", "description": "Multiply two numbers and return the product", "inputSchema": numbers}
    ])
}

/// The seed lesson's complete `search_files` example (`FILE_SEARCH_TOOL`), verbatim.
fn seed_search_files() -> Value {
    json!({
        "name": "search_files",
        "description": "Search for files in a directory matching a pattern. Returns a list of file paths that match. Useful for finding files by name, extension, or pattern.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "directory": {"type": "string", "description": "Directory path to search in"},
                "pattern": {"type": "string", "description": "Glob pattern to match (e.g., '*.py', 'test_*.txt')"},
                "recursive": {"type": "boolean", "description": "Search subdirectories recursively", "default": false},
                "max_results": {"type": "integer", "description": "Maximum number of results to return", "minimum": 1, "maximum": 1000, "default": 100}
            },
            "required": ["directory", "pattern"]
        }
    })
}

#[test]
fn the_seed_lessons_good_definitions_lint_clean() {
    let mut tools = seed_tools().as_array().unwrap().clone();
    tools.push(seed_search_files());
    let o = lint(&["-"], Some(&Value::Array(tools).to_string()));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    insta::assert_snapshot!("seed_good", stdout(&o));
}

#[test]
fn the_seed_lessons_bad_examples_raise_their_rules() {
    let good = seed_tools()[0].clone();
    let with = |name: &str, description: &str| {
        let mut t = good.clone();
        t["name"] = json!(name);
        t["description"] = json!(description);
        t
    };
    let mut vague = seed_search_files();
    vague["description"] = json!("Searches files");
    let bad = json!([
        vague,
        with("doThing", "Add two numbers together and return the sum"),
        with("x", "Add two numbers together and return the sum"),
        with("my-tool-1", "Add two numbers together and return the sum"),
    ]);
    let o = lint(&["-"], Some(&bad.to_string()));
    // Warnings only: the default --deny error passes; --deny warning does not.
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    insta::assert_snapshot!("seed_bad", stdout(&o));
    let o = lint(
        &["--format", "json", "--deny", "warning", "-"],
        Some(&bad.to_string()),
    );
    assert_eq!(code(&o), 1);
    let report = json_of(&o);
    let rules_of = |i: usize| -> Vec<String> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["index"] == i)
            .map(|f| f["rule"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        rules_of(0).contains(&"description-vague".to_owned()),
        "{:?}",
        rules_of(0)
    );
    assert!(rules_of(0).contains(&"description-short".to_owned()));
    for i in 1..=3 {
        assert!(
            rules_of(i).contains(&"name-vague".to_owned()),
            "{i}: {:?}",
            rules_of(i)
        );
    }
    assert!(rules_of(1).contains(&"name-snake-case".to_owned()));
    assert!(rules_of(3).contains(&"name-snake-case".to_owned()));
    insta::assert_json_snapshot!("seed_bad_json", report);
}

#[test]
fn the_built_in_tools_lint_clean() {
    let tools = Command::new(bin())
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert!(tools.status.success());
    let o = lint(&["--deny", "info", "-"], Some(&stdout(&tools)));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(stdout(&o), "4 tools checked: no findings\n");
}

#[test]
fn exit_codes_follow_deny() {
    let dir = tempfile::tempdir().unwrap();
    let warn_only = file(
        dir.path(),
        "w.json",
        r#"{"name": "x", "description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}}"#,
    );
    let info_only = file(
        dir.path(),
        "i.json",
        r#"{"name": "run_query", "description": "Runs a SQL query against the warehouse database.", "inputSchema": {"type": "object"}}"#,
    );
    let error = file(
        dir.path(),
        "e.json",
        r#"{"name": "get_thing_count", "description": "Count the items and return the number.", "inputSchema": {"type": "array"}}"#,
    );
    let p = |p: &PathBuf| p.display().to_string();
    for (args, want) in [
        (vec![p(&warn_only)], 0),
        (vec!["--deny".into(), "warning".into(), p(&warn_only)], 1),
        (
            vec![
                "--deny".into(),
                "warning".into(),
                "--ignore".into(),
                "name-vague".into(),
                p(&warn_only),
            ],
            0,
        ),
        (vec!["--deny".into(), "warning".into(), p(&info_only)], 0),
        (vec!["--deny".into(), "info".into(), p(&info_only)], 1),
        (vec![p(&error)], 1),
        (vec![p(&warn_only), p(&error)], 1),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(code(&lint(&args, None)), want, "{args:?}");
    }
}

#[test]
fn usage_and_input_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = file(dir.path(), "g.json", "{\"name\": [");
    let not_tools = file(dir.path(), "n.json", "{\"hello\": 1}");
    let error_response = file(
        dir.path(),
        "r.json",
        r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}"#,
    );
    for (args, says) in [
        (vec![], "nothing to lint"),
        (
            vec!["/nonexistent/tools.json".to_owned()],
            "reading /nonexistent/tools.json",
        ),
        (
            vec![garbage.display().to_string()],
            "g.json:1:10: not valid JSON",
        ),
        (vec![not_tools.display().to_string()], "is not a tool"),
        (
            vec![error_response.display().to_string()],
            "JSON-RPC error response",
        ),
        (
            vec!["--deny".into(), "loud".into(), "x.json".into()],
            "unknown severity",
        ),
        (
            vec!["--ignore".into(), "no-such-rule".into(), "x.json".into()],
            "unknown rule",
        ),
        (
            vec![
                "x.json".into(),
                "--url".into(),
                "http://127.0.0.1:1/mcp".into(),
            ],
            "not both",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = lint(&args, None);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn documents_in_every_shape() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = file(
        dir.path(),
        "t.yaml",
        "tools:\n  - name: doThing\n    description: Add two numbers together and return the sum\n    inputSchema:\n      type: object\n",
    );
    let response = file(
        dir.path(),
        "r.json",
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": seed_tools()}}).to_string(),
    );
    let pages = file(
        dir.path(),
        "p.json",
        &json!([{"tools": [seed_tools()[0]]}, {"tools": [seed_tools()[0]], "nextCursor": null}])
            .to_string(),
    );
    let o = lint(&["--format", "json", &yaml.display().to_string()], None);
    assert_eq!(json_of(&o)["findings"][0]["rule"], "name-snake-case");
    let o = lint(&[&response.display().to_string()], None);
    assert_eq!(stdout(&o), "2 tools checked: no findings\n");
    // Two pages of one listing are one set: the repeated name is a duplicate.
    let o = lint(&["--format", "json", &pages.display().to_string()], None);
    assert_eq!(code(&o), 1);
    assert_eq!(json_of(&o)["findings"][0]["rule"], "name-duplicate");
    // Several files: one report each.
    let o = lint(
        &[
            "--format",
            "json",
            &yaml.display().to_string(),
            &response.display().to_string(),
        ],
        None,
    );
    assert_eq!(json_of(&o).as_array().map(Vec::len), Some(2));
}

#[test]
fn every_rule_is_listed() {
    let o = lint(&["--rules"], None);
    assert_eq!(code(&o), 0);
    insta::assert_snapshot!("rules", stdout(&o));
}

#[test]
fn a_broken_definition_is_reported_rule_by_rule() {
    let tool = json!({
        "name": "make stuff!",
        "descripton": "typo",
        "inputSchema": {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 10, "maximum": 1, "default": 50, "description": "How many"},
                "mode": {"type": "string", "enum": [], "description": "Mode"},
                "kind": {"type": "string", "enum": ["a", "a", 3], "description": "Kind"},
                "name": {"minLength": 5, "maxLength": 2},
                "tags": {"type": "array", "description": "Tags"},
                "region": {"type": "number", "x-mcp-header": "Region", "description": "Region code"},
                "remote": {"$ref": "https://example.com/schema.json", "description": "Remote"},
                "flag": {"type": "boolean", "required": true, "description": "Flag"}
            },
            "require": ["count"],
            "required": ["missing"]
        },
        "outputSchema": {"type": "array", "items": {"type": "string"}},
        "annotations": {"readOnlyHint": true, "destructiveHint": true}
    });
    let o = lint(&["-"], Some(&tool.to_string()));
    assert_eq!(code(&o), 1);
    insta::assert_snapshot!("broken_definition", stdout(&o));
}

// ---------------------------------------------------------------- real servers

/// Lints a stdio server; returns the human report.
fn lint_stdio(server: &[String], extra: &[&str]) -> String {
    let mut args = vec!["lint"];
    args.extend_from_slice(extra);
    let o = with_server(&args, server);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn reference_server_everything() {
    let Some(server) = everything() else { return };
    let report = lint_stdio(&server, &[]);
    insta::assert_snapshot!("peer_server_everything", report);
    let Some(http) = HttpPeer::everything() else {
        return;
    };
    let o = with_url(&["lint"], &http.url);
    assert_eq!(stdout(&o), report, "the same tools over Streamable HTTP");
    assert!(
        stderr(&o).contains("(legacy era, protocol 2025-11-25)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn reference_server_filesystem() {
    let root = tempfile::tempdir().unwrap();
    let Some(server) = filesystem(root.path()) else {
        return;
    };
    insta::assert_snapshot!("peer_server_filesystem", lint_stdio(&server, &[]));
}

#[test]
fn python_sdk_server() {
    let Some(server) = python_sdk() else { return };
    let report = lint_stdio(&server, &[]);
    insta::assert_snapshot!("peer_python_sdk", report);
    let Some(http) = HttpPeer::python_sdk() else {
        return;
    };
    assert_eq!(
        stdout(&with_url(&["lint"], &http.url)),
        report,
        "the same tools over Streamable HTTP"
    );
}

#[test]
fn toolwright_serve_lints_clean_in_both_eras() {
    for (era, page_size) in [("auto", "500"), ("legacy", "500"), ("modern", "1")] {
        let server = toolwright_serve(&["--page-size", page_size]);
        let o = with_server(
            &["lint", "--deny", "info", "--format", "json", "--era", era],
            &server,
        );
        assert_eq!(code(&o), 0, "{era}: {}", stdout(&o));
        let v = json_of(&o);
        assert_eq!(
            v["summary"],
            json!({"tools": 4, "error": 0, "warning": 0, "info": 0}),
            "{era}"
        );
        assert_eq!(v["era"], if era == "legacy" { "legacy" } else { "modern" });
    }
    let http = HttpPeer::toolwright();
    for era in ["auto", "legacy"] {
        let o = with_url(&["lint", "--deny", "info", "--era", era], &http.url);
        assert_eq!(code(&o), 0, "{era}: {}", stderr(&o));
        assert_eq!(stdout(&o), "4 tools checked: no findings\n", "{era}");
        let want = if era == "legacy" {
            "legacy era"
        } else {
            "modern era"
        };
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
    }
}

// ---------------------------------------------------------------- declared tools

/// Runs `toolwright lint ARGS…` in `dir`, so reports name files as given (relative).
fn lint_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("lint")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run toolwright lint")
}

/// A pack with one problem of each kind the action rules know, in YAML.
const BROKEN_PACK_YAML: &str = r#"tools:
  - name: word_count
    description: Count the words in a text file below the project root. Returns {words}.
    inputSchema:
      type: object
      properties:
        path: {type: string, description: File to count}
      required: [path]
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["wc", "-w", "{pth}"]
  - name: grep_text
    description: Search a file for a pattern. Returns the matching lines.
    inputSchema:
      type: object
      properties:
        pattern: {type: string, description: What to look for}
        path: {type: string, description: Where to look}
        verbose: {type: boolean, description: Say more}
    command: ["sh", "-c", "grep {pattern} {path}"]
  - name: create_user
    description: Create a user in the local directory service. Returns the new record.
    inputSchema:
      type: object
      properties:
        id: {type: string, description: The user's id}
      required: [id]
    annotations: {readOnlyHint: true, openWorldHint: false}
    http:
      method: POST
      url: "http://127.0.0.1:8000/users/{id}"
      headers: {X-Trace: "{id"}
  - name: count_notes
    description: Count the notes in the store. Returns the number.
    annotations: {readOnlyHint: true}
"#;

#[test]
fn a_declared_yaml_pack_is_linted_action_by_action_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    file(dir.path(), "pack.yaml", BROKEN_PACK_YAML);
    let o = lint_in(dir.path(), &["pack.yaml"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    insta::assert_snapshot!("declared_yaml", stdout(&o));
}

#[test]
fn a_declared_json_pack_reports_json_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let pack = r#"[
  {
    "name": "get_user",
    "description": "Look up a user by id in the local directory service. Returns the user record.",
    "input_schema": {"type": "object", "properties": {"id": {"type": "string", "description": "The user's id"}}},
    "annotations": {"readOnlyHint": true, "openWorldHint": false},
    "http": {"method": "GET", "url": "http://127.0.0.1:8000/users/{id}"},
    "output": {"parse": "json"}
  },
  {
    "name": "get_user",
    "description": "Look up a user by name in the local directory service. Returns the user record.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "The user's name"}}, "required": ["name"]},
    "annotations": {"readOnlyHint": true, "openWorldHint": false},
    "command": ["{name}"]
  }
]
"#;
    file(dir.path(), "pack.json", pack);
    let o = lint_in(dir.path(), &["--format", "json", "pack.json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    insta::assert_json_snapshot!("declared_json", json_of(&o));
    let o = lint_in(dir.path(), &["pack.json"]);
    insta::assert_snapshot!("declared_json_human", stdout(&o));
}

#[test]
fn a_declared_toml_pack_is_linted_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let pack = r#"[[tools]]
name = "git_log"
description = "Show the latest commits of the repository. Returns one line per commit."
command = ["git", "log", "--oneline", "-n", "{limit}"]
annotations = { readOnlyHint = true, openWorldHint = false }

[tools.inputSchema]
type = "object"

[tools.inputSchema.properties.limit]
type = "integer"
description = "How many commits"

[[tools]]
name = "run_script"
description = "Run the project's check script. Returns its output."
command = ["pwsh", "-Command", "./check.ps1"]
"#;
    file(dir.path(), "pack.toml", pack);
    let o = lint_in(dir.path(), &["pack.toml"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    insta::assert_snapshot!("declared_toml", stdout(&o));
    // A TOML file is always declared tools: one that does not parse is an input error.
    file(dir.path(), "bad.toml", "[[tools]]\nname = \n");
    let o = lint_in(dir.path(), &["bad.toml"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("bad.toml:2:"), "{}", stderr(&o));
}

#[test]
fn a_clean_declared_pack_lints_clean() {
    let dir = tempfile::tempdir().unwrap();
    let pack = r#"tools:
  - name: word_count
    description: Count the words in a text file below the project root. Returns {words}.
    inputSchema:
      type: object
      properties:
        path: {type: string, description: File to count}
        lines: {type: boolean, description: Count lines instead}
      required: [path]
    outputSchema: {type: object, properties: {words: {type: integer}}, required: [words]}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["wc", {when: lines, args: ["-l"]}, "-w", "{path}"]
    output: {parse: regex, pattern: '^\s*(?P<words>\d+)'}
    timeout: 5s
  - name: get_user
    description: Look up a user by id in the local directory service. Returns the user record.
    inputSchema:
      type: object
      properties:
        id: {type: string, description: The user's id}
        fields: {type: string, description: Which fields to return}
      required: [id]
    annotations: {readOnlyHint: true, openWorldHint: false}
    http: {method: GET, url: "http://127.0.0.1:8000/users/{id}", query: {fields: "{fields}"}}
    output: {parse: json}
"#;
    file(dir.path(), "toolwright.yaml", pack);
    let o = lint_in(dir.path(), &["--deny", "info", "toolwright.yaml"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(stdout(&o), "2 tools checked: no findings\n");
}
