use super::*;
use crate::oauth::Registered;
use sha2::{Digest, Sha256};

fn session(method: &str, secret: Option<&str>) -> Session {
    Session {
        endpoint: "http://mcp.example/mcp".into(),
        issuer: "http://as.example".into(),
        token_endpoint: Url::parse("http://as.example/token").unwrap(),
        client: Registered {
            id: "client 1".into(),
            secret: secret.map(str::to_owned),
            method: method.into(),
        },
        resource: "http://mcp.example/mcp".into(),
        dpop: None,
    }
}

fn query(url: &Url, k: &str) -> Option<String> {
    url.query_pairs()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.into_owned())
}

#[test]
fn the_authorization_url_carries_pkce_s256_state_resource_and_scope() {
    let s = session("none", None);
    let endpoint = Url::parse("http://as.example/authorize?tenant=t1").unwrap();
    let (url, state, verifier) = authorization_url(
        &s,
        &endpoint,
        "http://127.0.0.1:5555/callback",
        Some("read  write"),
    )
    .unwrap();
    assert_eq!(url.path(), "/authorize");
    assert_eq!(query(&url, "tenant").as_deref(), Some("t1"));
    assert_eq!(query(&url, "response_type").as_deref(), Some("code"));
    assert_eq!(query(&url, "client_id").as_deref(), Some("client 1"));
    assert_eq!(
        query(&url, "redirect_uri").as_deref(),
        Some("http://127.0.0.1:5555/callback")
    );
    assert_eq!(
        query(&url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.secret().as_bytes()));
    assert_eq!(query(&url, "code_challenge"), Some(challenge));
    assert!(verifier.secret().len() >= 43);
    assert_eq!(
        query(&url, "state").as_deref(),
        Some(state.secret().as_str())
    );
    assert_eq!(
        query(&url, "resource").as_deref(),
        Some("http://mcp.example/mcp")
    );
    assert_eq!(query(&url, "scope").as_deref(), Some("read write"));

    let (again, state2, _) =
        authorization_url(&s, &endpoint, "http://127.0.0.1:5555/callback", None).unwrap();
    assert_ne!(state.secret(), state2.secret());
    assert_eq!(query(&again, "scope"), None);
}

fn pairs(form: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(form.as_bytes())
        .into_owned()
        .collect()
}

#[test]
fn the_jwt_bearer_grant_authenticates_the_client_as_the_server_advertises() {
    let (form, headers) = jwt_bearer_request(
        &session("client_secret_basic", Some("s:1")),
        "jag",
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        pairs(&form),
        [
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", "jag"),
            ("resource", "http://mcp.example/mcp"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    assert_eq!(
        headers,
        [("authorization".to_owned(), basic_header("client 1", "s:1"))]
    );
    // RFC 6749 §2.3.1: each part form-encoded before base64.
    assert_eq!(
        basic_header("client 1", "s:1"),
        "Basic Y2xpZW50KzE6cyUzQTE="
    );

    let (form, headers) = jwt_bearer_request(
        &session("client_secret_post", Some("s")),
        "jag",
        Some("a b"),
        None,
    )
    .unwrap();
    let p = pairs(&form);
    assert!(headers.is_empty());
    for (k, v) in [
        ("scope", "a b"),
        ("client_id", "client 1"),
        ("client_secret", "s"),
    ] {
        assert!(p.contains(&(k.to_owned(), v.to_owned())), "{k} in {p:?}");
    }

    assert!(jwt_bearer_request(&session("private_key_jwt", None), "jag", None, None).is_err());
}

#[test]
fn a_standard_token_response_becomes_tokens() {
    let t: BasicTokenResponse = serde_json::from_str(
        r#"{"access_token":"at","token_type":"Bearer","expires_in":60,"refresh_token":"rt","scope":"a b"}"#,
    )
    .unwrap();
    let t = Tokens::from(t);
    assert_eq!(t.access, "at");
    assert_eq!(t.refresh.as_deref(), Some("rt"));
    assert_eq!(t.scope.as_deref(), Some("a b"));
    assert!(t.expires.is_some_and(|e| e > Instant::now()));
}
