//! Trace context passed on: a call observed by telemetry (here `--log-format json`) hands
//! its span to what it calls, as the parent: `TRACEPARENT` in a command-backed declared
//! tool's environment, a `traceparent` header on an HTTP-backed one's request, in the
//! caller's trace (from `params._meta.traceparent`).

use crate::util::{Server, http_recorder, modern_meta};
use serde_json::{Value, json};
use std::time::Duration;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The span id of the JSON log line of the next `tools/call NAME`, with its trace id.
fn logged_span(s: &mut Server, name: &str) -> (String, String) {
    let want = format!("tools/call {name}");
    let lines = s.stderr_until(Duration::from_secs(30), |l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| v["fields"]["message"] == want)
    });
    let v: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let id = |k: &str| v["span"][k].as_str().unwrap().to_owned();
    (id("trace_id"), id("span_id"))
}

fn call_with_parent(s: &mut Server, name: &str) -> Value {
    let mut meta = modern_meta();
    meta["traceparent"] = json!(PARENT);
    meta["tracestate"] = json!("rojo=00f067aa0ba902b7");
    let r = s.request(
        "tools/call",
        json!({"name": name, "arguments": {}, "_meta": meta}),
    );
    assert!(r["result"].is_object(), "{r}");
    r["result"].clone()
}

#[test]
fn declared_tools_get_the_calls_span_as_their_parent() {
    let (port, seen) = http_recorder("{}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tools.yaml");
    std::fs::write(
        &cfg,
        format!(
            r#"tools:
  - name: env_trace
    description: Print the trace context the program was given.
    annotations: {{readOnlyHint: true, openWorldHint: false}}
    command: [sh, -c, 'printf "%s %s" "$TRACEPARENT" "$TRACESTATE"']
  - name: http_trace
    description: Ask the local API, which records the request.
    annotations: {{readOnlyHint: true, openWorldHint: false}}
    http:
      url: "http://127.0.0.1:{port}/trace"
      allow_loopback: true
    output: {{parse: json}}
"#
        ),
    )
    .unwrap();
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--no-watch",
        "--log-format",
        "json",
    ];
    let mut s = Server::start_logged(&args, Some(dir.path()));

    let r = call_with_parent(&mut s, "env_trace");
    let text = r["content"][0]["text"].as_str().unwrap().to_owned();
    let (trace, span) = logged_span(&mut s, "env_trace");
    assert_eq!(trace, TRACE);
    assert_eq!(text, format!("00-{TRACE}-{span}-01 rojo=00f067aa0ba902b7"));

    call_with_parent(&mut s, "http_trace");
    let (trace, span) = logged_span(&mut s, "http_trace");
    assert_eq!(trace, TRACE);
    let head = seen.lock().unwrap().last().cloned().expect("a request");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains(&format!("traceparent: 00-{TRACE}-{span}-01\r\n")),
        "{head}"
    );
    assert!(
        lower.contains("tracestate: rojo=00f067aa0ba902b7\r\n"),
        "{head}"
    );
}

/// Through the gateway, in both eras of the client's request: the gateway's span is the
/// upstream's parent (in `_meta.traceparent`), and the upstream's span the parent of the
/// upstream's own command tool, all in the caller's trace.
#[test]
fn the_gateway_passes_the_trace_to_its_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let up = dir.path().join("up.yaml");
    std::fs::write(
        &up,
        "tools:\n  - name: env_trace\n    description: Print the trace context the program was given.\n    annotations: {readOnlyHint: true, openWorldHint: false}\n    command: [sh, -c, 'printf %s \"$TRACEPARENT\"']\n",
    )
    .unwrap();
    let gw = dir.path().join("gw.yaml");
    let bin = crate::util::bin();
    std::fs::write(
        &gw,
        format!(
            "servers:\n  up:\n    command: [{}, serve, --no-watch, --config, {}, --log-format, json]\n",
            bin.display(),
            up.display()
        ),
    )
    .unwrap();
    let args = [
        "--config",
        gw.to_str().unwrap(),
        "--no-watch",
        "--log-format",
        "json",
    ];
    for legacy in [false, true] {
        let mut s = Server::start_logged(&args, Some(dir.path()));
        let mut meta = if legacy { json!({}) } else { modern_meta() };
        if legacy {
            s = s.handshake("2025-11-25");
        }
        meta["traceparent"] = json!(PARENT);
        let r = s.request(
            "tools/call",
            json!({"name": "up__env_trace", "arguments": {}, "_meta": meta}),
        );
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        let (trace, gateway_span) = logged_span(&mut s, "up__env_trace");
        assert_eq!(trace, TRACE, "legacy: {legacy}");
        let parts: Vec<&str> = text.split('-').collect();
        assert_eq!(parts.len(), 4, "{text}");
        assert_eq!(
            parts[1], TRACE,
            "the upstream's tool is in the caller's trace: {text}"
        );
        // The upstream made a span of its own under the gateway's.
        assert_ne!(parts[2], gateway_span, "{text}");
        assert_ne!(parts[2], "00f067aa0ba902b7", "{text}");
    }
}
