//! Streamable HTTP: replies only in a type the client's `Accept` allows, and stream budgets
//! that keep one client from starving the others.

use crate::http_client::*;
use serde_json::{Value, json};

/// POSTs `body` with exactly this `Accept` (and `extra`), on a fresh connection.
fn post_accepting(s: &HttpServer, accept: &str, extra: &[(&str, &str)], body: &Value) -> Resp {
    let mut h = vec![("content-type", "application/json"), ("accept", accept)];
    h.extend_from_slice(extra);
    s.send("POST", "/mcp", &h, body.to_string().as_bytes())
}

fn modern_call(id: i64, name: &str, arguments: Value, progress: bool) -> Value {
    let mut body = modern_request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    if progress {
        body["params"]["_meta"]["progressToken"] = json!(id);
    }
    body
}

fn legacy_call(id: i64, name: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments, "_meta": {"progressToken": id}}),
    )
}

/// The only message of a complete event stream.
fn only_event(r: &Resp) -> Value {
    let events: Vec<Event> = r
        .events()
        .into_iter()
        .filter(|e| !e.data.is_empty())
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    events[0].json()
}

#[test]
fn event_stream_only_clients_get_event_streams() {
    let s = HttpServer::start(&[]);
    let h = modern_headers("tools/list", None);
    // A reply that comes first still travels as an event.
    let r = post_accepting(
        &s,
        "text/event-stream",
        &h,
        &modern_request(1, "tools/list", json!({})),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let reply = only_event(&r);
    check(true, "tools/list", &reply);
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    // Weight 0 takes JSON away.
    let r = post_accepting(
        &s,
        "application/json;q=0, text/event-stream",
        &h,
        &modern_request(2, "tools/list", json!({})),
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    // Legacy: the handshake and the calls too.
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = post_accepting(&s, "text/event-stream", &[], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    check(false, "initialize", &only_event(&r));
    let sid = r.header("mcp-session-id").expect("a session").to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    let r = post_accepting(
        &s,
        "text/*",
        &session,
        &notification("notifications/initialized"),
    );
    assert_eq!(r.status, 202);
    let r = post_accepting(
        &s,
        "text/event-stream",
        &session,
        &request(2, "tools/list", json!({})),
    );
    check(false, "tools/list", &only_event(&r));
    // Errors the protocol maps to HTTP statuses stay JSON (a modern unknown method: 404).
    let r = post_accepting(
        &s,
        "text/event-stream",
        &modern_headers("nope/nothing", None),
        &modern_request(3, "nope/nothing", json!({})),
    );
    assert_eq!(r.status, 404);
    r.checked(true, "nope/nothing");
}

#[test]
fn json_only_clients_get_json_without_progress_or_logs() {
    let s = HttpServer::start(&[]);
    let steps = json!({"steps": 3, "delay_ms": 20});
    let h = modern_headers("tools/call", Some("probe_progress"));
    let mut body = modern_call(1, "probe_progress", steps.clone(), true);
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    // Both allowed: the progress makes it a stream.
    let r = post_accepting(&s, "application/json, text/event-stream", &h, &body);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream"),
        "{}",
        r.text()
    );
    // JSON only: the reply alone, as JSON; progress and logs are dropped.
    for accept in [
        "application/json",
        "application/*",
        "application/json, text/event-stream;q=0",
        "*/*, text/*;q=0",
    ] {
        let r = post_accepting(&s, accept, &h, &body);
        assert_eq!(r.status, 200, "{accept}: {}", r.text());
        let v = r.checked(true, "tools/call");
        assert_eq!(
            v["result"]["structuredContent"]["steps"], 3,
            "{accept}: {v}"
        );
    }
    // Legacy sessions too.
    let session = LegacySession::open(&s, LEGACY);
    let mut h = session.headers();
    h.push(("accept", "application/json"));
    h.push(("content-type", "application/json"));
    let r = s.send(
        "POST",
        "/mcp",
        &h,
        legacy_call(2, "probe_progress", steps)
            .to_string()
            .as_bytes(),
    );
    let v = r.checked(false, "tools/call");
    assert_eq!(v["result"]["structuredContent"]["steps"], 3, "{v}");
}

#[test]
fn json_only_clients_cannot_be_sent_requests() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open_with(&s, LEGACY, json!({"roots": {}}));
    let mut h = session.headers();
    h.push(("accept", "application/json"));
    h.push(("content-type", "application/json"));
    let started = std::time::Instant::now();
    let r = s.send(
        "POST",
        "/mcp",
        &h,
        request(
            2,
            "tools/call",
            json!({"name": "probe_roots", "arguments": {}}),
        )
        .to_string()
        .as_bytes(),
    );
    // At once, as JSON: the tool's roots/list could not reach the client.
    let v = r.checked(false, "tools/call");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("text/event-stream"), "{text}");
}

#[test]
fn nothing_acceptable_is_406_naming_the_types() {
    let s = HttpServer::start(&[]);
    let h = modern_headers("tools/list", None);
    for accept in [
        "text/html",
        "*/*;q=0",
        "application/json;q=0, text/event-stream;q=0",
        "application/xml, image/*",
    ] {
        let r = post_accepting(&s, accept, &h, &modern_request(1, "tools/list", json!({})));
        assert_eq!(r.status, 406, "{accept}: {}", r.text());
        let e = &r.json()["error"];
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains("application/json or text/event-stream") && m.contains("allows neither"),
            "{m}"
        );
        assert_eq!(
            e["data"]["acceptable"],
            json!(["application/json", "text/event-stream"])
        );
    }
    // A GET is an event stream or nothing.
    let session = LegacySession::open(&s, LEGACY);
    for accept in [
        "application/json",
        "text/event-stream;q=0",
        "*/*;q=0",
        "text/*;q=0",
    ] {
        let mut h = session.headers();
        h.push(("accept", accept));
        let r = s.send("GET", "/mcp", &h, b"");
        assert_eq!(r.status, 406, "{accept}: {}", r.text());
        let e = &r.json()["error"];
        assert!(e["message"].as_str().unwrap().contains("text/event-stream"));
        assert_eq!(e["data"]["acceptable"], json!(["text/event-stream"]));
    }
    let mut h = session.headers();
    h.push(("accept", "*/*"));
    let mut c = s.conn();
    c.send("GET", "/mcp", &h, b"");
    let get = c.stream();
    assert_eq!(get.status, 200);
    assert_eq!(get.header("content-type"), Some("text/event-stream"));
}

