//! The legacy era (2024-11-05 … 2025-11-25) over stdio: handshake, tools, notifications.

use crate::util::Server;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

fn init_params(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn every_legacy_version_is_echoed() {
    for v in LEGACY {
        let mut s = Server::start(&[]);
        let r = s.request("initialize", init_params(v));
        assert_eq!(r["result"]["protocolVersion"], v);
        assert_eq!(r["result"]["serverInfo"]["name"], "toolwright");
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
        assert!(r["result"]["capabilities"]["logging"].is_object());
    }
}

#[test]
fn unknown_versions_get_a_counter_offer() {
    for v in ["2099-01-01", "1.0", "2026-07-28"] {
        let mut s = Server::start(&[]);
        let r = s.request("initialize", init_params(v));
        assert_eq!(
            r["result"]["protocolVersion"], "2025-11-25",
            "offered for {v}"
        );
    }
}

#[test]
fn requests_before_initialize_are_refused_but_ping_works() {
    let mut s = Server::start(&[]);
    let r = s.request("tools/list", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize")
    );
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    assert!(r["error"].is_object(), "{r}");
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn initialize_twice_is_an_error() {
    let mut s = Server::legacy("2025-06-18", &[]);
    let r = s.request("initialize", init_params("2025-06-18"));
    assert_eq!(r["error"]["code"], -32600);
}

#[test]
fn initialize_without_client_info_is_invalid_params() {
    let mut s = Server::start(&[]);
    let r = s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
    );
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn tools_list_shows_the_seed_tools_with_every_field() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let r = s.request("tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().unwrap();
    let add = tools
        .iter()
        .find(|t| t["name"] == "add")
        .expect("add listed");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(add["inputSchema"]["properties"]["a"]["type"], "number");
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    assert_eq!(add["annotations"]["destructiveHint"], false);
    assert_eq!(add["annotations"]["idempotentHint"], true);
    assert_eq!(add["annotations"]["openWorldHint"], false);
    assert!(add["title"].is_string() && add["description"].is_string());
    assert!(add["outputSchema"].is_object());
    assert!(tools.iter().any(|t| t["name"] == "multiply"));
    assert!(r["result"].get("nextCursor").is_none());
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "stable (sorted) order");
}

#[test]
fn old_versions_see_only_fields_they_know() {
    let mut s = Server::legacy("2024-11-05", &[]);
    let r = s.request("tools/list", json!({}));
    for t in r["result"]["tools"].as_array().unwrap() {
        for gone in ["annotations", "title", "outputSchema", "icons", "execution"] {
            assert!(
                t.get(gone).is_none(),
                "{gone} sent to a 2024-11-05 client: {t}"
            );
        }
    }
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    assert!(r["result"].get("structuredContent").is_none());
    assert_eq!(text_of(&r["result"]), r#"{"result":3}"#);
}

#[test]
fn pagination_walks_every_tool_and_rejects_bad_cursors() {
    let mut s = Server::legacy("2025-06-18", &["--page-size", "2", "--fixtures", "testing"]);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = s.request("tools/list", params);
        let page = r["result"]["tools"].as_array().unwrap();
        assert!(page.len() <= 2);
        names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        pages += 1;
        match r["result"].get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages > 3, "several pages");
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), names.len(), "no tool twice");
    assert!(names.contains(&"add".to_owned()) && names.contains(&"toggle_tool".to_owned()));
    for bad in ["garbage", "", "YWZ0ZXI", "%%%"] {
        let r = s.request("tools/list", json!({"cursor": bad}));
        assert_eq!(r["error"]["code"], -32602, "cursor {bad:?}: {r}");
    }
}

