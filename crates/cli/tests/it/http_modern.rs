//! Streamable HTTP, modern era (2026-07-28): POST only, headers mirroring the body, status
//! codes, streams and cancellation. Every body is checked against the official schema.

use crate::http_client::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn call(id: i64, name: &str, args: Value) -> Value {
    modern_request(id, "tools/call", json!({"name": name, "arguments": args}))
}

#[test]
fn requests_with_mirrored_headers_are_served() {
    let s = HttpServer::start(&[]);
    let r = s.post(
        &modern_headers("server/discover", None),
        &modern_request(1, "server/discover", json!({})),
    );
    assert_eq!(r.status, 200);
    let v = r.checked(true, "server/discover");
    assert!(
        v["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );

    let r = s.post(
        &modern_headers("tools/list", None),
        &modern_request(2, "tools/list", json!({})),
    );
    assert_eq!(r.status, 200);
    let v = r.checked(true, "tools/list");
    assert_eq!(v["result"]["resultType"], "complete");

    let r = s.post(
        &modern_headers("tools/call", Some("add")),
        &call(3, "add", json!({"a": 2, "b": 5})),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.checked(true, "tools/call")["result"]["structuredContent"]["result"],
        7
    );

    // Mcp-Session-Id and Last-Event-ID are ignored; no session is minted.
    let mut h = modern_headers("tools/call", Some("add"));
    h.push(("mcp-session-id", "not-a-session"));
    h.push(("last-event-id", "5-5"));
    let r = s.post(&h, &call(4, "add", json!({"a": 1, "b": 1})));
    assert_eq!(r.status, 200);
    r.checked(true, "tools/call");
    assert_eq!(r.header("mcp-session-id"), None);

    // The base64 form of a header value.
    let r = s.post(
        &modern_headers("tools/call", Some("=?base64?YWRk?=")),
        &call(5, "add", json!({"a": 1, "b": 2})),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn header_mismatches_are_400_with_32020() {
    let s = HttpServer::start(&[]);
    let body = call(1, "add", json!({"a": 1, "b": 2}));
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "no MCP-Protocol-Version",
            vec![("mcp-method", "tools/call"), ("mcp-name", "add")],
        ),
        (
            "no Mcp-Method",
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-name", "add")],
        ),
        (
            "no Mcp-Name",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ],
        ),
        (
            "wrong method",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "add"),
            ],
        ),
        (
            "wrong name",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "multiply"),
            ],
        ),
        (
            "name case",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "Add"),
            ],
        ),
        (
            "version",
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "add"),
            ],
        ),
        (
            "bad base64",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?%%?="),
            ],
        ),
    ];
    for (what, headers) in cases {
        let r = s.post(&headers, &body);
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        let v = r.json();
        check(true, "tools/call", &v);
        assert_eq!(v["error"]["code"], -32020, "{what}: {v}");
        assert_eq!(v["id"], 1, "{what}");
    }
}

