//! A small blocking HTTP/1.1 client on `std::net::TcpStream` for the Streamable HTTP
//! tests, and a handle on a `toolwright serve --http 127.0.0.1:0` process.
//!
//! Hand-written on purpose: the tests need what client libraries hide — a foreign `Host`,
//! half-sent requests, reading an event stream one event at a time, hanging up mid-stream.

#![allow(dead_code)]

use crate::util::{self, check_message};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const LEGACY: &str = "2025-11-25";

/// A running `toolwright serve --http`.
pub struct HttpServer {
    pub child: Child,
    pub addr: SocketAddr,
    /// Everything the server wrote on stderr.
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpServer {
    pub fn start(args: &[&str]) -> HttpServer {
        Self::start_with_env(args, &[])
    }

    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        Self::start_with_fixtures("probe", args, env)
    }

    /// A server with the fixture set (or sets) `fixtures` instead of `probe`.
    pub fn start_with_fixtures(fixtures: &str, args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut cmd = Command::new(util::bin());
        cmd.args(["serve", "--http", "127.0.0.1:0", "--fixtures", fixtures])
            .args(args);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn toolwright serve --http");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let keep = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                keep.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let addr = wait_for_address(&rx).unwrap_or_else(|| {
            let _ = child.kill();
            panic!(
                "the server did not print its address; stderr: {:?}",
                lines.lock().unwrap()
            )
        });
        HttpServer {
            child,
            addr,
            stderr: lines,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn conn(&self) -> Conn {
        Conn::open(self.addr)
    }

    /// A connection from another loopback address (`127.0.0.2`, …): another client, as the
    /// server's per-client budgets count them.
    pub fn conn_from(&self, source: &str) -> Conn {
        Conn::open_from(self.addr, source.parse().expect("an IP address"))
    }

    /// One request on a fresh connection, with `Host` set to the server's address.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut c = self.conn();
        c.send(method, path, headers, body);
        c.response()
    }

    pub fn post(&self, headers: &[(&str, &str)], body: &Value) -> Resp {
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        h.extend_from_slice(headers);
        self.send("POST", "/mcp", &h, body.to_string().as_bytes())
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_address(rx: &Receiver<String>) -> Option<SocketAddr> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if let Some(rest) = line.split("listening on http://").nth(1) {
            return rest.trim_end_matches("/mcp").parse().ok();
        }
    }
    None
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The events of a complete `text/event-stream` body.
    pub fn events(&self) -> Vec<Event> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "{self:?}"
        );
        let text = self.text();
        let mut parser = SseParser::default();
        parser.feed(&text);
        parser.events
    }

    /// The body as JSON, checked against the official schema (`method`: what it answers).
    pub fn checked(&self, modern: bool, method: &str) -> Value {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{} {}",
            self.status,
            self.text()
        );
        let v = self.json();
        check(modern, method, &v);
        v
    }
}

/// Validates one message (or a batch) against the era's schema.
pub fn check(modern: bool, method: &str, v: &Value) {
    match v.as_array() {
        Some(items) => items.iter().for_each(|m| check(modern, method, m)),
        None => {
            let answers = v.get("method").is_none();
            check_message(modern, answers.then_some(method), v);
        }
    }
}

/// One SSE event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub data: String,
    pub retry: Option<String>,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

#[derive(Default)]
struct SseParser {
    pending: String,
    events: Vec<Event>,
    comments: usize,
}

impl SseParser {
    fn feed(&mut self, text: &str) {
        self.pending.push_str(&text.replace("\r\n", "\n"));
        while let Some(end) = self.pending.find("\n\n") {
            let block: String = self.pending.drain(..end + 2).collect();
            let mut ev = Event::default();
            let mut any = false;
            for line in block.lines() {
                if line.starts_with(':') {
                    self.comments += 1;
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                any = true;
                match field {
                    "id" => ev.id = Some(value.to_owned()),
                    "data" => {
                        if !ev.data.is_empty() {
                            ev.data.push('\n');
                        }
                        ev.data.push_str(value);
                    }
                    "retry" => ev.retry = Some(value.to_owned()),
                    _ => {}
                }
            }
            if any {
                self.events.push(ev);
            }
        }
    }
}

/// One client connection.
pub struct Conn {
    pub addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        Conn::with(addr, TcpStream::connect(addr).expect("connect"))
    }

