//! OTLP export, received by a real receiver (`tests/otlp/receiver.py`, decoding with the
//! official `opentelemetry-proto` classes) from the real binaries: the spans' names, kinds,
//! attributes and parent links, over OTLP/HTTP (protobuf) and OTLP/gRPC.

use crate::client::available;
use crate::util::{Server, http_recorder, modern_meta, repo_root};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

/// The receiver, running until dropped.
pub(crate) struct Collector {
    child: Child,
    http: u16,
    grpc: u16,
    lines: Receiver<Value>,
    spans: Vec<Value>,
}

impl Collector {
    pub(crate) fn start() -> Option<Collector> {
        Self::start_with(&[])
    }

    /// The receiver with `args` after its script (`--tls CERT KEY`).
    fn start_with(args: &[&str]) -> Option<Collector> {
        let dir = repo_root().join("tests/otlp");
        let python = dir.join(".venv/bin/python");
        let argv = available(
            "the OTLP receiver (python3 -m venv tests/otlp/.venv && tests/otlp/.venv/bin/pip install --no-deps -r tests/otlp/requirements.txt)",
            vec![
                python.display().to_string(),
                dir.join("receiver.py").display().to_string(),
            ],
            &[python],
        )?;
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiver");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let ports: Value = serde_json::from_str(&first).expect("the receiver's ports");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).expect("a span line");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Some(Collector {
            child,
            http: ports["http"].as_u64().unwrap() as u16,
            grpc: ports["grpc"].as_u64().unwrap() as u16,
            lines: rx,
            spans: Vec::new(),
        })
    }

    /// The environment that exports to this receiver with `protocol`.
    pub(crate) fn env(&self, protocol: &str, service: &str) -> Vec<(String, String)> {
        let port = if protocol == "grpc" {
            self.grpc
        } else {
            self.http
        };
        vec![
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
                format!("http://127.0.0.1:{port}"),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL".into(), protocol.into()),
            ("OTEL_SERVICE_NAME".into(), service.into()),
            ("OTEL_BSP_SCHEDULE_DELAY".into(), "200".into()),
        ]
    }

    /// Waits until a span matches `want`, and returns it.
    pub(crate) fn span(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.spans.iter().find(|s| want(s)) {
                return s.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => self.spans.push(v),
                Err(_) => panic!("no span {what} arrived; got:\n{:#?}", self.spans),
            }
        }
    }

    /// The span named `name` of `kind` from `service`.
    pub(crate) fn named(&mut self, service: &str, kind: &str, name: &str) -> Value {
        self.span(&format!("{kind} {name:?} of {service}"), |s| {
            s["service"] == service && s["kind"] == kind && s["name"] == name
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_env(args: &[&str], cwd: &Path, env: &[(String, String)]) -> Server {
    with_env(env, |env| Server::start_with_env(args, Some(cwd), env))
}

/// `env` as the `(&str, &Path)` pairs that `Server`'s constructors take, handed to `start`.
fn with_env<R>(env: &[(String, String)], start: impl FnOnce(&[(&str, &Path)]) -> R) -> R {
    let env: Vec<(&str, PathBuf)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), PathBuf::from(v)))
        .collect();
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    start(&env)
}

pub(crate) fn attr<'a>(span: &'a Value, name: &str) -> &'a Value {
    &span["attributes"][name]
}

