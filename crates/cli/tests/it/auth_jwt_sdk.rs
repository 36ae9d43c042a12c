//! `serve --http --auth-issuer` driven by the official SDK clients with their OAuth
//! providers in front: the TypeScript SDK's (`tests/node/jwt_client.mjs`) and the Python
//! SDK's (`tests/peers/py_jwt_client.py`), against `auth_jwt`'s authorization server
//! stand-in, with tokens minted here and handed to the provider (through the environment).
//! No token, a wrong audience, an expired token and a token signed by another key are each
//! refused: the SDK reads the resource's metadata and the authorization server's, asks its
//! provider to send the user to the authorization endpoint, and reports it cannot go on; no
//! tools/list ever succeeds. A token signed by a key the issuer rotated in (a kid the server
//! has not seen) is accepted after one more JWKS fetch, and tools/call works.

use crate::auth_jwt::{Issuer, claims, ed25519, es256, mint, now, start};
use serde_json::{Value, json};
use std::process::Command;

/// Runs one of the SDK drivers (`argv` then the URL) with `token`; its JSON line.
fn drive(argv: &[String], dir: &std::path::Path, url: &str, token: Option<&str>) -> Value {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .arg(url)
        .current_dir(dir)
        .env("TW_TOKEN", token.unwrap_or(""))
        .output()
        .expect("run the SDK driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the driver failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// The requests the SDK sent to `url` with `method`: each status and challenge.
fn answers(seen: &Value, method: &str, url: &str) -> Vec<(u64, String)> {
    seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[0] == method && r[1] == url)
        .map(|r| {
            (
                r[2].as_u64().unwrap(),
                r[3].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn statuses(seen: &Value, method: &str, url: &str) -> Vec<u64> {
    answers(seen, method, url)
        .into_iter()
        .map(|a| a.0)
        .collect()
}

/// How many requests for its RFC 8414 metadata the stand-in got.
fn metadata_reads(issuer: &Issuer) -> usize {
    issuer
        .paths()
        .iter()
        .filter(|p| *p == "/.well-known/oauth-authorization-server/tenant")
        .count()
}

/// The five cases, for one SDK: `refusal` is what that SDK reports when it stops at the
/// authorization step (its outcome and error type).
fn cases(argv: &[String], dir: &std::path::Path, refusal: (&str, &str)) {
    let old = es256("ec-1");
    let issuer = Issuer::start(&[&old]);
    let s = start(&issuer, &[]);
    let iss = issuer.url.clone();
    let prm = format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr);
    let base = iss.trim_end_matches("/tenant");
    assert_eq!(issuer.fetches(), 1);

    let impostor = es256("ec-1");
    let refused: [(&str, Option<String>); 4] = [
        ("no token", None),
        (
            "a wrong audience",
            Some(mint(
                &old,
                &claims(&s, &iss, json!({"aud": "http://127.0.0.1:1/mcp"})),
            )),
        ),
        (
            "an expired token",
            Some(mint(&old, &claims(&s, &iss, json!({"exp": now() - 300})))),
        ),
        (
            "another key under the issuer's kid",
            Some(mint(&impostor, &claims(&s, &iss, json!({})))),
        ),
    ];
    for (case, token) in &refused {
        let reads = metadata_reads(&issuer);
        let seen = drive(argv, dir, &s.url(), token.as_deref());
        assert_eq!(seen["outcome"], refusal.0, "{case}: {seen}");
        assert_eq!(seen["error_type"], refusal.1, "{case}: {seen}");
        assert!(seen.get("tools").is_none(), "{case}: {seen}");
        // The server answered the MCP request 401, every time, naming its metadata; a token
        // that came with it was found invalid. Then it served its metadata.
        let challenge = if token.is_some() {
            format!("Bearer error=\"invalid_token\", resource_metadata=\"{prm}\"")
        } else {
            format!("Bearer resource_metadata=\"{prm}\", scope=\"tools:read tools:call\"")
        };
        let posts = answers(&seen, "POST", &s.url());
        assert!(!posts.is_empty(), "{case}: {seen}");
        assert!(
            posts.iter().all(|a| *a == (401, challenge.clone())),
            "{case}: {seen}"
        );
        assert_eq!(statuses(&seen, "GET", &prm), [200], "{case}: {seen}");
        // The SDK read the authorization server's metadata, then asked its provider to send
        // the user to the authorization endpoint, for this resource.
        assert!(metadata_reads(&issuer) > reads, "{case}: {seen}");
        let redirect = seen["redirect"].as_str().unwrap_or_default();
        assert!(
            redirect.starts_with(&format!("{base}/authorize?")),
            "{case}: {seen}"
        );
        assert!(redirect.contains("client_id=test-client"), "{case}: {seen}");
        let resource = format!(
            "resource={}",
            s.url().replace(':', "%3A").replace('/', "%2F")
        );
        assert!(redirect.contains(&resource), "{case}: {seen}");
        // No key was fetched for any of them: the kid is known or there is no token.
        assert_eq!(issuer.fetches(), 1, "{case}");
    }

    // The issuer rotates: a token signed by the new key, whose kid the server has not seen,
    // is accepted once the server fetched the JWKS again.
    let new = ed25519("ed-2");
    issuer.publish(&[&new]);
    let token = mint(&new, &claims(&s, &iss, json!({})));
    let seen = drive(argv, dir, &s.url(), Some(&token));
    assert_eq!(seen["outcome"], "ok", "{seen}");
    assert!(
        seen["tools"].as_array().unwrap().contains(&json!("add")),
        "{seen}"
    );
    assert_eq!(seen["result"]["structuredContent"], json!({"result": 5}));
    assert!(seen["redirect"].is_null(), "{seen}");
    let posts = statuses(&seen, "POST", &s.url());
    assert!(posts.iter().all(|&st| st < 300), "{seen}");
    assert_eq!(issuer.fetches(), 2, "one fetch for the new kid");
}

#[test]
fn the_ts_sdk_client_with_its_oauth_provider_against_issued_tokens() {
    let Some(dir) = crate::http_node::node_project() else {
        return;
    };
    let argv = vec!["node".to_owned(), "jwt_client.mjs".to_owned()];
    cases(&argv, &dir, ("unauthorized", "UnauthorizedError"));
}

#[test]
fn the_python_sdk_client_with_its_oauth_provider_against_issued_tokens() {
    let peers = crate::client::peers_dir();
    let python = peers.join(".venv/bin/python");
    let Some(mut argv) = crate::client::available(
        "the Python SDK (tests/peers/.venv)",
        vec![python.display().to_string()],
        &[],
    ) else {
        return;
    };
    argv.push("py_jwt_client.py".to_owned());
    cases(&argv, &peers, ("error", "AuthorizationRequired"));
}