#[test]
fn add_and_multiply_return_structured_and_text() {
    let mut s = Server::legacy("2025-06-18", &[]);
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(r["result"]["structuredContent"], json!({"result": 5}));
    assert_eq!(text_of(&r["result"]), r#"{"result":5}"#);
    assert!(r["result"].get("isError").is_none());
    let r = s.request(
        "tools/call",
        json!({"name": "multiply", "arguments": {"a": 2.5, "b": 4}}),
    );
    assert_eq!(r["result"]["structuredContent"], json!({"result": 10}));
}

/// The arithmetic is decimal, on the numbers as written: checked on the reply's text, since
/// parsing it into a `Value` would round the very digits under test.
#[test]
fn add_and_multiply_are_exact_on_the_numbers_as_written() {
    let mut s = Server::legacy("2025-06-18", &["--arith-max-digits", "60"]);
    let big = "123456789012345678901234567890123456789";
    let cases = [
        ("add", "0.1", "0.2", "0.3"),
        ("add", "9007199254740993", "0", "9007199254740993"),
        ("add", big, "1", "123456789012345678901234567890123456790"),
        (
            "add",
            "0.1000000000000000000001",
            "0",
            "0.1000000000000000000001",
        ),
        ("multiply", "0.1", "3", "0.3"),
        (
            "multiply",
            big,
            "-1e-30",
            "-123456789.012345678901234567890123456789",
        ),
        ("multiply", "1e200", "1e200", "1e400"),
        ("multiply", "2.50", "4", "10"),
    ];
    for (i, (tool, a, b, want)) in cases.into_iter().enumerate() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"a":{a},"b":{b}}}}}}}"#,
            1000 + i
        );
        s.send_raw(format!("{line}\n").as_bytes());
        let reply = s.recv_line();
        let structured = format!(r#""structuredContent":{{"result":{want}}}"#);
        let text = format!(r#""text":"{{\"result\":{want}}}""#);
        assert!(reply.contains(&structured), "{tool}({a}, {b}): {reply}");
        assert!(reply.contains(&text), "{tool}({a}, {b}): {reply}");
    }
    // Past the digit limit, and beyond what JSON parsers hold at all: clear refusals.
    let line = r#"{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"multiply","arguments":{"a":1.2345678901234567e300,"b":1.2345678901234567e300}}}"#;
    s.send_raw(format!("{line}\n").as_bytes());
    let reply = s.recv_line();
    assert!(
        reply.contains(r#""structuredContent":{"result":1.52415787532388345526596755677489e600}"#),
        "{reply}"
    );
    let long = "7".repeat(61);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{{"name":"add","arguments":{{"a":{long},"b":1}}}}}}"#
    );
    s.send_raw(format!("{line}\n").as_bytes());
    let r: serde_json::Value = serde_json::from_str(&s.recv_line()).unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        text_of(&r["result"]).contains("61 significant digits"),
        "{r}"
    );
    let line = r#"{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"add","arguments":{"a":1e400,"b":1}}}"#;
    s.send_raw(format!("{line}\n").as_bytes());
    let r: serde_json::Value = serde_json::from_str(&s.recv_line()).unwrap();
    assert_eq!(r["id"], "r", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("number out of range"),
        "{r}"
    );
}

#[test]
fn invalid_arguments_come_back_as_is_error_naming_each_violation() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x", "c": 1}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = text_of(&r["result"]);
    assert!(
        text.contains(r#"/a: "x" is not of type "number""#),
        "{text}"
    );
    assert!(text.contains("\"b\""), "names the missing property: {text}");
    assert!(
        text.contains("\"c\""),
        "names the unexpected property: {text}"
    );
    // Missing arguments entirely: every required property is named.
    let r = s.request("tools/call", json!({"name": "add"}));
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("\"a\""));
}

#[test]
fn input_errors_can_be_protocol_errors() {
    let mut s = Server::legacy("2025-06-18", &["--input-errors-as-protocol-errors"]);
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x", "b": 1}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("/a"));
}

#[test]
fn unknown_tools_and_malformed_params_are_invalid_params() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let r = s.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["message"], "Unknown tool: nope");
    for params in [
        json!({"arguments": {}}),
        json!({"name": 5}),
        json!({"name": "add", "arguments": [1, 2]}),
    ] {
        let r = s.request("tools/call", params.clone());
        assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
    }
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"}));
    assert_eq!(s.response_to(&json!(id))["error"]["code"], -32602);
}

#[test]
fn tool_failures_are_is_error_results() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let r = s.request("tools/call", json!({"name": "fail", "arguments": {}}));
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("failed on purpose"));
}

#[test]
fn output_contract_violations_are_internal_errors() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let r = s.request("tools/call", json!({"name": "bad_output", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("/result") && msg.contains("number"), "{msg}");
    let r = s.request(
        "tools/call",
        json!({"name": "missing_output", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32603);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("structuredContent")
    );
}

#[test]
fn a_panicking_tool_fails_only_its_call() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let r = s.request("tools/call", json!({"name": "panic", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32603);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fixture panic")
    );
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
    );
    assert_eq!(r["result"]["structuredContent"]["result"], 2);
}

#[test]
fn log_level_filters_notifications() {
    let mut s = Server::legacy("2025-06-18", &["--fixtures", "testing"]);
    let r = s.request("logging/setLevel", json!({"level": "error"}));
    assert_eq!(r["result"], json!({}));
    let r = s.request("tools/call", json!({"name": "log", "arguments": {}}));
    assert_eq!(text_of(&r["result"]), "logged");
    let logs: Vec<Value> = s
        .drain(Duration::from_millis(200))
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    let levels: Vec<&str> = logs
        .iter()
        .map(|m| m["params"]["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["error", "critical", "alert", "emergency"]);
    assert_eq!(logs[0]["params"]["logger"], "fixture");
    let r = s.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn progress_notifications_increase_and_precede_the_result() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "progress", "arguments": {"steps": 5}, "_meta": {"progressToken": "tok-1"}}}));
    let mut progress = Vec::new();
    loop {
        let m = s.recv();
        if m.get("id") == Some(&json!(id)) {
            assert_eq!(m["result"]["structuredContent"]["steps"], 5);
            break;
        }
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(m["params"]["progressToken"], "tok-1");
        assert_eq!(m["params"]["total"], 5.0);
        progress.push(m["params"]["progress"].as_f64().unwrap());
    }
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0, 5.0]);
    // Without a token, no progress at all.
    let r = s.request(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3}}),
    );
    assert!(r["result"].is_object());
    assert!(
        s.drain(Duration::from_millis(100))
            .iter()
            .all(|m| m["method"] != "notifications/progress")
    );
}

