use serde_json::json;

use super::*;

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn strs(v: Vec<Url>) -> Vec<String> {
    v.into_iter().map(String::from).collect()
}

#[test]
fn bearer_challenge_with_quoted_and_bare_params() {
    let c = bearer_challenge(&[
        r#"Bearer resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp", scope="a b", error=insufficient_scope"#.into(),
    ])
    .unwrap();
    assert_eq!(
        c.get("resource_metadata"),
        Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(c.get("scope"), Some("a b"));
    assert_eq!(c.get("error"), Some("insufficient_scope"));
}

#[test]
fn bearer_challenge_among_others_and_escapes() {
    let c =
        bearer_challenge(&[r#"Basic realm="x, y", BEARER realm="say \"hi\"", Scope="s""#.into()])
            .unwrap();
    assert_eq!(c.get("realm"), Some(r#"say "hi""#));
    assert_eq!(c.get("scope"), Some("s"));
    assert_eq!(c.get("error"), None);
}

#[test]
fn bearer_challenge_in_a_later_header_or_bare() {
    let c = bearer_challenge(&["Basic realm=\"a\"".into(), "Bearer".into()]).unwrap();
    assert!(c.params.is_empty());
    assert!(bearer_challenge(&["Basic realm=\"a\"".into()]).is_none());
    assert!(bearer_challenge(&[]).is_none());
}

#[test]
fn a_dpop_challenge_is_read_like_a_bearer_one() {
    let c = bearer_challenge(&[
        r#"DPoP error="use_dpop_nonce", resource_metadata="http://r/.well-known/x""#.into(),
    ])
    .unwrap();
    assert_eq!(c.get("error"), Some("use_dpop_nonce"));
    assert_eq!(c.get("resource_metadata"), Some("http://r/.well-known/x"));
}

#[test]
fn protected_resource_urls_path_first_then_root() {
    assert_eq!(
        strs(resource_metadata_urls(&u("http://localhost:3000/mcp?x=1"))),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource",
        ]
    );
    assert_eq!(
        strs(resource_metadata_urls(&u("http://h/"))),
        ["http://h/.well-known/oauth-protected-resource"]
    );
}

#[test]
fn authorization_server_urls_in_the_spec_order() {
    assert_eq!(
        strs(authorization_server_metadata_urls(&u(
            "https://auth.example.com/tenant1"
        ))),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(
        strs(authorization_server_metadata_urls(&u(
            "https://auth.example.com"
        ))),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn scope_from_challenge_then_metadata_then_none() {
    let prm = json!({"scopes_supported": ["read", "write"]});
    assert_eq!(
        choose_scope(Some("x y"), Some(&prm)).as_deref(),
        Some("x y")
    );
    assert_eq!(
        choose_scope(None, Some(&prm)).as_deref(),
        Some("read write")
    );
    assert_eq!(choose_scope(Some(" "), Some(&json!({}))), None);
    assert_eq!(choose_scope(None, None), None);
    assert_eq!(union_scopes(Some("a b"), "b c"), "a b c");
    assert_eq!(union_scopes(None, "c"), "c");
}

#[test]
fn resource_must_be_the_endpoint_or_a_parent_on_its_origin() {
    let ep = u("http://localhost:3000/mcp");
    assert!(resource_matches("http://localhost:3000/mcp", &ep));
    assert!(resource_matches("http://localhost:3000/", &ep));
    assert!(resource_matches("http://localhost:3000", &ep));
    assert!(!resource_matches("http://localhost:3000/other", &ep));
    assert!(!resource_matches("http://localhost:3000/mc", &ep));
    assert!(!resource_matches("https://evil.example.com/mcp", &ep));
    assert!(!resource_matches("not a url", &ep));
    assert_eq!(
        canonical_resource(&u("http://h:1/mcp?q#f")).as_str(),
        "http://h:1/mcp"
    );
}
