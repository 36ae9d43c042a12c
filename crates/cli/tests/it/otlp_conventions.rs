//! The OpenTelemetry MCP semantic conventions to the letter (semantic-conventions-genai at
//! 4172e394; issue 42): one test per point the older text got wrong, against the real
//! binary, each span decoded by the receiver of `tests/otlp/receiver.py` (the pinned
//! official `opentelemetry-proto` classes), in both eras (the 2025-11-25 handshake and
//! 2026-07-28 `_meta`) and over stdio and HTTP where the point applies.

use crate::http_client::{HttpServer, LEGACY, LegacySession, Resp, modern_headers};
use crate::otlp::{Collector, attr, start_env};
use crate::util::{Server, modern_meta};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";
/// The trace context of the HTTP request (its `traceparent` header), not the message's.
const HTTP_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HTTP_SPAN: &str = "b7ad6b7169203331";

/// Every combination: (over HTTP, legacy era).
const ALL: [(bool, bool); 4] = [(false, true), (false, false), (true, true), (true, false)];
/// The HTTP ones.
const HTTP: [(bool, bool); 2] = [(true, true), (true, false)];

enum Via {
    Stdio(Server),
    Http(HttpServer, Option<LegacySession>),
}

/// One client of a `toolwright serve` that exports its spans to the receiver as `service`.
struct Client {
    via: Via,
    legacy: bool,
    service: String,
}

impl Client {
    /// `serve ARGS` over stdio or `--http`, after the legacy handshake or modern.
    fn start(rx: &Collector, test: &str, (http, legacy): (bool, bool), args: &[&str]) -> Client {
        Self::start_in(rx, test, (http, legacy), args, &std::env::temp_dir())
    }

    fn start_in(
        rx: &Collector,
        test: &str,
        (http, legacy): (bool, bool),
        args: &[&str],
        cwd: &Path,
    ) -> Client {
        let service = format!(
            "{test}-{}-{}",
            if http { "http" } else { "stdio" },
            if legacy { "legacy" } else { "modern" }
        );
        let env = rx.env("http/protobuf", &service);
        let via = if http {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let s = HttpServer::start_with_env(args, &env);
            let session = legacy.then(|| LegacySession::open(&s, LEGACY));
            Via::Http(s, session)
        } else {
            let mut s = start_env(args, cwd, &env);
            if legacy {
                s = s.handshake(LEGACY);
            }
            Via::Stdio(s)
        };
        Client {
            via,
            legacy,
            service,
        }
    }

    /// Request `method` with `id` and `params` (its `_meta` with `meta`'s entries, and the
    /// era's); `headers` added over HTTP. Returns the response.
    fn call(
        &mut self,
        id: Value,
        method: &str,
        mut params: Value,
        meta: Value,
        headers: &[(&str, &str)],
    ) -> Value {
        let mut m = if self.legacy {
            json!({})
        } else {
            modern_meta()
        };
        for (k, v) in meta.as_object().into_iter().flatten() {
            m[k] = v.clone();
        }
        if !m.as_object().unwrap().is_empty() {
            params["_meta"] = m;
        }
        // The modern era's Mcp-Name header: the tool's or prompt's name, a resource's uri.
        let name = (params["name"].as_str())
            .or(params["uri"].as_str())
            .map(str::to_owned);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match &mut self.via {
            Via::Stdio(s) => {
                s.send(&msg);
                s.response_to(&id)
            }
            Via::Http(s, session) => {
                let mut h = match session {
                    Some(l) => l.headers(),
                    None => modern_headers(method, name.as_deref()),
                };
                h.extend_from_slice(headers);
                answer(&s.post(&h, &msg))
            }
        }
    }

    /// `/metrics` (HTTP only).
    fn metrics(&self) -> String {
        let Via::Http(s, _) = &self.via else {
            panic!("no /metrics over stdio")
        };
        s.send("GET", "/metrics", &[], b"").text()
    }

    /// Ends the server (its spans are sent as it exits).
    fn finish(self) -> String {
        match self.via {
            Via::Stdio(mut s) => {
                s.close_stdin();
                s.wait_exit(Duration::from_secs(15));
            }
            Via::Http(mut s, _) => {
                s.terminate();
                s.wait_exit(Duration::from_secs(15));
            }
        }
        self.service
    }
}

