//! Declared tools are safe by construction, seen from outside: injection attempts in every
//! position reach programs and HTTP servers as inert data or are refused, a timed-out
//! command leaves no process behind, and shaped output is checked against `outputSchema`.

use crate::util::{Server, http_recorder};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const V: &str = "2025-11-25";

fn serve(dir: &Path, yaml: &str) -> Server {
    let cfg = dir.join("tools.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let root = dir.to_str().unwrap();
    Server::start(&[
        "--config",
        cfg.to_str().unwrap(),
        "--root",
        root,
        "--no-watch",
    ])
    .handshake(V)
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.request("tools/call", json!({"name": name, "arguments": args}));
    assert!(r["result"].is_object(), "{r}");
    r["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn command_arguments_are_inert_data_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(
        dir.path(),
        r#"tools:
  - name: show
    description: Print each argument in brackets, one per line.
    inputSchema:
      type: object
      properties: {a: {type: string}, b: {type: string}}
      required: [a]
    command: [printf, "[%s]\n", "{a}", ["{b}"]]
"#,
    );
    let marker = dir.path().join("MARK");
    let m = marker.display();
    for attempt in [
        "; rm -rf / ; touch MARK".to_owned(),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("x' && touch {m} && echo '"),
        "*".to_owned(),
        "a b\tc\nd".to_owned(),
        "|| touch MARK".to_owned(),
    ] {
        let r = call(&mut s, "show", json!({"a": attempt}));
        assert_ne!(r["isError"], true, "{r}");
        assert_eq!(text(&r), format!("[{attempt}]\n"), "one element, as sent");
    }
    assert!(!marker.exists(), "nothing was run");
    // An option where the author did not allow one: refused before printf starts.
    for flag in ["--output=/etc/x", "-v", "-"] {
        let r = call(&mut s, "show", json!({"a": "ok", "b": flag}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(text(&r).contains("starts with '-'"), "{r}");
    }
    // The optional group: absent, then present.
    assert_eq!(text(&call(&mut s, "show", json!({"a": "1"}))), "[1]\n");
    assert_eq!(
        text(&call(&mut s, "show", json!({"a": "1", "b": "2"}))),
        "[1]\n[2]\n"
    );
}

#[test]
fn a_timed_out_command_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(
        dir.path(),
        r#"tools:
  - name: hang
    description: Start two background sleepers, note their pids, and wait for them.
    inputSchema: {type: object}
    command: [/bin/sh, -c, "sleep 1000 & echo $! > pids; sleep 1000 & echo $! >> pids; echo $$ >> pids; wait"]
    timeout: 1s
"#,
    );
    let started = std::time::Instant::now();
    let r = call(&mut s, "hang", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("timed out after 1s"), "{r}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pids: Vec<u32> = std::fs::read_to_string(dir.path().join("pids"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    // Killed as the call ended; how soon /proc shows it depends on the machine's load.
    let alive = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|st| !st.contains(") Z "))
            .unwrap_or(false)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pids.iter().any(alive) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!alive(&pid), "process {pid} survived the timeout");
    }
    s.assert_alive();
}

