//! Streamable HTTP: Origin and Host checks, bearer tokens and the Protected Resource
//! Metadata, size limits, and graceful shutdown.

use crate::http_client::*;
use serde_json::{Value, json};
use std::time::Duration;

fn list() -> Value {
    modern_request(1, "tools/list", json!({}))
}

fn list_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = modern_headers("tools/list", None);
    h.extend_from_slice(extra);
    h
}

#[test]
fn origin_and_host_are_checked() {
    let s = HttpServer::start(&[
        "--allowed-origin",
        "https://app.example",
        "--allowed-host",
        "mcp.example",
    ]);
    let r = s.post(
        &list_headers(&[("origin", "https://evil.example")]),
        &list(),
    );
    assert_eq!(r.status, 403, "foreign Origin");
    check(true, "tools/list", &r.json());
    let r = s.post(&list_headers(&[("origin", "null")]), &list());
    assert_eq!(r.status, 403, "opaque Origin");
    for ok in [
        "http://localhost:5173",
        "http://127.0.0.1:9",
        "https://app.example",
    ] {
        let r = s.post(&list_headers(&[("origin", ok)]), &list());
        assert_eq!(r.status, 200, "{ok}");
        assert_eq!(r.header("access-control-allow-origin"), Some(ok));
    }
    let r = s.post(&list_headers(&[("host", "evil.example:80")]), &list());
    assert_eq!(r.status, 403, "foreign Host (DNS rebinding)");
    let r = s.post(&list_headers(&[("host", "mcp.example:8443")]), &list());
    assert_eq!(r.status, 200, "allowed Host");
    let r = s.post(&list_headers(&[("host", "localhost")]), &list());
    assert_eq!(r.status, 200);
    // The checks apply to every method, GET and DELETE included.
    let r = s.send(
        "GET",
        "/mcp",
        &[
            ("origin", "https://evil.example"),
            ("accept", "text/event-stream"),
        ],
        b"",
    );
    assert_eq!(r.status, 403);
    let r = s.send("DELETE", "/mcp", &[("host", "evil.example")], b"");
    assert_eq!(r.status, 403);
    // A CORS preflight from an allowed origin.
    let r = s.send(
        "OPTIONS",
        "/mcp",
        &[
            ("origin", "http://localhost:3000"),
            ("access-control-request-method", "POST"),
        ],
        b"",
    );
    assert_eq!(r.status, 204);
    assert!(
        r.header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
}

#[test]
fn bearer_tokens_and_resource_metadata() {
    let s = HttpServer::start_with_env(
        &[
            "--auth-token-env",
            "TW_TEST_TOKEN",
            "--authorization-server",
            "https://auth.example",
        ],
        &[("TW_TEST_TOKEN", "s3cret-token")],
    );
    let metadata = format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr);
    let r = s.post(&list_headers(&[]), &list());
    assert_eq!(r.status, 401);
    check(true, "tools/list", &r.json());
    assert_eq!(
        r.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata}\"").as_str())
    );
    let r = s.post(&list_headers(&[("authorization", "Bearer wrong")]), &list());
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    let r = s.send(
        "POST",
        "/mcp?access_token=s3cret-token",
        &list_headers(&[("content-type", "application/json")]),
        list().to_string().as_bytes(),
    );
    assert_eq!(
        r.status, 401,
        "tokens count only in the Authorization header"
    );
    let r = s.post(
        &list_headers(&[("authorization", "Bearer s3cret-token")]),
        &list(),
    );
    assert_eq!(r.status, 200);
    r.checked(true, "tools/list");
    // The metadata needs no token.
    let r = s.send("GET", "/.well-known/oauth-protected-resource/mcp", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"resource": s.url(), "authorization_servers": ["https://auth.example"], "bearer_methods_supported": ["header"]})
    );
    // Legacy clients too.
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(s.post(&[], &init).status, 401);
    assert_eq!(
        s.post(&[("authorization", "Bearer s3cret-token")], &init)
            .status,
        200
    );
}

#[test]
fn missing_token_variable_is_a_usage_error() {
    let out = std::process::Command::new(crate::util::bin())
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token-env",
            "TW_SURELY_UNSET_VARIABLE",
        ])
        .env_remove("TW_SURELY_UNSET_VARIABLE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TW_SURELY_UNSET_VARIABLE"));
}