/// A POST's JSON-RPC answer, sent as JSON or as the last message of an event stream.
fn answer(r: &Resp) -> Value {
    if r.header("content-type") == Some("text/event-stream") {
        let events = r.events();
        return events
            .iter()
            .rev()
            .map(|e| e.json())
            .find(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no answer in {events:?}"));
    }
    r.json()
}

/// The SERVER span named `name` of `service`.
fn server_span(rx: &mut Collector, service: &str, name: &str) -> Value {
    rx.named(service, "SPAN_KIND_SERVER", name)
}

/// The `/metrics` line that starts with `prefix`.
fn series<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

/// Item 1: `mcp.resource.uri` on the requests that carry one: `resources/read`, and in the
/// legacy era `resources/subscribe` and `resources/unsubscribe`.
#[test]
fn a_resource_request_names_its_uri() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in ALL {
        let mut c = Client::start(
            &rx,
            "uri",
            how,
            &["--fixtures", "conformance", "--no-watch"],
        );
        let mut sent = vec![("resources/read", "test://static-text")];
        if c.legacy {
            sent.push(("resources/subscribe", "test://watched-resource"));
            sent.push(("resources/unsubscribe", "test://watched-resource"));
        }
        for (i, (method, uri)) in sent.iter().enumerate() {
            let r = c.call(json!(i + 10), method, json!({"uri": uri}), json!({}), &[]);
            assert!(r["result"].is_object(), "{how:?} {method}: {r}");
        }
        let service = c.finish();
        for (method, uri) in sent {
            let span = server_span(&mut rx, &service, method);
            assert_eq!(attr(&span, "mcp.resource.uri"), uri, "{how:?}: {span}");
        }
    }
}

/// Item 2: `jsonrpc.request.id` is the id's string form: `request-7`, not `"request-7"`.
#[test]
fn a_string_request_id_is_recorded_without_its_quotes() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in ALL {
        let mut c = Client::start(&rx, "id", how, &["--no-watch"]);
        let args = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let r = c.call(json!("request-7"), "tools/call", args, json!({}), &[]);
        assert!(r["result"].is_object(), "{how:?}: {r}");
        let service = c.finish();
        let span = server_span(&mut rx, &service, "tools/call add");
        assert_eq!(attr(&span, "jsonrpc.request.id"), "request-7", "{how:?}");
    }
}

/// Item 3: the caller's errors (an unknown tool: -32602; an unknown method: -32601) are no
/// failures of the server's: no `error.type`, status unset, the code in
/// `rpc.response.status_code`, and over HTTP no `error_type` label on the duration.
#[test]
fn a_callers_error_is_not_a_server_failure() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in ALL {
        let mut c = Client::start(&rx, "callers", how, &["--no-watch"]);
        let nope = json!({"name": "nope", "arguments": {}});
        let r = c.call(json!(31), "tools/call", nope, json!({}), &[]);
        assert_eq!(r["error"]["code"], -32602, "{how:?}: {r}");
        let r = c.call(json!(32), "made/up", json!({}), json!({}), &[]);
        assert_eq!(r["error"]["code"], -32601, "{how:?}: {r}");
        if how.0 {
            let text = c.metrics();
            for prefix in [
                "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"_OTHER\"",
                "mcp_server_operation_duration_seconds_count{mcp_method_name=\"_OTHER\"",
            ] {
                let line = series(&text, prefix);
                assert!(!line.contains("error_type"), "{how:?}: {line}");
                assert!(line.contains("rpc_response_status_code"), "{line}");
            }
        }
        let service = c.finish();
        for (name, code) in [("tools/call nope", "-32602"), ("made/up", "-32601")] {
            let span = server_span(&mut rx, &service, name);
            assert_eq!(
                span["status"]["code"], "STATUS_CODE_UNSET",
                "{how:?}: {span}"
            );
            assert_eq!(attr(&span, "error.type"), &Value::Null, "{how:?}: {span}");
            assert_eq!(attr(&span, "rpc.response.status_code"), code, "{span}");
        }
    }
}

