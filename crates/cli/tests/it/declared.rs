//! Declared tools (`--config`): loading, problems placed by file, line and column, hot
//! reload, and calls over stdio and in-process.

use crate::util::{Server, modern_meta, repo_root, run_cli};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const V: &str = "2025-06-18";

fn write(path: &Path, text: &str) {
    // Written beside and renamed over, as editors save: the watcher must see it either way.
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn names(s: &mut Server) -> Vec<String> {
    let r = s.request("tools/list", json!({}));
    r["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.request("tools/call", json!({"name": name, "arguments": args}));
    r["result"].clone()
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

const ECHO: &str = r#"tools:
  - name: say
    description: Print a fixed word; used to see which definition answers.
    inputSchema: {type: object}
    annotations: {readOnlyHint: true}
    command: [echo, WORD]
"#;

#[test]
fn the_seed_tools_list_loads_and_each_tool_without_an_action_is_reported() {
    let seed = repo_root().join("tests/fixtures/declared/seed-tools.json");
    let out = run_cli(&["tools", "--config", seed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for (line, name, i) in [(2, "add", 0), (20, "multiply", 1)] {
        let want = format!(
            "seed-tools.json:{line}:5: tool \"{name}\" (tools[{i}]): no action: add `command: [program, args...]`"
        );
        assert!(err.contains(&want), "{want}\nnot in:\n{err}");
    }
    assert!(
        err.contains("2 problems in the config files; nothing was served"),
        "{err}"
    );
}

#[test]
fn problems_name_file_line_and_column_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "t.yaml",
            "tools:\n  - name: a\n    inputSchema: {type: object}\n    command: [echo, \"{nope}\"]\n",
            "t.yaml:4:21: tool \"a\" (tools[0]): command[1]: placeholder {nope} names no property",
        ),
        (
            "t.json",
            "{\"tools\": [\n  {\"name\": \"a\",\n   \"command\": [\"echo\"], \"timeout\": \"soon\"}\n]}\n",
            "t.json:3:25: tool \"a\" (tools[0]): timeout:",
        ),
        (
            "t.toml",
            "[[tools]]\nname = \"a\"\ncommand = [\"echo\"]\ncomand = 1\n",
            "t.toml:4:1: tool \"a\" (tools[0]): comand: unknown field `comand`",
        ),
        ("bad.yaml", "tools: [\n", "bad.yaml:2:1: not valid YAML"),
        (
            "bad.json",
            "{\"tools\": [}",
            "bad.json:1:12: not valid JSON",
        ),
        (
            "t.txt",
            "tools: []",
            "t.txt: the file's extension says neither YAML",
        ),
    ];
    for (file, text, want) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let out = run_cli(&["tools", "--config", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(want), "{file}: wanted {want:?} in:\n{err}");
    }
}

#[test]
fn a_declared_tool_cannot_take_a_built_in_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.yaml");
    // A built-in tool the file does not ask for leaves its name free.
    std::fs::write(&path, "tools:\n  - name: add\n    command: [echo]\n").unwrap();
    let out = run_cli(&["tools", "--config", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        &path,
        "builtins: [add]\ntools:\n  - name: add\n    command: [echo]\n",
    )
    .unwrap();
    let out = run_cli(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // Refused as the file loads, at the tool's name (and so by `lint` too).
    assert!(
        err.contains(
            "t.yaml:3:5: tool \"add\" (tools[0]): name: \"add\" is the name of a built-in tool"
        ),
        "{err}"
    );
}

#[test]
fn toolwright_yaml_in_the_current_directory_is_loaded_by_default() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolwright.yaml"),
        ECHO.replace("WORD", "here"),
    )
    .unwrap();
    let mut s = Server::start_in(&["--no-watch"], Some(dir.path())).handshake(V);
    let listed = names(&mut s);
    // Only what the file names: its own tool, and no built-in one.
    assert_eq!(listed, ["say"]);
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "here\n");
    drop(s);
    std::fs::write(
        dir.path().join("toolwright.yaml"),
        format!("builtins: all\n{}", ECHO.replace("WORD", "here")),
    )
    .unwrap();
    let mut s = Server::start_in(&["--no-watch"], Some(dir.path())).handshake(V);
    let listed = names(&mut s);
    assert_eq!(
        listed,
        ["add", "multiply", "say", "search_files", "take_screenshot"],
        "every built-in tool beside it"
    );
}

#[test]
fn call_runs_a_declared_tool_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.yaml");
    std::fs::write(
        &path,
        "tools:\n  - name: greet\n    inputSchema: {type: object, properties: {who: {type: string}}, required: [who]}\n    command: [echo, \"hello\", \"{who}\"]\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    let out = run_cli(&[
        "call",
        "greet",
        "who=; rm -rf /",
        "--config",
        path.to_str().unwrap(),
        "--root",
        root,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["content"][0]["text"], "hello ; rm -rf /\n", "{v}");
}

