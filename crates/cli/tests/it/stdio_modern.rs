//! The modern era (2026-07-28) over stdio: stateless, self-describing requests.

use crate::util::{MODERN, Server, modern_meta};
use serde_json::{Value, json};
use std::time::Duration;

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    s.modern("tools/call", json!({"name": name, "arguments": args}))
}

#[test]
fn discover_describes_the_server() {
    let mut s = Server::start(&[]);
    let r = s.modern("server/discover", json!({}));
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete");
    let versions: Vec<&str> = res["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        [
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ]
    );
    assert!(res["ttlMs"].as_u64().is_some());
    assert_eq!(res["cacheScope"], "public");
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolwright"
    );
    assert_eq!(res["capabilities"]["tools"]["listChanged"], true);
}

#[test]
fn no_handshake_needed_and_results_carry_result_type() {
    let mut s = Server::start(&[]);
    let r = s.modern("tools/list", json!({}));
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["cacheScope"], "public");
    assert!(res["ttlMs"].is_u64());
    assert!(
        res["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("execution").is_none())
    );
    let r = call(&mut s, "add", json!({"a": 20, "b": 22}));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["structuredContent"], json!({"result": 42}));
    assert_eq!(r["result"]["content"][0]["text"], r#"{"result":42}"#);
}

#[test]
fn modern_pagination() {
    let mut s = Server::start(&["--page-size", "1"]);
    let r = s.modern("tools/list", json!({}));
    let c = r["result"]["nextCursor"].as_str().unwrap().to_owned();
    let r2 = s.modern("tools/list", json!({"cursor": c}));
    assert_ne!(
        r["result"]["tools"][0]["name"],
        r2["result"]["tools"][0]["name"]
    );
    assert_eq!(r2["result"]["cacheScope"], r["result"]["cacheScope"]);
    let bad = s.modern("tools/list", json!({"cursor": "nope"}));
    assert_eq!(bad["error"]["code"], -32602);
}

#[test]
fn missing_meta_is_invalid_params() {
    let mut s = Server::start(&[]);
    for method in ["tools/list", "server/discover"] {
        let r = s.request(method, json!({}));
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    let r = s.request(
        "server/discover",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
    );
    assert_eq!(
        r["error"]["code"], -32602,
        "clientCapabilities is required: {r}"
    );
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "server/discover"}));
    assert_eq!(s.response_to(&json!(id))["error"]["code"], -32602);
}

#[test]
fn unsupported_versions_get_32022_with_the_list() {
    let mut s = Server::start(&[]);
    for v in ["2099-01-01", "2025-11-25"] {
        let r = s.request(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": v, "io.modelcontextprotocol/clientCapabilities": {}}}),
        );
        assert_eq!(r["error"]["code"], -32022, "{r}");
        assert_eq!(r["error"]["data"]["requested"], v);
        assert!(
            r["error"]["data"]["supported"]
                .as_array()
                .unwrap()
                .contains(&json!("2026-07-28"))
        );
        crate::util::SpecSchema::modern().check("UnsupportedProtocolVersionError", &r);
    }
}

#[test]
fn legacy_only_methods_do_not_exist_in_the_modern_era() {
    let mut s = Server::start(&[]);
    for m in ["ping", "logging/setLevel"] {
        let r = s.modern(m, json!({"level": "info"}));
        assert_eq!(r["error"]["code"], -32601, "{m}: {r}");
    }
    let r = s.modern("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
}

#[test]
fn logs_only_when_the_request_sets_a_level() {
    let mut s = Server::start(&["--fixtures", "testing"]);
    let r = call(&mut s, "log", json!({}));
    assert_eq!(r["result"]["resultType"], "complete");
    let msgs = s.drain(Duration::from_millis(150));
    assert!(
        msgs.iter().all(|m| m["method"] != "notifications/message"),
        "{msgs:?}"
    );
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/logLevel"] = json!("critical");
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "log", "arguments": {}, "_meta": meta}}));
    s.response_to(&json!(id));
    let levels: Vec<String> = s
        .drain(Duration::from_millis(150))
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(levels, ["critical", "alert", "emergency"]);
}

#[test]
fn missing_required_capability_is_32021() {
    let mut s = Server::start(&["--fixtures", "testing"]);
    let r = call(&mut s, "needs_elicitation", json!({}));
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
    crate::util::SpecSchema::modern().check("MissingRequiredClientCapabilityError", &r);
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let r = s.request(
        "tools/call",
        json!({"name": "needs_elicitation", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "ok");
}

#[test]
fn legacy_and_modern_side_by_side() {
    let mut s = Server::legacy("2025-06-18", &[]);
    let legacy = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
    );
    assert!(legacy["result"].get("resultType").is_none());
    let modern = call(&mut s, "add", json!({"a": 1, "b": 1}));
    assert_eq!(modern["result"]["resultType"], "complete");
    let legacy = s.request("tools/list", json!({}));
    assert!(legacy["result"].get("ttlMs").is_none());
}

#[test]
fn progress_and_cancellation_in_the_modern_era() {
    let mut s = Server::start(&["--fixtures", "testing"]);
    let mut meta = modern_meta();
    meta["progressToken"] = json!(77);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "progress", "arguments": {"steps": 3}, "_meta": meta}}));
    s.response_to(&json!(id));
    let n = s
        .drain(Duration::from_millis(100))
        .iter()
        .filter(|m| m["params"]["progressToken"] == 77)
        .count();
    assert_eq!(n, 3);

    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 600}, "_meta": modern_meta()}}));
    std::thread::sleep(Duration::from_millis(50));
    s.notify("notifications/cancelled", json!({"requestId": id}));
    let later = s.drain(Duration::from_millis(900));
    assert!(
        later.iter().all(|m| m.get("id") != Some(&json!(id))),
        "{later:?}"
    );
}

#[test]
fn listen_streams_tool_list_changes() {
    let mut s = Server::start(&["--fixtures", "testing"]);
    let listen_id = s.next_id();
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    s.send(&json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "promptsListChanged": true}}}));
    let ack = s.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
    call(
        &mut s,
        "toggle_tool",
        json!({"name": "later_tool", "present": true}),
    );
    let msgs = s.drain(Duration::from_millis(200));
    let changed: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{msgs:?}");
    assert_eq!(
        changed[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
    // Closing stdin ends the stream with a result.
    s.close_stdin();
    let end = s.response_to(&json!(listen_id));
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
}

/// One connection cannot pile up listen streams: past the cap the next one is refused with
/// an error naming it, and cancelling one makes room again.
#[test]
fn listen_streams_are_capped_per_session() {
    let mut s = Server::start(&["--fixtures", "testing", "--max-listens", "3"]);
    let listen = |s: &mut Server| {
        let id = s.next_id();
        s.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}}),
        );
        (id, s.recv())
    };
    let mut open = Vec::new();
    for _ in 0..3 {
        let (id, ack) = listen(&mut s);
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        open.push(id);
    }
    let (id, refused) = listen(&mut s);
    assert_eq!(refused["id"], id, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["data"]["maxListens"], 3, "{refused}");
    s.notify(
        "notifications/cancelled",
        json!({"requestId": open[0], "_meta": modern_meta()}),
    );
    std::thread::sleep(Duration::from_millis(100));
    let (_, ack) = listen(&mut s);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    s.assert_alive();
}
