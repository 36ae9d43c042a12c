//! A legacy session is bound to the subject whose token opened it: a token of another
//! subject is answered as for an unknown session (404, the same bytes), on POST, GET and
//! DELETE, and the session keeps serving its own subject.

use crate::auth_jwt::{Issuer, claims, es256, mint, start};
use crate::http_client::*;
use serde_json::json;

#[test]
fn a_session_answers_only_its_subject() {
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(&issuer, &[]);
    let iss = issuer.url.as_str();
    let token = |sub: &str| {
        format!(
            "Bearer {}",
            mint(&key, &claims(&s, iss, json!({"sub": sub})))
        )
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&[("authorization", alice.as_str())], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let send = |bearer: &str, sid: &str, method: &str, body: Option<&serde_json::Value>| {
        let mut h = vec![
            ("authorization", bearer),
            ("mcp-session-id", sid),
            ("mcp-protocol-version", LEGACY),
        ];
        match body {
            Some(b) => s.post(&h, b),
            None => {
                h.push(("accept", "text/event-stream"));
                s.send(method, "/mcp", &h, b"")
            }
        }
    };
    let list = request(2, "tools/list", json!({}));
    assert_eq!(send(&alice, &id, "POST", Some(&list)).status, 200);

    // Bob, with a valid token, is told what a made-up session id is told.
    let unknown = send(&bob, "made-up-session", "POST", Some(&list));
    assert_eq!(unknown.status, 404);
    let r = send(&bob, &id, "POST", Some(&list));
    assert_eq!((r.status, r.text()), (404, unknown.text()));
    let r = send(&bob, &id, "DELETE", None);
    assert_eq!(r.status, 404, "{}", r.text());
    let r = send(&bob, &id, "GET", None);
    assert_eq!(r.status, 404, "{}", r.text());

    // The session still serves Alice (with a new token of hers), and ends at her DELETE.
    let alice_again = format!(
        "Bearer {}",
        mint(&key, &claims(&s, iss, json!({"sub": "alice", "jti": "2"})))
    );
    let r = send(&alice_again, &id, "POST", Some(&list));
    assert_eq!(r.status, 200, "{}", r.text());
    r.checked(false, "tools/list");
    assert_eq!(send(&alice, &id, "DELETE", None).status, 204);
    assert_eq!(send(&alice, &id, "POST", Some(&list)).status, 404);
}
