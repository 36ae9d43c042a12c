//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) over Streamable HTTP and
//! stdio: declared commands run as tasks, polled to completion, cancelled (their process
//! group goes), outliving the session that made them; the extension's gate (-32021), unknown
//! tasks (-32602), questions answered with `tasks/update`, both eras, and the
//! `notifications/tasks` of a listen stream.
//!
//! The task shapes are the extension's, not the core schema's, so replies are read as JSON
//! here rather than checked against the official schema.

use crate::http_client::*;
use crate::util::{MODERN, Server, run_cli};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const EXT: &str = "io.modelcontextprotocol/tasks";

const TOOLS: &str = r#"tools:
  - name: slow_job
    description: Works a second, then says it finished.
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [/bin/sh, -c, "sleep 1; echo finished"]
    task: optional
  - name: sleeper
    description: Starts a background sleeper, notes its pid and the shell's, and waits.
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [/bin/sh, -c, "sleep 1000 & echo $! > pids; echo $$ >> pids; wait"]
    timeout: 10m
    task: required
  - name: required_job
    description: Says done, only as a task.
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [/bin/echo, done]
    task: required
  - name: plain
    description: Says hello, never as a task.
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, openWorldHint: false}
    command: [/bin/echo, hello]
builtins: [search_files]
"#;

/// A server over HTTP with the tool file above (and the conformance fixtures), rooted in
/// `dir`.
fn serve(dir: &Path) -> HttpServer {
    let file = dir.join("tools.yaml");
    std::fs::write(&file, TOOLS).unwrap();
    HttpServer::start(&[
        "--fixtures",
        "conformance",
        "--root",
        dir.to_str().unwrap(),
        "--config",
        file.to_str().unwrap(),
    ])
}

/// Modern `_meta` with these client capabilities.
fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "toolwright-tests", "version": "0"}
    })
}

fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {EXT: {}}})
}

/// A modern request with these capabilities; the reply as JSON and its HTTP status.
fn modern(s: &HttpServer, method: &str, mut params: Value, caps: Value) -> (u16, Value) {
    params["_meta"] = meta(caps);
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = s.post(&modern_headers(method, name.as_deref()), &body);
    (r.status, r.json())
}

/// Polls `tasks/get` until `done` holds of the task (within 20 s).
fn poll(s: &HttpServer, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, v) = modern(s, "tasks/get", json!({"taskId": id}), with_tasks());
        assert_eq!(status, 200, "{v}");
        let task = v["result"].clone();
        assert_eq!(task["taskId"], id, "{v}");
        if done(&task) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got there: {task}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn terminal(task: &Value) -> bool {
    ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or(""))
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| !st.contains(") Z "))
}

#[test]
fn a_declared_command_runs_as_a_task_and_is_polled_to_completion() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let (status, v) = modern(
        &s,
        "server/discover",
        json!({}),
        json!({"extensions": {EXT: {}}}),
    );
    assert_eq!(status, 200);
    assert!(
        v["result"]["capabilities"]["extensions"][EXT].is_object(),
        "{v}"
    );

    let started = Instant::now();
    let (status, v) = modern(&s, "tools/call", json!({"name": "slow_job"}), with_tasks());
    assert_eq!(status, 200, "{v}");
    let created = &v["result"];
    assert_eq!(created["resultType"], "task", "{v}");
    assert_eq!(created["status"], "working", "{v}");
    assert!(created["ttlMs"].as_u64().unwrap() >= 3_600_000, "{v}");
    assert!(created.get("content").is_none() && created.get("result").is_none());
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "answered before the command ended"
    );
    let id = created["taskId"].as_str().unwrap();
    let done = poll(&s, id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["result"]["content"][0]["text"], "finished\n", "{done}");

    // Without the extension the same tool runs as a plain call.
    let (_, v) = modern(&s, "tools/call", json!({"name": "slow_job"}), json!({}));
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "finished\n");
    // A tool that never runs as a task is a plain call even for a client with it.
    let (_, v) = modern(&s, "tools/call", json!({"name": "plain"}), with_tasks());
    assert_eq!(v["result"]["content"][0]["text"], "hello\n", "{v}");
}