#[test]
fn cancellation_really_stops_the_tool() {
    let mut s = Server::legacy("2025-06-18", &["--fixtures", "testing"]);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 800}}}));
    std::thread::sleep(Duration::from_millis(100));
    s.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    // Unknown ids are ignored.
    s.notify("notifications/cancelled", json!({"requestId": 987654}));
    s.assert_alive();
    let later = s.drain(Duration::from_millis(1200));
    assert!(
        later.iter().all(|m| m.get("id") != Some(&json!(id))),
        "no response after cancel: {later:?}"
    );
    assert!(
        later.iter().all(|m| m["params"]["data"] != "slow finished"),
        "the tool kept running after cancel: {later:?}"
    );
}

#[test]
fn slow_calls_do_not_block_other_requests() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let slow_id = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": slow_id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 1500, "text": "late"}}}),
    );
    let start = Instant::now();
    s.assert_alive();
    assert!(s.request("tools/list", json!({}))["result"]["tools"].is_array());
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(r["result"]["structuredContent"]["result"], 3);
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "answered while the slow call ran"
    );
    let r = s.response_to(&json!(slow_id));
    assert_eq!(text_of(&r["result"]), "late");
}

#[test]
fn calls_time_out() {
    let mut s = Server::legacy(
        "2025-11-25",
        &["--fixtures", "testing", "--call-timeout", "0.3"],
    );
    let r = s.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 10000}}),
    );
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not finish")
    );
    s.assert_alive();
}

#[test]
fn list_changed_is_sent_when_tools_come_and_go() {
    let mut s = Server::legacy("2025-06-18", &["--fixtures", "testing"]);
    let r = s.request(
        "tools/call",
        json!({"name": "toggle_tool", "arguments": {"name": "extra", "present": true}}),
    );
    assert_eq!(r["result"]["structuredContent"]["changed"], true);
    let msgs = s.drain(Duration::from_millis(200));
    assert!(
        msgs.iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{msgs:?}"
    );
    let list = s.request("tools/list", json!({}));
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "extra")
    );
    // Registering it again is refused as a duplicate.
    let r = s.request(
        "tools/call",
        json!({"name": "toggle_tool", "arguments": {"name": "extra", "present": true}}),
    );
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("already registered"));
    let r = s.request(
        "tools/call",
        json!({"name": "toggle_tool", "arguments": {"name": "extra", "present": false}}),
    );
    assert_eq!(r["result"]["structuredContent"]["changed"], true);
    assert!(
        s.drain(Duration::from_millis(200))
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed")
    );
    let r = s.request("tools/call", json!({"name": "extra", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn batches_only_under_2025_03_26() {
    let mut s = Server::legacy("2025-03-26", &[]);
    s.send_raw(
        br#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","id":null,"method":"ping"}]
"#,
    );
    let r = s.recv();
    let items = r.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 3, "{r}");
    assert_eq!(items[0]["id"], "b1");
    assert_eq!(items[1]["result"]["content"][0]["text"], r#"{"result":3}"#);
    assert_eq!(items[2]["error"]["code"], -32600);

    let mut s = Server::legacy("2025-06-18", &[]);
    s.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r.get("id").is_none());
}

#[test]
fn missing_client_capabilities_fail_the_call() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let r = s.request(
        "tools/call",
        json!({"name": "needs_elicitation", "arguments": {}}),
    );
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("elicitation"));
    let mut s = Server::start(&["--fixtures", "testing"]);
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.request(
        "tools/call",
        json!({"name": "needs_elicitation", "arguments": {}}),
    );
    assert_eq!(text_of(&r["result"]), "ok");
}

#[test]
fn string_ids_are_echoed() {
    let mut s = Server::legacy("2025-11-25", &[]);
    s.send(&json!({"jsonrpc": "2.0", "id": "abc-1", "method": "ping"}));
    assert_eq!(s.response_to(&json!("abc-1"))["result"], json!({}));
}