#[test]
fn status_codes_follow_the_error() {
    let s = HttpServer::start(&[]);
    let r = s.post(
        &modern_headers("tools/frobnicate", None),
        &modern_request(1, "tools/frobnicate", json!({})),
    );
    assert_eq!(r.status, 404, "unknown method");
    let v = r.json();
    check(true, "tools/frobnicate", &v);
    assert_eq!(v["error"]["code"], -32601);

    let future = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = s.post(
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &future,
    );
    assert_eq!(r.status, 400, "unsupported version");
    let v = r.json();
    check(true, "tools/list", &v);
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");

    let no_caps = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let r = s.post(&modern_headers("tools/list", None), &no_caps);
    assert_eq!(r.status, 400, "missing _meta key");
    assert_eq!(r.json()["error"]["code"], -32602);
    let no_meta = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
    let r = s.post(&modern_headers("tools/list", None), &no_meta);
    assert_eq!(r.status, 400, "missing _meta");
    assert_eq!(r.json()["error"]["code"], -32602);

    // A tool needing a client capability the request did not declare.
    let r = s.post(
        &modern_headers("tools/call", Some("probe_roots")),
        &call(7, "probe_roots", json!({})),
    );
    assert_eq!(r.status, 400, "missing client capability");
    let v = r.json();
    check(true, "tools/call", &v);
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );

    // An unknown tool is a JSON-RPC error on a normal 200.
    let r = s.post(
        &modern_headers("tools/call", Some("nope")),
        &call(5, "nope", json!({})),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.checked(true, "tools/call")["error"]["code"], -32602);

    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}});
    let r = s.post(&modern_headers("notifications/cancelled", None), &note);
    assert_eq!(r.status, 202, "accepted notification");
    assert!(r.body.is_empty());

    let r = s.post(
        &modern_headers("tools/list", None),
        &json!([modern_request(6, "tools/list", json!({}))]),
    );
    assert_eq!(r.status, 400, "no batches in 2026-07-28");

    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("accept", "text/event-stream"),
    ];
    let r = s.send("GET", "/mcp", &h, b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    assert_eq!(s.send("DELETE", "/mcp", &h, b"").status, 405);

    let r = s.send(
        "POST",
        "/mcp",
        &[("content-type", "application/json")],
        b"{not json",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
}

#[test]
fn notifications_come_first_on_an_event_stream() {
    let s = HttpServer::start(&[]);
    let mut body = call(1, "probe_progress", json!({"steps": 3, "delay_ms": 5}));
    body["params"]["_meta"]["progressToken"] = json!("tok");
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let r = s.post(&modern_headers("tools/call", Some("probe_progress")), &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    let events = r.events();
    assert!(
        events.iter().all(|e| e.id.is_none()),
        "modern streams are not resumable"
    );
    let messages: Vec<Value> = events.iter().map(Event::json).collect();
    for m in &messages {
        check(true, "tools/call", m);
    }
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .count(),
        3
    );
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count(),
        3
    );
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 1);
    assert_eq!(last["result"]["resultType"], "complete");

    // Without a progress token or log level nothing is sent but the reply: JSON.
    let r = s.post(
        &modern_headers("tools/call", Some("probe_progress")),
        &call(2, "probe_progress", json!({"steps": 2})),
    );
    assert_eq!(
        r.checked(true, "tools/call")["result"]["structuredContent"]["steps"],
        2
    );
}

fn stats(s: &HttpServer) -> Value {
    let r = s.post(
        &modern_headers("tools/call", Some("probe_stats")),
        &call(99, "probe_stats", json!({})),
    );
    r.checked(true, "tools/call")["result"]["structuredContent"].clone()
}

#[test]
fn closing_the_response_cancels_the_call() {
    let s = HttpServer::start(&[]);
    // JSON pending (nothing sent yet).
    let mut c = s.conn();
    let body = call(1, "probe_sleep", json!({"ms": 20000}));
    let mut h = modern_headers("tools/call", Some("probe_sleep"));
    h.push(("content-type", "application/json"));
    c.send("POST", "/mcp", &h, body.to_string().as_bytes());
    // Closed once the call is running (before, there would be nothing to cancel).
    let deadline = Instant::now() + Duration::from_secs(20);
    while stats(&s)["started"] != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    c.close();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = stats(&s);
        if st["cancelled"] == 1 {
            assert_eq!(st, json!({"started": 1, "completed": 0, "cancelled": 1}));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the call was not cancelled: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // An event stream: closing it mid-call cancels too.
    let mut c = s.conn();
    let mut body = call(2, "probe_sleep", json!({"ms": 20000}));
    body["params"]["_meta"]["progressToken"] = json!(1);
    let mut h = modern_headers("tools/call", Some("probe_sleep"));
    h.push(("content-type", "application/json"));
    c.send("POST", "/mcp", &h, body.to_string().as_bytes());
    let mut stream = c.stream();
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let first = stream.next().unwrap().json();
    check(true, "tools/call", &first);
    assert_eq!(first["method"], "notifications/progress");
    stream.close();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = stats(&s);
        if st["cancelled"] == 2 {
            assert_eq!(st, json!({"started": 2, "completed": 0, "cancelled": 2}));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the streamed call was not cancelled: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn legacy_and_modern_share_the_endpoint() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    // A modern request carrying a legacy session id is still modern.
    let mut h = modern_headers("tools/call", Some("add"));
    h.push(("mcp-session-id", &session.id));
    let r = s.post(&h, &call(1, "add", json!({"a": 1, "b": 1})));
    assert_eq!(
        r.checked(true, "tools/call")["result"]["resultType"],
        "complete"
    );
    let r = session.post(
        &s,
        &request(
            2,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        ),
    );
    let v = r.checked(false, "tools/call");
    assert!(
        v["result"].get("resultType").is_none(),
        "legacy results have no resultType: {v}"
    );
}
