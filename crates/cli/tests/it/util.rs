//! Test helpers: spawn `toolwright serve`, talk JSON-RPC over its pipes, and validate every
//! message it writes against the official schema of the era.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use toolwright_schema::Validator;

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolwright"))
}

/// The `name` of each tool in a `tools/list` result's `tools`, sorted.
pub fn sorted_tool_names(tools: &Value) -> Vec<String> {
    let mut names: Vec<String> = tools
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a tool name").to_owned())
        .collect();
    names.sort();
    names
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub const MODERN: &str = "2026-07-28";

/// The `_meta` of a modern request.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "toolwright-tests", "version": "0"}
    })
}

/// The official schema of one era, compiled per definition on demand.
pub struct SpecSchema {
    defs: Value,
    compiled: std::sync::Mutex<HashMap<String, Arc<Validator>>>,
}

impl SpecSchema {
    fn load(file: &str) -> SpecSchema {
        let path = repo_root().join("tests/fixtures").join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let doc: Value = serde_json::from_str(&text).unwrap();
        SpecSchema {
            defs: doc["$defs"].clone(),
            compiled: Default::default(),
        }
    }

    pub fn legacy() -> &'static SpecSchema {
        static S: OnceLock<SpecSchema> = OnceLock::new();
        S.get_or_init(|| SpecSchema::load("schema-2025-11-25.json"))
    }

    pub fn modern() -> &'static SpecSchema {
        static S: OnceLock<SpecSchema> = OnceLock::new();
        S.get_or_init(|| SpecSchema::load("schema-2026-07-28.json"))
    }

    pub fn has(&self, def: &str) -> bool {
        self.defs.get(def).is_some()
    }

    /// Panics with the violations when `value` does not match `#/$defs/<def>`.
    pub fn check(&self, def: &str, value: &Value) {
        let v = {
            let mut map = self.compiled.lock().unwrap();
            map.entry(def.to_owned())
                .or_insert_with(|| {
                    assert!(self.has(def), "no definition {def} in the official schema");
                    let schema = json!({"$ref": format!("#/$defs/{def}"), "$defs": self.defs});
                    Arc::new(Validator::compile(&schema).expect("the official schema compiles"))
                })
                .clone()
        };
        if let Err(errs) = v.validate(value) {
            panic!(
                "message does not validate against {def}:\n{}\nmessage: {value}",
                toolwright_schema::format_violations(&errs)
            );
        }
    }
}

/// The result definition for a method, per era.
fn result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "server/discover" => "DiscoverResult",
        "ping" | "logging/setLevel" => "Result",
        "subscriptions/listen" => "SubscriptionsListenResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        _ => return None,
    })
}

fn notification_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        "notifications/cancelled" => "CancelledNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        _ => return None,
    })
}

/// Validates one server message against the era's schema; `method` is the method of the
/// request it answers, when it is a response.
pub fn check_message(modern: bool, method: Option<&str>, msg: &Value) {
    let spec = if modern {
        SpecSchema::modern()
    } else {
        SpecSchema::legacy()
    };
    spec.check("JSONRPCMessage", msg);
    if msg.get("error").is_some() {
        spec.check("JSONRPCErrorResponse", msg);
        return;
    }
    if let Some(result) = msg.get("result") {
        spec.check("JSONRPCResultResponse", msg);
        if let Some(def) = method.and_then(result_def) {
            if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                spec.check("InputRequiredResult", result);
            } else {
                spec.check(def, result);
            }
        }
        return;
    }
    if let Some(m) = msg.get("method").and_then(Value::as_str) {
        if msg.get("id").is_none() {
            let def = notification_def(m).unwrap_or_else(|| panic!("unexpected notification {m}"));
            spec.check(def, msg);
        } else {
            spec.check("JSONRPCRequest", msg);
        }
    }
}

