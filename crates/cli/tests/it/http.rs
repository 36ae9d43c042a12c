//! Streamable HTTP, legacy era (2025-03-26 … 2025-11-25): sessions, GET streams,
//! resumption, batches, stateless mode. Every body is checked against the official schema.

use crate::http_client::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn add(id: i64, a: i64, b: i64) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "add", "arguments": {"a": a, "b": b}}),
    )
}

#[test]
fn session_lifecycle() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    assert_eq!(session.id.len(), 32);
    assert!(session.id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let other = LegacySession::open(&s, LEGACY);
    assert_ne!(session.id, other.id, "every initialize mints a new id");

    let r = session.post(&s, &request(2, "tools/list", json!({})));
    assert_eq!(r.status, 200);
    let v = r.checked(false, "tools/list");
    assert!(
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "add")
    );

    let r = session.post(&s, &add(3, 1, 2));
    assert_eq!(r.status, 200);
    assert_eq!(
        r.checked(false, "tools/call")["result"]["structuredContent"]["result"],
        3
    );

    let r = session.post(&s, &request(4, "ping", json!({})));
    assert_eq!(r.checked(false, "ping")["result"], json!({}));

    let r = s.send("DELETE", "/mcp", &session.headers(), b"");
    assert_eq!(r.status, 204);
    let r = session.post(&s, &request(5, "tools/list", json!({})));
    assert_eq!(r.status, 404, "a deleted session is unknown");
    check(false, "tools/list", &r.json());
    assert_eq!(
        s.send("DELETE", "/mcp", &session.headers(), b"").status,
        404
    );
    // The other session is untouched.
    assert_eq!(other.post(&s, &add(6, 2, 2)).status, 200);
}

#[test]
fn missing_and_unknown_sessions() {
    let s = HttpServer::start(&[]);
    let r = s.post(&[], &request(1, "tools/list", json!({})));
    assert_eq!(
        r.status, 400,
        "no Mcp-Session-Id on a non-initialize request"
    );
    check(false, "tools/list", &r.json());
    let r = s.post(
        &[("mcp-session-id", "0123456789abcdef0123456789abcdef")],
        &request(1, "tools/list", json!({})),
    );
    assert_eq!(r.status, 404, "unknown session");
    assert_eq!(r.json()["id"], 1);
    let r = s.send("GET", "/mcp", &[("accept", "text/event-stream")], b"");
    assert_eq!(r.status, 400);
    let r = s.send(
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", "nope")],
        b"",
    );
    assert_eq!(r.status, 404);
    assert_eq!(s.send("DELETE", "/mcp", &[], b"").status, 400);
}

#[test]
fn protocol_version_header() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, "2025-06-18");
    let bad = s.post(
        &[
            ("mcp-session-id", &session.id),
            ("mcp-protocol-version", "1999-01-01"),
        ],
        &request(2, "tools/list", json!({})),
    );
    assert_eq!(bad.status, 400, "unsupported MCP-Protocol-Version");
    let v = bad.json();
    check(false, "tools/list", &v);
    assert_eq!(v["error"]["data"]["requested"], "1999-01-01");
    // Absent: 2025-03-26 is assumed, and the request is served.
    let r = s.post(
        &[("mcp-session-id", &session.id)],
        &request(3, "tools/list", json!({})),
    );
    assert_eq!(r.status, 200);
    r.checked(false, "tools/list");
}

#[test]
fn batches_under_2025_03_26() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, "2025-03-26");
    let batch = json!([
        add(10, 1, 1),
        request(
            11,
            "tools/call",
            json!({"name": "multiply", "arguments": {"a": 3, "b": 4}})
        ),
        notification("notifications/roots/list_changed")
    ]);
    let r = session.post(&s, &batch);
    assert_eq!(r.status, 200);
    let v = r.checked(false, "tools/call");
    let items = v.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 2, "one response per request: {v}");
    // 2025-03-26 has no structuredContent: the result travels as text.
    let by_id = |id: i64| {
        items.iter().find(|m| m["id"] == id).unwrap()["result"]["content"][0]["text"].clone()
    };
    assert_eq!(by_id(10), "{\"result\":2}");
    assert_eq!(by_id(11), "{\"result\":12}");
    // Only notifications: 202.
    let r = session.post(
        &s,
        &json!([notification("notifications/roots/list_changed")]),
    );
    assert_eq!(r.status, 202);
    // A later version refuses batches.
    let newer = LegacySession::open(&s, LEGACY);
    let r = newer.post(&s, &json!([add(1, 1, 1)]));
    assert_eq!(r.json()["error"]["code"], -32600);
}

