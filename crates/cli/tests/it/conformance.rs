//! The conformance fixture set (`--fixtures conformance`): the official suite over
//! Streamable HTTP (`scripts/conformance.sh`), and the same fixtures over stdio with a legacy
//! client, where the test plays the client that answers sampling and elicitation requests.
//!
//! The suite needs `tests/conformance/node_modules` (the script installs it with
//! `npm install`). Under `CI` the test always runs; elsewhere it is skipped, with a message,
//! when the suite or its Node 22 is not installed.

use crate::util::{Server, repo_root};
use base64::Engine;
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

/// Whether the pinned suite and its Node 22 are installed (the client-suite tests ask too).
pub(crate) fn suite_installed() -> bool {
    let bin = repo_root().join("tests/conformance/node_modules/.bin");
    let node22 = Command::new(bin.join("node"))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"v22."));
    node22 && bin.join("conformance").exists()
}

#[test]
fn official_suite_passes_every_scenario() {
    if !suite_installed() && std::env::var_os("CI").is_none() {
        eprintln!(
            "SKIPPED official_suite_passes_every_scenario: the conformance suite is not \
             installed; run scripts/conformance.sh once (or `npm install --prefix tests/conformance`)"
        );
        return;
    }
    let started = Instant::now();
    let out = Command::new(repo_root().join("scripts/conformance.sh"))
        .env("TOOLWRIGHT_BIN", env!("CARGO_BIN_EXE_toolwright"))
        .output()
        .expect("run scripts/conformance.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the suite failed:\n{stdout}\n{stderr}"
    );
    let summary = stderr
        .lines()
        .find(|l| l.contains(" scenarios, "))
        .unwrap_or_else(|| panic!("no summary line:\n{stderr}"));
    assert!(
        summary.contains("32 scenarios") && summary.contains(" 0 failed, 0 warnings"),
        "{summary}\n{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the suite took {:?}",
        started.elapsed()
    );
}

/// A legacy stdio session that declares sampling and elicitation.
fn legacy_client() -> Server {
    let mut s = Server::start(&["--fixtures", "conformance"]);
    let r = s.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25",
               "capabilities": {"sampling": {}, "elicitation": {}},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let caps = &r["result"]["capabilities"];
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{r}"
    );
    s.notify("notifications/initialized", json!({}));
    s
}

fn decode(data: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(data.as_str().expect("base64 text"))
        .expect("valid base64")
}

#[test]
fn media_content_is_real_png_and_wav() {
    let mut s = legacy_client();
    let r = s.request(
        "tools/call",
        json!({"name": "test_image_content", "arguments": {}}),
    );
    let img = &r["result"]["content"][0];
    assert_eq!(img["mimeType"], "image/png");
    let mut decoder = png::Decoder::new(std::io::Cursor::new(decode(&img["data"])));
    decoder.set_transformations(png::Transformations::IDENTITY);
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("PNG pixels decode");
    assert_eq!((info.width, info.height), (16, 16));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(&pixels[..3], &[255, 255, 255], "the diagonal is white");
    assert_eq!(&pixels[3..6], &[220, 30, 30], "the rest is red");

    let r = s.request(
        "tools/call",
        json!({"name": "test_audio_content", "arguments": {}}),
    );
    let audio = &r["result"]["content"][0];
    assert_eq!(
        (audio["type"].as_str(), audio["mimeType"].as_str()),
        (Some("audio"), Some("audio/wav"))
    );
    let wav = decode(&audio["data"]);
    assert_eq!((&wav[..4], &wav[8..12]), (&b"RIFF"[..], &b"WAVE"[..]));
    let le32 = |at: usize| u32::from_le_bytes(wav[at..at + 4].try_into().unwrap());
    assert_eq!(le32(4) as usize, wav.len() - 8, "RIFF size");
    assert_eq!(le32(24), 8_000, "sample rate");
    assert_eq!(le32(40) as usize, wav.len() - 44, "data size");
    assert!(wav[44..].iter().any(|&b| b != 0), "not silence");

    let r = s.request(
        "tools/call",
        json!({"name": "test_multiple_content_types", "arguments": {}}),
    );
    let kinds: Vec<&str> = r["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let doc = &r["result"]["content"][2]["resource"];
    assert_eq!(doc["mimeType"], "application/json");
    let parsed: Value = serde_json::from_str(doc["text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"test": "data", "value": 123}));
}

/// Calls `name` and answers the one request the server sends back with `answer`; returns
/// that request and the call's response.
fn call_answering(s: &mut Server, name: &str, args: Value, answer: Value) -> (Value, Value) {
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}}));
    let asked = s.recv();
    assert!(
        asked["method"].is_string() && asked["id"].is_number(),
        "{asked}"
    );
    s.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
    (asked, s.response_to(&json!(id)))
}