#[test]
fn limits() {
    let s = HttpServer::start(&["--max-body-bytes", "2000"]);
    let mut big = list();
    big["params"]["padding"] = json!("x".repeat(3000));
    let r = s.post(&list_headers(&[]), &big);
    assert_eq!(r.status, 413, "body over the limit");
    check(true, "tools/list", &r.json());
    assert_eq!(r.json()["id"], big["id"], "the refusal names the request");
    let names: Vec<String> = (0..150).map(|i| format!("x-extra-{i}")).collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    let r = s.post(&list_headers(&many), &list());
    assert_eq!(r.status, 431, "more headers than allowed");
    let r = s.send(
        "POST",
        "/mcp",
        &list_headers(&[("content-type", "text/plain")]),
        list().to_string().as_bytes(),
    );
    assert_eq!(r.status, 415);
    let r = s.send(
        "POST",
        "/mcp",
        &list_headers(&[("accept", "text/html")]),
        list().to_string().as_bytes(),
    );
    assert_eq!(r.status, 406);
    let r = s.send("GET", "/elsewhere", &[], b"");
    assert_eq!(r.status, 404);
    let r = s.send("PUT", "/mcp", &[], b"x");
    assert_eq!(r.status, 405);
    // Still serving.
    assert_eq!(s.post(&list_headers(&[]), &list()).status, 200);
}

/// A chunked body that grows past the limit: the refusal still goes back to the id its first
/// bytes carry.
#[test]
fn an_oversized_chunked_body_is_refused_with_its_id() {
    use std::io::{Read, Write};
    let s = HttpServer::start(&["--max-body-bytes", "2000"]);
    let mut conn = std::net::TcpStream::connect(s.addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/list\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        s.addr
    );
    conn.write_all(head.as_bytes()).unwrap();
    let start = br#"{"jsonrpc":"2.0","id":"chunky","method":"tools/list","params":{"pad":""#;
    conn.write_all(format!("{:x}\r\n", start.len()).as_bytes())
        .unwrap();
    conn.write_all(start).unwrap();
    conn.write_all(b"\r\n").unwrap();
    // The server may answer and close as soon as the body passes the limit, before the
    // rest is written: a write that finds the connection closed ends the writing.
    let pad = [b'x'; 1000];
    for _ in 0..4 {
        let chunk = [format!("{:x}\r\n", pad.len()).as_bytes(), &pad, b"\r\n"].concat();
        if conn.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = conn.write_all(b"0\r\n\r\n");
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let v: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["id"], "chunky", "{v}");
}

#[test]
fn sigterm_finishes_calls_in_flight() {
    let mut s = HttpServer::start(&[]);
    // A legacy session with its GET stream open, and a legacy call in flight.
    let session = LegacySession::open(&s, LEGACY);
    let mut get = session.get_stream(&s, None);
    get.next().unwrap();
    let mut legacy = session.post_stream(
        &s,
        &request(
            2,
            "tools/call",
            json!({"name": "probe_sleep", "arguments": {"ms": 600}, "_meta": {"progressToken": 1}}),
        ),
    );
    assert_eq!(legacy.status, 200);
    let mut c = s.conn();
    let body = modern_request(
        1,
        "tools/call",
        json!({"name": "probe_sleep", "arguments": {"ms": 700}}),
    );
    let mut h = modern_headers("tools/call", Some("probe_sleep"));
    h.push(("content-type", "application/json"));
    c.send("POST", "/mcp", &h, body.to_string().as_bytes());
    std::thread::sleep(Duration::from_millis(200));
    s.terminate();
    let r = c.response();
    assert_eq!(r.status, 200, "the call in flight is answered");
    assert_eq!(
        r.checked(true, "tools/call")["result"]["structuredContent"]["slept_ms"],
        700
    );
    let mut legacy_reply = None;
    while let Some((_, m)) = legacy.next_message() {
        check(false, "tools/call", &m);
        if m.get("result").is_some() {
            legacy_reply = Some(m);
        }
    }
    assert_eq!(
        legacy_reply.expect("the legacy call is answered")["result"]["structuredContent"]["slept_ms"],
        600
    );
    assert!(get.next().is_none(), "the GET stream ends at shutdown");
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("the server exits after SIGTERM");
    assert!(st.success(), "{st:?}");
    assert!(
        std::net::TcpStream::connect(s.addr).is_err(),
        "no longer listening"
    );
}

