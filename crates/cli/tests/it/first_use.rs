//! What a first-time user meets (issue 35): only the built-in tools a file names, screenshots
//! of loopback refused when HTTP is served beyond it, probes without a token, plain log text
//! in a pipe, mistyped argument names caught, `--args` and `--json`, shell completions.

use crate::util::{bin, run_cli};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const WORD_COUNT: &str = "\
tools:
  - name: word_count
    description: Count the words in a text file below the project root. Returns {words}.
    inputSchema:
      type: object
      properties: {path: {type: string, description: File to count}}
      required: [path]
    outputSchema: {type: object, properties: {words: {type: integer}}, required: [words]}
    annotations: {readOnlyHint: true, destructiveHint: false, openWorldHint: false}
    command: [wc, -w, \"{path:path}\"]
    output: {parse: regex, pattern: '^\\s*(?P<words>\\d+)'}
";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The names `toolwright tools --json ARGS` lists, run in `cwd`.
fn listed(cwd: &Path, args: &[&str]) -> Vec<String> {
    let o = Command::new(bin())
        .arg("tools")
        .arg("--json")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    crate::util::sorted_tool_names(&v["tools"])
}

#[test]
fn a_file_serves_only_the_builtin_tools_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No file at all: every built-in tool, as before.
    assert_eq!(
        listed(d, &[]),
        ["add", "multiply", "search_files", "take_screenshot"]
    );
    // A file without `builtins:` serves its own tools and nothing else.
    let plain = write(d, "plain.yaml", WORD_COUNT);
    assert_eq!(listed(d, &["--config", &plain]), ["word_count"]);
    // The default ./toolwright.yaml is a file too.
    write(d, "toolwright.yaml", WORD_COUNT);
    assert_eq!(listed(d, &[]), ["word_count"]);
    std::fs::remove_file(d.join("toolwright.yaml")).unwrap();
    // Named ones join it; `all` brings every one; several files, the union.
    let named = write(
        d,
        "named.yaml",
        &format!("builtins: [search_files, add]\n{WORD_COUNT}"),
    );
    assert_eq!(
        listed(d, &["--config", &named]),
        ["add", "search_files", "word_count"]
    );
    let all = write(d, "all.json", r#"{"builtins": "all"}"#);
    assert_eq!(
        listed(d, &["--config", &plain, "--config", &all]),
        [
            "add",
            "multiply",
            "search_files",
            "take_screenshot",
            "word_count"
        ]
    );
    let more = write(d, "more.toml", "builtins = [\"multiply\"]\n");
    assert_eq!(
        listed(d, &["--config", &named, "--config", &more]),
        ["add", "multiply", "search_files", "word_count"]
    );
    // A built-in tool a file leaves out cannot be called in-process either.
    let o = run_cli(&["call", "add", "a=1", "b=2", "--config", &plain]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown tool \"add\""),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run_cli(&["call", "add", "a=1", "b=2", "--config", &named]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_wrong_builtins_entry_stops_serve_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.yaml",
        &format!("builtins:\n  - add\n  - screenshot\n{WORD_COUNT}"),
    );
    let o = Command::new(bin())
        .args(["serve", "--config", &bad])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{bad}:3:5: builtins[1]: \"screenshot\" is not a built-in tool; they are `add`, `multiply`, `search_files`, `take_screenshot`"
        )),
        "{err}"
    );
    let shape = write(dir.path(), "shape.yaml", "builtins: {add: true}\n");
    let o = run_cli(&["tools", "--config", &shape]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(":1:1: builtins: `builtins` is `all` or a list"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A `serve --http ADDR` child and the port it listens on.
fn serve_http(addr: &str, extra: &[&str]) -> (std::process::Child, u16) {
    let mut child = Command::new(bin())
        .args(["serve", "--http", addr, "--chromium", "/nonexistent"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let hostport = rest.trim_end_matches("/mcp");
            break hostport.rsplit_once(':').unwrap().1.parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, port)
}

/// A modern `tools/call` of take_screenshot of `target`, posted to 127.0.0.1:`port`.
fn screenshot_text(port: u16, target: &str) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "take_screenshot", "arguments": {"url": target},
                   "_meta": crate::util::modern_meta()}
    })
    .to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: take_screenshot\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn screenshots_of_loopback_are_refused_when_http_is_served_beyond_it() {
    let target = "http://127.0.0.1:9/";
    // On every interface: refused, and the message says how to allow it.
    let (mut open, port) = serve_http("0.0.0.0:0", &[]);
    let text = screenshot_text(port, target);
    let _ = open.kill();
    assert!(
        text.contains("loopback") && text.contains("--screenshot-allow-loopback"),
        "{text}"
    );
    // Told otherwise, it gets as far as the browser (which is missing here).
    let (mut allowed, port) = serve_http("0.0.0.0:0", &["--screenshot-allow-loopback"]);
    let text = screenshot_text(port, target);
    let _ = allowed.kill();
    assert!(!text.contains("refuses loopback"), "{text}");
    assert!(text.contains("hromium"), "{text}");
    // On loopback itself, loopback pages stay allowed by default.
    let (mut local, port) = serve_http("127.0.0.1:0", &[]);
    let text = screenshot_text(port, target);
    let _ = local.kill();
    assert!(!text.contains("refuses loopback"), "{text}");
    // The two flags contradict each other.
    let o = run_cli(&[
        "serve",
        "--screenshot-allow-loopback",
        "--screenshot-no-loopback",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn log_lines_in_a_pipe_have_no_colour_codes() {
    // An upstream that cannot start is logged (a WARN line) while the gateway retries it.
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "gateway.yaml",
        "servers:\n  gone: {command: [/nonexistent/server], start: eager}\n",
    );
    let mut child = Command::new(bin())
        .args(["serve", "--config", &file])
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .find_map(|l| l.ok().filter(|l| l.contains("WARN")))
        .expect("a warning about the upstream");
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("/nonexistent/server"), "{line}");
    assert!(!line.contains('\u{1b}'), "escape codes in {line:?}");
}

#[test]
fn a_mistyped_argument_name_is_refused_with_the_closest_one() {
    let o = run_cli(&["call", "add", "a=1", "bb=2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the tool has no argument \"bb\"; did you mean \"b\"? (its arguments: a, b)"),
        "{err}"
    );
    let o = run_cli(&["call", "search_files", "patern=*.rs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("did you mean \"pattern\""),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn args_take_the_json_object_and_json_means_json_output() {
    let o = run_cli(&["call", "multiply", "--args", r#"{"a": 3, "b": 4}"#]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 12);
    let o = run_cli(&["call", "add", "a=1", "b=2", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 3);
    // The old spelling says where the object goes now.
    let o = run_cli(&["call", "add", "--json", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("use --args '{...}'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_toolwright()"),
        ("zsh", "#compdef toolwright"),
        ("fish", "complete -c toolwright"),
    ] {
        let o = run_cli(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        // The subcommands' own options are in it, not only the top level.
        assert!(
            script.contains("serve") && script.contains("call-timeout"),
            "{shell}"
        );
    }
    assert_eq!(run_cli(&["completions", "tcsh"]).status.code(), Some(2));
}