/// A declared HTTP tool served over stdio, export over OTLP/HTTP: the call's SERVER span
/// carries the conventions' attributes and the caller's span as its parent, and the HTTP
/// request is a CLIENT span under it whose id the request's `traceparent` carries.
#[test]
fn a_served_call_is_a_server_span_with_the_callers_parent() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let (port, seen) = http_recorder("{\"ok\": true}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tools.yaml");
    std::fs::write(
        &cfg,
        format!(
            "tools:\n  - name: lookup\n    description: Looks the items up in the local API. Returns the items as JSON.\n    annotations: {{readOnlyHint: true, openWorldHint: false}}\n    http:\n      url: \"http://127.0.0.1:{port}/v1/items?token=secret\"\n      allow_loopback: true\n    output: {{parse: json}}\n"
        ),
    )
    .unwrap();
    let env = rx.env("http/protobuf", "served");
    let args = ["--config", cfg.to_str().unwrap(), "--no-watch"];
    let mut s = start_env(&args, dir.path(), &env);
    let mut meta = modern_meta();
    meta["traceparent"] = json!(format!("00-{TRACE}-{CALLER}-01"));
    let r = s.request(
        "tools/call",
        json!({"name": "lookup", "arguments": {}, "_meta": meta}),
    );
    assert!(r["result"].is_object(), "{r}");
    let r = s.request(
        "tools/call",
        json!({"name": "nope", "arguments": {}, "_meta": modern_meta()}),
    );
    assert!(r["error"].is_object(), "{r}");
    s.close_stdin();
    s.wait_exit(Duration::from_secs(10));

    let call = rx.named("served", "SPAN_KIND_SERVER", "tools/call lookup");
    assert_eq!(call["protocol"], "http/protobuf");
    assert_eq!(call["trace_id"], TRACE);
    assert_eq!(call["parent_span_id"], CALLER);
    assert_eq!(attr(&call, "mcp.method.name"), "tools/call");
    assert_eq!(attr(&call, "gen_ai.tool.name"), "lookup");
    assert_eq!(attr(&call, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr(&call, "mcp.protocol.version"), "2026-07-28");
    assert_eq!(attr(&call, "network.transport"), "pipe");
    assert!(attr(&call, "jsonrpc.request.id").is_string(), "{call}");
    assert_eq!(call["status"]["code"], "STATUS_CODE_UNSET");

    // An unknown tool is the caller's error (-32602), not a failure of the server's.
    let refused = rx.named("served", "SPAN_KIND_SERVER", "tools/call nope");
    assert_eq!(refused["status"]["code"], "STATUS_CODE_UNSET");
    assert_eq!(attr(&refused, "error.type"), &Value::Null, "{refused}");
    assert_eq!(attr(&refused, "rpc.response.status_code"), "-32602");
    assert_ne!(
        refused["trace_id"], TRACE,
        "a call without a parent starts a trace"
    );
    assert_eq!(refused["parent_span_id"], "");

    let _ = seen;
}

/// The span ids of one chain, for the assertions on the next link.
struct Chain {
    gateway: Value,
    client: Value,
    upstream: Value,
    http: Value,
}

/// The tool file of an upstream with one declared HTTP tool `lookup` (asking the loopback
/// API on `port`), and the gateway's file naming that upstream, which exports with
/// `protocol` as `service`; returns the gateway's file.
fn gateway_config(rx: &Collector, dir: &Path, protocol: &str, service: &str, port: u16) -> PathBuf {
    gateway_config_era(rx, dir, (protocol, service), port, "auto")
}

/// As [`gateway_config`], with the upstream spoken to in `era`.
fn gateway_config_era(
    rx: &Collector,
    dir: &Path,
    (protocol, service): (&str, &str),
    port: u16,
    era: &str,
) -> PathBuf {
    let up = dir.join("up.yaml");
    std::fs::write(
        &up,
        format!(
            "tools:\n  - name: lookup\n    description: Looks the items up in the local API. Returns the items as JSON.\n    annotations: {{readOnlyHint: true, openWorldHint: false}}\n    http:\n      url: \"http://127.0.0.1:{port}/v1/items?token=secret\"\n      allow_loopback: true\n    output: {{parse: json}}\n"
        ),
    )
    .unwrap();
    let env_lines: String = rx
        .env(protocol, service)
        .iter()
        .map(|(k, v)| format!("      {k}: \"{v}\"\n"))
        .collect();
    let gw = dir.join("gw.yaml");
    std::fs::write(
        &gw,
        format!(
            "servers:\n  up:\n    era: {era}\n    command: [{}, serve, --no-watch, --config, {}]\n    env:\n{env_lines}",
            crate::util::bin().display(),
            up.display()
        ),
    )
    .unwrap();
    gw
}