/// A POST of `tools/list` with exactly these headers (nothing added but Content-Length),
/// written by hand so that duplicates and the request target go on the wire as given.
fn raw_list(s: &HttpServer, target: &str, extra: &[(&str, &str)]) -> Resp {
    let mut h = list_headers(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    h.extend_from_slice(extra);
    let mut c = s.conn();
    c.send("POST", target, &h, list().to_string().as_bytes());
    c.response()
}

fn message(r: &Resp) -> String {
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn more_than_one_host_is_a_bad_request() {
    let s = HttpServer::start(&[]);
    let own = s.addr.to_string();
    let own = own.as_str();
    // RFC 9112 §3.2: 400 for more than one Host, whichever comes first.
    for hosts in [
        [own, "evil.example"],
        ["evil.example", own],
        [own, own],
        ["localhost", own],
    ] {
        let r = raw_list(&s, "/mcp", &[("host", hosts[0]), ("host", hosts[1])]);
        assert_eq!(r.status, 400, "{hosts:?}: {}", r.text());
        assert!(message(&r).contains("more than one Host"), "{}", r.text());
        check(true, "tools/list", &r.json());
    }
    // One Host is fine.
    assert_eq!(raw_list(&s, "/mcp", &[("host", own)]).status, 200);
}

#[test]
fn more_than_one_origin_is_forbidden() {
    let s = HttpServer::start(&[]);
    let own = format!("http://{}", s.addr);
    let own = own.as_str();
    for origins in [
        &[own, "https://evil.example"][..],
        &[own, own],
        &["https://evil.example", own],
    ] {
        let h: Vec<(&str, &str)> = origins.iter().map(|o| ("origin", *o)).collect();
        let r = raw_list(&s, "/mcp", &h);
        assert_eq!(r.status, 403, "{origins:?}: {}", r.text());
        assert!(message(&r).contains("more than one Origin"), "{}", r.text());
        assert_eq!(r.header("access-control-allow-origin"), None);
    }
    // One header holding a list is not one origin either.
    for list in [
        format!("{own}, https://evil.example"),
        format!("{own} https://evil.example"),
        format!("{own},{own}"),
    ] {
        let r = raw_list(&s, "/mcp", &[("origin", &list)]);
        assert_eq!(r.status, 403, "{list}: {}", r.text());
    }
    let r = raw_list(&s, "/mcp", &[("origin", own)]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), Some(own));
}

#[test]
fn absolute_form_targets_are_checked_like_host() {
    let s = HttpServer::start(&[]);
    let own = s.addr.to_string();
    // A foreign authority in the request line, with a local Host: meant for another server.
    let r = raw_list(&s, "http://evil.example/mcp", &[]);
    assert_eq!(r.status, 421, "{}", r.text());
    assert!(
        message(&r).contains("names a host this server does not serve"),
        "{}",
        r.text()
    );
    check(true, "tools/list", &r.json());
    let r = raw_list(&s, "http://evil.example:80/mcp", &[("host", &own)]);
    assert_eq!(r.status, 421);
    let r = raw_list(&s, "http://user@localhost/mcp", &[]);
    assert_eq!(r.status, 421, "userinfo is not a host name");
    // An allowed authority that is not the Host header: refused, whichever is "right".
    let r = raw_list(&s, "http://localhost:1/mcp", &[("host", &own)]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(message(&r).contains("differ"), "{}", r.text());
    // The same authority in both: served.
    let r = raw_list(&s, &format!("http://{own}/mcp"), &[("host", &own)]);
    assert_eq!(r.status, 200, "{}", r.text());
    r.checked(true, "tools/list");
    // `--allowed-host '*'` lifts the name check, not the agreement with Host.
    let any = HttpServer::start(&["--allowed-host", "*"]);
    let r = raw_list(
        &any,
        "http://elsewhere.example/mcp",
        &[("host", "elsewhere.example")],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = raw_list(&any, "http://elsewhere.example/mcp", &[]);
    assert_eq!(r.status, 400, "{}", r.text());
}

#[test]
fn a_token_nobody_can_send_is_a_usage_error() {
    for token in ["    ", " ", "\t \t", "", " s3cret", "s3cret "] {
        let mut child = std::process::Command::new(crate::util::bin())
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--auth-token-env",
                "TW_TEST_BLANK_TOKEN",
            ])
            .env("TW_TEST_BLANK_TOKEN", token)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{token:?}: the server started with a token no client can send");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{token:?}: {stderr}");
        assert!(
            stderr.contains("TW_TEST_BLANK_TOKEN"),
            "{token:?}: {stderr}"
        );
        assert!(!stderr.contains("listening"), "{token:?}: {stderr}");
    }
}