#[test]
fn requests_that_notify_get_an_event_stream() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let call = request(
        7,
        "tools/call",
        json!({"name": "probe_progress", "arguments": {"steps": 3, "delay_ms": 5}, "_meta": {"progressToken": "p1"}}),
    );
    let r = session.post(&s, &call);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    let events = r.events();
    assert!(
        events[0].data.is_empty() && events[0].id.is_some(),
        "2025-11-25 streams start with a priming event"
    );
    let messages: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(Event::json)
        .collect();
    for m in &messages {
        check(false, "tools/call", m);
    }
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3);
    assert_eq!(
        progress[2]["params"],
        json!({"progressToken": "p1", "progress": 3.0, "total": 3.0, "message": "step 3 of 3"})
    );
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count(),
        3
    );
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["structuredContent"]["steps"], 3);
    // Ids are unique, of the form <stream>-<n>, increasing.
    let ids: Vec<&str> = events
        .iter()
        .map(|e| e.id.as_deref().expect("every event has an id"))
        .collect();
    let stream = ids[0].split('-').next().unwrap();
    let nums: Vec<u64> = ids
        .iter()
        .map(|i| i.split_once('-').unwrap())
        .map(|(st, n)| {
            assert_eq!(st, stream);
            n.parse().unwrap()
        })
        .collect();
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    // A call that notifies nothing is plain JSON.
    let r = session.post(
        &s,
        &request(
            8,
            "tools/call",
            json!({"name": "probe_sleep", "arguments": {"ms": 20}}),
        ),
    );
    assert_eq!(
        r.checked(false, "tools/call")["result"]["structuredContent"]["slept_ms"],
        20
    );
}

#[test]
fn get_stream_carries_list_changed_and_is_single() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let mut get = session.get_stream(&s, None);
    assert_eq!(get.status, 200);
    assert_eq!(get.header("content-type"), Some("text/event-stream"));
    let priming = get.next().unwrap();
    assert!(
        priming.data.is_empty() && priming.id.as_deref() == Some("0-0"),
        "{priming:?}"
    );

    let mut again = s.conn();
    let mut h = session.headers();
    h.push(("accept", "text/event-stream"));
    again.send("GET", "/mcp", &h, b"");
    assert_eq!(again.response().status, 409, "one GET stream per session");

    let r = session.post(
        &s,
        &request(
            2,
            "tools/call",
            json!({"name": "probe_toggle", "arguments": {}}),
        ),
    );
    assert_eq!(
        r.checked(false, "tools/call")["result"]["structuredContent"]["registered"],
        true
    );
    let (id, msg) = get.next_message().expect("list_changed on the GET stream");
    check(false, "", &msg);
    assert_eq!(msg["method"], "notifications/tools/list_changed");
    assert_eq!(id.as_deref(), Some("0-1"));
    let r = session.post(&s, &request(3, "tools/list", json!({})));
    assert!(
        r.checked(false, "tools/list")["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "probe_extra")
    );

    // Without Accept: text/event-stream the GET is refused.
    assert_eq!(s.send("GET", "/mcp", &session.headers(), b"").status, 406);
    // DELETE ends the stream.
    assert_eq!(
        s.send("DELETE", "/mcp", &session.headers(), b"").status,
        204
    );
    assert!(get.next().is_none(), "the GET stream ends with its session");
}

