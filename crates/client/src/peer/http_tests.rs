use super::*;

fn reply(status: u16, text: &str, www: &[&str]) -> Reply {
    Reply {
        status,
        session_id: None,
        answer: None,
        text: text.to_owned(),
        retry: None,
        www_authenticate: www.iter().map(|s| (*s).to_owned()).collect(),
        dpop_nonce: None,
        sse: false,
        last_event_id: None,
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

fn stream_end(last: Option<&str>, retry_ms: Option<u64>) -> Reply {
    Reply {
        last_event_id: last.map(str::to_owned),
        retry: retry_ms.map(Duration::from_millis),
        sse: true,
        ..reply(200, "", &[])
    }
}

#[test]
fn the_get_stream_resumes_from_its_session_s_last_event() {
    let header = |v: &str| vec![("Last-Event-ID".to_owned(), v.to_owned())];
    let mut r = Resumption::default();
    assert_eq!(
        r.headers(Some("s1")),
        vec![],
        "a first stream names no event"
    );
    r.saw(&stream_end(Some("7"), None));
    assert_eq!(r.headers(Some("s1")), header("7"));
    // A stream that set no id keeps the one before it.
    r.saw(&stream_end(None, None));
    assert_eq!(r.headers(Some("s1")), header("7"));
    r.saw(&stream_end(Some("9"), None));
    assert_eq!(r.headers(Some("s1")), header("9"));
    // A renewed session starts afresh.
    assert_eq!(r.headers(Some("s2")), vec![]);
    assert!(!r.opened);
}

#[test]
fn the_get_stream_waits_for_retry_within_bounds() {
    let ms = Duration::from_millis;
    for (retry, carried, want) in [
        (Some(2000), true, ms(2000)),
        (None, true, MIN_RETRY),
        (Some(0), true, MIN_RETRY),
        (Some(3_600_000), true, MAX_RETRY),
        // A stream that carried nothing waits out the backoff (its first step is 250 ms).
        (None, false, ms(250)),
        (Some(10), false, ms(250)),
        (Some(2000), false, ms(2000)),
    ] {
        let mut r = Resumption::default();
        r.saw(&stream_end(None, retry));
        let mut backoff = Backoff::default();
        assert_eq!(r.wait(carried, &mut backoff), want, "{retry:?} {carried}");
    }
    // Empty streams back off further each time; one that carried messages starts over.
    let r = Resumption::default();
    let mut backoff = Backoff::default();
    assert_eq!(r.wait(false, &mut backoff), ms(250));
    assert_eq!(r.wait(false, &mut backoff), ms(500));
    assert_eq!(r.wait(true, &mut backoff), MIN_RETRY);
    assert_eq!(r.wait(false, &mut backoff), ms(250));
}
