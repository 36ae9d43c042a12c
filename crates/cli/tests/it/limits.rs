//! `limits:` in a tool file, in one `serve --http` (counts in the process): a caller out of
//! calls is refused with a tool error and `Retry-After` while another caller still gets
//! through; a cap on calls in flight refuses the extra call of a slow tool at once; each
//! call's audit line (JSON on stderr) and its decision on `/metrics`; `X-Forwarded-For`
//! names the caller only on a connection from a `--trusted-proxy`.

use crate::auth_jwt::{Issuer, claims, es256, mint, start};
use crate::http_client::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const CONFIG: &str = r#"builtins: [add, multiply]
tools:
  - name: slow
    description: Take a while.
    inputSchema: {type: object, properties: {}}
    command: [sleep, "2"]
limits:
  default: {calls_per_minute: 2}
  tools:
    slow: {calls_per_minute: 100, concurrent: 1}
"#;

fn config() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limits.yaml");
    std::fs::write(&file, CONFIG).unwrap();
    let path = file.to_str().unwrap().to_owned();
    (dir, path)
}

/// A modern `tools/call` of `name` on `conn`, with `token` if any.
pub(crate) fn call_on(conn: &mut Conn, token: Option<&str>, name: &str, args: Value) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let extra: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    call_with(conn, &extra, name, args)
}

/// A modern `tools/call` of `name` on `conn` with `extra` headers.
pub(crate) fn call_with(conn: &mut Conn, extra: &[(&str, &str)], name: &str, args: Value) -> Resp {
    let mut h = modern_headers("tools/call", Some(name));
    h.extend_from_slice(extra);
    h.push(("content-type", "application/json"));
    h.push(("accept", "application/json, text/event-stream"));
    let body = modern_request(7, "tools/call", json!({"name": name, "arguments": args}));
    conn.send("POST", "/mcp", &h, body.to_string().as_bytes());
    conn.response()
}

/// The text of a refused call's tool error, checked to be one.
pub(crate) fn refusal(r: &Resp) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A call that ran (no `isError`, which a result leaves out when false).
fn assert_ran(r: &Resp) {
    let v = r.json();
    assert!(
        v["result"].is_object() && v["result"]["isError"] != true,
        "{v}"
    );
}

/// The audit lines the server wrote so far (JSON, target `toolwright::audit`).
fn audit_lines(s: &HttpServer) -> Vec<Value> {
    s.stderr
        .lock()
        .unwrap()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "toolwright::audit")
        .collect()
}

