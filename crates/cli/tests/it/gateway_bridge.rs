//! The gateway between a legacy upstream's questions and its clients (issue 38):
//! `toolwright serve --config gw.yaml` over stdio in front of `tests/peers/asking_peer.py`
//! (standard library, legacy era), whose tools ask `elicitation/create` or
//! `sampling/createMessage` in the middle of a call and count, on the upstream's side, how
//! many times each was run.
//!
//! - A modern client (raw JSON-RPC, 2026-07-28 in `_meta`, over stdio and HTTP; and the
//!   official Python 2.3 and TypeScript 2.x SDK clients through their drivers) is asked
//!   through `input_required` and answers on its retry; the upstream call waits across the
//!   round trip, so it runs once, however many questions it asks.
//! - A legacy client is asked with a real request in the middle of the call, as before.
//! - An upstream that withdraws its own request (`notifications/cancelled`) has the request
//!   relayed to the client withdrawn too, and gets no response to it, even when the client
//!   answers late.

use crate::client::{available, peers_dir, s};
use crate::util::{Server, modern_meta};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `asking_peer.py` over stdio, or `None` (after the skip message) without python3.
fn asking_peer() -> Option<Vec<String>> {
    available(
        "python3",
        vec!["python3".into(), s(&peers_dir().join("asking_peer.py"))],
        &[],
    )
}

/// A gateway config in its own directory whose one upstream, `asker`, is the asking peer,
/// writing its events to `events.log` beside the config.
struct Config {
    dir: tempfile::TempDir,
}

impl Config {
    fn new(peer: &[String]) -> Config {
        Config::with(peer, json!({}))
    }

    /// With `extra` keys in the server's entry.
    fn with(peer: &[String], extra: Value) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("events.log");
        let mut entry = json!({
            "command": peer,
            "env": {"ASKING_PEER_EVENTS": s(&events)},
        });
        if let Value::Object(extra) = extra {
            entry.as_object_mut().unwrap().extend(extra);
        }
        let doc = json!({
            "gateway": {"state_file": s(&dir.path().join("pins.json"))},
            "servers": {"asker": entry},
        });
        std::fs::write(
            dir.path().join("gw.yaml"),
            serde_json::to_string_pretty(&doc).unwrap(),
        )
        .unwrap();
        Config { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("gw.yaml")
    }

    fn events(&self) -> PathBuf {
        self.dir.path().join("events.log")
    }

    /// The gateway over stdio, its upstream's tools listed.
    fn serve(&self) -> Server {
        let path = s(&self.path());
        let mut gw = Server::start(&["--no-watch", "--config", &path]);
        wait_listed(&mut gw, "asker__ask_name");
        gw
    }
}

