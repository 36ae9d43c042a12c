//! Issue 36, items 6–12: where the new surfaces meet an attacker. Secrets in declared HTTP
//! tools (a redirect, a span), duplicate keys in a JSON tool file, hot reload against a
//! FIFO and against steady traffic, `/metrics` against made-up tool names, and Chromium
//! under a long `TMPDIR`; each against the real binary.

use crate::http_client::*;
use crate::util::run_cli;
use serde_json::json;

/// `/metrics` is bounded by what the server has: names no tool has share the one label
/// value `_OTHER`, however many and however long (issue 36, item 11).
#[test]
fn made_up_tool_names_do_not_grow_metrics() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let call = |id: i64, name: &str| {
        let r = session.post(
            &s,
            &request(id, "tools/call", json!({"name": name, "arguments": {}})),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.json()["error"].is_object(), "{}", r.text());
    };
    let before = s.send("GET", "/metrics", &[], b"").text().len();
    for i in 0..200 {
        call(100 + i, &format!("made_up_{i}"));
    }
    call(1000, &"y".repeat(200_000));
    let r = s.send("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(!text.contains("made_up_"), "an unknown name is a label");
    assert!(!text.contains("yyyyyyyy"), "an unknown name is a label");
    let other = format!(
        "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"_OTHER\",gen_ai_operation_name=\"execute_tool\",error_type=\"-32602\",rpc_response_status_code=\"-32602\",mcp_protocol_version=\"{LEGACY}\",network_transport=\"tcp\",network_protocol_name=\"http\"}} 201"
    );
    assert!(text.lines().any(|l| l == other), "{other} missing:\n{text}");
    // 201 calls added one series (and the handshake's own), not 201.
    assert!(
        text.len() < before + 8_000,
        "{before} bytes before, {} after",
        text.len()
    );
}

/// A JSON tool file with a key written twice is refused, placed at the second key, as YAML
/// and TOML files are: a reader sees one `command`, and no server may run another (issue
/// 36, item 8). `tools` loads the file as `serve` does, and `lint` reads it the same way.
#[test]
fn a_json_tool_file_with_a_key_twice_is_refused_at_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let text = "{\"tools\": [\n  {\"name\": \"a\",\n   \"command\": [\"echo\", \"reviewed\"],\n   \"command\": [\"echo\", \"other\"]}\n]}\n";
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    for args in [
        &["tools", "--config", file][..],
        &["call", "--config", file, "a"][..],
    ] {
        let out = run_cli(args);
        let err = String::from_utf8_lossy(&out.stderr);
        let out_text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("t.json:4:4: not valid JSON: the key `command` appears twice"),
            "{args:?}: {err}"
        );
        assert!(!out_text.contains("other"), "{out_text}");
    }
}