/// client → gateway (`toolwright serve` over stdio with `servers:`) → upstream `toolwright
/// serve` (its child, over stdio) → a declared HTTP tool's loopback API, both processes
/// exporting to the receiver with `protocol`; the client's request in the legacy era (after
/// `initialize`) or the modern one.
fn chain(rx: &mut Collector, protocol: &str, legacy: bool) -> Chain {
    let (port, seen) = http_recorder("{\"ok\": true}");
    let dir = tempfile::tempdir().unwrap();
    let up_service = format!("upstream-{protocol}-{legacy}");
    let gw_service = format!("gateway-{protocol}-{legacy}");
    // The legacy chain speaks legacy upstream too: its handshake is `initialize`.
    let era = if legacy { "legacy" } else { "auto" };
    let gw = gateway_config_era(rx, dir.path(), (protocol, &up_service), port, era);
    let env = rx.env(protocol, &gw_service);
    let args = ["--config", gw.to_str().unwrap(), "--no-watch"];
    let mut s = start_env(&args, dir.path(), &env);
    let mut meta = if legacy { json!({}) } else { modern_meta() };
    if legacy {
        s = s.handshake("2025-11-25");
    }
    meta["traceparent"] = json!(format!("00-{TRACE}-{CALLER}-01"));
    let r = s.request(
        "tools/call",
        json!({"name": "up__lookup", "arguments": {}, "_meta": meta}),
    );
    assert!(r["result"]["isError"] != json!(true), "{r}");
    s.close_stdin();
    s.wait_exit(Duration::from_secs(10));

    let gateway = rx.named(&gw_service, "SPAN_KIND_SERVER", "tools/call up__lookup");
    let client = rx.named(&gw_service, "SPAN_KIND_CLIENT", "tools/call lookup");
    let upstream = rx.named(&up_service, "SPAN_KIND_SERVER", "tools/call lookup");
    let http = rx.named(&up_service, "SPAN_KIND_CLIENT", "GET");
    for span in [&gateway, &client, &upstream, &http] {
        assert_eq!(span["protocol"], protocol, "{span}");
        assert_eq!(span["trace_id"], TRACE, "one trace: {span}");
    }
    // The parent links: caller → gateway SERVER → gateway CLIENT → upstream SERVER → HTTP CLIENT.
    assert_eq!(gateway["parent_span_id"], CALLER);
    assert_eq!(client["parent_span_id"], gateway["span_id"]);
    assert_eq!(upstream["parent_span_id"], client["span_id"]);
    assert_eq!(http["parent_span_id"], upstream["span_id"]);

    let version = if legacy { "2025-11-25" } else { "2026-07-28" };
    assert_eq!(attr(&gateway, "mcp.protocol.version"), version);
    assert_eq!(attr(&gateway, "gen_ai.tool.name"), "up__lookup");
    assert_eq!(attr(&client, "mcp.method.name"), "tools/call");
    assert_eq!(attr(&client, "gen_ai.tool.name"), "lookup");
    assert_eq!(attr(&client, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr(&client, "network.transport"), "pipe");
    assert!(
        attr(&client, "mcp.protocol.version").is_string(),
        "{client}"
    );
    assert_eq!(attr(&upstream, "network.transport"), "pipe");
    assert_eq!(
        attr(&upstream, "mcp.protocol.version"),
        attr(&client, "mcp.protocol.version")
    );

    // The request id is the one the upstream saw.
    assert!(attr(&client, "jsonrpc.request.id").is_string(), "{client}");
    assert_eq!(
        attr(&client, "jsonrpc.request.id"),
        attr(&upstream, "jsonrpc.request.id")
    );

    // The gateway's own requests upstream (its handshake, listing the tools) are CLIENT
    // spans too, each the root of a trace of its own, with the upstream's SERVER span
    // under it.
    let own: &[&str] = if legacy {
        &["initialize", "notifications/initialized", "tools/list"]
    } else {
        &["server/discover", "tools/list"]
    };
    for method in own {
        let sent = rx.named(&gw_service, "SPAN_KIND_CLIENT", method);
        assert_eq!(sent["parent_span_id"], "", "{sent}");
        assert_ne!(sent["trace_id"], TRACE, "{sent}");
        assert_eq!(attr(&sent, "mcp.method.name"), *method, "{sent}");
        assert_eq!(attr(&sent, "network.transport"), "pipe", "{sent}");
        let got = rx.span(&format!("the upstream's SERVER span of {method}"), |s| {
            s["service"] == up_service.as_str() && s["parent_span_id"] == sent["span_id"]
        });
        assert_eq!(got["kind"], "SPAN_KIND_SERVER", "{got}");
        assert_eq!(got["name"], *method, "{got}");
        assert_eq!(got["trace_id"], sent["trace_id"], "{got}");
        if *method == "notifications/initialized" {
            assert_eq!(attr(&sent, "jsonrpc.request.id"), &Value::Null, "{sent}");
        } else {
            assert_eq!(
                attr(&sent, "jsonrpc.request.id"),
                attr(&got, "jsonrpc.request.id"),
                "{sent}"
            );
        }
    }

    assert_eq!(attr(&http, "http.request.method"), "GET");
    assert_eq!(
        attr(&http, "url.full"),
        format!("http://127.0.0.1:{port}/v1/items").as_str(),
        "no query: it may hold a secret"
    );
    assert_eq!(attr(&http, "server.address"), "127.0.0.1");
    assert_eq!(attr(&http, "server.port"), i64::from(port));
    assert_eq!(attr(&http, "http.response.status_code"), 200);
    let head = seen.lock().unwrap().last().cloned().expect("a request");
    let want = format!(
        "traceparent: 00-{TRACE}-{}-01\r\n",
        http["span_id"].as_str().unwrap()
    );
    assert!(head.to_ascii_lowercase().contains(&want), "{head}");
    Chain {
        gateway,
        client,
        upstream,
        http,
    }
}

#[test]
fn a_call_through_the_gateway_is_one_trace_over_otlp_http_in_the_legacy_era() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let c = chain(&mut rx, "http/protobuf", true);
    assert_eq!(c.gateway["service"], "gateway-http/protobuf-true");
    assert_eq!(c.http["service"], "upstream-http/protobuf-true");
    assert_eq!(c.client["scope"], "toolwright");
    assert!(c.upstream["duration_ns"].as_u64().unwrap() > 0);
}