/// Polls `tools/list` (modern) until `name` is in it.
fn wait_listed(gw: &mut Server, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = gw.modern("tools/list", json!({}));
        let listed = r["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == name));
        if listed {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never listed: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many times the upstream started `tool`, by its events.
fn runs_in_events(events: &Path, tool: &str) -> usize {
    let needle = format!("run {tool} ");
    std::fs::read_to_string(events)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(&needle))
        .count()
}

/// A modern `tools/call` of `name` declaring `capabilities`, with `extra` params.
fn modern_call(gw: &mut Server, name: &str, capabilities: Value, extra: Value) -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    let mut params = json!({"name": name, "arguments": {}, "_meta": meta});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    gw.request("tools/call", params)
}

/// The one question of an `input_required` result: its key, its request, and the state.
fn one_question(r: &Value) -> (String, Value, Value) {
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "one question at a time: {r}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), request.clone(), result["requestState"].clone())
}

/// The JSON the asking peer returned as its result's text.
fn peer_result(r: &Value) -> Value {
    let result = &r["result"];
    assert_ne!(result["isError"], true, "{r}");
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn accept(field: &str, value: &str) -> Value {
    json!({"action": "accept", "content": {field: value}})
}

/// The retry's params: the answer under `key`, and the state.
fn retry(key: &str, answer: Value, state: Value) -> Value {
    let mut responses = Map::new();
    responses.insert(key.to_owned(), answer);
    json!({"inputResponses": responses, "requestState": state})
}

#[test]
fn a_legacy_upstreams_question_to_a_modern_client_is_answered_in_the_same_run() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let mut gw = config.serve();
    let caps = json!({"elicitation": {}});

    let r = modern_call(&mut gw, "asker__ask_name", caps.clone(), json!({}));
    let (key, request, state) = one_question(&r);
    assert_eq!(request["method"], "elicitation/create", "{r}");
    assert_eq!(request["params"]["message"], "What is your name?", "{r}");

    let r = modern_call(
        &mut gw,
        "asker__ask_name",
        caps.clone(),
        retry(&key, accept("name", "Ada"), state.clone()),
    );
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Ada", "{r}");
    assert_eq!(got["runs"], 1, "the upstream ran the tool once: {r}");
    assert_eq!(runs_in_events(&config.events(), "ask_name"), 1);

    // The same retry again finds no call waiting (the first took it): the gateway runs the
    // upstream call again, and its question is answered at once from the retry.
    let r = modern_call(
        &mut gw,
        "asker__ask_name",
        caps,
        retry(&key, accept("name", "Bea"), state),
    );
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Bea", "{r}");
    assert_eq!(
        got["runs"], 2,
        "a retry with nothing parked runs again: {r}"
    );
}

#[test]
fn two_questions_in_one_call_take_two_rounds_and_one_run() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let mut gw = config.serve();
    let caps = json!({"elicitation": {}});

    let r = modern_call(&mut gw, "asker__ask_twice", caps.clone(), json!({}));
    let (first, request, state) = one_question(&r);
    assert_eq!(request["params"]["message"], "What is your name?", "{r}");

    let r = modern_call(
        &mut gw,
        "asker__ask_twice",
        caps.clone(),
        retry(&first, accept("name", "Ada"), state),
    );
    let (second, request, state) = one_question(&r);
    assert_ne!(
        second, first,
        "the second question has a key of its own: {r}"
    );
    assert_eq!(request["params"]["message"], "What is your colour?", "{r}");

    let r = modern_call(
        &mut gw,
        "asker__ask_twice",
        caps,
        retry(&second, accept("colour", "blue"), state),
    );
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Ada", "{r}");
    assert_eq!(got["answers"][1]["content"]["colour"], "blue", "{r}");
    assert_eq!(got["runs"], 1, "the upstream ran the tool once: {r}");
    assert_eq!(runs_in_events(&config.events(), "ask_twice"), 1);
}

#[test]
fn a_call_that_timed_out_while_it_waited_runs_again_on_the_retry() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::with(&peer, json!({"timeout": "3s"}));
    let mut gw = config.serve();
    let caps = json!({"elicitation": {}});

    let r = modern_call(&mut gw, "asker__ask_name", caps.clone(), json!({}));
    let (key, _, state) = one_question(&r);
    // The upstream call's own timeout runs while it waits: the gateway cancels it upstream.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(config.events())
        .unwrap_or_default()
        .contains("cancelled ask_name")
    {
        assert!(
            Instant::now() < deadline,
            "the upstream call was never cancelled"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let r = modern_call(
        &mut gw,
        "asker__ask_name",
        caps,
        retry(&key, accept("name", "Ada"), state),
    );
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Ada", "{r}");
    assert_eq!(got["runs"], 2, "the ended call was run again: {r}");
}

#[test]
fn a_question_the_upstream_withdraws_while_it_waits_is_not_asked_again() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let mut gw = config.serve();
    let caps = json!({"sampling": {}});
    let text_of = |q: &Value| q["params"]["messages"][0]["content"]["text"].clone();

    let r = modern_call(&mut gw, "asker__withdraw", caps.clone(), json!({}));
    let (_, first, mut state) = one_question(&r);
    assert_eq!(text_of(&first), "first, withdrawn", "{r}");
    // The client says it was asked; the upstream withdraws that question and asks another,
    // while its call waits for the retry.
    let r = modern_call(&mut gw, "asker__release", caps.clone(), json!({}));
    assert_eq!(peer_result(&r), "released", "{r}");

    // Retries that do not answer the withdrawn question: until the gateway has seen it
    // withdrawn, it is asked again; then only the second is.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (key, state) = loop {
        let params = json!({"inputResponses": {}, "requestState": state});
        let r = modern_call(&mut gw, "asker__withdraw", caps.clone(), params);
        let (key, question, next) = one_question(&r);
        if text_of(&question) == "second" {
            break (key, next);
        }
        assert!(Instant::now() < deadline, "the first question stayed: {r}");
        state = next;
        std::thread::sleep(Duration::from_millis(50));
    };
    let reply = json!({"role": "assistant", "content": {"type": "text", "text": "two"},
                       "model": "test"});
    let r = modern_call(&mut gw, "asker__withdraw", caps, retry(&key, reply, state));
    let got = peer_result(&r);
    assert_eq!(got["responses"], json!(["s2"]), "{r}");
    assert_eq!(got["runs"], 1, "the upstream ran the tool once: {r}");
}

