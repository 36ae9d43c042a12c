//! The conformance fixtures in the modern era (2026-07-28) over stdio, which the official
//! suite does not test: resources, prompts and completion with `_meta` on every request,
//! multi-round-trip requests (`input_required` with a sealed `requestState`, then the retry
//! with `inputResponses`), and resource updates through `subscriptions/listen`.

use crate::util::{Server, modern_meta};
use base64::Engine;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn fixtures() -> Server {
    Server::start(&["--fixtures", "conformance"])
}

/// A modern request whose `_meta` declares `capabilities`, plus any `extra` params.
fn modern_with(s: &mut Server, method: &str, capabilities: Value, mut params: Value) -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    params["_meta"] = meta;
    s.request(method, params)
}

fn elicit_caps() -> Value {
    json!({"elicitation": {}})
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block in {result}"))
}

#[test]
fn resources_list_read_and_templates() {
    let mut s = fixtures();
    let r = s.modern("resources/list", json!({}));
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete", "{r}");
    assert!(
        res["ttlMs"].is_u64() && res["cacheScope"].is_string(),
        "{r}"
    );
    let uris: Vec<&str> = res["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "test://static-binary",
            "test://static-text",
            "test://watched-resource",
            // The fixture skills' SKILL.md files, after the catalog's own resources.
            "skill://examples/hello-world/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );

    let r = s.modern("resources/templates/list", json!({}));
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );

    let r = s.modern("resources/read", json!({"uri": "test://static-text"}));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}])
    );

    let r = s.modern("resources/read", json!({"uri": "test://static-binary"}));
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(c["blob"].as_str().unwrap())
        .unwrap();
    let reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .expect("the blob is a PNG");
    assert_eq!((reader.info().width, reader.info().height), (16, 16));

    let r = s.modern("resources/read", json!({"uri": "test://template/77/data"}));
    let c = &r["result"]["contents"][0];
    assert_eq!(c["uri"], "test://template/77/data");
    let doc: Value = serde_json::from_str(c["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        doc,
        json!({"id": "77", "templateTest": true, "data": "Data for ID: 77"})
    );

    let r = s.modern("resources/read", json!({"uri": "test://nothing-here"}));
    assert_eq!(r["error"]["code"], -32602, "modern not-found: {r}");
    assert_eq!(r["error"]["data"]["uri"], "test://nothing-here");
}

#[test]
fn prompts_list_and_get() {
    let mut s = fixtures();
    let r = s.modern("prompts/list", json!({}));
    let names: Vec<&str> = r["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_simple_prompt"
        ]
    );
    assert_eq!(r["result"]["resultType"], "complete");

    let r = s.modern(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}),
    );
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(
        r["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text",
                "text": "Prompt with arguments: arg1='hello', arg2='world'"}}])
    );

    let r = s.modern(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello"}}),
    );
    assert_eq!(r["error"]["code"], -32602, "arg2 is required: {r}");

    let r = s.modern(
        "prompts/get",
        json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://x"}}),
    );
    let m = &r["result"]["messages"];
    assert_eq!(m[0]["content"]["type"], "resource");
    assert_eq!(m[0]["content"]["resource"]["uri"], "test://x");
    assert_eq!(m[1]["content"]["type"], "text");

    let r = s.modern("prompts/get", json!({"name": "test_prompt_with_image"}));
    let img = &r["result"]["messages"][0]["content"];
    assert_eq!(
        (img["type"].as_str(), img["mimeType"].as_str()),
        (Some("image"), Some("image/png"))
    );

    let r = s.modern("prompts/get", json!({"name": "no_such_prompt"}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn completion_of_prompt_arguments_and_template_variables() {
    let mut s = fixtures();
    let complete = |s: &mut Server, reference: Value, name: &str, value: &str| {
        s.modern(
            "completion/complete",
            json!({"ref": reference, "argument": {"name": name, "value": value}}),
        )
    };
    let prompt = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    let r = complete(&mut s, prompt.clone(), "arg1", "par");
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(
        r["result"]["completion"],
        json!({"values": ["paris", "park", "party"], "total": 3, "hasMore": false})
    );
    let r = complete(&mut s, prompt, "arg2", "zz");
    assert_eq!(r["result"]["completion"]["values"], json!([]));
    let template = json!({"type": "ref/resource", "uri": "test://template/{id}/data"});
    let r = complete(&mut s, template, "id", "4");
    assert_eq!(r["result"]["completion"]["values"], json!(["42", "456"]));
    let r = complete(
        &mut s,
        json!({"type": "ref/prompt", "name": "nope"}),
        "a",
        "",
    );
    assert_eq!(r["error"]["code"], -32602);
}

/// The first round of a modern `test_elicitation` call: the `input_required` result.
fn ask(s: &mut Server, message: &str) -> Value {
    let r = modern_with(
        s,
        "tools/call",
        elicit_caps(),
        json!({"name": "test_elicitation", "arguments": {"message": message}}),
    );
    let res = r["result"].clone();
    assert_eq!(res["resultType"], "input_required", "{r}");
    res
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}})
}

#[test]
fn elicitation_round_trip() {
    let mut s = fixtures();
    let res = ask(&mut s, "Who are you?");
    let requests = res["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{res}");
    let (key, req) = requests.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["message"], "Who are you?");
    assert_eq!(
        req["params"]["requestedSchema"]["required"],
        json!(["username", "email"])
    );
    let state = res["requestState"].as_str().unwrap().to_owned();
    assert!(res.get("content").is_none(), "no result yet: {res}");

    // The retry: a new id, the same params, the answer under the same key, the state.
    let r = modern_with(
        &mut s,
        "tools/call",
        elicit_caps(),
        json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"},
               "inputResponses": {key.as_str(): accept()}, "requestState": state}),
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(
        first_text(&r["result"]),
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );

    // An answer without the state works too (the state carries earlier rounds only).
    let r = modern_with(
        &mut s,
        "tools/call",
        elicit_caps(),
        json!({"name": "test_elicitation", "arguments": {"message": "Again?"},
               "inputResponses": {key.as_str(): {"action": "decline"}}}),
    );
    assert_eq!(
        first_text(&r["result"]),
        "User response: action=decline, content={}"
    );
}