#[test]
fn http_arguments_are_encoded_for_where_they_land() {
    let (port, seen) = http_recorder(r#"{"ok": true}"#);
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(
        dir.path(),
        &format!(
            r#"tools:
  - name: fetch
    description: Fetch one item of the local API, with a note header and a search query.
    inputSchema:
      type: object
      properties: {{id: {{type: string}}, q: {{type: string}}, note: {{type: string}}}}
      required: [id]
    http:
      url: "http://127.0.0.1:{port}/items/{{id}}"
      query: {{q: "{{q}}"}}
      headers: {{X-Note: "{{note}}"}}
    output: {{parse: json}}
  - name: post
    description: Send a JSON body built from the arguments.
    inputSchema:
      type: object
      properties: {{title: {{type: string}}, n: {{type: integer}}}}
      required: [title]
    http:
      method: POST
      url: "http://127.0.0.1:{port}/items"
      body: {{title: "{{title}}", count: "{{n}}", fixed: "by {{title}}"}}
    output: {{parse: json}}
"#
        ),
    );
    let request_line = |s: &mut Server, args: Value| -> String {
        let r = call(s, "fetch", args);
        assert_ne!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"], json!({"ok": true}));
        let last = seen.lock().unwrap().last().unwrap().clone();
        last.lines().next().unwrap().to_owned()
    };
    assert_eq!(
        request_line(&mut s, json!({"id": "../../admin"})),
        "GET /items/..%2F..%2Fadmin HTTP/1.1"
    );
    assert_eq!(
        request_line(&mut s, json!({"id": "a%2fb"})),
        "GET /items/a%252fb HTTP/1.1"
    );
    assert_eq!(
        request_line(
            &mut s,
            json!({"id": "x", "q": "a&admin=1#frag; rm -rf $(id)"})
        ),
        "GET /items/x?q=a%26admin%3D1%23frag%3B%20rm%20-rf%20%24%28id%29 HTTP/1.1"
    );
    // A whole segment of dots would climb: refused, nothing sent.
    let before = seen.lock().unwrap().len();
    let r = call(&mut s, "fetch", json!({"id": ".."}));
    assert_eq!(r["isError"], true, "{r}");
    // Header splitting: refused, nothing sent.
    let r = call(
        &mut s,
        "fetch",
        json!({"id": "x", "note": "hi\r\nX-Admin: yes"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(seen.lock().unwrap().len(), before);
    // A header value arrives as one header.
    call(&mut s, "fetch", json!({"id": "x", "note": "plain: value"}));
    let last = seen.lock().unwrap().last().unwrap().to_ascii_lowercase();
    assert!(last.contains("\r\nx-note: plain: value\r\n"), "{last}");
    assert!(!last.contains("x-admin"));

    // Quotes and braces in a JSON body are data: the body parses back to the arguments.
    let title = r#"say "hi"}, "admin": true, {"x": "\"#;
    let r = call(&mut s, "post", json!({"title": title, "n": 3}));
    assert_ne!(r["isError"], true, "{r}");
    let last = seen.lock().unwrap().last().unwrap().clone();
    let body = &last[last.find("\r\n\r\n").unwrap() + 4..];
    let sent: Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        sent,
        json!({"title": title, "count": 3, "fixed": format!("by {title}")})
    );
}

#[test]
fn shaped_output_is_checked_against_the_output_schema() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(
        dir.path(),
        r#"tools:
  - name: count
    description: Count the words of a file below the root. Returns {words}.
    inputSchema:
      type: object
      properties: {path: {type: string}}
      required: [path]
    outputSchema: {type: object, properties: {words: {type: integer}}, required: [words]}
    command: [wc, -w, "{path:path}"]
    output: {parse: regex, pattern: '^\s*(?P<words>\d+)'}
  - name: wrong
    description: Print JSON that breaks its own output schema.
    inputSchema: {type: object}
    outputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    command: [echo, '{{"n": "seven"}}']
    output: {parse: json}
  - name: reshaped
    description: Print JSON and keep only part of it with jq.
    inputSchema: {type: object}
    outputSchema: {type: object, properties: {names: {type: array}}, required: [names]}
    command: [echo, '{{"items": [{{"name": "a", "x": 1}}, {{"name": "b", "x": 2}}]}}']
    output: {parse: json, jq: '{names: [.items[].name]}'}
"#,
    );
    std::fs::write(dir.path().join("words.txt"), "one two three\n").unwrap();
    let r = call(&mut s, "count", json!({"path": "words.txt"}));
    assert_eq!(r["structuredContent"], json!({"words": 3}), "{r}");
    assert_eq!(
        serde_json::from_str::<Value>(text(&r)).unwrap(),
        json!({"words": 3})
    );
    // A path leaving the root never reaches wc.
    for escape in ["../../../etc/passwd", "/etc/passwd"] {
        let r = call(&mut s, "count", json!({"path": escape}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(text(&r).contains("outside the server's roots"), "{r}");
    }
    let r = call(&mut s, "reshaped", json!({}));
    assert_eq!(r["structuredContent"], json!({"names": ["a", "b"]}), "{r}");
    // Output from outside that breaks the schema: the tool's failure, never sent as a result.
    let r = call(&mut s, "wrong", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["structuredContent"].is_null(), "{r}");
    assert!(
        text(&r).contains("does not match the tool's outputSchema"),
        "{r}"
    );
    assert!(
        text(&r).contains("/n"),
        "the violation names the member: {r}"
    );
}
