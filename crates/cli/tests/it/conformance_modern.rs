//! The fixtures the official suite's 2026-07-28 scenarios call (`server-stateless`,
//! `input-required-result-*`), checked here without the suite: questions under the keys the
//! scenarios name, an answer that is no object asked again, an altered `requestState`
//! refused, the list-change triggers heard on `subscriptions/listen`, no logs without a log
//! level, -32021 for an undeclared capability; and a modern `initialize`, which that era
//! removed, not found over HTTP.

use crate::http_client::{HttpServer, modern_headers, request};
use crate::util::{Server, modern_meta};
use serde_json::{Value, json};
use std::time::Duration;

fn fixtures() -> Server {
    Server::start(&["--fixtures", "conformance"])
}

/// A modern `tools/call` from a client that declared sampling, elicitation and roots (as
/// the suite's does), with `extra` params.
fn call(s: &mut Server, tool: &str, extra: Value) -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"sampling": {}, "elicitation": {}, "roots": {}});
    let mut params = json!({"name": tool, "arguments": {}, "_meta": meta});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    s.request("tools/call", params)
}

#[test]
fn questions_come_under_the_scenarios_keys_and_bad_answers_are_asked_again() {
    let mut s = fixtures();
    let tool = "test_input_required_result_elicitation";
    let r = call(&mut s, tool, json!({}));
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required", "{r}");
    assert_eq!(
        res["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = res["requestState"].as_str().unwrap().to_owned();

    // An answer that is not an object is no answer: the same question again.
    let r = call(
        &mut s,
        tool,
        json!({"inputResponses": {"user_name": 12345}, "requestState": state}),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"]["inputRequests"]["user_name"].is_object());

    // The right key, with others the tool does not know: they are ignored.
    let answer = json!({"action": "accept", "content": {"name": "Alice"}});
    let r = call(
        &mut s,
        tool,
        json!({"inputResponses": {"user_name": answer, "extra": {"action": "decline"}}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Alice!", "{r}");

    // Several questions in one round, each under its own key.
    let r = call(
        &mut s,
        "test_input_required_result_multiple_inputs",
        json!({}),
    );
    let mut keys: Vec<&str> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"], "{r}");
}

#[test]
fn the_state_round_trip_is_verified_and_an_altered_state_refused() {
    let mut s = fixtures();
    let tool = "test_input_required_result_request_state";
    let r = call(&mut s, tool, json!({}));
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let r = call(
        &mut s,
        tool,
        json!({"inputResponses": answers, "requestState": state}),
    );
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("state-ok"), "{r}");
    // Without the state the answer still counts, but nothing vouches for the round trip.
    let r = call(&mut s, tool, json!({"inputResponses": answers}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(!text.contains("state-ok"), "{r}");
    let r = call(
        &mut s,
        tool,
        json!({"inputResponses": answers, "requestState": format!("{state}-TAMPERED")}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn an_undeclared_capability_is_refused_and_logs_need_a_level() {
    let mut s = fixtures();
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let r = s.request(
        "tools/call",
        json!({"name": "test_missing_capability", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["sampling"].is_object());

    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "test_logging_tool", "arguments": {}, "_meta": modern_meta()}}));
    let mut seen = Vec::new();
    loop {
        let m = s.recv();
        if m["id"] == json!(id) {
            assert!(m["result"].is_object(), "{m}");
            break;
        }
        seen.push(m);
    }
    assert!(
        seen.iter().all(|m| m["method"] != "notifications/message"),
        "no log level, no logs: {seen:?}"
    );
}

#[test]
fn the_triggers_change_the_lists_and_listeners_hear_only_what_they_asked_for() {
    let mut s = fixtures();
    let listen_id = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}}),
    );
    let ack = s.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    let r = call(&mut s, "test_trigger_tool_change", json!({}));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("added")
    );
    let r = s.modern("tools/list", json!({}));
    assert!(
        r.to_string().contains("test_dynamic_tool"),
        "the list changed"
    );
    let r = call(&mut s, "test_trigger_prompt_change", json!({}));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("added")
    );
    let r = s.modern("prompts/list", json!({}));
    assert!(
        r.to_string().contains("test_dynamic_prompt"),
        "the list changed"
    );

    let heard: Vec<Value> = s
        .drain(Duration::from_millis(200))
        .into_iter()
        .filter(|m| {
            m["method"]
                .as_str()
                .is_some_and(|m| m.ends_with("list_changed"))
        })
        .collect();
    assert_eq!(heard.len(), 1, "tools only, as asked: {heard:?}");
    assert_eq!(heard[0]["method"], "notifications/tools/list_changed");
    assert_eq!(
        heard[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
}

#[test]
fn a_modern_initialize_is_not_found_and_a_legacy_one_gets_the_counter_offer() {
    let s = HttpServer::start(&[]);
    let body = request(
        1,
        "initialize",
        json!({"_meta": modern_meta(), "protocolVersion": "2026-07-28", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&modern_headers("initialize", None), &body);
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32601);
    assert_eq!(r.json()["id"], 1);

    let body = request(
        2,
        "initialize",
        json!({"protocolVersion": "2026-07-28", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&[], &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
}