#[test]
fn a_call_through_the_gateway_is_one_trace_over_otlp_grpc_in_the_modern_era() {
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let c = chain(&mut rx, "grpc", false);
    assert_eq!(c.gateway["service"], "gateway-grpc-false");
    assert_eq!(c.upstream["service"], "upstream-grpc-false");
}

/// The gateway over `--http` (a legacy session): the SERVER span's parent comes from the
/// POST's `traceparent` header, its transport is tcp/http with the session's id; the call
/// upstream lands in `/metrics` as `mcp.client.operation.duration`; SIGTERM still sends
/// the spans.
#[test]
fn over_http_the_parent_comes_from_the_headers_and_the_client_metrics_show() {
    use crate::http_client::{HttpServer, LEGACY, LegacySession, request};
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let (port, _seen) = http_recorder("{\"ok\": true}");
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway_config(&rx, dir.path(), "http/protobuf", "upstream-http", port);
    let env = rx.env("http/protobuf", "gateway-http");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut s = HttpServer::start_with_env(&["--config", gw.to_str().unwrap(), "--no-watch"], &env);
    let session = LegacySession::open(&s, LEGACY);
    let parent = format!("00-{TRACE}-{CALLER}-01");
    let mut headers = session.headers();
    headers.push(("traceparent", parent.as_str()));
    headers.push(("tracestate", "rojo=1"));
    let call = request(
        7,
        "tools/call",
        json!({"name": "up__lookup", "arguments": {}}),
    );
    let r = s.post(&headers, &call);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["result"].is_object(), "{}", r.text());

    let text = s.send("GET", "/metrics", &[], b"").text();
    let client = text
        .lines()
        .find(|l| {
            l.starts_with("mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"lookup\"")
        })
        .unwrap_or_else(|| panic!("no client operation in:\n{text}"));
    assert!(client.contains("network_transport=\"pipe\""), "{client}");
    assert!(client.ends_with(" 1"), "{client}");
    // (mcp.client.session.duration is recorded when the upstream's session ends: not yet.)
    s.terminate();
    s.wait_exit(Duration::from_secs(10))
        .expect("exits on SIGTERM");

    let server = rx.named("gateway-http", "SPAN_KIND_SERVER", "tools/call up__lookup");
    assert_eq!(server["trace_id"], TRACE);
    assert_eq!(server["parent_span_id"], CALLER);
    assert_eq!(attr(&server, "network.transport"), "tcp");
    assert_eq!(attr(&server, "network.protocol.name"), "http");
    assert_eq!(attr(&server, "mcp.session.id"), session.id.as_str());
    assert_eq!(attr(&server, "jsonrpc.request.id"), "7");
    assert_eq!(attr(&server, "mcp.protocol.version"), LEGACY);
    let client = rx.named("gateway-http", "SPAN_KIND_CLIENT", "tools/call lookup");
    assert_eq!(client["parent_span_id"], server["span_id"]);
    let upstream = rx.named("upstream-http", "SPAN_KIND_SERVER", "tools/call lookup");
    assert_eq!(upstream["parent_span_id"], client["span_id"]);
    // The initialize of the session is a span too (no parent: its POST had no header).
    let init = rx.named("gateway-http", "SPAN_KIND_SERVER", "initialize");
    assert_eq!(attr(&init, "mcp.method.name"), "initialize");
}

