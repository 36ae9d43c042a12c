//! An upstream with `exchange:` (RFC 8693) read as the caller: the gateway's
//! `resources/read` and `prompts/get` to it carry the caller's exchanged token, as its tool
//! calls do (gateway_exchange.rs), while listing stays the gateway's own request with its
//! service credential; a refused exchange reads nothing.

use crate::gateway_exchange::{Rig, Seen};
use crate::http_client::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A modern request of `method` through the gateway with `token`; its result.
fn send(gw: &HttpServer, token: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let mut h = modern_headers(method, name);
    h.push(("authorization", &bearer));
    let r = gw.post(&h, &modern_request(9, method, params));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// The `Authorization` of every request of `method` the upstream was sent, with the
/// `Mcp-Name` it named.
fn auths_of(seen: &Seen, method: &str) -> Vec<(Option<String>, Option<String>)> {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|(m, _, _)| m == method)
        .map(|(_, n, a)| (n.clone(), a.clone()))
        .collect()
}

#[test]
fn resources_and_prompts_are_read_as_the_caller_too() {
    let rig = Rig::start(&["--fixtures", "conformance"], "", &[]);
    let (seen, endpoint, gw) = (&rig.seen, &rig.endpoint, &rig.gw);
    let token = |sub: &str| rig.token(sub, json!({}));
    let (alice, mallory) = (token("alice"), token("mallory"));

    // The listing is the gateway's own (lazy: it lists the upstream's catalog on demand).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = send(gw, &alice, "resources/list", None, json!({}));
        if listed.to_string().contains("test://static-text") {
            break;
        }
        assert!(Instant::now() < deadline, "no upstream resource: {listed}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let read = send(
        gw,
        &alice,
        "resources/read",
        Some("test://static-text"),
        json!({"uri": "test://static-text"}),
    );
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    let templated = send(
        gw,
        &alice,
        "resources/read",
        Some("test://template/7/data"),
        json!({"uri": "test://template/7/data"}),
    );
    assert!(templated["result"]["contents"].is_array(), "{templated}");
    let got = send(
        gw,
        &alice,
        "prompts/get",
        Some("up__test_simple_prompt"),
        json!({"name": "up__test_simple_prompt"}),
    );
    assert!(got["result"]["messages"].is_array(), "{got}");
    // One exchange for alice, whose token went with each read and get, and nothing else.
    assert_eq!(endpoint.hits().len(), 1, "{:?}", endpoint.hits());
    let alices = Some("Bearer xchg-alice-0".to_owned());
    let named = |n: &str| (Some(n.to_owned()), alices.clone());
    // The gateway's own reads (the upstream's skill files, fetched when it connects) carry
    // its service credential; alice's carry hers.
    let (hers, own): (Vec<_>, Vec<_>) = auths_of(seen, "resources/read")
        .into_iter()
        .partition(|(n, _)| n.as_deref().is_some_and(|n| n.starts_with("test://")));
    assert_eq!(
        hers,
        [named("test://static-text"), named("test://template/7/data")]
    );
    assert!(
        own.iter()
            .all(|(_, a)| a.as_deref() == Some("Bearer svc-token")),
        "{own:?}"
    );
    assert_eq!(auths_of(seen, "prompts/get"), [named("test_simple_prompt")]);
    for method in ["resources/list", "prompts/list"] {
        let auths = auths_of(seen, method);
        assert!(!auths.is_empty(), "{method} never sent");
        assert!(
            auths
                .iter()
                .all(|(_, a)| a.as_deref() == Some("Bearer svc-token")),
            "{method}: {auths:?}"
        );
    }

    // A refused exchange: an error naming why, and nothing read upstream.
    let refused = send(
        gw,
        &mallory,
        "resources/read",
        Some("test://static-text"),
        json!({"uri": "test://static-text"}),
    );
    let text = refused.to_string();
    assert!(
        text.contains("could not be exchanged") && text.contains("invalid_grant"),
        "{refused}"
    );
    assert!(!text.contains(mallory.as_str()), "{refused}");
    let reads = auths_of(seen, "resources/read");
    assert!(
        !reads
            .iter()
            .any(|(_, a)| a.as_deref().is_none_or(|a| a.contains("mallory")))
    );
    assert_eq!(reads.iter().filter(|(_, a)| a == &alices).count(), 2);
}
