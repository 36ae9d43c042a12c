//! The gateway in front of an upstream that runs tools as tasks (the Tasks extension,
//! `io.modelcontextprotocol/tasks`): `toolwright serve --config gw.yaml` over stdio, its
//! upstream another `toolwright serve --fixtures conformance` (the Tasks scenarios' tools:
//! `slow_compute` and `confirm_delete` may run as tasks, `failing_job` runs only as one).
//!
//! A legacy client gets the upstream task's final result on its plain call; a client that
//! took up the extension gets a task of the gateway's, polled with the gateway's
//! `tasks/get`. The upstream's questions reach the gateway's client, and cancelling the
//! gateway's task cancels the upstream's. Where the test must see what reached the
//! upstream, the upstream listens on HTTP with JSON logs, one line per operation.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{s, url_in_line};
use crate::util::{Server, bin, modern_meta};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A config with the one upstream `up` (`spec`), in its own directory.
struct Config {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Config {
    fn new(spec: Value) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.yaml");
        let doc = json!({
            "gateway": {"state_file": s(&dir.path().join("pins.json"))},
            "servers": {"up": spec},
        });
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        Config { _dir: dir, path }
    }

    /// With a stdio upstream `toolwright serve --fixtures conformance`.
    fn stdio() -> Config {
        Config::new(json!({
            "command": [s(&bin()), "serve", "--fixtures", "conformance"],
            "trust": "trusted",
            "start": "eager",
        }))
    }

    /// With the HTTP upstream listening at `url`.
    fn http(url: &str) -> Config {
        Config::new(json!({"url": url, "trust": "trusted", "start": "eager"}))
    }

    fn path(&self) -> String {
        s(Path::new(&self.path))
    }
}

/// `toolwright serve --http 127.0.0.1:0 --fixtures conformance --log-format json`, and its
/// MCP endpoint.
fn logged_upstream() -> (UpLog, String) {
    let mut up = Server::start_logged(
        &[
            "--http",
            "127.0.0.1:0",
            "--fixtures",
            "conformance",
            "--log-format",
            "json",
        ],
        None,
    );
    let lines = up.stderr_until(Duration::from_secs(60), |l| url_in_line(l).is_some());
    let url = url_in_line(lines.last().unwrap()).unwrap();
    (UpLog { up, seen: lines }, url)
}

/// The operation `method` in a JSON log line.
fn is_operation(line: &str, method: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| v["fields"]["mcp.method.name"] == method)
}

/// The upstream's log lines, kept as they are read.
struct UpLog {
    up: Server,
    seen: Vec<String>,
}

impl UpLog {
    /// Reads the log until the next line of the operation `method` (within 30 s).
    fn wait_for(&mut self, method: &str) {
        let lines = self
            .up
            .stderr_until(Duration::from_secs(30), |l| is_operation(l, method));
        self.seen.extend(lines);
    }

    /// How many lines of the operation `method` the log has, once it went quiet (the
    /// gateway that polls the upstream gone).
    fn count_when_quiet(&mut self, method: &str) -> usize {
        let rest = self.up.stderr_drain(Duration::from_millis(700));
        self.seen.extend(rest);
        self.seen.iter().filter(|l| is_operation(l, method)).count()
    }
}

/// A legacy client (2025-11-25, no extension) declaring `capabilities`, once the gateway
/// lists the upstream's tools.
fn legacy_client(config: &Config, capabilities: Value) -> Server {
    let mut gw = Server::start(&["--config", &config.path()]);
    let r = gw.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    gw.notify("notifications/initialized", json!({}));
    wait_listed(&mut gw, false);
    gw
}

/// A modern client of the gateway, once it lists the upstream's tools.
fn modern_client(config: &Config) -> Server {
    let mut gw = Server::start(&["--config", &config.path()]);
    // The task messages are the extension's, not the core schema's.
    gw.validate = false;
    wait_listed(&mut gw, true);
    gw
}

/// Waits until the gateway lists `up__slow_compute`; returns its definition.
fn wait_listed(gw: &mut Server, modern: bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = if modern {
            gw.modern("tools/list", json!({}))
        } else {
            gw.request("tools/list", json!({}))
        };
        let found = r["result"]["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "up__slow_compute"))
            .cloned();
        if let Some(t) = found {
            return t;
        }
        assert!(Instant::now() < deadline, "never listed: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `_meta` of a modern request whose client takes up the extension (and elicitation).
fn task_meta() -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}, "extensions": {EXTENSION: {}}});
    meta
}

