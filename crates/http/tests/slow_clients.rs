//! Slow clients: a request head or body that trickles in is cut off, and the server keeps
//! serving everyone else.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolwright_http::{HttpConfig, HttpServer};
use toolwright_protocol::Implementation;
use toolwright_server::{Config, Server};

async fn start() -> std::net::SocketAddr {
    let server = Server::new(Implementation::new("slow", "0"), Config::default());
    let config = HttpConfig {
        addr: "127.0.0.1:0".into(),
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let http = HttpServer::bind(server, config).await.unwrap();
    let addr = http.local_addr();
    tokio::spawn(http.run_until(std::future::pending()));
    addr
}

/// Reads until the server closes the connection; what it sent.
async fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    assert!(r.is_ok(), "the server did not close the connection");
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_head_closes_the_connection() {
    let addr = start().await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let start = Instant::now();
    read_to_close(&mut s).await;
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_gets_408() {
    let addr = start().await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\"")
        .await
        .unwrap();
    let text = read_to_close(&mut s).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn others_are_served_meanwhile() {
    let addr = start().await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
    let mut fast = TcpStream::connect(addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-type: application/json\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/list\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    fast.write_all(req.as_bytes()).await.unwrap();
    let text = read_to_close(&mut fast).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"tools\":[]"), "{text}");
}