#[test]
fn sampling_and_elicitation_are_real_requests_to_a_legacy_client() {
    let mut s = legacy_client();
    let (asked, r) = call_answering(
        &mut s,
        "test_sampling",
        json!({"prompt": "Test prompt"}),
        json!({"role": "assistant", "content": {"type": "text", "text": "Hello from the model"},
               "model": "m", "stopReason": "endTurn"}),
    );
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"],
        "Test prompt"
    );
    assert_eq!(
        r["result"]["content"][0]["text"],
        "LLM response: Hello from the model"
    );

    let (asked, r) = call_answering(
        &mut s,
        "test_elicitation_sep1034_defaults",
        json!({}),
        json!({"action": "accept", "content": {"name": "Jane", "age": 25}}),
    );
    assert_eq!(asked["method"], "elicitation/create");
    let props = &asked["params"]["requestedSchema"]["properties"];
    assert_eq!(props["score"]["default"], 95.5);
    assert_eq!(props["verified"]["default"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        r#"Elicitation completed: action=accept, content={"name":"Jane","age":25}"#
    );

    let (asked, r) = call_answering(
        &mut s,
        "test_elicitation_sep1330_enums",
        json!({}),
        json!({"action": "cancel"}),
    );
    let props = &asked["params"]["requestedSchema"]["properties"];
    assert_eq!(
        props["titledSingle"]["oneOf"][1],
        json!({"const": "value2", "title": "Second Option"})
    );
    assert_eq!(props["legacyEnum"]["enumNames"][2], "Option Three");
    assert_eq!(
        props["titledMulti"]["items"]["anyOf"][0]["title"],
        "First Choice"
    );
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Elicitation completed: action=cancel, content={}"
    );

    // The client refuses: the tool reports it as a failed call.
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "m"}}}));
    let asked = s.recv();
    s.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "error": {"code": -32600, "message": "user closed the dialog"}}));
    let r = s.response_to(&json!(id));
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[test]
fn a_legacy_client_without_sampling_gets_a_tool_error() {
    let mut s = Server::legacy("2025-06-18", &["--fixtures", "conformance"]);
    let r = s.request(
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "p"}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        first(&r).contains("sampling"),
        "the message names the capability: {r}"
    );
    let r = s.request(
        "tools/call",
        json!({"name": "test_error_handling", "arguments": {}}),
    );
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        first(&r),
        "This tool intentionally returns an error for testing"
    );
}

fn first(r: &Value) -> &str {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn subscribed_legacy_sessions_hear_of_updates_until_they_unsubscribe() {
    let mut s = legacy_client();
    let update = |s: &mut Server| {
        s.request(
            "tools/call",
            json!({"name": "update_watched_resource", "arguments": {}}),
        )
    };
    update(&mut s);
    let quiet = s.drain(Duration::from_millis(100));
    assert!(
        quiet
            .iter()
            .all(|m| m["method"] != "notifications/resources/updated"),
        "not subscribed yet: {quiet:?}"
    );
    let r = s.request(
        "resources/subscribe",
        json!({"uri": "test://watched-resource"}),
    );
    assert_eq!(r["result"], json!({}));
    update(&mut s);
    let heard: Vec<Value> = s
        .drain(Duration::from_millis(200))
        .into_iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0]["params"]["uri"], "test://watched-resource");
    let r = s.request("resources/read", json!({"uri": "test://watched-resource"}));
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "Watched resource, revision 3"
    );

    let r = s.request(
        "resources/unsubscribe",
        json!({"uri": "test://watched-resource"}),
    );
    assert_eq!(r["result"], json!({}));
    update(&mut s);
    let after = s.drain(Duration::from_millis(150));
    assert!(
        after
            .iter()
            .all(|m| m["method"] != "notifications/resources/updated"),
        "{after:?}"
    );
    let r = s.request("resources/subscribe", json!({"uri": "test://unknown"}));
    assert_eq!(r["error"]["code"], -32002, "legacy resource-not-found: {r}");
}

