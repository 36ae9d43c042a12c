//! Two HTTP servers in this process sharing one store, once a `MemoryStore` and once a
//! `RedisStore` on a real `redis-server`: the same requests, the same answers. Spoken to
//! over real sockets with plain HTTP/1.1.

#[path = "support/redis_server.rs"]
mod redis_server;

use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolwright_http::{HttpConfig, HttpServer, MemoryStore, SessionStore};
use toolwright_protocol::{CallToolResult, Implementation};
use toolwright_server::{Config, FnTool, Server, ToolContext, ToolError};

const V: &str = "2025-11-25";

fn server() -> Server {
    let s = Server::new(Implementation::new("t", "0"), Config::default());
    let steps = FnTool::from_json(
        json!({"name": "steps", "inputSchema": {"type": "object"}}),
        |_, ctx: ToolContext| async move {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), None);
            }
            Ok(CallToolResult::structured(json!({"steps": 3})))
        },
    )
    .unwrap();
    let ask = FnTool::from_json(
        json!({"name": "ask", "inputSchema": {"type": "object"}}),
        |_, ctx: ToolContext| async move {
            let a = ctx
                .request_client(
                    "elicitation/create",
                    json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}),
                )
                .await
                .map_err(|e| ToolError::Failed(e.to_string()))?;
            Ok(CallToolResult::structured(json!({"answer": a})))
        },
    )
    .unwrap();
    s.register(steps).unwrap();
    s.register(ask).unwrap();
    s
}

async fn replica(store: &Arc<dyn SessionStore>) -> std::net::SocketAddr {
    let config = HttpConfig {
        addr: "127.0.0.1:0".into(),
        session_store: Some(store.clone()),
        ..HttpConfig::default()
    };
    let http = HttpServer::bind(server(), config).await.unwrap();
    let addr = http.local_addr();
    tokio::spawn(http.run_until(std::future::pending()));
    addr
}

struct Resp {
    status: u16,
    head: String,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// `(id, message)` of each SSE event carrying data.
    fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter_map(|ev| {
                let mut id = String::new();
                let mut data = String::new();
                for l in ev.lines() {
                    if let Some(v) = l.strip_prefix("id:") {
                        id = v.trim().to_owned();
                    } else if let Some(v) = l.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                (!data.is_empty()).then(|| (id, serde_json::from_str(&data).unwrap()))
            })
            .collect()
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {V}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let mut r = Resp {
        status,
        head: head.to_owned(),
        body: rest.to_owned(),
    };
    if r.header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        r.body = unchunk(rest);
    }
    r
}

fn call(id: i64, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": {"progressToken": id}}})
    .to_string()
}

async fn two_replicas_share_sessions(store: Arc<dyn SessionStore>) {
    let (a, b) = (replica(&store).await, replica(&store).await);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let r = send(a, "POST", &[], &init).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.header("mcp-session-id").unwrap();
    let h = [("mcp-session-id", sid.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(send(b, "POST", &h, &initialized).await.status, 202);

    // A stream of B, resumed on A after its first event.
    let r = send(b, "POST", &h, &call(2, "steps")).await;
    let events = r.events();
    assert_eq!(events.len(), 4, "{}", r.body);
    assert_eq!(events[3].1["result"]["structuredContent"]["steps"], 3);
    let mut resume = h.to_vec();
    resume.push(("last-event-id", &events[0].0));
    let again = send(a, "GET", &resume, "").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.events(), events[1..].to_vec());

    // An elicitation of A's call answered on B.
    let sid2 = sid.clone();
    let ask_on_a = tokio::spawn(async move {
        let h = [("mcp-session-id", sid2.as_str())];
        send(a, "POST", &h, &call(3, "ask")).await
    });
    // The request to the client is on A's stream (stream 2: 1 was `steps`'); B reads it
    // from the store's log.
    let id = {
        let mut found = None;
        for _ in 0..200 {
            let mut s = tokio::net::TcpStream::connect(b).await.unwrap();
            let req = format!(
                "GET /mcp HTTP/1.1\r\nhost: {b}\r\naccept: text/event-stream\r\nmcp-protocol-version: {V}\r\nmcp-session-id: {}\r\nlast-event-id: 2-0\r\n\r\n",
                h[0].1
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut text = String::new();
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
            while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                if n == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if let Some(i) = text.find("elicitation/create") {
                    let before = &text[..i];
                    let start = before.rfind("{\"jsonrpc\"").unwrap();
                    let line = text[start..].lines().next().unwrap().to_owned();
                    let v: Value = serde_json::from_str(&line).unwrap();
                    found = Some(v["id"].clone());
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        found.expect("the elicitation request in the store's log")
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {}}})
        .to_string();
    let r = send(b, "POST", &h, &answer).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let r = ask_on_a.await.unwrap();
    let events = r.events();
    let last = &events.last().unwrap().1;
    assert_eq!(
        last["result"]["structuredContent"]["answer"]["action"], "accept",
        "{}",
        r.body
    );

    // DELETE on A; B no longer knows the session.
    assert_eq!(send(a, "DELETE", &h, "").await.status, 204);
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string();
    assert_eq!(send(b, "POST", &h, &ping).await.status, 404);
}

#[tokio::test]
async fn memory() {
    two_replicas_share_sessions(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn redis() {
    if !redis_server::available() {
        return;
    }
    let server = redis_server::RedisServer::start();
    let store = toolwright_sessions_redis::RedisStore::open(&server.url()).unwrap();
    two_replicas_share_sessions(Arc::new(store)).await;
}