/// Item 4: a failed span's status description is the JSON-RPC error's message (here a call
/// that outlives `--call-timeout`: -32001, a failure of the server's).
#[test]
fn a_failed_spans_status_is_the_error_message() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tools.yaml");
    std::fs::write(
        &cfg,
        "tools:\n  - name: slow\n    description: Sleeps for five seconds, then prints nothing.\n    annotations: {readOnlyHint: true, openWorldHint: false}\n    command: [sleep, \"5\"]\n",
    )
    .unwrap();
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--no-watch",
        "--call-timeout",
        "1",
    ];
    for how in ALL {
        let mut c = Client::start_in(&rx, "status", how, &args, dir.path());
        let slow = json!({"name": "slow", "arguments": {}});
        let r = c.call(json!(41), "tools/call", slow, json!({}), &[]);
        assert_eq!(r["error"]["code"], -32001, "{how:?}: {r}");
        let message = r["error"]["message"].as_str().unwrap().to_owned();
        let service = c.finish();
        let span = server_span(&mut rx, &service, "tools/call slow");
        assert_eq!(
            span["status"]["code"], "STATUS_CODE_ERROR",
            "{how:?}: {span}"
        );
        assert_eq!(span["status"]["message"], message.as_str(), "{how:?}");
        assert_eq!(attr(&span, "error.type"), "-32001", "{span}");
    }
}

/// Item 5: an unknown method's span carries the method as sent; the metric label stays
/// bounded (`_OTHER`).
#[test]
fn an_unknown_method_is_named_as_sent() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in ALL {
        let mut c = Client::start(&rx, "method", how, &["--no-watch"]);
        let r = c.call(json!(51), "made/up", json!({}), json!({}), &[]);
        assert_eq!(r["error"]["code"], -32601, "{how:?}: {r}");
        if how.0 {
            let text = c.metrics();
            assert!(!text.contains("made/up"), "{text}");
            series(
                &text,
                "mcp_server_operation_duration_seconds_count{mcp_method_name=\"_OTHER\"",
            );
        }
        let service = c.finish();
        let span = server_span(&mut rx, &service, "made/up");
        assert_eq!(attr(&span, "mcp.method.name"), "made/up", "{how:?}: {span}");
    }
}

/// A gateway over HTTP (`serve --http --config`) in front of an HTTP upstream, spoken to in
/// `legacy`'s era both ways; one call of `up__add`. Returns the gateway's `/metrics` after
/// it, the gateway's CLIENT span of the call and the upstream's port.
fn through_gateway(rx: &mut Collector, test: &str, legacy: bool) -> (String, Value, u16) {
    let era = if legacy { "legacy" } else { "modern" };
    let up_service = format!("{test}-upstream-{era}");
    let up_env = rx.env("http/protobuf", &up_service);
    let up_env: Vec<(&str, &str)> = up_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut upstream = HttpServer::start_with_env(&["--no-watch"], &up_env);
    let dir = tempfile::tempdir().unwrap();
    let gw = dir.path().join("gw.yaml");
    let upstream_era = if legacy { "legacy" } else { "auto" };
    std::fs::write(
        &gw,
        format!(
            "servers:\n  up:\n    url: {}\n    era: {upstream_era}\n",
            upstream.url()
        ),
    )
    .unwrap();
    let args = ["--config", gw.to_str().unwrap(), "--no-watch"];
    let mut c = Client::start(rx, &format!("{test}-gateway"), (true, legacy), &args);
    let call = json!({"name": "up__add", "arguments": {"a": 1, "b": 2}});
    let r = c.call(json!(61), "tools/call", call, json!({}), &[]);
    assert!(r["result"].is_object(), "{era}: {r}");
    let text = c.metrics();
    let service = c.finish();
    upstream.terminate();
    upstream.wait_exit(Duration::from_secs(15));
    let client = rx.named(&service, "SPAN_KIND_CLIENT", "tools/call add");
    (text, client, upstream.addr.port())
}

/// The gateway's `mcp.client.operation.duration` series of its call of `add`.
const CLIENT_CALL: &str = "mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"add\"";