#[test]
fn hot_reload_swaps_the_tools_and_keeps_them_through_a_broken_edit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    std::fs::write(&path, ECHO.replace("WORD", "one")).unwrap();
    let cfg = path.to_str().unwrap().to_owned();
    let root = dir.path().to_str().unwrap().to_owned();
    let mut s = Server::start_logged(&["--config", &cfg, "--root", &root], None).handshake(V);
    // A modern listener on the same connection hears about changes too.
    let listen_id = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}}),
    );
    let ack = s.recv();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "one\n");

    // A valid edit: a new definition and a new tool, one notification of each kind.
    let edited = format!(
        "{}  - name: also\n    description: A second tool added by the edit.\n    command: [echo, two]\n",
        ECHO.replace("WORD", "two")
    );
    write(&path, &edited);
    let msgs = wait_for_list_changed(&mut s);
    let legacy = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed" && m["params"].is_null())
        .count();
    let modern = msgs
        .iter()
        .filter(|m| {
            m["method"] == "notifications/tools/list_changed"
                && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
        })
        .count();
    assert_eq!((legacy, modern), (1, 1), "{msgs:#?}");
    assert!(names(&mut s).contains(&"also".to_owned()));
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "two\n");

    // A broken edit: logged with file, line and column; the tools stay as they were.
    write(
        &path,
        &format!("{edited}  - name: broken\n    command: [echo, \"{{missing}}\"]\n"),
    );
    let log = s.stderr_until(Duration::from_secs(10), |l| l.contains("were not reloaded"));
    let placed = log.iter().any(|l| {
        l.contains(
            "tools.yaml:11:21: tool \"broken\" (tools[2]): command[1]: placeholder {missing}",
        )
    });
    assert!(placed, "{log:#?}");
    let quiet = s.drain(Duration::from_millis(300));
    assert!(
        !quiet
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{quiet:?}"
    );
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "two\n");
    assert!(!names(&mut s).contains(&"broken".to_owned()));

    // Not YAML at all: the same.
    write(&path, "tools: [\n");
    let log = s.stderr_until(Duration::from_secs(10), |l| l.contains("were not reloaded"));
    assert!(
        log.iter()
            .any(|l| l.contains("tools.yaml:2:1: not valid YAML")),
        "{log:#?}"
    );
    s.assert_alive();
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "two\n");

    // Mended: served again.
    write(&path, &ECHO.replace("WORD", "three"));
    wait_for_list_changed(&mut s);
    assert_eq!(text_of(&call(&mut s, "say", json!({}))), "three\n");
    assert!(!names(&mut s).contains(&"also".to_owned()));
}

#[test]
fn a_call_in_flight_finishes_on_the_definition_it_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    // The program says it started, then waits for the test's go-ahead: nothing here rests
    // on how long a reload takes.
    let (started, go) = (dir.path().join("started"), dir.path().join("go"));
    let slow = |word: &str| {
        format!(
            "tools:\n  - name: slow\n    description: Wait for the go-ahead, then print a word.\n    command: [/bin/sh, -c, \": > {started}; while [ ! -e {go} ]; do sleep 0.02; done; echo {word}\"]\n",
            started = started.display(),
            go = go.display(),
        )
    };
    std::fs::write(&path, slow("old")).unwrap();
    let cfg = path.to_str().unwrap().to_owned();
    let root = dir.path().to_str().unwrap().to_owned();
    let mut s = Server::start(&["--config", &cfg, "--root", &root]).handshake(V);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}}));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    write(&path, &slow("new"));
    let before = wait_for_list_changed(&mut s);
    let mut answer = before.into_iter().find(|m| m["id"] == id);
    assert!(answer.is_none(), "answered before the go-ahead: {answer:?}");
    std::fs::write(&go, "").unwrap();
    while answer.is_none() && std::time::Instant::now() < deadline {
        if let Some(m) = s.recv_timeout(Duration::from_millis(100))
            && m["id"] == id
        {
            answer = Some(m);
        }
    }
    let answer = answer.expect("the call answered");
    assert_eq!(text_of(&answer["result"]), "old\n", "{answer}");
    assert_eq!(text_of(&call(&mut s, "slow", json!({}))), "new\n");
}

/// Messages up to and including the first `notifications/tools/list_changed`, and a little
/// after (a second one would show there).
fn wait_for_list_changed(s: &mut Server) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut msgs = Vec::new();
    while std::time::Instant::now() < deadline {
        if let Some(m) = s.recv_timeout(Duration::from_millis(100)) {
            let done = m["method"] == "notifications/tools/list_changed";
            msgs.push(m);
            if done {
                msgs.extend(s.drain(Duration::from_millis(400)));
                return msgs;
            }
        }
    }
    panic!("no tools/list_changed within 10 s: {msgs:#?}");
}

#[test]
fn declared_tools_serve_modern_clients_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    std::fs::write(
        &path,
        "tools:\n  - name: shout\n    description: Print a word in capitals as {word}.\n    inputSchema: {type: object, properties: {w: {type: string}}, required: [w]}\n    outputSchema: {type: object, properties: {word: {type: string}}, required: [word]}\n    command: {argv: [tr, a-z, A-Z], stdin: \"{w}\"}\n    output: {parse: text, jq: '{word: .}'}\n",
    )
    .unwrap();
    let cfg = path.to_str().unwrap();
    let root = dir.path().to_str().unwrap();
    // stdio, modern: no handshake, per-request _meta.
    let mut s = Server::start(&["--config", cfg, "--root", root, "--no-watch"]);
    let r = s.modern(
        "tools/call",
        json!({"name": "shout", "arguments": {"w": "quiet"}}),
    );
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"word": "QUIET"}),
        "{r}"
    );
    // Streamable HTTP, modern.
    let http = crate::http_client::HttpServer::start(&["--config", cfg, "--root", root]);
    let r = http.post(
        &crate::http_client::modern_headers("tools/call", Some("shout")),
        &crate::http_client::modern_request(
            1,
            "tools/call",
            json!({"name": "shout", "arguments": {"w": "web"}}),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.checked(true, "tools/call")["result"]["structuredContent"],
        json!({"word": "WEB"})
    );
}
