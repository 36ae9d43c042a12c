//! Table tests for [`parse`](super::parse): one input per line, compared
//! through a compact one-line summary of the result (`req <id> <method>
//! <params>`, `note`, `ok`, `err`, `orphan`, `invalid <id> <code>`, `[…]`
//! for batches, `whole <id> <code>` for whole-input errors).

use super::*;
use std::time::{Duration, Instant};

fn id(id: Option<&RequestId>) -> String {
    id.map_or_else(|| "-".to_owned(), ToString::to_string)
}

fn raw(raw: Option<&RawValue>) -> &str {
    raw.map_or("-", RawValue::get)
}

fn message(m: &Message) -> String {
    match m {
        Message::Request(r) => format!("req {} {} {}", r.id, r.method, raw(r.params.as_deref())),
        Message::Notification(n) => format!("note {} {}", n.method, raw(n.params.as_deref())),
        Message::Response(Response { id, outcome: Ok(v) }) => format!("ok {id} {}", v.get()),
        Message::Response(Response {
            id,
            outcome: Err(e),
        }) => format!("err {id} {}", e.code),
        Message::ErrorWithoutId(e) => format!("orphan {}", e.code),
        Message::Invalid { id: i, error } => format!("invalid {} {}", id(i.as_ref()), error.code),
    }
}

fn summary(p: &Parsed) -> String {
    match p {
        Parsed::Single(m) => message(m),
        Parsed::Batch(items) => {
            let items: Vec<String> = items.iter().map(message).collect();
            format!("[{}]", items.join("; "))
        }
        Parsed::Invalid(e) => format!("whole {} {}", id(e.id.as_ref()), e.error.code),
    }
}

/// `parse_table! { limits; input => summary; ... }`, one case per line.
macro_rules! parse_table {
    ($limits:expr; $($input:expr => $want:expr;)*) => {{
        let limits: Limits = $limits;
        $(
            let input: &str = $input;
            assert_eq!(summary(&parse(input.as_bytes(), &limits)), $want, "input {input}");
        )*
    }};
}

#[test]
fn valid_messages() {
    parse_table! { Limits::default();
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# => "req 1 ping -";
        r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":[1]}}"# => r#"req "a" m {"x":[1]}"#;
        r#"{"jsonrpc":"2.0","id":-3,"method":"m","params":[1, 2]}"# => "req -3 m [1, 2]";
        r#"{"method":"m","params":{},"id":7,"jsonrpc":"2.0"}"# => "req 7 m {}";
        r#"  {"jsonrpc":"2.0","id":1,"method":"m"}  "# => "req 1 m -";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":{"a":[1]}}"# => "req 1 m -";
        r#"{"jsonrpc":"2.0","id":"\"q\"","method":"a\/b\u00e9"}"# => r#"req "\"q\"" a/bé -"#;
        r#"{"jsonr\u0070c":"2.0","\u0069d":1,"method":"m"}"# => "req 1 m -";
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"# => "note notifications/initialized -";
        r#"{"jsonrpc":"2.0","method":"n","params":[]}"# => "note n []";
        r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"# => r#"ok 1 {"ok":true}"#;
        r#"{"jsonrpc":"2.0","id":"r","result":null}"# => r#"ok "r" null"#;
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}"# => "err 2 -32601";
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m","data":{"a":1}}}"# => "err 2 -1";
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}"# => "orphan -32700";
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}"# => "orphan -32600";
    }
}

#[test]
fn invalid_ids_are_dropped() {
    parse_table! { Limits::default();
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"# => "invalid - -32600";
        // JSON Schema integers the envelope refuses: the error still goes back to them.
        r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1e2,"method":"m"}"# => "invalid 100 -32600";
        r#"{"jsonrpc":"2.0","id":-0,"method":"m"}"# => "invalid 0 -32600";
        r#"{"jsonrpc":"2.0","id":true,"method":"m"}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":false,"error":{"code":1,"message":"m"}}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"# => "invalid - -32600";
    }
}

#[test]
fn envelope_rules_keep_a_readable_id() {
    parse_table! { Limits::default();
        r#"{"id":1,"method":"m"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"1.0","id":1,"method":"m"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0 ","id":"x","method":"m"}"# => r#"invalid "x" -32600"#;
        r#"{"jsonrpc":2.0,"id":1,"method":"m"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":null,"id":1,"method":"m"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":{"v":"2.0"},"id":1,"method":"m"}"# => "invalid 1 -32600";
        r#"{"id":3,"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"# => "invalid 3 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":7}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":null}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":true}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","method":"m","params":1}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","result":{}}"# => "invalid - -32600";
        r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","code":2}}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0","id":1}"# => "invalid 1 -32600";
        r#"{"jsonrpc":"2.0"}"# => "invalid - -32600";
        r#"{}"# => "invalid - -32600";
    }
}