/// The JSON-RPC response with `id` in an HTTP reply (a JSON body or an event stream).
fn http_response(r: &crate::http_client::Resp, id: i64) -> Value {
    let body = String::from_utf8_lossy(&r.body);
    let is_it = |v: &Value| v["id"] == id && v.get("method").is_none();
    if let Ok(v) = serde_json::from_str::<Value>(&body)
        && is_it(&v)
    {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(is_it)
        .unwrap_or_else(|| panic!("no response to {id} in HTTP {}: {body}", r.status))
}

#[test]
fn a_modern_client_over_http_is_answered_in_the_same_run() {
    use crate::http_client::{HttpServer, modern_headers, modern_request};
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let path = s(&config.path());
    let gw = HttpServer::start(&["--no-watch", "--config", &path]);
    // (A first request before the upstream's first listing waits out the gateway's 20 s
    // start-up wait over HTTP today, hence the long deadline.)
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = gw.post(
            &modern_headers("tools/list", None),
            &modern_request(1, "tools/list", json!({})),
        );
        if String::from_utf8_lossy(&r.body).contains("asker__ask_name") {
            break;
        }
        assert!(Instant::now() < deadline, "never listed: {}", r.status);
        std::thread::sleep(Duration::from_millis(100));
    }
    let call = |id: i64, extra: Value| {
        let mut body = modern_request(id, "tools/call", json!({"name": "asker__ask_name"}));
        body["params"]["arguments"] = json!({});
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"elicitation": {}});
        if let Value::Object(extra) = extra {
            body["params"].as_object_mut().unwrap().extend(extra);
        }
        let r = gw.post(
            &modern_headers("tools/call", Some("asker__ask_name")),
            &body,
        );
        http_response(&r, id)
    };
    let r = call(2, json!({}));
    let (key, request, state) = one_question(&r);
    assert_eq!(request["method"], "elicitation/create", "{r}");
    let r = call(3, retry(&key, accept("name", "Ada"), state));
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Ada", "{r}");
    assert_eq!(got["runs"], 1, "the upstream ran the tool once: {r}");
}

/// The official modern SDK clients' drivers (Python `mcp` 2.3, TypeScript 2.x), those
/// installed (a missing one skips with a message, or fails under CI).
fn modern_sdk_drivers() -> Vec<(&'static str, Vec<String>)> {
    let root = crate::util::repo_root();
    let python = root.join("tests/peers-modern/.venv/bin/python");
    let py = available(
        "python mcp 2.3 client",
        vec![s(&python), s(&root.join("tests/peers-modern/py_client.py"))],
        std::slice::from_ref(&python),
    );
    let node = root.join("tests/node");
    let ts = available(
        "TypeScript SDK client (client)",
        vec!["node".into(), s(&node.join("gateway_client.mjs"))],
        &[node.join("node_modules/@modelcontextprotocol/client/package.json")],
    )
    .map(|mut argv| {
        argv.extend(["--sdk".to_owned(), "v2".to_owned()]);
        argv
    });
    [("python", py), ("typescript", ts)]
        .into_iter()
        .filter_map(|(name, argv)| Some((name, argv?)))
        .collect()
}