#[test]
fn last_event_id_replays_what_was_missed() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let toggle = |id: i64| {
        let r = session.post(
            &s,
            &request(
                id,
                "tools/call",
                json!({"name": "probe_toggle", "arguments": {}}),
            ),
        );
        assert_eq!(r.status, 200);
    };
    let mut get = session.get_stream(&s, None);
    get.next().unwrap(); // priming
    toggle(2);
    let (first, _) = get.next_message().unwrap();
    get.close();
    // Two changes while no stream is open.
    toggle(3);
    toggle(4);
    let mut resumed = session.get_stream(&s, first.as_deref());
    assert_eq!(resumed.status, 200);
    let priming = resumed.next().unwrap();
    assert_eq!(
        priming.id, first,
        "the priming event names the resume point"
    );
    let (id2, m2) = resumed.next_message().unwrap();
    let (id3, m3) = resumed.next_message().unwrap();
    check(false, "", &m2);
    check(false, "", &m3);
    assert_eq!((id2.as_deref(), id3.as_deref()), (Some("0-2"), Some("0-3")));
    resumed.close();

    // A POST stream cut short resumes too: the call keeps running (disconnect is not a
    // cancel) and its remaining events, reply included, are replayed.
    let call = request(
        9,
        "tools/call",
        json!({"name": "probe_progress", "arguments": {"steps": 4, "delay_ms": 100}, "_meta": {"progressToken": 1}}),
    );
    let mut post = session.post_stream(&s, &call);
    post.next().unwrap(); // priming
    let (seen, m) = post.next_message().unwrap();
    assert_eq!(m["method"], "notifications/progress");
    post.close();
    let mut resumed = session.get_stream(&s, seen.as_deref());
    let mut rest = Vec::new();
    while let Some((_, m)) = resumed.next_message() {
        check(false, "tools/call", &m);
        rest.push(m);
    }
    let reply = rest.last().expect("the reply is replayed");
    assert_eq!(reply["id"], 9);
    assert_eq!(reply["result"]["structuredContent"]["steps"], 4);
    let progress = rest
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 3, "progress 2..4 after the one seen: {rest:?}");

    let r = session.get_stream(&s, Some("99-1"));
    assert_eq!(r.status, 404, "an unknown stream cannot be replayed");
    let r = session.get_stream(&s, Some("garbage"));
    assert_eq!(r.status, 400);
}

#[test]
fn disconnect_does_not_cancel_a_legacy_call() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let mut c = s.conn();
    let mut h = session.headers();
    h.push(("content-type", "application/json"));
    let call = request(
        2,
        "tools/call",
        json!({"name": "probe_sleep", "arguments": {"ms": 300}}),
    );
    c.send("POST", "/mcp", &h, call.to_string().as_bytes());
    let stats = || {
        let r = session.post(
            &s,
            &request(
                3,
                "tools/call",
                json!({"name": "probe_stats", "arguments": {}}),
            ),
        );
        r.checked(false, "tools/call")["result"]["structuredContent"].clone()
    };
    // Closed once the call is running, then watched until it has ended one way or the other.
    let deadline = Instant::now() + Duration::from_secs(20);
    while stats()["started"] != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    c.close();
    let ended = loop {
        let st = stats();
        if st["completed"] != 0 || st["cancelled"] != 0 || Instant::now() > deadline {
            break st;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ended, json!({"started": 1, "completed": 1, "cancelled": 0}));
}

#[test]
fn server_to_client_requests_travel_on_the_post_stream() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open_with(&s, LEGACY, json!({"roots": {"listChanged": true}}));
    let mut post = session.post_stream(
        &s,
        &request(
            5,
            "tools/call",
            json!({"name": "probe_roots", "arguments": {}}),
        ),
    );
    assert_eq!(post.status, 200);
    let (_, asked) = post.next_message().expect("a request to the client");
    check(false, "", &asked);
    assert_eq!(asked["method"], "roots/list");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///tmp/project", "name": "p"}]}});
    let r = session.post(&s, &answer);
    assert_eq!(r.status, 202, "a client's response is accepted with 202");
    let (_, reply) = post.next_message().unwrap();
    check(false, "tools/call", &reply);
    assert_eq!(reply["id"], 5);
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file:///tmp/project"),
        "{reply}"
    );
    assert!(post.next().is_none(), "the stream ends after the reply");
}