/// A modern request with [`task_meta`].
fn with_tasks(gw: &mut Server, method: &str, mut params: Value) -> Value {
    params["_meta"] = task_meta();
    gw.request(method, params)
}

/// The gateway's task made by a `tools/call` reply, its id.
fn task_of(reply: &Value) -> String {
    let r = &reply["result"];
    assert_eq!(r["resultType"], "task", "{reply}");
    assert_eq!(r["status"], "working", "{reply}");
    r["taskId"].as_str().unwrap().to_owned()
}

/// Polls the gateway's `tasks/get` until `done` accepts the task (within 30 s).
fn poll_until(gw: &mut Server, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = with_tasks(gw, "tasks/get", json!({"taskId": task}));
        let t = r["result"].clone();
        assert_eq!(t["taskId"], task, "{r}");
        if done(&t) {
            return t;
        }
        assert!(Instant::now() < deadline, "the task stays {t}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// A legacy client's plain call of a tool the upstream runs only as a task gets the task's
/// final result: without the gateway taking up the extension upstream, the upstream would
/// refuse the call (-32021) rather than run the job and report its failure.
#[test]
fn a_legacy_client_gets_the_final_result_of_the_upstream_task() {
    let config = Config::stdio();
    let mut gw = legacy_client(&config, json!({}));
    // The upstream's task support is the gateway tool's (2025-11-25 lists `execution`; the
    // modern Tool object has no such member).
    let listed = wait_listed(&mut gw, false);
    assert_eq!(listed["execution"]["taskSupport"], "optional", "{listed}");
    let r = gw.request(
        "tools/call",
        json!({"name": "up__failing_job", "arguments": {}}),
    );
    let result = &r["result"];
    assert_eq!(result["isError"], true, "{r}");
    assert!(
        text(result).contains("the job failed: its input was rejected"),
        "the job ran upstream as a task: {r}"
    );
    let r = gw.request(
        "tools/call",
        json!({"name": "up__slow_compute", "arguments": {"seconds": 0.3, "label": "sum"}}),
    );
    assert_eq!(
        text(&r["result"]),
        "sum: computed after 0.3 second(s)",
        "{r}"
    );
    assert!(r["result"].get("resultType").is_none(), "legacy: {r}");
}

/// The upstream tool's task support is listed as the gateway's, and a client that took up
/// the extension gets a task of the gateway's, which ends with the upstream's result.
#[test]
fn a_modern_client_with_the_extension_gets_a_gateway_task() {
    let config = Config::stdio();
    let mut gw = modern_client(&config);
    let r = with_tasks(
        &mut gw,
        "tools/call",
        json!({"name": "up__slow_compute", "arguments": {"seconds": 1, "label": "long"}}),
    );
    let task = task_of(&r);
    let working = with_tasks(&mut gw, "tasks/get", json!({"taskId": task}));
    assert_eq!(working["result"]["status"], "working", "{working}");
    let done = poll_until(&mut gw, &task, |t| t["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        text(&done["result"]),
        "long: computed after 1 second(s)",
        "{done}"
    );
    // A failed upstream job is a completed task whose result is a tool error.
    let r = with_tasks(
        &mut gw,
        "tools/call",
        json!({"name": "up__failing_job", "arguments": {}}),
    );
    let task = task_of(&r);
    let done = poll_until(&mut gw, &task, |t| t["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
}

/// `tasks/cancel` on the gateway's task sends `tasks/cancel` for the upstream's task, and a
/// legacy client's `notifications/cancelled` does the same for its plain call.
#[test]
fn cancelling_the_gateway_task_cancels_the_upstream_task() {
    let (mut up, url) = logged_upstream();
    let config = Config::http(&url);
    let mut gw = modern_client(&config);
    let r = with_tasks(
        &mut gw,
        "tools/call",
        json!({"name": "up__slow_compute", "arguments": {"seconds": 60}}),
    );
    let task = task_of(&r);
    // The upstream made its task (its tools/call answered) and is being polled.
    up.wait_for("tasks/get");
    let r = with_tasks(&mut gw, "tasks/cancel", json!({"taskId": task}));
    assert!(r.get("result").is_some(), "{r}");
    let t = with_tasks(&mut gw, "tasks/get", json!({"taskId": task}));
    assert_eq!(t["result"]["status"], "cancelled", "{t}");
    up.wait_for("tasks/cancel");

    // A legacy client's plain call, cancelled.
    let mut legacy = legacy_client(&config, json!({}));
    let id = legacy.next_id();
    legacy.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "up__slow_compute", "arguments": {"seconds": 60}}}));
    up.wait_for("tasks/get");
    legacy.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "changed my mind"}),
    );
    up.wait_for("tasks/cancel");
    drop((gw, legacy));
    assert_eq!(up.count_when_quiet("tools/call"), 2);
    assert_eq!(up.count_when_quiet("tasks/cancel"), 2);
}

