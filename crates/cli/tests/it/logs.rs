//! `serve --log-format json`: one JSON object a line on stderr, each operation's line with
//! the OpenTelemetry MCP attributes and the trace and span ids (the caller's trace, from
//! `params._meta.traceparent`); `--capture-bytes` records arguments and results, cut.

use crate::util::{Server, modern_meta};
use serde_json::{Value, json};
use std::time::Duration;

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The JSON log line of the next operation named `name` (`tools/call add`).
fn operation_line(s: &mut Server, name: &str) -> Value {
    let lines = s.stderr_until(Duration::from_secs(30), |l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| v["fields"]["message"] == name)
    });
    for l in &lines {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string(), "{v}");
    }
    serde_json::from_str(lines.last().unwrap()).unwrap()
}

fn is_hex(s: &Value, len: usize) -> bool {
    s.as_str()
        .is_some_and(|s| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn json_logs_carry_the_trace_of_the_caller() {
    let mut s = Server::start_logged(
        &[
            "--fixtures",
            "probe",
            "--log-format",
            "json",
            "--capture-bytes",
            "8",
        ],
        None,
    );
    let mut meta = modern_meta();
    meta["traceparent"] = json!(PARENT);
    let r = s.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1000, "b": 2000}, "_meta": meta}),
    );
    assert_eq!(r["result"]["structuredContent"]["result"], 3000);
    let v = operation_line(&mut s, "tools/call add");
    let f = &v["fields"];
    assert_eq!(v["level"], "INFO");
    assert_eq!(f["mcp.method.name"], "tools/call");
    assert_eq!(f["gen_ai.tool.name"], "add");
    assert_eq!(f["mcp.protocol.version"], "2026-07-28");
    assert_eq!(f["network.transport"], "pipe");
    assert!(f["jsonrpc.request.id"].is_string());
    assert!(f.get("error.type").is_none(), "{v}");
    // Cut to 8 bytes, marked.
    assert_eq!(f["gen_ai.tool.call.arguments"], "{\"a\":100…");
    assert_eq!(f["gen_ai.tool.call.result"], "{\"jsonrp…");
    // The caller's trace; a span of its own.
    assert_eq!(v["span"]["trace_id"], PARENT_TRACE);
    assert!(is_hex(&v["span"]["span_id"], 16), "{v}");
    assert_ne!(v["span"]["span_id"], "00f067aa0ba902b7");

    // Without a traceparent: a new trace; a tool error names its type.
    let r = s.modern(
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x", "b": 1}}),
    );
    assert_eq!(r["result"]["isError"], true);
    let v = operation_line(&mut s, "tools/call add");
    assert_eq!(v["fields"]["error.type"], "tool_error");
    assert!(is_hex(&v["span"]["trace_id"], 32));
    assert_ne!(v["span"]["trace_id"], PARENT_TRACE);
}

#[test]
fn arguments_and_results_are_not_recorded_unless_asked() {
    let mut s = Server::start_logged(&["--fixtures", "probe", "--log-format", "json"], None);
    let r = s.modern(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(r["result"]["structuredContent"]["result"], 3);
    let v = operation_line(&mut s, "tools/call add");
    assert!(
        v["fields"].get("gen_ai.tool.call.arguments").is_none(),
        "{v}"
    );
    assert!(v["fields"].get("gen_ai.tool.call.result").is_none(), "{v}");
}

/// `TOOLWRIGHT_LOG` is levels per target: `toolwright_server=debug` shows that crate's debug
/// lines with everything else at the default; a spec that does not parse is said once on
/// stderr and the default used.
#[test]
fn toolwright_log_sets_levels_per_target_and_says_when_it_is_not_understood() {
    let ignored = |spec: &str| {
        let spec = std::path::PathBuf::from(spec);
        let mut s = Server::start_logged_with_env(&[], &[("TOOLWRIGHT_LOG", spec.as_path())])
            .handshake("2025-06-18");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/unheard_of"}));
        let r = s.request("tools/list", json!({}));
        assert!(r["result"]["tools"].is_array(), "{r}");
        s.close_stdin();
        s.wait_exit(Duration::from_secs(10));
        s.stderr_drain(Duration::from_millis(300))
    };
    let lines = ignored("warn,toolwright_server=debug");
    assert!(
        lines.iter().any(|l| l.contains("DEBUG")
            && l.contains("toolwright_server")
            && l.contains("notification ignored")),
        "{lines:#?}"
    );
    let lines = ignored("toolwright_http=debug");
    assert!(
        !lines.iter().any(|l| l.contains("notification ignored")),
        "another crate's debug lines stay off: {lines:#?}"
    );
    let lines = ignored("toolwright_server=loud");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("TOOLWRIGHT_LOG=\"toolwright_server=loud\" is not understood")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("notification ignored")),
        "{lines:#?}"
    );
}