#[test]
fn whole_input_errors() {
    parse_table! { Limits::default();
        "" => "whole - -32700";
        "   " => "whole - -32700";
        "{" => "whole - -32700";
        r#"{"jsonrpc":"2.0","id":1,"method":"m""# => "whole 1 -32700";
        r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"# => "whole 1 -32700";
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}{}"# => "whole 1 -32700";
        r#"{"jsonrpc":"2.0","id":1,"method":"m",}"# => "whole 1 -32700";
        r#"{"jsonrpc":"2.0","method":"m""# => "whole - -32700";
        r#"{"jsonrpc":"2.0","id":7,"method":1e400}"# => "whole 7 -32700";
        r#"{'jsonrpc':'2.0'}"# => "whole - -32700";
        r#"[{"jsonrpc":"2.0","method":"m"},"# => "whole - -32700";
        "nul" => "whole - -32700";
        "1" => "whole - -32600";
        r#""text""# => "whole - -32600";
        "null" => "whole - -32600";
        "true" => "whole - -32600";
        "[]" => "whole - -32600";
        " [ ] " => "whole - -32600";
    }
}

#[test]
fn batches() {
    parse_table! { Limits::default();
        r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},1,{"id":2,"method":"c"},[],{"jsonrpc":"2.0","id":3,"result":5}]"# => "[req 1 a -; note b -; invalid - -32600; invalid 2 -32600; invalid - -32600; ok 3 5]";
        r#"[1,2]"# => "[invalid - -32600; invalid - -32600]";
        r#"[null,"x",[[1]],{}]"# => "[invalid - -32600; invalid - -32600; invalid - -32600; invalid - -32600]";
        r#"[{"jsonrpc":"2.0","id":null,"method":"m"}]"# => "[invalid - -32600]";
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"}"# => "whole - -32700";
    }
}

#[test]
fn size_and_depth_limits() {
    parse_table! { Limits { max_bytes: 64, max_depth: 3 };
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}"# => "req 1 m -";
        r#"{"jsonrpc":"2.0","id":1,"method":"mmmmmmmmmmmmmmmmmmmmmmmmmmmm"}"# => "req 1 mmmmmmmmmmmmmmmmmmmmmmmmmmmm -";
        r#"{"jsonrpc":"2.0","id":1,"method":"mmmmmmmmmmmmmmmmmmmmmmmmmmmmm"}"# => "whole 1 -32600";
        r#"{"jsonrpc":"2.0","method":"mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"}"# => "whole - -32600";
        r#"{"id":"d","method":"m","params":[[[1]]]}"# => r#"whole "d" -32600"#;
        r#"{"jsonrpc":"2.0","method":"m","params":[[1]]}"# => "note m [[1]]";
        r#"{"jsonrpc":"2.0","method":"m","params":[[[1]]]}"# => "whole - -32600";
        r#"{"jsonrpc":"2.0","method":"m","params":[["[[[["]]}"# => r#"note m [["[[[["]]"#;
        r#"{"jsonrpc":"2.0","method":"m","params":[["]]]]["]]}"# => r#"note m [["]]]]["]]"#;
        r#"{"jsonrpc":"2.0","method":"m","params":[["\"[["]]}"# => r#"note m [["\"[["]]"#;
        r#"{"jsonrpc":"2.0","method":"m","params":["\\",[[]]]}"# => "whole - -32600";
        "[[[[" => "whole - -32600";
    }
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}";
    assert_eq!(summary(&parse(input, &Limits::default())), "whole 1 -32700");
}

#[test]
fn whole_input_errors_carry_their_message_and_data() {
    let tiny = Limits {
        max_bytes: 4,
        max_depth: 2,
    };
    let check = |input: &[u8], message: &str, data: Option<serde_json::Value>| {
        let Parsed::Invalid(resp) = parse(input, &tiny) else {
            panic!("{input:?}")
        };
        assert_eq!(
            (resp.id, resp.error.message.as_str(), resp.error.data),
            (None, message, data)
        );
    };
    table! { check;
        (b"{\"a\":1}", "message too large", Some(json!({"size": 7, "limit": 4})));
        (b"[[[]]]", "message too large", Some(json!({"size": 6, "limit": 4})));
        (b"[[[", "message nested too deeply", Some(json!({"maxDepth": 2})));
        (b"[]", "empty batch", None);
        (b"7", "message must be a JSON object or array", None);
        (b"{", "Parse error: EOF while parsing an object at line 1 column 1", None);
        (b"\"\xff\"", "Parse error: invalid UTF-8 at byte 1", None);
    }
}