/// A running `toolwright serve` with pipes to it.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Methods of requests sent, by id, and whether they were modern.
    sent: HashMap<String, (String, bool)>,
    next_id: i64,
    /// Messages received but not yet taken.
    backlog: Vec<Value>,
    pub validate: bool,
    /// stderr's lines, when the server was started with [`Server::start_logged`].
    stderr: Option<Receiver<String>>,
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        Self::start_in(args, None)
    }

    pub fn start_in(args: &[&str], cwd: Option<&Path>) -> Server {
        Self::start_with_env(args, cwd, &[])
    }

    /// A server with these environment variables set.
    pub fn start_with_env(args: &[&str], cwd: Option<&Path>, env: &[(&str, &Path)]) -> Server {
        Self::spawn(args, cwd, env, false)
    }

    /// A server whose stderr is kept for [`Server::stderr_until`].
    pub fn start_logged(args: &[&str], cwd: Option<&Path>) -> Server {
        Self::spawn(args, cwd, &[], true)
    }

    /// A server with these environment variables set whose stderr is kept.
    pub fn start_logged_with_env(args: &[&str], env: &[(&str, &Path)]) -> Server {
        Self::spawn(args, None, env, true)
    }

    fn spawn(args: &[&str], cwd: Option<&Path>, env: &[(&str, &Path)], logged: bool) -> Server {
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if logged {
                Stdio::piped()
            } else {
                Stdio::inherit()
            });
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn toolwright");
        let stderr = child.stderr.take().map(|err| {
            let (tx, rx) = channel();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[server] {line}");
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            sent: HashMap::new(),
            next_id: 1000,
            backlog: Vec::new(),
            validate: true,
            stderr,
        }
    }

    /// stderr's lines up to and including the first that `done` accepts (panics after
    /// `timeout`).
    pub fn stderr_until(&mut self, timeout: Duration, done: impl Fn(&str) -> bool) -> Vec<String> {
        let rx = self.stderr.as_ref().expect("started with start_logged");
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let stop = done(&line);
                    lines.push(line);
                    if stop {
                        return lines;
                    }
                }
                Err(_) => panic!("stderr never showed the line waited for; it showed {lines:#?}"),
            }
        }
    }

    /// The stderr lines that arrive within `settle` of each other, from now on.
    pub fn stderr_drain(&mut self, settle: Duration) -> Vec<String> {
        let rx = self.stderr.as_ref().expect("started with start_logged");
        std::iter::from_fn(|| rx.recv_timeout(settle).ok()).collect()
    }

    /// Starts a server and performs the legacy handshake at `version`.
    pub fn legacy(version: &str, args: &[&str]) -> Server {
        Server::start(args).handshake(version)
    }

    /// Performs the legacy handshake at `version` on a server just started.
    pub fn handshake(mut self, version: &str) -> Server {
        let s = &mut self;
        let r = s.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], version, "{r}");
        s.notify("notifications/initialized", json!({}));
        self
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, msg: &Value) {
        if let (Some(id), Some(m)) = (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
            let modern =
                msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string();
            self.sent.insert(id.to_string(), (m.to_owned(), modern));
        }
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    pub fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request and returns its response (other messages stay in the backlog).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response_to(&json!(id))
    }

    /// A modern request: `_meta` is added to `params`.
    pub fn modern(&mut self, method: &str, mut params: Value) -> Value {
        params["_meta"] = modern_meta();
        self.request(method, params)
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// The next message from the server, validated.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Value> {
        if !self.backlog.is_empty() {
            return Some(self.backlog.remove(0));
        }
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Some(self.parse_and_check(&line)),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// The next line from the server as written, unparsed (the backlog must be empty).
    pub fn recv_line(&mut self) -> String {
        assert!(
            self.backlog.is_empty(),
            "messages already parsed are waiting"
        );
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a line from the server within 20 s")
    }

    pub fn recv(&mut self) -> Value {
        self.recv_timeout(Duration::from_secs(20))
            .expect("a message from the server within 20 s")
    }

    fn parse_and_check(&mut self, line: &str) -> Value {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("server wrote non-JSON {line:?}: {e}"));
        if self.validate {
            if v.is_array() {
                for item in v.as_array().unwrap() {
                    self.check_one(item);
                }
            } else {
                self.check_one(&v);
            }
        }
        v
    }

    fn check_one(&self, v: &Value) {
        let (method, modern) = match v.get("id").filter(|_| v.get("method").is_none()) {
            Some(id) => match self.sent.get(&id.to_string()) {
                Some((m, modern)) => (Some(m.as_str()), *modern),
                None => (None, false),
            },
            None => (
                None,
                v["params"]["_meta"]
                    .get("io.modelcontextprotocol/subscriptionId")
                    .is_some(),
            ),
        };
        check_message(modern, method, v);
    }

    /// Waits for the response with this id; other messages go to the backlog.
    pub fn response_to(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        if let Some(pos) = self
            .backlog
            .iter()
            .position(|m| m.get("id") == Some(id) && m.get("method").is_none())
        {
            return self.backlog.remove(pos);
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to id {id}"));
            let v = self.parse_and_check(&line);
            if v.get("id") == Some(id) && v.get("method").is_none() {
                return v;
            }
            self.backlog.push(v);
        }
    }

    /// Takes every message that arrived so far (waits `settle` for stragglers).
    pub fn drain(&mut self, settle: Duration) -> Vec<Value> {
        let mut out = std::mem::take(&mut self.backlog);
        while let Some(v) = self.recv_timeout(settle) {
            out.push(v);
        }
        out
    }

    /// Waits for the process to exit after stdin closed.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Asserts the process is still alive and answering.
    pub fn assert_alive(&mut self) {
        let r = self.request("ping", json!({}));
        assert_eq!(r["result"], json!({}), "server stopped answering: {r}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `toolwright ARGS…` to completion.
pub fn run_cli(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run toolwright")
}

#[test]
fn the_schema_check_rejects_what_the_spec_rejects() {
    let bad = [
        (
            Some("tools/call"),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "text"}}),
        ),
        (
            Some("initialize"),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "x"}}),
        ),
        (
            None,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
        ),
        (
            None,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
        ),
    ];
    for (method, msg) in bad {
        let caught = std::panic::catch_unwind(|| check_message(false, method, &msg));
        assert!(caught.is_err(), "accepted {msg}");
    }
    check_message(
        true,
        Some("tools/call"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}),
    );
}

/// A loopback HTTP server that records each request's raw bytes (head and body) and answers `reply`.
pub fn http_recorder(reply: &'static str) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            head.push_str(&String::from_utf8_lossy(&body));
            log.lock().unwrap().push(head);
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}