#[test]
fn idle_sessions_expire() {
    let s = HttpServer::start(&["--session-idle-timeout", "1"]);
    let session = LegacySession::open(&s, LEGACY);
    assert_eq!(session.post(&s, &add(2, 1, 1)).status, 200);
    std::thread::sleep(Duration::from_millis(2600));
    let r = session.post(&s, &add(3, 1, 1));
    assert_eq!(r.status, 404, "an expired session is unknown");
}

#[test]
fn session_and_stream_caps() {
    let s = HttpServer::start(&["--max-sessions", "2", "--max-get-streams", "1"]);
    let a = LegacySession::open(&s, LEGACY);
    let b = LegacySession::open(&s, LEGACY);
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&[], &init);
    assert_eq!(r.status, 503, "no room for a third session");
    check(false, "initialize", &r.json());
    let mut get = a.get_stream(&s, None);
    assert_eq!(get.status, 200);
    get.next().unwrap();
    let refused = b.get_stream(&s, None);
    assert_eq!(refused.status, 503, "the only GET stream slot is taken");
    get.close();
    // Room again once a session ends.
    assert_eq!(s.send("DELETE", "/mcp", &a.headers(), b"").status, 204);
    assert_eq!(s.post(&[], &init).status, 200);
}

#[test]
fn stateless_mode_needs_no_session() {
    let s = HttpServer::start(&["--stateless"]);
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&[], &init);
    assert_eq!(r.status, 200);
    r.checked(false, "initialize");
    assert_eq!(r.header("mcp-session-id"), None, "stateless: no session id");
    let h = [("mcp-protocol-version", LEGACY)];
    let r = s.post(&h, &request(2, "tools/list", json!({})));
    assert_eq!(r.status, 200);
    r.checked(false, "tools/list");
    let r = s.post(&h, &add(3, 20, 22));
    assert_eq!(
        r.checked(false, "tools/call")["result"]["structuredContent"]["result"],
        42
    );
    // An old client without the header: 2025-03-26, no structuredContent in that version.
    let r = s.post(&[], &add(4, 1, 1));
    let v = r.checked(false, "tools/call");
    assert!(v["result"].get("structuredContent").is_none(), "{v}");
    // Streams still work within one request.
    let r = s.post(&h, &request(5, "tools/call", json!({"name": "probe_progress", "arguments": {"steps": 2}, "_meta": {"progressToken": 9}})));
    let events = r.events();
    assert!(
        events.iter().all(|e| e.id.is_none()),
        "no resumable ids without sessions"
    );
    assert_eq!(
        events.last().unwrap().json()["result"]["structuredContent"]["steps"],
        2
    );
    // Server-to-client requests are unavailable: the tool says so at once.
    let r = s.post(
        &h,
        &request(
            6,
            "tools/call",
            json!({"name": "probe_roots", "arguments": {}}),
        ),
    );
    assert_eq!(r.checked(false, "tools/call")["result"]["isError"], true);
    assert_eq!(
        s.send("GET", "/mcp", &[("accept", "text/event-stream")], b"")
            .status,
        405
    );
    assert_eq!(s.send("DELETE", "/mcp", &[], b"").status, 405);
}

/// Several serving threads, one listener each on the same port (the kernel spreads the
/// connections): one session answers on every connection, whichever thread took it, and
/// SIGTERM still ends the server cleanly. `--http-threads 0` is refused.
#[test]
fn sessions_span_serving_threads() {
    let mut s = HttpServer::start(&["--http-threads", "4"]);
    let session = LegacySession::open(&s, LEGACY);
    for i in 0..40 {
        // Every request is a new connection.
        let r = session.post(&s, &add(10 + i, i, 1));
        assert_eq!(r.status, 200);
        assert_eq!(
            r.checked(false, "tools/call")["result"]["structuredContent"]["result"],
            i + 1
        );
    }
    s.terminate();
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("the server exits after SIGTERM");
    assert!(st.success(), "{st:?}");

    let out = std::process::Command::new(crate::util::bin())
        .args(["serve", "--http", "127.0.0.1:0", "--http-threads", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--http-threads"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