#[test]
fn task_support_is_in_the_definitions_of_2025_11_25_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let session = LegacySession::open(&s, "2025-11-25");
    let r = session.post(&s, &request(2, "tools/list", json!({})));
    let tools = r.checked(false, "tools/list")["result"]["tools"].clone();
    let support = |name: &str| {
        let t = tools.as_array().unwrap().iter().find(|t| t["name"] == name);
        t.unwrap_or_else(|| panic!("{name} is listed"))["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow_job"), "optional");
    assert_eq!(support("sleeper"), "required");
    assert_eq!(support("search_files"), "optional");
    assert_eq!(support("plain"), Value::Null);

    let (_, v) = modern(&s, "tools/list", json!({}), with_tasks());
    let listed = v["result"]["tools"].as_array().unwrap();
    assert!(listed.iter().all(|t| t.get("execution").is_none()), "{v}");
}

#[test]
fn cancelling_a_task_ends_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let (_, v) = modern(&s, "tools/call", json!({"name": "sleeper"}), with_tasks());
    let id = v["result"]["taskId"].as_str().expect("a task").to_owned();
    let pids_file = dir.path().join("pids");
    let deadline = Instant::now() + Duration::from_secs(10);
    let pids: Vec<u32> = loop {
        let text = std::fs::read_to_string(&pids_file).unwrap_or_default();
        let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() == 2 {
            break pids;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(pids.iter().all(|p| alive(*p)), "both run before the cancel");
    assert_eq!(poll(&s, &id, |_| true)["status"], "working");

    let (status, ack) = modern(&s, "tasks/cancel", json!({"taskId": id}), with_tasks());
    assert_eq!(status, 200, "{ack}");
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("taskId").is_none() && ack["result"].get("status").is_none());
    assert_eq!(poll(&s, &id, terminal)["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!alive(pid), "process {pid} survived the cancel");
    }
    // Cancelling again is the same empty acknowledgement.
    let (status, ack) = modern(&s, "tasks/cancel", json!({"taskId": id}), with_tasks());
    assert_eq!(
        (status, &ack["result"]["resultType"]),
        (200, &json!("complete"))
    );
}

#[test]
fn a_task_outlives_the_legacy_session_that_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let caps = json!({"extensions": {EXT: {}}});
    let first = LegacySession::open_with(&s, "2025-11-25", caps.clone());
    let init = s.post(
        &[],
        &request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}),
        ),
    );
    assert!(
        init.json()["result"]["capabilities"]["extensions"][EXT].is_object(),
        "advertised at initialize: {}",
        init.text()
    );
    let r = first.post(
        &s,
        &request(
            2,
            "tools/call",
            json!({"name": "slow_job", "arguments": {}}),
        ),
    );
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    let id = v["result"]["taskId"].as_str().unwrap().to_owned();
    // The client goes away: its session ends.
    assert_eq!(s.send("DELETE", "/mcp", &first.headers(), b"").status, 204);

    let second = LegacySession::open_with(&s, "2025-11-25", caps);
    let deadline = Instant::now() + Duration::from_secs(20);
    let task = loop {
        let r = second.post(&s, &request(3, "tasks/get", json!({"taskId": id})));
        let task = r.json()["result"].clone();
        if terminal(&task) {
            break task;
        }
        assert!(Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["content"][0]["text"], "finished\n");

    // A modern client reaches it too: the task is the server's, not the session's.
    assert_eq!(poll(&s, &id, terminal)["status"], "completed");
}

#[test]
fn tasks_need_the_extension_and_a_known_id() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": "whatever", "inputResponses": {}});
        let (status, v) = modern(&s, method, params, json!({}));
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["error"]["code"], -32021, "{method}: {v}");
        assert!(
            v["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object(),
            "{v}"
        );
    }
    // A tool that runs only as a task, for a client without the extension.
    let (status, v) = modern(&s, "tools/call", json!({"name": "sleeper"}), json!({}));
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains(EXT), "{v}");
    assert!(!dir.path().join("pids").exists(), "refused before it ran");
    // A legacy client that did not declare it at initialize.
    let session = LegacySession::open(&s, "2025-11-25");
    let r = session.post(&s, &request(2, "tasks/get", json!({"taskId": "x"})));
    assert_eq!(r.json()["error"]["code"], -32021, "{}", r.text());

    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": "no-such-task", "inputResponses": {}});
        let (_, v) = modern(&s, method, params, with_tasks());
        assert_eq!(v["error"]["code"], -32602, "{method}: {v}");
    }
    // The extension's methods that 2025-11-25 had and SEP-2663 removed.
    for method in ["tasks/result", "tasks/list"] {
        let (status, v) = modern(&s, method, json!({"taskId": "x"}), with_tasks());
        assert_eq!((status, &v["error"]["code"]), (404, &json!(-32601)), "{v}");
    }
}

