use super::*;

fn reply(status: u16, text: &str, www: &[&str]) -> Reply {
    Reply {
        status,
        session_id: None,
        answer: None,
        text: text.to_owned(),
        retry: None,
        www_authenticate: www.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn what_counts_as_a_refusal() {
    assert!(refused(&reply(401, "", &[])));
    assert!(refused(&reply(
        403,
        "",
        &[r#"Bearer error="insufficient_scope", scope="a b""#]
    )));
    assert!(!refused(&reply(403, "forbidden origin", &[])));
    assert!(!refused(&reply(200, "", &[])));
}

#[test]
fn a_refusal_reads_as_its_oauth_error_and_challenge() {
    let r = reply(
        401,
        r#"{"error":"invalid_token","error_description":"expired"}"#,
        &[r#"Bearer resource_metadata="http://h/.well-known/oauth-protected-resource""#],
    );
    let text = unauthorized("initialize", &r).to_string();
    assert_eq!(
        text,
        "HTTP 401 from the server for initialize: not authorized (invalid_token: expired; \
         WWW-Authenticate: Bearer resource_metadata=\"http://h/.well-known/oauth-protected-resource\")"
    );
    let bare = unauthorized("tools/list", &reply(401, "", &[])).to_string();
    assert!(bare.contains("--bearer-env"), "{bare}");
}
