//! Opaque access tokens checked by RFC 7662 introspection, against a real authorization
//! server: the official TypeScript SDK's example one (its in-memory demo provider, pinned in
//! `tests/node`), with the SDK's own client and an OAuth provider in front, then the
//! official Python SDK's client with its `OAuthClientProvider` (`tests/peers`). The client is
//! refused (401), finds the resource's metadata, registers, is authorized, gets an opaque
//! token, and lists and calls tools with it; toolwright asks the server about the token.
//! A made-up token and the same token at a resource of another audience are refused.

use crate::http_client::*;
use crate::http_node::node_project;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The demo authorization server, killed when dropped.
struct AuthServer {
    child: Child,
    issuer: String,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn auth_server(dir: &std::path::Path) -> AuthServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("node")
        .arg(dir.join("oauth_demo.mjs"))
        .args(["server", &port.to_string()])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run node");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    while !line.contains("ready") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the demo authorization server ended"
        );
    }
    // Its issuer identifier, as its metadata writes it.
    AuthServer {
        child,
        issuer: format!("http://127.0.0.1:{port}/"),
    }
}

fn serve(auth: &AuthServer, extra: &[&str]) -> HttpServer {
    let endpoint = format!("{}introspect", auth.issuer);
    let mut args = vec![
        "--auth-issuer",
        auth.issuer.as_str(),
        "--auth-introspect-url",
        endpoint.as_str(),
    ];
    args.extend_from_slice(extra);
    HttpServer::start(&args)
}

fn list_with(s: &HttpServer, token: Option<&str>) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut h = modern_headers("tools/list", None);
    if let Some(b) = &bearer {
        h.push(("authorization", b));
    }
    s.post(&h, &modern_request(1, "tools/list", json!({})))
}

#[test]
fn the_ts_sdk_client_is_authorized_by_the_sdk_example_server_and_its_token_introspected() {
    let Some(dir) = node_project() else { return };
    let auth = auth_server(&dir);
    let s = serve(&auth, &[]);

    let out = Command::new("node")
        .arg(dir.join("oauth_demo.mjs"))
        .args(["client", &s.url()])
        .current_dir(&dir)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "the SDK client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["first"], "unauthorized, then authorized", "{seen}");
    assert!(
        seen["tools"].as_array().unwrap().contains(&json!("add")),
        "{seen}"
    );
    assert_eq!(seen["result"]["structuredContent"], json!({"result": 5}));
    let token = seen["token"].as_str().unwrap();
    assert_eq!(token.split('.').count(), 1, "an opaque token: {token}");

    // The token works on its own; none, or a made-up one, gets 401 naming the metadata.
    assert_eq!(list_with(&s, Some(token)).status, 200);
    for bad in [None, Some("3f0c4b4e-0000-4000-8000-000000000000")] {
        let r = list_with(&s, bad);
        assert_eq!(r.status, 401, "{bad:?}: {}", r.text());
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains("resource_metadata="), "{challenge}");
    }

    // The same token at a resource that is not its audience.
    let other = serve(&auth, &["--auth-audience", "https://other.example/mcp"]);
    let r = list_with(&other, Some(token));
    assert_eq!(r.status, 401, "{}", r.text());

    // The Python SDK's client and OAuth provider, through the same flow.
    let peers = crate::client::peers_dir();
    let python = peers.join(".venv/bin/python");
    let Some(argv) = crate::client::available(
        "the Python SDK (tests/peers/.venv)",
        vec![python.display().to_string()],
        &[],
    ) else {
        return;
    };
    let out = Command::new(&argv[0])
        .arg(peers.join("py_oauth_client.py"))
        .arg(s.url())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "the Python SDK client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        seen["tools"].as_array().unwrap().contains(&json!("add")),
        "{seen}"
    );
    assert_eq!(seen["result"]["structuredContent"], json!({"result": 5}));
    let py_token = seen["token"].as_str().unwrap();
    assert_ne!(py_token, token, "a token of its own");
    assert_eq!(list_with(&s, Some(py_token)).status, 200);
}