/// An HTTP upstream (`toolwright serve --http`): the gateway's CLIENT span names its address
/// and port and the tcp transport, and the upstream's SERVER span is its child.
#[test]
fn a_call_to_an_http_upstream_names_the_server_address() {
    use crate::http_client::HttpServer;
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let (port, _seen) = http_recorder("{\"ok\": true}");
    let dir = tempfile::tempdir().unwrap();
    // The upstream's files (its gateway file is not used: the gateway here reaches it by URL).
    gateway_config(&rx, dir.path(), "grpc", "unused", port);
    let up = dir.path().join("up.yaml");
    let up_env = rx.env("grpc", "upstream-tcp");
    let up_env: Vec<(&str, &str)> = up_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut upstream =
        HttpServer::start_with_env(&["--config", up.to_str().unwrap(), "--no-watch"], &up_env);
    let gw = dir.path().join("gw-url.yaml");
    std::fs::write(
        &gw,
        format!("servers:\n  up:\n    url: {}\n", upstream.url()),
    )
    .unwrap();
    let env = rx.env("grpc", "gateway-tcp");
    let mut s = start_env(
        &["--config", gw.to_str().unwrap(), "--no-watch"],
        dir.path(),
        &env,
    );
    let mut meta = modern_meta();
    meta["traceparent"] = json!(format!("00-{TRACE}-{CALLER}-01"));
    let r = s.request(
        "tools/call",
        json!({"name": "up__lookup", "arguments": {}, "_meta": meta}),
    );
    assert!(r["result"].is_object(), "{r}");
    s.close_stdin();
    s.wait_exit(Duration::from_secs(10));
    upstream.terminate();
    upstream.wait_exit(Duration::from_secs(10));

    let client = rx.named("gateway-tcp", "SPAN_KIND_CLIENT", "tools/call lookup");
    assert_eq!(attr(&client, "network.transport"), "tcp");
    assert_eq!(attr(&client, "network.protocol.name"), "http");
    assert_eq!(attr(&client, "server.address"), "127.0.0.1");
    assert_eq!(
        attr(&client, "server.port"),
        i64::from(upstream.addr.port())
    );
    let served = rx.named("upstream-tcp", "SPAN_KIND_SERVER", "tools/call lookup");
    assert_eq!(served["parent_span_id"], client["span_id"]);
    assert_eq!(served["trace_id"], TRACE);
    assert_eq!(attr(&served, "network.transport"), "tcp");
}

/// A setting that is not understood stops `serve` before it serves, naming the variable.
#[test]
fn a_bad_otel_setting_is_a_start_up_error() {
    for (var, value, expected) in [
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "http/json",
            "http/json is not built into toolwright",
        ),
        (
            "OTEL_TRACES_SAMPLER",
            "sometimes",
            "OTEL_TRACES_SAMPLER=\"sometimes\"",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "novalue",
            "is not a key=value pair",
        ),
    ] {
        let out = Command::new(crate::util::bin())
            .args(["serve", "--no-watch"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env(var, value)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}: {err}");
        assert!(err.contains(expected), "{var}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// An `https://` collector, over both protocols: TLS trusting the CA that
/// `OTEL_EXPORTER_OTLP_CERTIFICATE` names, each export carrying the (percent-decoded)
/// headers of `OTEL_EXPORTER_OTLP_HEADERS`. Without that CA the export fails, is said on
/// stderr, and serving goes on.
#[test]
fn export_to_an_https_collector_trusts_the_configured_ca_and_sends_the_headers() {
    let pki = crate::https::Pki::new(&["localhost"]);
    let (ca_pem, (cert, key)) = (pki.ca(), pki.leaf_files());
    let Some(mut rx) =
        Collector::start_with(&["--tls", cert.to_str().unwrap(), key.to_str().unwrap()])
    else {
        return;
    };
    for (protocol, port) in [("http/protobuf", rx.http), ("grpc", rx.grpc)] {
        for trusted in [true, false] {
            let service = format!("tls-{protocol}-{trusted}");
            let mut env = vec![
                (
                    "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
                    format!("https://localhost:{port}"),
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL".into(), protocol.into()),
                ("OTEL_SERVICE_NAME".into(), service.clone()),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS".into(),
                    "x-tenant=team%20a".into(),
                ),
            ];
            if trusted {
                env.push((
                    "OTEL_EXPORTER_OTLP_CERTIFICATE".into(),
                    ca_pem.display().to_string(),
                ));
            }
            let mut s = with_env(&env, |env| {
                Server::start_logged_with_env(&["--no-watch"], env)
            });
            let r = s.request(
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": modern_meta()}),
            );
            assert!(r["result"].is_object(), "{protocol}: {r}");
            s.close_stdin();
            s.wait_exit(Duration::from_secs(15));
            if trusted {
                let span = rx.named(&service, "SPAN_KIND_SERVER", "tools/call add");
                assert_eq!(span["protocol"], protocol);
                assert_eq!(span["tenant"], "team a", "{span}");
            } else {
                let said = s.stderr_drain(Duration::from_millis(200)).join("\n");
                assert!(
                    said.contains("OTLP export of 1 spans failed") && said.contains("TLS"),
                    "{protocol}: {said}"
                );
            }
        }
    }
}