/// Opens a legacy session (from the default address), then asks for its GET stream from
/// `source`; the connection is left at the response.
fn open_get(s: &HttpServer, source: &str) -> Conn {
    let session = LegacySession::open(s, LEGACY);
    let mut c = s.conn_from(source);
    let mut h = session.headers();
    h.push(("accept", "text/event-stream"));
    c.send("GET", "/mcp", &h, b"");
    c
}

/// A GET stream from `source` that must be granted.
fn idle_get_stream(s: &HttpServer, source: &str) -> Stream {
    let mut get = open_get(s, source).stream();
    assert_eq!(get.status, 200, "a GET stream from {source}");
    get.next().expect("the priming event");
    get
}

/// A GET from `source` that must be refused with `status`, `Retry-After` and a reason.
fn refused_get(s: &HttpServer, source: &str, status: u16) -> String {
    let r = open_get(s, source).response();
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("5"));
    r.json()["error"]["message"].as_str().unwrap().to_owned()
}

/// POSTs a legacy call that sends progress first (so its reply is an event stream) from
/// `source`; the connection is left at the response.
fn streamed_call(s: &HttpServer, session: &LegacySession, source: &str, id: i64) -> Conn {
    let mut c = s.conn_from(source);
    let mut h = session.headers();
    h.push(("content-type", "application/json"));
    h.push(("accept", "application/json, text/event-stream"));
    let body = legacy_call(id, "probe_sleep", json!({"ms": 300}));
    c.send("POST", "/mcp", &h, body.to_string().as_bytes());
    c
}

/// Reads a streamed call to its end; its reply.
fn finish(c: Conn) -> Value {
    let mut stream = c.stream();
    assert_eq!(stream.status, 200);
    let mut reply = None;
    while let Some((_, m)) = stream.next_message() {
        if m.get("result").is_some() {
            reply = Some(m);
        }
    }
    reply.expect("the reply")
}

#[test]
fn idle_get_streams_leave_room_for_streamed_calls() {
    // Two reply streams in all. One client (127.0.0.2) opens a GET stream in each of many
    // cheap sessions; another client's streamed calls still get both reply streams.
    let s = HttpServer::start(&["--max-sse-streams", "2"]);
    let idle: Vec<Stream> = (0..6).map(|_| idle_get_stream(&s, "127.0.0.2")).collect();
    let session = LegacySession::open(&s, LEGACY);
    let calls: Vec<Conn> = (0..2)
        .map(|i| streamed_call(&s, &session, "127.0.0.1", 10 + i))
        .collect();
    for c in calls {
        assert_eq!(finish(c)["result"]["structuredContent"]["slept_ms"], 300);
    }
    drop(idle);
}

#[test]
fn stream_budgets_per_client_and_in_total() {
    let s = HttpServer::start(&[
        "--max-get-streams",
        "4",
        "--max-get-streams-per-client",
        "2",
        "--max-sse-streams",
        "3",
        "--max-sse-streams-per-client",
        "2",
    ]);
    let mut open: Vec<Stream> = (0..2).map(|_| idle_get_stream(&s, "127.0.0.2")).collect();
    // The first client's third GET stream: 429.
    let m = refused_get(&s, "127.0.0.2", 429);
    assert!(
        m.contains("this client already has 2 open GET streams"),
        "{m}"
    );
    // Others still get theirs, until the total is reached: 503.
    open.extend((0..2).map(|_| idle_get_stream(&s, "127.0.0.3")));
    let m = refused_get(&s, "127.0.0.4", 503);
    assert!(m.contains("too many open GET streams (4"), "{m}");
    // Reply streams: two per client, three in all, whatever the GET streams do.
    let session = LegacySession::open(&s, LEGACY);
    let mine: Vec<Conn> = (0..2)
        .map(|i| streamed_call(&s, &session, "127.0.0.2", 20 + i))
        .collect();
    let mut mine: Vec<Stream> = mine.into_iter().map(Conn::stream).collect();
    for m in &mut mine {
        assert_eq!(m.status, 200);
        m.next_message().expect("progress");
    }
    let over = streamed_call(&s, &session, "127.0.0.2", 30).response();
    assert_eq!(
        over.status,
        429,
        "the first client's third streamed call: {}",
        over.text()
    );
    assert_eq!(over.header("retry-after"), Some("5"));
    assert_eq!(over.json()["id"], 30);
    let theirs = streamed_call(&s, &session, "127.0.0.5", 31);
    assert_eq!(
        finish(theirs)["result"]["structuredContent"]["slept_ms"],
        300
    );
    for m in &mut mine {
        assert!(m.rest().iter().any(|e| e.data.contains("slept_ms")));
    }
    // A closed stream gives its room back.
    open.pop().unwrap().close();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut c = open_get(&s, "127.0.0.4");
        let (status, _) = c.head();
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(
            std::time::Instant::now() < deadline,
            "the slot never came back"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
