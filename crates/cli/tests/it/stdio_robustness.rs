//! Bad input over stdio: every case gets a clear error and the server keeps serving.

use crate::util::Server;
use serde_json::json;
use std::time::Duration;

#[test]
fn malformed_json_is_a_parse_error_without_id() {
    let mut s = Server::start(&[]);
    for bad in [
        &b"{not json\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\n",
        b"\xff\xfe\n",
    ] {
        s.send_raw(bad);
        let r = s.recv();
        assert_eq!(r["error"]["code"], -32700, "{r}");
        assert!(r.get("id").is_none());
    }
    s.assert_alive();
}

/// Whenever the id can still be read, the error goes back to it, so the client is not left
/// waiting for an answer that never names its request.
#[test]
fn errors_carry_every_id_that_can_be_read() {
    let mut s = Server::start(&["--max-message-bytes", "200000"]);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"name":"add","arguments":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"{}"}}}}"#,
        "x".repeat(300_000)
    );
    let cases: Vec<(String, serde_json::Value, i64)> = vec![
        (deep, json!(99), -32600),
        (huge, json!("big"), -32600),
        (
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":{}}}"#, "9".repeat(400)),
            json!(5),
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#.to_owned(),
            json!(0),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#.to_owned(),
            json!(7),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":["ping"]}"#.to_owned(),
            json!("s"),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"ping", oops}"#.to_owned(),
            json!(8),
            -32700,
        ),
    ];
    for (line, id, code) in cases {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        s.send_raw(&bytes);
        let r = s.recv();
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["error"]["code"], code, "{r}");
    }
    s.assert_alive();
}

#[test]
fn invalid_requests_are_32600() {
    let mut s = Server::start(&[]);
    let cases: [&[u8]; 7] = [
        br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        br#"{"id":1,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":7}"#,
        br#"42"#,
        br#"[]"#,
    ];
    for c in cases {
        let mut line = c.to_vec();
        line.push(b'\n');
        s.send_raw(&line);
        let r = s.recv();
        assert_eq!(
            r["error"]["code"],
            -32600,
            "{}: {r}",
            String::from_utf8_lossy(c)
        );
    }
    s.assert_alive();
}

#[test]
fn unknown_methods_are_32601() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let r = s.request("tools/destroy", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/destroy")
    );
    // Capabilities the server does not advertise are unknown methods too.
    assert_eq!(
        s.request("prompts/list", json!({}))["error"]["code"],
        -32601
    );
}

#[test]
fn oversized_messages_are_refused_without_buffering_them() {
    let mut s = Server::start(&["--max-message-bytes", "1000"]);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(5000)
    );
    s.send_raw(big.as_bytes());
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    s.assert_alive();
}

#[test]
fn a_message_over_the_default_16_mib_limit_is_refused() {
    let mut s = Server::start(&[]);
    let mut big = Vec::with_capacity(17 << 20);
    big.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#);
    big.resize(17 << 20, b'a');
    big.extend_from_slice(b"\"}}\n");
    s.send_raw(&big);
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600);
    s.assert_alive();
}

#[test]
fn deep_nesting_is_refused_without_exhausting_the_stack() {
    let mut s = Server::start(&[]);
    let mut deep = "[".repeat(1_000_000);
    deep.push('\n');
    s.send_raw(deep.as_bytes());
    let r = s.recv();
    assert!(
        matches!(r["error"]["code"].as_i64(), Some(-32600 | -32700)),
        "{r}"
    );
    let nested_args = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"add\",\"arguments\":{{\"a\":{}1{}}}}}}}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    s.send_raw(nested_args.as_bytes());
    let r = s.recv();
    assert!(r["error"].is_object(), "{r}");
    s.assert_alive();
}

#[test]
fn blank_lines_and_crlf_are_fine() {
    let mut s = Server::start(&[]);
    s.send_raw(b"\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\r\n");
    let r = s.recv();
    assert_eq!(r["id"], 9);
    assert_eq!(r["result"], json!({}));
}

#[test]
fn a_message_split_across_writes_is_one_message() {
    let mut s = Server::start(&[]);
    s.send_raw(b"{\"jsonrpc\":\"2.0\",");
    std::thread::sleep(Duration::from_millis(50));
    s.send_raw(b"\"id\":3,\"method\":\"ping\"}\n");
    assert_eq!(s.recv()["id"], 3);
}

#[test]
fn exits_cleanly_when_stdin_closes() {
    let mut s = Server::legacy("2025-11-25", &[]);
    s.close_stdin();
    let st = s.wait_exit(Duration::from_secs(5)).expect("exited");
    assert!(st.success(), "{st:?}");
}

#[test]
fn calls_in_flight_still_answer_after_stdin_closes() {
    let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 200, "text": "finished"}}}));
    s.close_stdin();
    let r = s.response_to(&json!(id));
    assert_eq!(r["result"]["content"][0]["text"], "finished");
    assert!(
        s.wait_exit(Duration::from_secs(5))
            .expect("exited")
            .success()
    );
}

#[test]
fn responses_from_the_client_to_nothing_are_ignored() {
    let mut s = Server::legacy("2025-11-25", &[]);
    s.send(&json!({"jsonrpc": "2.0", "id": 424242, "result": {}}));
    s.send(&json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "x"}}));
    s.assert_alive();
}

#[test]
fn many_pipelined_requests_all_get_answers() {
    let mut s = Server::legacy("2025-11-25", &[]);
    let mut buf = Vec::new();
    for i in 0..2000 {
        buf.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"add\",\"arguments\":{{\"a\":{i},\"b\":1}}}}}}\n").as_bytes(),
        );
    }
    s.validate = false;
    s.send_raw(&buf);
    let mut seen = vec![false; 2000];
    for _ in 0..2000 {
        let r = s.recv();
        let i = r["id"].as_u64().unwrap() as usize;
        assert!(!seen[i], "duplicate answer {i}");
        seen[i] = true;
        assert_eq!(r["result"]["structuredContent"]["result"], json!(i + 1));
    }
}

/// SIGTERM (and SIGINT) drain like a closed stdin: the call in flight is answered, then the
/// process exits 0, though the client never hung up.
#[test]
fn sigterm_answers_calls_in_flight_then_exits_zero() {
    for signal in ["-TERM", "-INT"] {
        let mut s = Server::legacy("2025-11-25", &["--fixtures", "testing"]);
        let id = s.next_id();
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"ms": 700}}}));
        // Lines are handled in order: once a later ping is answered, the call is in flight.
        s.assert_alive();
        let st = std::process::Command::new("kill")
            .args([signal, &s.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let reply = s.response_to(&json!(id));
        assert!(reply.get("result").is_some(), "{signal}: {reply}");
        let status = s.wait_exit(Duration::from_secs(10)).expect("exits");
        assert_eq!(status.code(), Some(0), "{signal}: {status:?}");
    }
}
