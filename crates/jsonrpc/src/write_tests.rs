//! Tests for the writers: exact bytes, failure atomicity, and round trips
//! through [`parse`](crate::parse).

use super::*;
use crate::{Limits, Message, Parsed, parse};
use serde_json::json;
use std::collections::BTreeMap;

fn line(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut buf = Vec::new();
    f(&mut buf);
    String::from_utf8(buf).unwrap()
}

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

#[test]
fn exact_output() {
    let n = RequestId::Number(7);
    let s = RequestId::from("a\"b");
    table! { |got: String, want: &str| assert_eq!(got, want);
        (line(|b| write_result(b, &n, &json!({"x": 1})).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"x\":1}}\n");
        (line(|b| write_result(b, &s, &()).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":null}\n");
        (line(|b| write_raw_result(b, &n, &raw("{\"tools\":[]}"))), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"tools\":[]}}\n");
        (line(|b| write_raw_result(b, &n, &raw("{\n  \"a\": \"x\\ny\"\r\n}"))), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{   \"a\": \"x\\ny\"\r }}\n");
        (line(|b| write_error(b, Some(&n), &ErrorObject::method_not_found("x"))), "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"Method not found: x\"}}\n");
        (line(|b| write_error(b, None, &ErrorObject::parse_error("bad"))), "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"bad\"}}\n");
        (line(|b| write_error(b, None, &ErrorObject::internal("i").with_data(json!([1, "two"])))), "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"i\",\"data\":[1,\"two\"]}}\n");
        (line(|b| write_error(b, None, &ErrorObject::internal("line\nbreak"))), "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"line\\nbreak\"}}\n");
        (line(|b| write_error_response(b, &ErrorResponse::new(Some(s.clone()), ErrorObject::new(-1, "m")))), "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"error\":{\"code\":-1,\"message\":\"m\"}}\n");
        (line(|b| write_notification(b, "notifications/progress", &json!({"progress": 1})).unwrap()), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n");
        (line(|b| write_notification(b, "n", &None::<Vec<u8>>).unwrap()), "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
        (line(|b| write_notification(b, "n", &()).unwrap()), "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
        (line(|b| write_notification(b, "n", &Some([1, 2])).unwrap()), "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[1,2]}\n");
        (line(|b| write_notification_no_params(b, "notifications/initialized")), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        (line(|b| write_request(b, &n, "tools/call", &json!({"name": "t"})).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n");
        (line(|b| write_request(b, &n, "ping", &None::<()>).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
        (line(|b| write_request_no_params(b, &s, "ping")), "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"method\":\"ping\"}\n");
        (line(|b| { b.extend_from_slice(b"x\n"); write_request_no_params(b, &n, "p") }), "x\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"p\"}\n");
    }
}

#[test]
fn embedded_raw_values_lose_their_newlines() {
    let pretty = raw("{\n\"k\": [1,\n2]\n}");
    table! { |got: String, want: &str| assert_eq!(got, want);
        (line(|b| write_result(b, &RequestId::Number(1), &pretty).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{ \"k\": [1, 2] }}\n");
        (line(|b| write_notification(b, "n", &pretty).unwrap()), "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{ \"k\": [1, 2] }}\n");
        (line(|b| write_request(b, &RequestId::Number(2), "m", &[&pretty]).unwrap()), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\",\"params\":[{ \"k\": [1, 2] }]}\n");
    }
}

#[test]
fn a_failed_serialization_appends_nothing() {
    let bad: BTreeMap<Vec<u8>, u8> = BTreeMap::from([(vec![1], 1)]);
    let id = RequestId::Number(1);
    let mut buf = b"kept\n".to_vec();
    let errors = [
        write_result(&mut buf, &id, &bad).unwrap_err(),
        write_notification(&mut buf, "n", &bad).unwrap_err(),
        write_request(&mut buf, &id, "tools/call", &bad).unwrap_err(),
    ];
    assert_eq!(buf, b"kept\n");
    let parts: Vec<String> = errors
        .iter()
        .map(|e| match e {
            Error::Serialize { part, .. } => part.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        parts,
        [
            "result for id 1",
            "params of notification \"n\"",
            "params of request \"tools/call\""
        ]
    );
}

#[test]
fn json_strings_match_serde_json() {
    let mut all_ascii = String::new();
    for c in 0u8..=0x7f {
        all_ascii.push(char::from(c));
    }
    let cases = [
        "",
        "plain",
        "quote\" backslash\\ slash/",
        "\u{0}\u{1f}\u{7f}",
        "é ü 日本 🦀",
        "\u{2028}\u{2029}",
        &all_ascii,
    ];
    for s in cases {
        let mut buf = Vec::new();
        write_json_str(&mut buf, s);
        let back: String = serde_json::from_slice(&buf).unwrap();
        assert_eq!(back, s);
        assert!(!buf.contains(&b'\n'));
    }
}

#[test]
fn written_lines_parse_back() {
    let limits = Limits::default();
    let ids = [
        RequestId::Number(0),
        RequestId::Number(i64::MIN),
        RequestId::from("x\ny\"z\u{1}"),
    ];
    for id in &ids {
        let mut buf = Vec::new();
        write_request(
            &mut buf,
            id,
            "tools/call",
            &json!({"name": "echo", "arguments": {"text": "a\nb"}}),
        )
        .unwrap();
        write_request_no_params(&mut buf, id, "ping");
        write_notification(
            &mut buf,
            "notifications/cancelled",
            &json!({"requestId": id}),
        )
        .unwrap();
        write_notification_no_params(&mut buf, "notifications/initialized");
        write_result(
            &mut buf,
            id,
            &json!({"content": [{"type": "text", "text": "ok"}]}),
        )
        .unwrap();
        write_raw_result(&mut buf, id, &raw("{\n\"tools\": []\n}"));
        write_error(
            &mut buf,
            Some(id),
            &ErrorObject::invalid_params("bad").with_data(json!({"at": "/x"})),
        );
        write_error(&mut buf, None, &ErrorObject::parse_error("p"));

        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.strip_suffix('\n').unwrap().split('\n').collect();
        assert_eq!(lines.len(), 8, "one line per message: {text}");
        let got: Vec<Message> = lines
            .iter()
            .map(|l| match parse(l.as_bytes(), &limits) {
                Parsed::Single(m) => m,
                other => panic!("{l}: {other:?}"),
            })
            .collect();
        match &got[..] {
            [
                Message::Request(call),
                Message::Request(ping),
                Message::Notification(cancel),
                Message::Notification(init),
                Message::Response(ok),
                Message::Response(cached),
                Message::Response(failed),
                Message::ErrorWithoutId(orphan),
            ] => {
                assert_eq!((&call.id, call.method.as_str()), (id, "tools/call"));
                let params: serde_json::Value =
                    serde_json::from_str(call.params.as_ref().unwrap().get()).unwrap();
                assert_eq!(
                    params,
                    json!({"name": "echo", "arguments": {"text": "a\nb"}})
                );
                assert_eq!(
                    (&ping.id, ping.method.as_str(), ping.params.is_none()),
                    (id, "ping", true)
                );
                let cancel_params: serde_json::Value =
                    serde_json::from_str(cancel.params.as_ref().unwrap().get()).unwrap();
                assert_eq!(cancel_params, json!({"requestId": id}));
                assert_eq!(
                    (init.method.as_str(), init.params.is_none()),
                    ("notifications/initialized", true)
                );
                assert_eq!(&ok.id, id);
                let result: serde_json::Value =
                    serde_json::from_str(ok.outcome.as_ref().unwrap().get()).unwrap();
                assert_eq!(result, json!({"content": [{"type": "text", "text": "ok"}]}));
                assert_eq!(cached.outcome.as_ref().unwrap().get(), r#"{ "tools": [] }"#);
                assert_eq!(
                    failed.outcome.as_ref().unwrap_err(),
                    &ErrorObject::invalid_params("bad").with_data(json!({"at": "/x"}))
                );
                assert_eq!(orphan, &ErrorObject::parse_error("p"));
            }
            other => panic!("unexpected messages {other:?}"),
        }
    }
}