#[test]
fn sampling_round_trip() {
    let mut s = fixtures();
    let caps = json!({"sampling": {}});
    let args = json!({"prompt": "Say hi"});
    let r = modern_with(
        &mut s,
        "tools/call",
        caps.clone(),
        json!({"name": "test_sampling", "arguments": args}),
    );
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required", "{r}");
    let (key, req) = res["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["maxTokens"], 100);
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "Say hi");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi!"},
                        "model": "test-model", "stopReason": "endTurn"});
    let r = modern_with(
        &mut s,
        "tools/call",
        caps,
        json!({"name": "test_sampling", "arguments": args,
               "inputResponses": {key.as_str(): answer}, "requestState": res["requestState"]}),
    );
    assert_eq!(first_text(&r["result"]), "LLM response: hi!");
}

#[test]
fn request_state_is_sealed_and_bound_to_its_call() {
    let mut s = fixtures();
    let res = ask(&mut s, "m");
    let key = res["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = res["requestState"].as_str().unwrap().to_owned();
    let retry = |s: &mut Server, name: &str, args: Value, state: &str| {
        modern_with(
            s,
            "tools/call",
            elicit_caps(),
            json!({"name": name, "arguments": args,
                   "inputResponses": {key.as_str(): accept()}, "requestState": state}),
        )
    };

    // One character changed anywhere in the sealed payload.
    let mut tampered = state.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let r = retry(
        &mut s,
        "test_elicitation",
        json!({"message": "m"}),
        &tampered,
    );
    assert_eq!(r["error"]["code"], -32602, "tampered: {r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integrity"),
        "{r}"
    );

    let r = retry(
        &mut s,
        "test_elicitation",
        json!({"message": "other"}),
        &state,
    );
    assert_eq!(r["error"]["code"], -32602, "other arguments: {r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("different request")
    );

    let r = retry(
        &mut s,
        "test_elicitation_sep1034_defaults",
        json!({}),
        &state,
    );
    assert_eq!(r["error"]["code"], -32602, "another tool: {r}");

    let r = retry(
        &mut s,
        "test_elicitation",
        json!({"message": "m"}),
        "not-a-state",
    );
    assert_eq!(r["error"]["code"], -32602, "garbage: {r}");

    // The genuine state still works after all that.
    let r = retry(&mut s, "test_elicitation", json!({"message": "m"}), &state);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
}

#[test]
fn asking_without_the_capability_is_32021() {
    let mut s = fixtures();
    for (tool, args, cap) in [
        ("test_elicitation", json!({"message": "m"}), "elicitation"),
        ("test_sampling", json!({"prompt": "p"}), "sampling"),
    ] {
        let r = s.modern("tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(r["error"]["code"], -32021, "{tool}: {r}");
        assert!(
            r["error"]["data"]["requiredCapabilities"][cap].is_object(),
            "{r}"
        );
        crate::util::SpecSchema::modern().check("MissingRequiredClientCapabilityError", &r);
    }
}

#[test]
fn listen_hears_resource_updates() {
    let mut s = fixtures();
    let listen_id = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {
            "resourceSubscriptions": ["test://watched-resource"]}}}),
    );
    let ack = s.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://watched-resource"]})
    );

    let r = s.modern(
        "tools/call",
        json!({"name": "update_watched_resource", "arguments": {}}),
    );
    assert_eq!(
        first_text(&r["result"]),
        "test://watched-resource is now at revision 2"
    );
    let updates: Vec<Value> = s
        .drain(Duration::from_millis(200))
        .into_iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["params"]["uri"], "test://watched-resource");
    assert_eq!(
        updates[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );
    let r = s.modern("resources/read", json!({"uri": "test://watched-resource"}));
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "Watched resource, revision 2"
    );

    s.close_stdin();
    let end = s.response_to(&json!(listen_id));
    assert_eq!(end["result"]["resultType"], "complete");
}

#[test]
fn logs_and_progress_are_spaced_while_the_call_runs() {
    let mut s = fixtures();
    let mut meta = modern_meta();
    meta["progressToken"] = json!("p1");
    meta["io.modelcontextprotocol/logLevel"] = json!("info");
    for tool in ["test_tool_with_progress", "test_tool_with_logging"] {
        let id = s.next_id();
        let started = Instant::now();
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": meta}}));
        let mut before_reply = Vec::new();
        loop {
            let m = s.recv();
            if m.get("id") == Some(&json!(id)) {
                assert_eq!(m["result"]["resultType"], "complete", "{m}");
                break;
            }
            before_reply.push(m);
        }
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "{tool}: two 50 ms pauses"
        );
        if tool == "test_tool_with_progress" {
            let steps: Vec<f64> = before_reply
                .iter()
                .filter(|m| m["method"] == "notifications/progress")
                .map(|m| m["params"]["progress"].as_f64().unwrap())
                .collect();
            assert_eq!(steps, [0.0, 50.0, 100.0]);
            assert!(
                before_reply
                    .iter()
                    .all(|m| m["params"]["progressToken"] == "p1")
            );
        } else {
            let logs: Vec<&str> = before_reply
                .iter()
                .filter(|m| m["method"] == "notifications/message")
                .map(|m| m["params"]["data"].as_str().unwrap())
                .collect();
            assert_eq!(
                logs,
                [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed"
                ]
            );
        }
    }
}
