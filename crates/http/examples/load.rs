//! Load test: many concurrent clients calling `add` over Streamable HTTP, every response
//! checked and accounted for.
//!
//! ```text
//! cargo run --release -p toolwright-http --example load -- [--clients 64] [--calls 1000]
//!     [--era modern|legacy] [--url http://127.0.0.1:8080/mcp]
//! ```
//!
//! Without `--url` it starts an in-process server (an `add` tool, the HTTP transport on a
//! free loopback port) and runs the clients in the same process, on the same two runtime
//! threads. Each client has its own keep-alive connection and sends its calls one after
//! another; call `i` of client `c` has the id `c * 1_000_000 + i` and adds `c` and `i`, so
//! each reply is checked for its id and its sum, and marked off in a table: a reply missing,
//! repeated, unexpected or wrong fails the run. It prints calls/s and latency percentiles.
//! Not a timed test: it measures, it does not assert speed.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};
use toolwright_http::{HttpConfig, HttpServer};
use toolwright_protocol::{CallToolResult, Implementation};
use toolwright_server::{Config, FnTool, Server};

struct Opts {
    clients: usize,
    calls: usize,
    modern: bool,
    url: Option<String>,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        clients: 64,
        calls: 1000,
        modern: true,
        url: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--clients" => o.clients = value()?.parse().map_err(|e| format!("--clients: {e}"))?,
            "--calls" => o.calls = value()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--era" => {
                o.modern = match value()?.as_str() {
                    "modern" => true,
                    "legacy" => false,
                    other => return Err(format!("--era: {other:?} is not modern or legacy")),
                }
            }
            "--url" => o.url = Some(value()?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.clients == 0 || o.calls == 0 || o.calls >= 1_000_000 {
        return Err("--clients must be at least 1 and --calls between 1 and 999999".into());
    }
    Ok(o)
}

fn add_tool() -> FnTool {
    FnTool::from_json(
        json!({
            "name": "add",
            "description": "Adds a and b.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                            "required": ["a", "b"], "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]}
        }),
        |args, _ctx| async move {
            let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
            Ok(CallToolResult::structured(json!({"result": sum as i64})))
        },
    )
    .expect("valid definition")
}

/// `host:port` and path of an `http://` URL.
fn split(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    Ok((authority.to_owned(), format!("/{path}")))
}

struct Client {
    send: http1::SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    modern: bool,
    session: Option<String>,
}

impl Client {
    async fn connect(authority: &str, path: &str, modern: bool) -> Result<Client, String> {
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (send, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Client {
            send,
            authority: authority.to_owned(),
            path: path.to_owned(),
            modern,
            session: None,
        })
    }

    async fn post(
        &mut self,
        body: String,
        method: &str,
        name: Option<&str>,
    ) -> Result<(http::StatusCode, Option<String>, Bytes), String> {
        let mut req = http::Request::post(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if self.modern {
            req = req
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method);
            if let Some(n) = name {
                req = req.header("mcp-name", n);
            }
        } else if let Some(s) = &self.session {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        self.send.ready().await.map_err(|e| e.to_string())?;
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| e.to_string())?;
        let status = resp.status();
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, sid, bytes))
    }

    async fn initialize(&mut self) -> Result<(), String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "0"}}});
        let (status, sid, _) = self.post(init.to_string(), "initialize", None).await?;
        if status != 200 || sid.is_none() {
            return Err(format!("initialize: HTTP {status}, session id {sid:?}"));
        }
        self.session = sid;
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = self
            .post(done.to_string(), "notifications/initialized", None)
            .await?;
        if status != 202 {
            return Err(format!("notifications/initialized: HTTP {status}"));
        }
        Ok(())
    }
}

/// The JSON-RPC message of a reply body (JSON, or the last `data:` of an event stream).
fn reply_of(body: &[u8]) -> Result<Value, String> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let last = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .rfind(|d| !d.is_empty());
    serde_json::from_str(last.ok_or("no message in the reply")?).map_err(|e| e.to_string())
}

