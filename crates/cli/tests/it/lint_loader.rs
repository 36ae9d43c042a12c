//! Lint is the loader: every file `toolwright serve --config FILE` refuses, `toolwright lint
//! FILE` reports as an error at the line and column `serve` names; a large file with many
//! findings is linted whole; `lint --config` lints each upstream once, and only the tools
//! its `include`/`exclude` let through.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::client::{code, stderr, stdout};
use crate::util::bin;

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run toolwright")
}

/// `NAME:LINE:COLUMN` in `text`: the first place named in file `name`.
fn place_in(text: &str, name: &str) -> Option<(usize, usize)> {
    let needle = format!("{name}:");
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        let mut parts = rest.splitn(3, ':');
        if let (Some(l), Some(c)) = (parts.next(), parts.next())
            && let (Ok(l), Ok(c)) = (l.parse(), c.parse())
        {
            return Some((l, c));
        }
    }
    None
}

/// The broken files: each one's name, its text, and where the problem is (line, column).
const BROKEN: &[(&str, &str, (usize, usize))] = &[
    (
        "regex_unclosed_group.yaml",
        r#"tools:
  - name: count_words
    description: Count the words in a file. Returns the count.
    annotations: {readOnlyHint: true, openWorldHint: false}
    outputSchema: {type: object, properties: {n: {type: integer}}}
    command: ["wc", "-w", "notes.txt"]
    output: {parse: regex, pattern: '(?P<n>\d+'}
"#,
        (7, 28),
    ),
    (
        "cmd_for_command.yaml",
        r#"tools:
  - name: list_files
    description: List the files of the project. Returns one name per line.
    annotations: {readOnlyHint: true, openWorldHint: false}
    cmd: ["ls"]
"#,
        (5, 5),
    ),
    (
        "url_host_placeholder.yaml",
        r#"tools:
  - name: get_status
    description: Read the status page of a host. Returns the page.
    inputSchema:
      type: object
      properties:
        host: {type: string, description: The host}
      required: [host]
    annotations: {readOnlyHint: true, openWorldHint: true}
    http: {url: "http://{host}/status"}
"#,
        (10, 12),
    ),
    (
        "url_optional_placeholder.yaml",
        r#"tools:
  - name: get_user
    description: Look up a user by id. Returns the user record.
    inputSchema:
      type: object
      properties:
        id: {type: string, description: The user's id}
    annotations: {readOnlyHint: true, openWorldHint: false}
    http: {url: "http://127.0.0.1:8000/users/{id}"}
"#,
        (9, 12),
    ),
    (
        "output_schema_on_text.yaml",
        r#"tools:
  - name: show_date
    description: Show today's date. Returns the date as text.
    annotations: {readOnlyHint: true, openWorldHint: false}
    outputSchema: {type: object, properties: {date: {type: string}}}
    command: ["date"]
"#,
        (5, 5),
    ),
    (
        "jq_invalid.yaml",
        r#"tools:
  - name: get_user
    description: Look up the current user. Returns the user's name.
    annotations: {readOnlyHint: true, openWorldHint: false}
    http: {url: "http://127.0.0.1:8000/me"}
    output: {parse: json, jq: ".name |"}
"#,
        (6, 27),
    ),
    (
        "interpreter_inline_placeholder.yaml",
        r#"tools:
  - name: echo_message
    description: Print a message. Returns the message.
    inputSchema:
      type: object
      properties:
        msg: {type: string, description: What to print}
      required: [msg]
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["python3", "-c", "print('{msg}')"]
"#,
        (10, 32),
    ),
    (
        "url_scheme.yaml",
        r#"tools:
  - name: fetch_file
    description: Fetch the index file. Returns its text.
    annotations: {readOnlyHint: true, openWorldHint: true}
    http: {url: "ftp://127.0.0.1/index.txt"}
"#,
        (5, 12),
    ),
    (
        "reserved_header.yaml",
        r#"tools:
  - name: get_index
    description: Fetch the index page. Returns its HTML.
    annotations: {readOnlyHint: true, openWorldHint: true}
    http:
      url: "http://127.0.0.1:8000/"
      headers: {Host: example.com}
"#,
        (7, 17),
    ),
    (
        "ok_exit_empty.yaml",
        r#"tools:
  - name: run_checks
    description: Run the project's checks. Returns their output.
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: {argv: ["make", "check"], ok_exit: []}
"#,
        (5, 40),
    ),
    (
        "unknown_http_member.yaml",
        r#"tools:
  - name: get_health
    description: Ask the service whether it is up. Returns its answer.
    annotations: {readOnlyHint: true, openWorldHint: true}
    http: {url: "http://127.0.0.1:8000/health", methd: GET}
"#,
        (5, 49),
    ),
    (
        "unknown_top_level.yaml",
        r#"tools:
  - name: show_date
    description: Show today's date. Returns the date as text.
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["date"]
tool_defaults: {timeout: 5s}
"#,
        (6, 1),
    ),
    (
        "gateway_separator.yaml",
        r#"gateway:
  separator: "/"
tools:
  - name: show_date
    description: Show today's date. Returns the date as text.
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["date"]
"#,
        (2, 3),
    ),
    (
        "url_host_placeholder.json",
        r#"{
  "tools": [
    {
      "name": "get_status",
      "description": "Read the status page of a host. Returns the page.",
      "inputSchema": {"type": "object", "properties": {"host": {"type": "string", "description": "The host"}}, "required": ["host"]},
      "annotations": {"readOnlyHint": true, "openWorldHint": true},
      "http": {"url": "https://{host}/status"}
    }
  ]
}
"#,
        (8, 16),
    ),
    (
        "regex_unclosed_group.toml",
        r#"[[tools]]
name = "count_words"
description = "Count the words in a file. Returns the count."
annotations = { readOnlyHint = true, openWorldHint = false }
command = ["wc", "-w", "notes.txt"]
output = { parse = "regex", pattern = '(?P<n>\d+' }

[tools.outputSchema]
type = "object"
"#,
        (6, 29),
    ),
    (
        "cmd_for_command.toml",
        r#"[[tools]]
name = "list_files"
description = "List the files of the project. Returns one name per line."
annotations = { readOnlyHint = true, openWorldHint = false }
cmd = ["ls"]
"#,
        (5, 1),
    ),
    (
        "builtins_unknown.yaml",
        r#"builtins:
  - add
  - take_screenshots
tools: []
"#,
        (3, 5),
    ),
    (
        "builtin_name_taken.yaml",
        r#"builtins: [add]
tools:
  - name: add
    description: Add the numbers of the ledger file. Returns the sum.
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["cat", "ledger-sum.txt"]
"#,
        (3, 5),
    ),
    (
        "server_unknown_member.yaml",
        r#"servers:
  docs:
    comand: ["npx", "-y", "@modelcontextprotocol/server-filesystem", "."]
"#,
        (3, 5),
    ),
];

