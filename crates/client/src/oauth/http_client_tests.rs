use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A reply of the test endpoint: status, extra headers, body.
type Canned = (u16, Vec<(&'static str, &'static str)>, &'static str);

/// A token endpoint on a real socket that answers the given replies in turn and hands back
/// each request's `DPoP` header.
async fn endpoint(replies: Vec<Canned>) -> (Url, tokio::task::JoinHandle<Vec<Option<String>>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut proofs = Vec::new();
        for (status, headers, body) in replies {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // The head, then as much body as it says.
            loop {
                let n = sock.read(&mut chunk).await.unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len || n == 0 {
                        proofs.push(text[..end].lines().find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("dpop").then(|| v.trim().to_owned())
                        }));
                        break;
                    }
                }
            }
            let extra: String = headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(reply.as_bytes()).await.unwrap();
            let _ = sock.shutdown().await;
        }
        proofs
    });
    let url = Url::parse(&format!("http://127.0.0.1:{port}/token")).unwrap();
    (url, task)
}

fn nonce_of(proof: &str) -> Option<String> {
    let payload = proof.split('.').nth(1).unwrap();
    let bytes =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    claims
        .get("nonce")
        .and_then(|n| n.as_str())
        .map(str::to_owned)
}

const TOKEN: &str = r#"{"access_token":"t","token_type":"DPoP"}"#;
const USE_NONCE: &str = r#"{"error":"use_dpop_nonce"}"#;

#[tokio::test]
async fn a_token_request_goes_again_with_the_servers_nonce() {
    let (url, task) = endpoint(vec![
        (400, vec![("DPoP-Nonce", "as-nonce-1")], USE_NONCE),
        (200, vec![], TOKEN),
    ])
    .await;
    let key = DpopKey::generate().unwrap();
    let form = Some((
        "application/x-www-form-urlencoded",
        "grant_type=x".to_owned(),
    ));
    let raw = token_request(&url, form, Vec::new(), Some(&key))
        .await
        .unwrap();
    assert_eq!(raw.status, 200);
    let proofs = task.await.unwrap();
    let (first, second) = (proofs[0].as_deref().unwrap(), proofs[1].as_deref().unwrap());
    assert_eq!(nonce_of(first), None);
    assert_eq!(nonce_of(second).as_deref(), Some("as-nonce-1"));
    assert_ne!(first, second, "a fresh proof, not the same one again");
    assert_eq!(key.as_nonce.lock().as_deref(), Some("as-nonce-1"));
}

#[tokio::test]
async fn a_nonce_is_asked_for_once_then_the_refusal_stands() {
    let (url, task) = endpoint(vec![
        (400, vec![("DPoP-Nonce", "n1")], USE_NONCE),
        (400, vec![("DPoP-Nonce", "n2")], USE_NONCE),
    ])
    .await;
    let key = DpopKey::generate().unwrap();
    let raw = token_request(&url, None, Vec::new(), Some(&key))
        .await
        .unwrap();
    assert_eq!(raw.status, 400);
    assert_eq!(task.await.unwrap().len(), 2);
}

#[tokio::test]
async fn another_refusal_or_no_key_sends_once_without_a_nonce() {
    let (url, task) = endpoint(vec![(
        400,
        vec![("DPoP-Nonce", "n1")],
        r#"{"error":"invalid_grant"}"#,
    )])
    .await;
    let key = DpopKey::generate().unwrap();
    let raw = token_request(&url, None, Vec::new(), Some(&key))
        .await
        .unwrap();
    assert_eq!(raw.status, 400);
    assert_eq!(task.await.unwrap().len(), 1);

    let (url, task) = endpoint(vec![(200, vec![], TOKEN)]).await;
    let raw = token_request(&url, None, Vec::new(), None).await.unwrap();
    assert_eq!(raw.status, 200);
    assert_eq!(
        task.await.unwrap(),
        vec![None],
        "no DPoP header without a key"
    );
}