/// The confirmation form `confirm_delete` asks for, accepted.
fn yes() -> Value {
    json!({"action": "accept", "content": {"confirm": true}})
}

/// A legacy client is asked the upstream task's question in the middle of its call, and
/// its answer resumes the task.
#[test]
fn a_legacy_client_answers_the_upstream_tasks_question_mid_call() {
    let config = Config::stdio();
    let mut gw = legacy_client(&config, json!({"elicitation": {}}));
    let id = gw.next_id();
    gw.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "up__confirm_delete", "arguments": {"filename": "a.txt"}}}));
    let asked = gw.recv();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Delete a.txt?", "{asked}");
    gw.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": yes()}));
    let r = gw.response_to(&json!(id));
    assert_eq!(text(&r["result"]), "Deleted a.txt", "{r}");
}

/// A modern client with the extension finds the upstream task's question in the gateway
/// task's `inputRequests`; its `tasks/update` resumes the same upstream task (one
/// `tools/call` reached the upstream).
#[test]
fn the_upstream_tasks_question_parks_the_gateway_task_until_answered() {
    let (mut up, url) = logged_upstream();
    let config = Config::http(&url);
    let mut gw = modern_client(&config);
    let r = with_tasks(
        &mut gw,
        "tools/call",
        json!({"name": "up__confirm_delete", "arguments": {"filename": "b.txt"}}),
    );
    let task = task_of(&r);
    let parked = poll_until(&mut gw, &task, |t| t["status"] != "working");
    assert_eq!(parked["status"], "input_required", "{parked}");
    let asked = parked["inputRequests"].as_object().unwrap();
    assert_eq!(asked.len(), 1, "{parked}");
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{parked}");
    assert_eq!(question["params"]["message"], "Delete b.txt?", "{parked}");
    let r = with_tasks(
        &mut gw,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {key.clone(): yes()}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    let done = poll_until(&mut gw, &task, |t| {
        t["status"] != "working" && t["status"] != "input_required"
    });
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "Deleted b.txt", "{done}");
    drop(gw);
    assert_eq!(
        up.count_when_quiet("tools/call"),
        1,
        "one upstream task, resumed"
    );
}

/// A modern client without the extension gets the upstream task's question as an
/// `input_required` result; its retry answers the same upstream task.
#[test]
fn a_modern_client_without_the_extension_answers_through_a_retry() {
    let (mut up, url) = logged_upstream();
    let config = Config::http(&url);
    let mut gw = modern_client(&config);
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let call = json!({"name": "up__confirm_delete", "arguments": {"filename": "c.txt"},
        "_meta": meta});
    let r = gw.request("tools/call", call.clone());
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let (key, question) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(question["params"]["message"], "Delete c.txt?", "{r}");
    let mut retry = call;
    retry["inputResponses"] = json!({key.clone(): yes()});
    retry["requestState"] = result["requestState"].clone();
    let r = gw.request("tools/call", retry);
    assert_eq!(text(&r["result"]), "Deleted c.txt", "{r}");
    drop(gw);
    assert_eq!(
        up.count_when_quiet("tools/call"),
        1,
        "one upstream task, resumed"
    );
}

/// A legacy upstream (the gateway speaks 2025-11-25 to it) hears the extension at
/// `initialize`: its listing's task support is the gateway tool's, a tool that runs only as
/// a task runs, and a client that took up the extension gets a gateway task that completes.
#[test]
fn a_legacy_upstream_runs_tasks_for_the_gateway_too() {
    let config = Config::new(json!({
        "command": [s(&bin()), "serve", "--fixtures", "conformance"],
        "era": "legacy",
        "trust": "trusted",
        "start": "eager",
    }));
    let mut legacy = legacy_client(&config, json!({}));
    let r = legacy.request(
        "tools/call",
        json!({"name": "up__failing_job", "arguments": {}}),
    );
    assert!(
        text(&r["result"]).contains("the job failed: its input was rejected"),
        "the job ran upstream as a task: {r}"
    );
    let mut gw = modern_client(&config);
    let r = with_tasks(
        &mut gw,
        "tools/call",
        json!({"name": "up__slow_compute", "arguments": {"seconds": 0.5, "label": "old"}}),
    );
    let task = task_of(&r);
    let done = poll_until(&mut gw, &task, |t| t["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        text(&done["result"]),
        "old: computed after 0.5 second(s)",
        "{done}"
    );
}