#[test]
fn every_file_serve_refuses_lint_reports_at_the_same_place() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (name, text, (line, column)) in BROKEN {
        std::fs::write(dir.path().join(name), text).unwrap();
        let served = run_in(dir.path(), &["serve", "--config", name]);
        let refused = stderr(&served);
        let serve_place = place_in(&refused, name);
        if code(&served) == 0 || serve_place != Some((*line, *column)) {
            failures.push(format!(
                "{name}: serve exited {} at {serve_place:?}, expected {line}:{column}:\n{refused}",
                code(&served)
            ));
            continue;
        }
        let linted = run_in(dir.path(), &["lint", "--format", "json", name]);
        let report: Value = match serde_json::from_slice(&linted.stdout) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!(
                    "{name}: lint exited {} without a report ({e}):\n{}{}",
                    code(&linted),
                    stdout(&linted),
                    stderr(&linted)
                ));
                continue;
            }
        };
        let at_place = report["findings"].as_array().is_some_and(|fs| {
            fs.iter()
                .any(|f| f["severity"] == "error" && f["line"] == *line && f["column"] == *column)
        });
        if code(&linted) != 1 || !at_place {
            failures.push(format!(
                "{name}: lint exited {}, error at {line}:{column}: {at_place}; serve said:\n{refused}\nlint said:\n{report:#}",
                code(&linted)
            ));
            continue;
        }
        // The human report names the same place.
        let human = run_in(dir.path(), &["lint", name]);
        if !stdout(&human).contains(&format!("{name}:{line}:{column}")) {
            failures.push(format!(
                "{name}: the report for people:\n{}",
                stdout(&human)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_file_that_does_not_parse_is_placed_as_serve_places_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, place) in [
        (
            "syntax.yaml",
            "tools:\n  - name: a\n    command: [date\n",
            (4, 1),
        ),
        (
            "syntax.json",
            "{\"tools\": [\n  {\"name\": \"a\", \"command\": [\"date\"]]\n]}\n",
            (2, 36),
        ),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let served = run_in(dir.path(), &["serve", "--config", name]);
        assert_eq!(
            place_in(&stderr(&served), name),
            Some(place),
            "{}",
            stderr(&served)
        );
        // Text that does not parse is an input error (exit 2), named where serve names it.
        let linted = run_in(dir.path(), &["lint", name]);
        assert_eq!(code(&linted), 2, "{}", stderr(&linted));
        assert_eq!(
            place_in(&stderr(&linted), name),
            Some(place),
            "{}",
            stderr(&linted)
        );
    }
}

#[test]
fn a_refusal_and_an_error_lint_finds_at_its_place_are_one_finding() {
    let dir = tempfile::tempdir().unwrap();
    // The loader refuses the unknown placeholder; lint's placeholder-unknown says the same.
    let text = r#"tools:
  - name: count_words
    description: Count the words in a file. Returns the count.
    inputSchema:
      type: object
      properties:
        path: {type: string, description: The file}
      required: [path]
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: ["wc", "-w", "{pth}"]
"#;
    std::fs::write(dir.path().join("pack.yaml"), text).unwrap();
    let o = run_in(dir.path(), &["lint", "--format", "json", "pack.yaml"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let errors: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{report:#}");
    assert_eq!(errors[0]["rule"], "placeholder-unknown");
    assert_eq!(
        (&errors[0]["line"], &errors[0]["column"]),
        (&10.into(), &27.into())
    );
}

/// A tool file of `tools` tools, each with one refusal (an unclosed regex group, on the
/// tool's 8th line) and one warning (no annotations): tool `i` starts on line 2 + 8 i.
pub fn many_findings(tools: usize) -> String {
    let mut text = String::from("tools:\n");
    for i in 0..tools {
        text.push_str(&format!(
            "  - name: count_words_{i}\n    description: Count the words in file number {i} of the project. Returns the count.\n    inputSchema:\n      type: object\n      properties: {{path: {{type: string, description: The file}}}}\n      required: [path]\n    command: [\"wc\", \"-w\", \"{{path}}\"]\n    output: {{parse: regex, pattern: '(?P<n>\\d+'}}\n"
        ));
    }
    text
}

#[test]
fn a_large_file_with_many_findings_is_linted_whole() {
    const TOOLS: usize = 4000;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.yaml"), many_findings(TOOLS)).unwrap();
    let o = run_in(dir.path(), &["lint", "--format", "json", "big.yaml"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let lines = |rule: &str| -> Vec<u64> {
        findings
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| f["line"].as_u64().unwrap())
            .collect()
    };
    let tools = 0..TOOLS as u64;
    assert_eq!(
        lines("declared-invalid"),
        tools.clone().map(|i| 2 + 8 * i + 7).collect::<Vec<_>>()
    );
    assert_eq!(
        lines("annotations-missing"),
        tools.map(|i| 2 + 8 * i).collect::<Vec<_>>()
    );
    assert_eq!(report["summary"]["tools"], TOOLS);
    assert_eq!(report["summary"]["error"], TOOLS);
}

#[test]
fn lint_config_lints_each_upstream_once_and_only_the_tools_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    // The upstream is another toolwright with three badly named tools; the gateway serves
    // one of them.
    let tool = |name: &str| {
        format!("  - name: {name}\n    description: does it\n    command: [echo, hi]\n")
    };
    let up = format!(
        "tools:\n{}{}{}",
        tool("KeptTool"),
        tool("ExcludedTool"),
        tool("OtherTool")
    );
    std::fs::write(dir.path().join("up.yaml"), up).unwrap();
    let gw = format!(
        "servers:\n  up:\n    command: [{}, serve, --no-watch, --config, {}]\n    include: [\"*Tool\"]\n    exclude: [ExcludedTool, OtherTool]\n",
        bin().display(),
        dir.path().join("up.yaml").display()
    );
    std::fs::write(dir.path().join("gw.yaml"), gw).unwrap();
    let o = run_in(dir.path(), &["lint", "--config", "gw.yaml"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 0, "{out}\n{err}");
    assert_eq!(out.matches("== server up").count(), 1, "{out}");
    assert!(out.contains("up: KeptTool"), "{out}");
    for hidden in ["ExcludedTool", "OtherTool"] {
        assert!(!out.contains(hidden), "{hidden} is not served:\n{out}");
    }
    // The report is on stdout only: no second copy of it on stderr.
    assert!(!err.contains("KeptTool"), "{err}");
}