/// Item 6: `network.protocol.version` over HTTP: on SERVER spans and the server's duration,
/// and on the gateway's CLIENT spans and its client duration towards an HTTP upstream.
#[test]
fn http_names_its_protocol_version() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in HTTP {
        let mut c = Client::start(&rx, "netver", how, &["--no-watch"]);
        let args = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let r = c.call(json!(62), "tools/call", args, json!({}), &[]);
        assert!(r["result"].is_object(), "{how:?}: {r}");
        let text = c.metrics();
        let line = series(
            &text,
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"add\"",
        );
        assert!(
            line.contains("network_protocol_version=\"1.1\""),
            "{how:?}: {line}"
        );
        let service = c.finish();
        let span = server_span(&mut rx, &service, "tools/call add");
        assert_eq!(attr(&span, "network.protocol.version"), "1.1", "{how:?}");

        let (text, client, _) = through_gateway(&mut rx, "netver", how.1);
        let line = series(&text, CLIENT_CALL);
        assert!(
            line.contains("network_protocol_version=\"1.1\""),
            "{how:?}: {line}"
        );
        assert_eq!(attr(&client, "network.protocol.version"), "1.1", "{client}");
    }
}

/// Item 7: an HTTP SERVER span names the peer: `client.address` and `client.port` (none
/// over stdio, which has no peer address).
#[test]
fn an_http_server_span_names_the_client() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for how in ALL {
        let mut c = Client::start(&rx, "peer", how, &["--no-watch"]);
        let args = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let r = c.call(json!(71), "tools/call", args, json!({}), &[]);
        assert!(r["result"].is_object(), "{how:?}: {r}");
        let service = c.finish();
        let span = server_span(&mut rx, &service, "tools/call add");
        if how.0 {
            assert_eq!(
                attr(&span, "client.address"),
                "127.0.0.1",
                "{how:?}: {span}"
            );
            let port = attr(&span, "client.port").as_i64().unwrap_or(0);
            assert!(port > 0 && port < 65536, "{how:?}: {span}");
        } else {
            assert_eq!(attr(&span, "client.address"), &Value::Null, "{span}");
        }
    }
}

/// Item 8: with a trace context in `_meta` and in the HTTP headers, `_meta`'s is the parent
/// and the span links the headers'; with the headers' alone, that one is the parent.
#[test]
fn the_http_context_is_linked_when_meta_names_the_parent() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let header = format!("00-{HTTP_TRACE}-{HTTP_SPAN}-01");
    for how in HTTP {
        let mut c = Client::start(&rx, "link", how, &["--no-watch"]);
        let headers = [("traceparent", header.as_str())];
        let meta = json!({"traceparent": format!("00-{TRACE}-{CALLER}-01")});
        let both = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let r = c.call(json!(81), "tools/call", both, meta, &headers);
        assert!(r["result"].is_object(), "{how:?}: {r}");
        let alone = json!({"name": "add", "arguments": {"a": 2, "b": 2}});
        let r = c.call(json!(82), "tools/call", alone, json!({}), &headers);
        assert!(r["result"].is_object(), "{how:?}: {r}");
        let service = c.finish();
        let linked = rx.span("the call with both contexts", |s| {
            s["service"] == service.as_str() && s["attributes"]["jsonrpc.request.id"] == "81"
        });
        assert_eq!(linked["trace_id"], TRACE, "{how:?}: {linked}");
        assert_eq!(linked["parent_span_id"], CALLER, "{linked}");
        assert_eq!(
            linked["links"],
            json!([{"trace_id": HTTP_TRACE, "span_id": HTTP_SPAN}]),
            "{how:?}: {linked}"
        );
        let parented = rx.span("the call with the headers' context", |s| {
            s["service"] == service.as_str() && s["attributes"]["jsonrpc.request.id"] == "82"
        });
        assert_eq!(parented["trace_id"], HTTP_TRACE, "{parented}");
        assert_eq!(parented["parent_span_id"], HTTP_SPAN, "{parented}");
        assert_eq!(parented["links"], json!([]), "{parented}");
    }
}

/// Item 9: `mcp.client.operation.duration` names the upstream as the CLIENT span does:
/// `server.address` and `server.port`.
#[test]
fn the_client_duration_names_the_server() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    for legacy in [true, false] {
        let (text, client, port) = through_gateway(&mut rx, "srvaddr", legacy);
        let line = series(&text, CLIENT_CALL);
        assert!(
            line.contains("server_address=\"127.0.0.1\""),
            "{legacy}: {line}"
        );
        assert!(
            line.contains(&format!("server_port=\"{port}\"")),
            "{legacy}: {line}"
        );
        assert_eq!(attr(&client, "server.address"), "127.0.0.1", "{client}");
        assert_eq!(attr(&client, "server.port"), i64::from(port), "{client}");
    }
}