#[test]
fn logging_honours_the_level_and_arrives_during_the_call() {
    let mut s = legacy_client();
    assert_eq!(
        s.request("logging/setLevel", json!({"level": "warning"}))["result"],
        json!({})
    );
    s.request(
        "tools/call",
        json!({"name": "test_tool_with_logging", "arguments": {}}),
    );
    let msgs = s.drain(Duration::from_millis(100));
    assert!(msgs.is_empty(), "info is below warning: {msgs:?}");

    s.request("logging/setLevel", json!({"level": "info"}));
    let id = s.next_id();
    let started = Instant::now();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "test_tool_with_logging", "arguments": {}}}));
    let first_log = s.recv();
    assert_eq!(first_log["method"], "notifications/message");
    assert_eq!(first_log["params"]["level"], "info");
    let r = s.response_to(&json!(id));
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "two 50 ms pauses"
    );
    assert_eq!(first(&r), "Tool with logging executed successfully");
}

#[test]
fn the_reconnection_tool_closes_its_stream_and_the_result_waits_for_the_client() {
    use crate::http_client::{HttpServer, LEGACY, LegacySession, check, request};
    let s = HttpServer::start(&["--fixtures", "conformance"]);
    let session = LegacySession::open(&s, LEGACY);
    let call = request(
        7,
        "tools/call",
        json!({"name": "test_reconnection", "arguments": {}}),
    );
    let mut post = session.post_stream(&s, &call);
    assert_eq!(post.header("content-type"), Some("text/event-stream"));
    let events = post.rest();
    assert_eq!(events.len(), 3, "priming, log, retry: {events:?}");
    let (priming, log, retry) = (&events[0], &events[1], &events[2]);
    assert!(
        priming.id.is_some() && priming.data.is_empty(),
        "{priming:?}"
    );
    check(false, "", &log.json());
    assert_eq!(log.json()["method"], "notifications/message");
    assert_eq!(
        (
            retry.retry.as_deref(),
            retry.data.as_str(),
            retry.id.as_deref()
        ),
        (Some("500"), "", None),
        "a bare retry field, then the end"
    );

    // The client comes back after the last event it saw and gets the result there.
    let mut resumed = session.get_stream(&s, log.id.as_deref());
    assert_eq!(resumed.status, 200);
    let (_, reply) = resumed
        .next_message()
        .expect("the reply after reconnecting");
    check(false, "tools/call", &reply);
    assert_eq!(reply["id"], 7);
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Reconnection test completed: the result came after the stream was closed"
    );
    resumed.close();

    // A 2025-06-18 client cannot resume from a priming event: the stream stays open.
    let old = LegacySession::open(&s, "2025-06-18");
    let mut post = old.post_stream(&s, &call);
    let messages: Vec<Value> = post
        .rest()
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| e.json())
        .collect();
    assert!(messages.iter().all(|m| m.get("retry").is_none()));
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "Reconnection test completed: this transport kept the stream open"
    );
}

#[test]
fn fixtures_over_modern_http_cannot_close_their_stream() {
    use crate::http_client::{HttpServer, modern_headers, modern_request};
    let s = HttpServer::start(&["--fixtures", "conformance"]);
    let body = modern_request(
        3,
        "tools/call",
        json!({"name": "test_reconnection", "arguments": {}}),
    );
    let r = s.post(
        &modern_headers("tools/call", Some("test_reconnection")),
        &body,
    );
    // No log level in `_meta`, so no log message: the reply is the whole answer.
    let reply = r.checked(true, "tools/call");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Reconnection test completed: this transport kept the stream open",
        "closing a modern stream would cancel the call"
    );
}