#[test]
fn a_million_levels_are_rejected_quickly() {
    let mut balanced = vec![b'['; 1_000_000];
    balanced.extend(std::iter::repeat_n(b']', 1_000_000));
    let unbalanced = vec![b'{'; 1_000_000];
    let started = Instant::now();
    assert_eq!(
        summary(&parse(&balanced, &Limits::default())),
        "whole - -32600"
    );
    assert_eq!(
        summary(&parse(&unbalanced, &Limits::default())),
        "whole - -32600"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn depth_right_at_the_limit_still_parses() {
    let nested = |levels: usize| {
        let inner = "[".repeat(levels) + &"]".repeat(levels);
        format!(r#"{{"jsonrpc":"2.0","method":"m","params":{inner}}}"#)
    };
    let deep = Limits {
        max_bytes: 1 << 20,
        max_depth: 1000,
    };
    let check = |limits: Limits, levels: usize, want: &str| {
        let got = summary(&parse(nested(levels).as_bytes(), &limits));
        assert_eq!(
            got.split(' ').next(),
            Some(want),
            "{levels} levels in {limits:?}"
        );
    };
    // `params` never reaches serde_json's recursive parser, so a larger
    // limit really allows deeper params.
    table! { check;
        (Limits::default(), 127, "note");
        (Limits::default(), 128, "whole");
        (deep, 999, "note");
        (deep, 1000, "whole");
    }
}

#[test]
fn error_data_parses_within_the_limit() {
    let limits = Limits::default();
    let nested = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
    let error = |levels: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":{}}}}}"#,
            nested(levels)
        )
    };
    let single = error(limits.max_depth - 2);
    let batch = format!("[{}]", error(limits.max_depth - 3));
    assert_eq!(summary(&parse(single.as_bytes(), &limits)), "err 1 1");
    assert_eq!(summary(&parse(batch.as_bytes(), &limits)), "[err 1 1]");
    let deep = Limits {
        max_bytes: 1 << 20,
        max_depth: 1000,
    };
    assert_eq!(
        summary(&parse(error(500).as_bytes(), &deep)),
        "invalid 1 -32600"
    );
}

#[test]
fn error_objects_are_read_whole() {
    let input = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad \"x\"","data":{"k":[1]},"z":0}}"#;
    let parsed = parse(input.as_bytes(), &Limits::default());
    let Parsed::Single(Message::Response(Response {
        outcome: Err(e), ..
    })) = parsed
    else {
        panic!("expected an error response: {parsed:?}")
    };
    assert_eq!(
        e,
        ErrorObject::invalid_params("bad \"x\"").with_data(json!({"k": [1]}))
    );
}

#[test]
fn message_id_accessor() {
    let check = |input: &str, want: Option<RequestId>| {
        let Parsed::Single(m) = parse(input.as_bytes(), &Limits::default()) else {
            panic!("{input}")
        };
        assert_eq!(m.id(), want.as_ref(), "input {input}");
    };
    table! { check;
        (r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, Some(RequestId::Number(1)));
        (r#"{"jsonrpc":"2.0","method":"m"}"#, None);
        (r#"{"jsonrpc":"2.0","id":"r","result":1}"#, Some(RequestId::from("r")));
        (r#"{"jsonrpc":"1.0","id":4,"method":"m"}"#, Some(RequestId::Number(4)));
        (r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#, None);
    }
}

#[derive(Debug, PartialEq, serde::Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    n: Option<i64>,
}

/// `parse_call` must agree with `parse`: a `Call` exactly when `parse` sees a request for
/// the method whose params read as `P`, and otherwise `parse`'s own answer.
#[test]
fn parse_call_agrees_with_parse() {
    let check = |input: &str, want_call: bool| {
        let limits = Limits {
            max_bytes: 200,
            max_depth: 8,
        };
        let general = parse(input.as_bytes(), &limits);
        match parse_call::<CallParams>(input.as_bytes(), &limits, "tools/call") {
            Incoming::Call(id, p) => {
                assert!(want_call, "read as a call: {input}");
                let Parsed::Single(Message::Request(r)) = &general else {
                    panic!("parse disagrees on {input}: {}", summary(&general))
                };
                assert_eq!((&r.id, r.method.as_str()), (&id, "tools/call"), "{input}");
                let again: CallParams =
                    serde_json::from_str(r.params.as_deref().expect("params").get()).unwrap();
                assert_eq!(again, p, "{input}");
            }
            Incoming::Other(other) => {
                assert!(!want_call, "not read as a call: {input}");
                assert_eq!(summary(&other), summary(&general), "{input}");
            }
        }
    };
    table! { check;
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","n":2}}"#, true);
        (r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a\"b"}}"#, true);
        (r#"{"params":{"name":"add"},"method":"tools/call","id":3,"jsonrpc":"2.0"}"#, true);
        (r#"{"jsonrpc":"2.0","id":1,"extra":[1,{}],"method":"tools/call","params":{"name":"a"}}"#, true);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a"}}"#, true);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["a", 4]}"#, true);
        (r#" {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","other":{}}} "#, true);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"params":{"name":"a"},"method":"ping"}"#, false);
        (r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n":1}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"params":{"n":1},"method":"tools/call"}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"add"}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"id":1,"method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":7,"params":{"name":"a"}}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":1}"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}"#, false);
        (r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]"#, false);
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n":[[[[[[[[1]]]]]]]]}}"#, false);
        (&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{}"}}}}"#, "a".repeat(200)), false);
        ("\"tools/call\"", false);
    }
    let bad_utf8 =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}";
    let Incoming::Other(other) =
        parse_call::<CallParams>(bad_utf8, &Limits::default(), "tools/call")
    else {
        panic!("invalid UTF-8 read as a call")
    };
    assert_eq!(
        summary(&other),
        summary(&parse(bad_utf8, &Limits::default()))
    );
}
