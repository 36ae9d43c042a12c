//! Drives [`OAuth`] against a live MCP server without the MCP transport: POSTs
//! `initialize`, hands a 401/403 to the authorizer, and POSTs again with its token, until
//! the server accepts (what the transport does, for trying the authorizer by hand:
//! `cargo run -p toolwright-client --example oauth_probe -- http://localhost:3000/mcp`).

use std::io::{Read, Write};
use std::net::TcpStream;

use toolwright_client::oauth::{OAuth, OAuthOptions};
use toolwright_client::{Authorizer, Challenge};

fn post(url: &url::Url, auth: Option<String>) -> (u16, Vec<String>, String) {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}"#;
    let host = url.host_str().unwrap();
    let port = url.port_or_known_default().unwrap();
    let mut s = TcpStream::connect((host, port)).unwrap();
    let mut req = format!(
        "POST {} HTTP/1.0\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        url.path(),
        body.len()
    );
    if let Some(a) = auth {
        req.push_str(&format!("authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let (head, rest) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let www = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.trim().to_owned())
        .collect();
    (status, www, rest.chars().take(200).collect())
}

#[tokio::main]
async fn main() {
    let arg = std::env::args().nth(1).expect("URL");
    let url = url::Url::parse(&arg).unwrap();
    let ctx: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let s = |k: &str| ctx.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let oauth = OAuth::new(OAuthOptions {
        client_id: s("client_id"),
        client_secret: s("client_secret"),
        client_metadata_url: std::env::var("CLIENT_METADATA_URL").ok(),
        scope: None,
        browser: true,
        cache: std::env::var_os("OAUTH_PROBE_CACHE").map(Into::into),
        ..OAuthOptions::default()
    });
    for _ in 0..6 {
        let (status, www, body) = {
            let u = url.clone();
            let a = oauth.authorization();
            tokio::task::spawn_blocking(move || post(&u, a))
                .await
                .unwrap()
        };
        eprintln!("probe: HTTP {status} {www:?} {body}");
        if status != 401 && status != 403 {
            std::process::exit(if status == 200 { 0 } else { 1 });
        }
        let ch = Challenge {
            status,
            www_authenticate: www,
            url: arg.clone(),
            dpop_nonce: None,
        };
        match oauth.challenge(ch).await {
            Ok(true) => continue,
            Ok(false) => std::process::exit(1),
            Err(e) => {
                eprintln!("probe: {e}");
                std::process::exit(1)
            }
        }
    }
    std::process::exit(1);
}