    /// A connection whose local address is `source` (port picked by the system).
    pub fn open_from(addr: SocketAddr, source: std::net::IpAddr) -> Conn {
        use socket2::{Domain, Socket, Type};
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None).unwrap();
        socket
            .bind(&SocketAddr::new(source, 0).into())
            .unwrap_or_else(|e| panic!("bind {source}: {e}"));
        socket.connect(&addr.into()).expect("connect");
        Conn::with(addr, socket.into())
    }

    fn with(addr: SocketAddr, s: TcpStream) -> Conn {
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Conn {
            addr,
            writer: s.try_clone().unwrap(),
            reader: BufReader::new(s),
        }
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    /// Sends a request; a `host` header is added unless `headers` has one.
    pub fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.write_raw(&bytes);
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("read a line");
        l.trim_end_matches(['\r', '\n']).to_owned()
    }

    /// Reads a status line and headers.
    pub fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let status_line = self.line();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let l = self.line();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').expect("header line");
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        (status, headers)
    }

    /// Reads a whole response.
    pub fn response(&mut self) -> Resp {
        let (status, headers) = self.head();
        let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let body = if let Some(len) = find("content-length") {
            let mut b = vec![0; len.parse().unwrap()];
            self.reader.read_exact(&mut b).unwrap();
            b
        } else if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            let mut b = Vec::new();
            while let Some(chunk) = self.chunk() {
                b.extend(chunk);
            }
            b
        } else {
            Vec::new()
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    /// The next chunk of a chunked body; `None` at its end.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_line:?}"));
        if size == 0 {
            let _ = self.line();
            return None;
        }
        let mut b = vec![0; size];
        self.reader.read_exact(&mut b).unwrap();
        let _ = self.line();
        Some(b)
    }

    /// Reads a response head, then lets the caller read its event stream event by event.
    pub fn stream(mut self) -> Stream {
        let (status, headers) = self.head();
        Stream {
            conn: self,
            status,
            headers,
            parser: SseParser::default(),
            ended: false,
        }
    }

    /// Closes the connection.
    pub fn close(self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
    }
}

/// An event stream being read.
pub struct Stream {
    conn: Conn,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    parser: SseParser,
    pub ended: bool,
}

impl Stream {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next event, or `None` when the stream ends.
    pub fn next(&mut self) -> Option<Event> {
        loop {
            if !self.parser.events.is_empty() {
                return Some(self.parser.events.remove(0));
            }
            if self.ended {
                return None;
            }
            match self.conn.chunk() {
                Some(b) => self.parser.feed(&String::from_utf8(b).unwrap()),
                None => self.ended = true,
            }
        }
    }

    /// The next event that carries data (priming events skipped).
    pub fn next_message(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            let ev = self.next()?;
            if !ev.data.is_empty() {
                return Some((ev.id.clone(), ev.json()));
            }
        }
    }

    /// Reads events until the stream ends.
    pub fn rest(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next() {
            out.push(e);
        }
        out
    }

    pub fn set_timeout(&self, t: Duration) {
        self.conn.writer.set_read_timeout(Some(t)).unwrap();
    }

    /// Number of `:` comment lines seen so far.
    pub fn comments(&self) -> usize {
        self.parser.comments
    }

    pub fn close(self) {
        self.conn.close();
    }
}

// ---------------------------------------------------------------------------------------
// Messages

pub fn modern_meta() -> Value {
    util::modern_meta()
}

/// A modern request body.
pub fn modern_request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a modern request needs.
pub fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("mcp-protocol-version", util::MODERN),
        ("mcp-method", method),
    ];
    if let Some(n) = name {
        h.push(("mcp-name", n));
    }
    h
}

pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// A legacy session: `initialize` and `notifications/initialized` done.
pub struct LegacySession {
    pub id: String,
    pub version: String,
}

impl LegacySession {
    pub fn open(s: &HttpServer, version: &str) -> LegacySession {
        Self::open_with(s, version, json!({}))
    }

    pub fn open_with(s: &HttpServer, version: &str, capabilities: Value) -> LegacySession {
        let init = request(
            1,
            "initialize",
            json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "0"}}),
        );
        let r = s.post(&[], &init);
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.checked(false, "initialize");
        assert_eq!(v["result"]["protocolVersion"], version);
        let id = r.header("mcp-session-id").expect("a session id").to_owned();
        let session = LegacySession {
            id,
            version: version.to_owned(),
        };
        let r = s.post(
            &session.headers(),
            &notification("notifications/initialized"),
        );
        assert_eq!(r.status, 202, "{}", r.text());
        assert!(r.body.is_empty());
        session
    }

    pub fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", self.version.as_str()),
        ]
    }

    /// POSTs `body` in this session.
    pub fn post(&self, s: &HttpServer, body: &Value) -> Resp {
        s.post(&self.headers(), body)
    }

    /// Opens the session's GET stream (optionally resuming after `last_event_id`).
    pub fn get_stream(&self, s: &HttpServer, last_event_id: Option<&str>) -> Stream {
        let mut c = s.conn();
        let mut h = self.headers();
        h.push(("accept", "text/event-stream"));
        if let Some(l) = last_event_id {
            h.push(("last-event-id", l));
        }
        c.send("GET", "/mcp", &h, b"");
        c.stream()
    }

    /// POSTs on a connection of its own and returns the response as a stream being read.
    pub fn post_stream(&self, s: &HttpServer, body: &Value) -> Stream {
        let mut c = s.conn();
        let mut h = self.headers();
        h.push(("content-type", "application/json"));
        h.push(("accept", "application/json, text/event-stream"));
        c.send("POST", "/mcp", &h, body.to_string().as_bytes());
        c.stream()
    }
}