async fn run_client(
    c: usize,
    o: Arc<Opts>,
    authority: String,
    path: String,
    seen: Arc<Vec<AtomicU8>>,
) -> Result<Vec<Duration>, String> {
    let mut client = Client::connect(&authority, &path, o.modern).await?;
    if !o.modern {
        client.initialize().await?;
    }
    let mut latencies = Vec::with_capacity(o.calls);
    for i in 0..o.calls {
        let id = c * 1_000_000 + i;
        let mut params = json!({"name": "add", "arguments": {"a": c, "b": i}});
        if o.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
            .to_string();
        let start = Instant::now();
        let (status, _, bytes) = client.post(body, "tools/call", Some("add")).await?;
        latencies.push(start.elapsed());
        if status != 200 {
            return Err(format!(
                "call {id}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let reply = reply_of(&bytes)?;
        let got = reply["id"]
            .as_u64()
            .ok_or_else(|| format!("reply without a numeric id: {reply}"))?
            as usize;
        let (rc, ri) = (got / 1_000_000, got % 1_000_000);
        if rc >= o.clients || ri >= o.calls {
            return Err(format!("reply to an id never sent: {got}"));
        }
        if seen[rc * o.calls + ri].fetch_add(1, Ordering::Relaxed) != 0 {
            return Err(format!("duplicate reply for id {got}"));
        }
        if got != id {
            return Err(format!("call {id} got the reply for {got}"));
        }
        let sum = reply["result"]["structuredContent"]["result"].as_i64();
        if sum != Some((c + i) as i64) {
            return Err(format!("call {id}: wrong result {reply}"));
        }
    }
    Ok(latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(o: Opts) -> Result<(), String> {
    let o = Arc::new(o);
    let (url, _server_task) = match &o.url {
        Some(u) => (u.clone(), None),
        None => {
            let server = Server::new(Implementation::new("load", "0"), Config::default());
            server.register(add_tool()).map_err(|e| e.to_string())?;
            let config = HttpConfig {
                addr: "127.0.0.1:0".into(),
                max_sessions: o.clients + 16,
                ..HttpConfig::default()
            };
            let http = HttpServer::bind(server, config)
                .await
                .map_err(|e| e.to_string())?;
            let url = http.url();
            (
                url,
                Some(tokio::spawn(http.run_until(std::future::pending()))),
            )
        }
    };
    let (authority, path) = split(&url)?;
    let total = o.clients * o.calls;
    let seen: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    println!(
        "{} clients x {} calls of add over HTTP ({} era) against {url}",
        o.clients,
        o.calls,
        if o.modern {
            "modern 2026-07-28"
        } else {
            "legacy 2025-11-25, one session per client"
        }
    );
    let start = Instant::now();
    let tasks: Vec<_> = (0..o.clients)
        .map(|c| {
            tokio::spawn(run_client(
                c,
                o.clone(),
                authority.clone(),
                path.clone(),
                seen.clone(),
            ))
        })
        .collect();
    let mut all = Vec::with_capacity(total);
    let mut failures = Vec::new();
    for t in tasks {
        match t.await {
            Ok(Ok(l)) => all.extend(l),
            Ok(Err(e)) => failures.push(e),
            Err(e) => failures.push(format!("client task failed: {e}")),
        }
    }
    let elapsed = start.elapsed();
    let answered = seen
        .iter()
        .filter(|s| s.load(Ordering::Relaxed) == 1)
        .count();
    let duplicated = seen
        .iter()
        .filter(|s| s.load(Ordering::Relaxed) > 1)
        .count();
    println!(
        "replies: {answered} of {total} answered exactly once, {duplicated} duplicated, {} missing",
        total - answered
    );
    if !failures.is_empty() {
        for f in failures.iter().take(10) {
            eprintln!("failure: {f}");
        }
        return Err(format!("{} clients failed", failures.len()));
    }
    if answered != total || duplicated != 0 {
        return Err("not every call was answered exactly once".into());
    }
    all.sort_unstable();
    println!(
        "{:.0} calls/s over {:.2} s; latency p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        total as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        percentile(&all, 0.50).as_secs_f64() * 1e6,
        percentile(&all, 0.99).as_secs_f64() * 1e6,
        all.last().map_or(0.0, |d| d.as_secs_f64() * 1e6),
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("load: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(run(opts)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