/// Waits for `n` audit lines.
fn audit_until(s: &HttpServer, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = audit_lines(s);
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_subject_out_of_calls_does_not_stop_another() {
    let (_dir, file) = config();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(&issuer, &["--config", &file, "--log-format", "json"]);
    let iss = issuer.url.as_str();
    let alice = mint(&key, &claims(&s, iss, json!({"sub": "alice"})));
    let bob = mint(&key, &claims(&s, iss, json!({"sub": "bob"})));
    let mut conn = s.conn();
    let add = json!({"a": 2, "b": 3});

    // Two a minute, a burst of two: the third call of alice's is refused, before the tool.
    for _ in 0..2 {
        let r = call_on(&mut conn, Some(&alice), "add", add.clone());
        assert_eq!(
            r.json()["result"]["structuredContent"]["result"],
            5,
            "{}",
            r.text()
        );
        assert_eq!(r.header("retry-after"), None);
    }
    let r = call_on(&mut conn, Some(&alice), "add", add.clone());
    let text = refusal(&r);
    let secs: u64 = text
        .strip_prefix("rate limited: retry after ")
        .and_then(|t| t.strip_suffix(" s"))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    // A token every 30 s.
    assert!((25..=30).contains(&secs), "{text}");
    assert_eq!(r.header("retry-after"), Some(secs.to_string().as_str()));

    // Bob has a budget of his own, and alice one for each tool.
    let r = call_on(&mut conn, Some(&bob), "add", add.clone());
    assert_eq!(
        r.json()["result"]["structuredContent"]["result"],
        5,
        "{}",
        r.text()
    );
    let r = call_on(&mut conn, Some(&alice), "multiply", add.clone());
    assert_eq!(
        r.json()["result"]["structuredContent"]["result"],
        6,
        "{}",
        r.text()
    );
    // A tool that does not exist is no tool to count: answered as unknown, audited.
    let r = call_on(&mut conn, Some(&alice), "nope", json!({}));
    assert!(r.json()["error"].is_object(), "{}", r.text());

    let lines = audit_until(&s, 6);
    let seen: Vec<(String, String, String, String)> = lines
        .iter()
        .map(|v| {
            let f = &v["fields"];
            let s = |k: &str| f[k].as_str().unwrap_or("").to_owned();
            (s("caller"), s("tool"), s("decision"), s("outcome"))
        })
        .collect();
    let want = |c: &str, t: &str, d: &str, o: &str| (c.into(), t.into(), d.into(), o.into());
    assert_eq!(
        seen,
        vec![
            want("sub:alice", "add", "allowed", "ok"),
            want("sub:alice", "add", "allowed", "ok"),
            want("sub:alice", "add", "denied_limit", "tool_error"),
            want("sub:bob", "add", "allowed", "ok"),
            want("sub:alice", "multiply", "allowed", "ok"),
            want("sub:alice", "nope", "denied_view", "protocol_error"),
        ]
    );
    for v in &lines {
        assert_eq!(v["level"], "INFO", "{v}");
        assert!(v["fields"]["duration_ms"].is_number(), "{v}");
        // No argument values without --capture-bytes.
        assert!(v["fields"].get("arguments").is_none(), "{v}");
    }

    let r = s.send(
        "GET",
        "/metrics",
        &[("authorization", &format!("Bearer {alice}"))],
        b"",
    );
    let text = r.text();
    let count = |tool: &str, decision: &str| {
        let series = format!(
            "toolwright_tool_decisions_total{{tool=\"{tool}\",view=\"\",decision=\"{decision}\"}}"
        );
        sample(&text, &series)
    };
    assert_eq!(count("add", "allowed"), Some(3.0), "{text}");
    assert_eq!(count("add", "denied_limit"), Some(1.0), "{text}");
    assert_eq!(count("multiply", "allowed"), Some(1.0), "{text}");
    // A name the server has no tool of is no label.
    assert_eq!(count("_OTHER", "denied_view"), Some(1.0), "{text}");
    assert!(!text.contains("nope"), "{text}");
}

#[test]
fn a_cap_on_calls_in_flight_refuses_the_extra_call_at_once() {
    let (_dir, file) = config();
    let s = HttpServer::start(&[
        "--config",
        &file,
        "--capture-bytes",
        "64",
        "--log-format",
        "json",
    ]);
    // The first call holds the only slot for two seconds.
    let addr = s.addr;
    let first = std::thread::spawn(move || {
        let mut conn = Conn::open(addr);
        call_on(&mut conn, None, "slow", json!({}))
    });
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let r = call_on(&mut s.conn(), None, "slow", json!({}));
    assert_eq!(
        refusal(&r),
        "too many calls in flight for this tool: at most 1"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the refusal waited"
    );
    assert_eq!(r.header("retry-after"), Some("1"));
    // Another client address has a slot of its own.
    let r = call_on(&mut s.conn_from("127.0.0.2"), None, "slow", json!({}));
    assert_ran(&r);

    let r = first.join().unwrap();
    assert_ran(&r);
    // The slot is given back when the call ends.
    let r = call_on(&mut s.conn(), None, "slow", json!({}));
    assert_ran(&r);

    let lines = audit_until(&s, 4);
    let decisions: Vec<(&str, &str)> = lines
        .iter()
        .map(|v| {
            let f = &v["fields"];
            (
                f["caller"].as_str().unwrap(),
                f["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        decisions.contains(&("addr:127.0.0.1", "denied_limit"))
            && decisions.contains(&("addr:127.0.0.2", "allowed")),
        "{decisions:?}"
    );
    // --capture-bytes: the arguments, as sent.
    assert_eq!(lines[0]["fields"]["arguments"], "{}", "{}", lines[0]);
}

#[test]
fn over_stdio_a_gateway_audits_its_policy_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({
        "servers": {"up": {
            "command": [crate::util::bin(), "serve"],
            "trust": "trusted",
            "tools": {"multiply": {"policy": "deny"}},
        }},
        "limits": {"tools": {"up__add": {"calls_per_minute": 1}}},
    });
    let file = dir.path().join("gw.json");
    std::fs::write(&file, serde_json::to_string(&config).unwrap()).unwrap();
    let mut s = crate::util::Server::start_logged(
        &["--config", file.to_str().unwrap(), "--log-format", "json"],
        Some(dir.path()),
    );
    let call = |s: &mut crate::util::Server, name: &str| {
        s.modern(
            "tools/call",
            json!({"name": name, "arguments": {"a": 2, "b": 3}}),
        )
    };
    let r = call(&mut s, "up__add");
    assert_eq!(r["result"]["structuredContent"]["result"], 5, "{r}");
    let r = call(&mut s, "up__add");
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("rate limited: retry after "), "{text}");
    let r = call(&mut s, "up__multiply");
    assert_eq!(r["result"]["isError"], true, "{r}");

    let lines = s.stderr_until(Duration::from_secs(10), |l| {
        l.contains("toolwright::audit") && l.contains("up__multiply")
    });
    let audit: Vec<(String, String, String)> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "toolwright::audit")
        .map(|v| {
            let f = &v["fields"];
            let s = |k: &str| f[k].as_str().unwrap_or("").to_owned();
            (s("caller"), s("tool"), s("decision"))
        })
        .collect();
    let want = |t: &str, d: &str| ("local".to_owned(), t.to_owned(), d.to_owned());
    assert_eq!(
        audit,
        vec![
            want("up__add", "allowed"),
            want("up__add", "denied_limit"),
            want("up__multiply", "denied_policy"),
        ]
    );
}

#[test]
fn x_forwarded_for_names_the_caller_only_from_a_trusted_proxy() {
    let (_dir, file) = config();
    // 127.0.0.2 plays the reverse proxy; 127.0.0.1 is a client that claims addresses.
    let s = HttpServer::start(&[
        "--config",
        &file,
        "--log-format",
        "json",
        "--trusted-proxy",
        "127.0.0.2/32",
    ]);
    let sum = json!({"a": 1, "b": 2});
    let via_proxy = |client: &str| {
        // As nginx's $proxy_add_x_forwarded_for writes it: what the client sent, then the
        // address the proxy saw.
        let list = format!("198.51.100.66, {client}");
        call_with(
            &mut s.conn_from("127.0.0.2"),
            &[("x-forwarded-for", &list)],
            "add",
            sum.clone(),
        )
    };
    // Behind the proxy, two clients with two calls a minute each.
    for client in ["203.0.113.1", "203.0.113.2"] {
        assert_ran(&via_proxy(client));
        assert_ran(&via_proxy(client));
    }
    let text = refusal(&via_proxy("203.0.113.1"));
    assert!(text.starts_with("rate limited: retry after "), "{text}");
    // Not from a trusted proxy, the header is not believed: every claimed address draws
    // on the budget of the address that connected.
    for claimed in ["203.0.113.3", "203.0.113.4"] {
        let r = call_with(
            &mut s.conn(),
            &[("x-forwarded-for", claimed)],
            "add",
            sum.clone(),
        );
        assert_ran(&r);
    }
    let r = call_with(
        &mut s.conn(),
        &[("x-forwarded-for", "203.0.113.5")],
        "add",
        sum.clone(),
    );
    assert!(refusal(&r).starts_with("rate limited"));

    let callers: std::collections::BTreeSet<String> = audit_until(&s, 8)
        .iter()
        .map(|v| v["fields"]["caller"].as_str().unwrap().to_owned())
        .collect();
    let want = ["addr:127.0.0.1", "addr:203.0.113.1", "addr:203.0.113.2"];
    assert_eq!(
        callers,
        want.iter().map(|s| s.to_string()).collect(),
        "{callers:?}"
    );
}