/// Drives `confirm_delete` to its question, answers it with `tasks/update`, and returns
/// the finished task.
fn answer_the_question(
    get: &dyn Fn(&str) -> Value,
    update: &dyn Fn(&str, Value) -> Value,
    id: &str,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    let asked = loop {
        let task = get(id);
        if task["status"] == "input_required" {
            break task;
        }
        assert!(Instant::now() < deadline, "no question came: {task}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    // A stale answer is ignored; the task still waits.
    let ack = update(id, json!({"not-asked": {"action": "accept"}}));
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert_eq!(get(id)["status"], "input_required");
    let ack = update(
        id,
        json!({key.clone(): {"action": "accept", "content": {"confirm": true}}}),
    );
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(id);
        if terminal(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn questions_inside_a_task_are_answered_with_tasks_update_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    // Modern.
    let (_, v) = modern(
        &s,
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}}),
        with_tasks(),
    );
    let id = v["result"]["taskId"].as_str().expect("a task").to_owned();
    let get =
        |id: &str| modern(&s, "tasks/get", json!({"taskId": id}), with_tasks()).1["result"].clone();
    let update = |id: &str, answers: Value| {
        let params = json!({"taskId": id, "inputResponses": answers});
        modern(&s, "tasks/update", params, with_tasks()).1["result"].clone()
    };
    let done = answer_the_question(&get, &update, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Deleted a.txt");

    // Legacy: the question is not sent to the client as a request; the task holds it.
    let session = LegacySession::open_with(&s, "2025-11-25", with_tasks());
    let r = session.post(
        &s,
        &request(
            2,
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"filename": "b.txt"}}),
        ),
    );
    let id = r.json()["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let get = |id: &str| {
        let r = session.post(&s, &request(3, "tasks/get", json!({"taskId": id})));
        r.json()["result"].clone()
    };
    let update = |id: &str, answers: Value| {
        let params = json!({"taskId": id, "inputResponses": answers});
        session.post(&s, &request(4, "tasks/update", params)).json()["result"].clone()
    };
    let done = answer_the_question(&get, &update, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Deleted b.txt");
}

#[test]
fn a_listen_stream_hears_the_changes_of_the_tasks_it_names() {
    let mut s = Server::start(&["--fixtures", "conformance"]);
    s.validate = false;
    let caps = json!({"extensions": {EXT: {}}});
    let r = s.request(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": meta(caps.clone())}),
    );
    let id = r["result"]["taskId"].as_str().expect("a task").to_owned();
    let listen_id = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
        "params": {"_meta": meta(caps), "notifications": {"taskIds": [id]}}}),
    );
    let ack = s.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    let deadline = Instant::now() + Duration::from_secs(10);
    let note = loop {
        let m = s
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a notifications/tasks");
        if m["method"] == "notifications/tasks" {
            break m;
        }
    };
    let p = &note["params"];
    assert_eq!(p["taskId"], id, "{note}");
    assert_eq!(p["status"], "completed", "{note}");
    assert!(p["result"]["content"].is_array(), "{note}");
    assert_eq!(
        p["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen_id
    );

    // Without the extension, `taskIds` is not honoured.
    let other = s.next_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": other, "method": "subscriptions/listen",
        "params": {"_meta": meta(json!({})), "notifications": {"taskIds": [id]}}}),
    );
    let ack = s.recv();
    assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
}

#[test]
fn toolwright_call_follows_a_tool_that_runs_only_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, TOOLS).unwrap();
    let o = run_cli(&["call", "--config", file.to_str().unwrap(), "required_job"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["content"][0]["text"], "done\n", "{v}");
}
