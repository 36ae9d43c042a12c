//! Legacy sessions shared by replicas through Redis (`--session-store redis://…`): real
//! `toolwright serve --http` processes and a real `redis-server` of the test's own.
//!
//! They need `redis-server` (scripts/test.sh installs it); under `CI` they must run,
//! elsewhere they are skipped, with a message, when it is missing.

#[path = "../../../sessions-redis/tests/support/redis_server.rs"]
mod redis_server;

use crate::http_client::{HttpServer, LEGACY, LegacySession, Stream, notification, request};
use redis_server::RedisServer;
use serde_json::{Value, json};

fn replica(redis: &RedisServer) -> HttpServer {
    HttpServer::start(&[
        "--fixtures",
        "conformance",
        "--session-store",
        &redis.url(),
        "--session-store-timeout",
        "500",
    ])
}

fn call(id: i64, name: &str, args: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": args, "_meta": {"progressToken": id}}),
    )
}

/// Messages of a stream until the reply to `id` (which is included); priming events skipped.
fn until_reply(s: &mut Stream, id: i64) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while let Some((eid, v)) = s.next_message() {
        let done = v["id"] == id && v.get("method").is_none();
        out.push((eid.expect("every event of a session has an id"), v));
        if done {
            return out;
        }
    }
    panic!("the stream ended before the reply to {id}: {out:?}");
}

#[test]
fn any_replica_serves_any_request_of_a_session() {
    if !redis_server::available() {
        return;
    }
    let redis = RedisServer::start();
    let (a, b) = (replica(&redis), replica(&redis));
    let caps = json!({"elicitation": {}});
    // Opened on A; `notifications/initialized` goes to B.
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = a.post(&[], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    let session = LegacySession {
        id: r.header("mcp-session-id").expect("a session id").to_owned(),
        version: LEGACY.to_owned(),
    };
    let r = session.post(&b, &notification("notifications/initialized"));
    assert_eq!(r.status, 202, "{}", r.text());

    // B holds the GET stream; a tool-list change on A reaches it through Redis.
    let mut get = session.get_stream(&b, None);
    assert_eq!(get.status, 200);
    let r = session.post(&a, &call(2, "probe_toggle", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    let (eid, v) = get.next_message().expect("list_changed on B's GET stream");
    assert_eq!(v["method"], "notifications/tools/list_changed", "{v}");
    assert_eq!(eid.as_deref(), Some("0-1"));

    // The log level set on A holds for a call on B: no log messages, progress only.
    let r = session.post(
        &a,
        &request(3, "logging/setLevel", json!({"level": "error"})),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mut s = session.post_stream(&b, &call(4, "probe_progress", json!({"steps": 3})));
    let got = until_reply(&mut s, 4);
    let methods: Vec<&str> = got
        .iter()
        .filter_map(|(_, v)| v["method"].as_str())
        .collect();
    assert_eq!(methods, ["notifications/progress"; 3], "{got:?}");
    // That stream resumes on A after its first event, with nothing lost or repeated.
    let first = got[0].0.clone();
    let mut resumed = session.get_stream(&a, Some(&first));
    assert_eq!(resumed.status, 200);
    let again = until_reply(&mut resumed, 4);
    assert_eq!(again, got[1..].to_vec());

    // An elicitation sent by A's call is answered on B, and A's call finishes.
    let mut s = session.post_stream(&a, &call(5, "test_elicitation", json!({"message": "hi"})));
    let (_, ask) = s.next_message().expect("the elicitation request");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"username": "u", "email": "u@example.com"}}});
    let r = session.post(&b, &answer);
    assert_eq!(r.status, 202, "{}", r.text());
    let rest = until_reply(&mut s, 5);
    let text = rest.last().unwrap().1["result"]["content"][0]["text"].clone();
    assert!(
        text.as_str().is_some_and(|t| t.contains("action=accept")),
        "{rest:?}"
    );

    // DELETE on B ends the session on A too (and A's copy of the GET stream's feed).
    let r = b.send("DELETE", "/mcp", &session.headers(), b"");
    assert_eq!(r.status, 204);
    let r = session.post(&a, &request(6, "ping", json!({})));
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(
        get.rest().iter().all(|e| e.data.is_empty()),
        "the GET stream ends"
    );
}

#[test]
fn a_store_that_is_gone_means_503_for_sessions_only_and_recovers() {
    if !redis_server::available() {
        return;
    }
    let mut redis = RedisServer::start();
    let a = replica(&redis);
    let session = LegacySession::open(&a, LEGACY);
    redis.stop();
    let r = session.post(&a, &request(2, "tools/list", json!({})));
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.text().contains("session store"), "{}", r.text());
    let init = request(
        3,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(a.post(&[], &init).status, 503);
    // A modern request needs no session: unaffected.
    let modern = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}});
    let r = a.post(
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        &modern,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // Redis is back (empty: no persistence): the old session is unknown, new ones work.
    redis.restart();
    let mut status = 0;
    for _ in 0..100 {
        status = session.post(&a, &request(5, "ping", json!({}))).status;
        if status != 503 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status, 404);
    let fresh = LegacySession::open(&a, LEGACY);
    let r = fresh.post(&a, &request(6, "ping", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_store_that_hangs_means_503_within_the_timeout_and_recovers() {
    if !redis_server::available() {
        return;
    }
    let redis = RedisServer::start();
    let a = replica(&redis);
    let session = LegacySession::open(&a, LEGACY);
    redis.pause();
    let r = session.post(&a, &request(2, "ping", json!({})));
    redis.resume();
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("session store"), "{}", r.text());
    let mut status = 0;
    for _ in 0..100 {
        status = session.post(&a, &request(3, "ping", json!({}))).status;
        if status != 503 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status, 200, "the session survived the pause");
}

#[test]
fn session_store_urls_are_checked() {
    let out = std::process::Command::new(crate::util::bin())
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--session-store",
            "http://x",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--session-store"), "{err}");
}

/// Modern `_meta` declaring the Tasks extension.
fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": crate::util::MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
    })
}

/// A modern request declaring the Tasks extension; its reply.
fn with_tasks(s: &HttpServer, method: &str, mut params: Value, name: &str) -> Value {
    params["_meta"] = tasks_meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    s.post(
        &crate::http_client::modern_headers(method, Some(name)),
        &body,
    )
    .json()
}

#[test]
fn a_task_made_on_one_replica_is_read_on_another() {
    if !redis_server::available() {
        return;
    }
    let redis = RedisServer::start();
    let (a, b) = (replica(&redis), replica(&redis));
    let args = json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "shared"}});
    let created = with_tasks(&a, "tools/call", args, "slow_compute");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = Vec::new();
    let task = loop {
        let v = with_tasks(&b, "tasks/get", json!({"taskId": id}), &id);
        let task = v["result"].clone();
        if task["taskId"] == id.as_str() {
            seen.push(task["status"].clone());
            if task["status"] == "completed" {
                break task;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "B never saw it end: {v} {seen:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(task["resultType"], "complete");
    let text = task["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("shared:"), "{task}");
    // B does not invent tasks: an id no replica made is unknown there too.
    let v = with_tasks(&b, "tasks/get", json!({"taskId": "nope"}), "nope");
    assert_eq!(v["error"]["code"], -32602, "{v}");
}