#[test]
fn the_official_modern_clients_get_two_questions_answered_in_one_run() {
    let Some(peer) = asking_peer() else { return };
    for (sdk, driver) in modern_sdk_drivers() {
        let config = Config::new(&peer);
        let gateway = vec![
            s(&crate::util::bin()),
            "serve".into(),
            "--no-watch".into(),
            "--config".into(),
            s(&config.path()),
        ];
        let answer = json!({"action": "accept", "content": {"name": "Ada", "colour": "blue"}});
        let list = json!({"op": "list"});
        let call = json!({"op": "call", "name": "asker__ask_twice", "arguments": {}});
        let ready = json!({"op": "until_ok", "within_ms": 30000, "step": list});
        let out = std::process::Command::new(&driver[0])
            .args(&driver[1..])
            .args(["--era", "modern", "--elicit", &answer.to_string()])
            .args(["--stdio", &serde_json::to_string(&gateway).unwrap()])
            .args([ready.to_string(), call.to_string()])
            .output()
            .expect("the driver runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().last().unwrap_or_default();
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!(
                "{sdk}: no JSON report ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let result = json!({"result": v["steps"][1]["result"]});
        let got = peer_result(&result);
        assert_eq!(got["answers"][1]["content"]["colour"], "blue", "{sdk}: {v}");
        assert_eq!(got["runs"], 1, "{sdk}: the upstream ran the tool once: {v}");
        assert_eq!(runs_in_events(&config.events(), "ask_twice"), 1, "{sdk}");
    }
}

/// A legacy client (2025-06-18) that declared `capabilities`, on a gateway just started.
fn legacy_client(config: &Config, capabilities: Value) -> Server {
    let mut gw = config.serve();
    let r = gw.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert!(r["result"]["protocolVersion"].is_string(), "{r}");
    gw.notify("notifications/initialized", json!({}));
    gw
}

/// The next message from the gateway that `want` accepts, within a generous deadline; the
/// others are returned too, in order.
fn until(gw: &mut Server, want: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut others = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(v) = gw.recv_timeout(left) else {
            panic!("not seen within 20 s; seen meanwhile: {others:#?}");
        };
        if want(&v) {
            return (v, others);
        }
        others.push(v);
    }
}

fn answer(gw: &mut Server, id: &Value, result: Value) {
    gw.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

#[test]
fn a_legacy_client_is_asked_in_the_middle_of_the_call() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let mut gw = legacy_client(&config, json!({"elicitation": {}}));
    let call_id = json!(gw.next_id());
    gw.send(
        &json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                    "params": {"name": "asker__ask_name", "arguments": {}}}),
    );
    let (asked, _) = until(&mut gw, |v| v["method"] == "elicitation/create");
    assert_eq!(asked["params"]["message"], "What is your name?", "{asked}");
    answer(&mut gw, &asked["id"], accept("name", "Ada"));
    let r = gw.response_to(&call_id);
    let got = peer_result(&r);
    assert_eq!(got["answers"][0]["content"]["name"], "Ada", "{r}");
    assert_eq!(got["runs"], 1, "{r}");
}

#[test]
fn an_upstream_withdrawing_its_sampling_request_withdraws_the_relayed_one() {
    let Some(peer) = asking_peer() else { return };
    let config = Config::new(&peer);
    let mut gw = legacy_client(&config, json!({"sampling": {}}));
    let call_id = json!(gw.next_id());
    gw.send(
        &json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                    "params": {"name": "asker__withdraw", "arguments": {}}}),
    );
    let is_sampling = |v: &Value| v["method"] == "sampling/createMessage";
    let text_of = |v: &Value| v["params"]["messages"][0]["content"]["text"].clone();

    let (first, _) = until(&mut gw, |v| is_sampling(v));
    assert_eq!(text_of(&first), "first, withdrawn", "{first}");
    // Deliberately unanswered. Once the client was asked it says so (a `release` call, which
    // the upstream answers while it waits): the upstream withdraws its request, and the
    // gateway passes that on. The second request may come before or after the withdrawal.
    let release = json!(gw.next_id());
    gw.send(
        &json!({"jsonrpc": "2.0", "id": release, "method": "tools/call",
                    "params": {"name": "asker__release", "arguments": {}}}),
    );
    let mut second = None;
    let (cancelled, others) = until(&mut gw, |v| {
        v["method"] == "notifications/cancelled" && v["params"]["requestId"] == first["id"]
    });
    for v in others {
        if is_sampling(&v) {
            second = Some(v);
        }
    }
    assert!(cancelled["params"]["reason"].is_string(), "{cancelled}");
    let second = match second {
        Some(v) => v,
        None => until(&mut gw, |v| is_sampling(v)).0,
    };
    assert_eq!(text_of(&second), "second", "{second}");

    // A late answer to the withdrawn request goes nowhere; the second one's reaches the
    // upstream, which reports every response it received.
    let reply = json!({"role": "assistant", "content": {"type": "text", "text": "late"},
                       "model": "test"});
    answer(&mut gw, &first["id"], reply.clone());
    answer(&mut gw, &second["id"], reply);
    let r = gw.response_to(&call_id);
    let got = peer_result(&r);
    assert_eq!(
        got["responses"],
        json!(["s2"]),
        "the upstream got no response to the request it withdrew: {r}"
    );
}
