//! JSON-RPC envelopes, both ways, with toolwright-jsonrpc: the lines this client sends
//! (requests, notifications, and its answers to server requests), and the messages it
//! reads, under the same envelope rules the server applies.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolwright_jsonrpc::{
    ErrorObject, Limits, Message, Parsed, RequestId, parse, write_error, write_notification,
    write_request, write_result,
};

/// A request as one `\n`-terminated line.
pub(crate) fn request(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    let mut line = Vec::new();
    write_request(&mut line, id, method, params).expect("a Value serializes");
    line
}

/// `_meta` members serialized once and written as they are: those every modern request
/// of a connection carries (protocol version, client capabilities and info), which would
/// otherwise be serialized again for each request.
pub(crate) struct FixedMeta(Vec<(String, Box<RawValue>)>);

impl FixedMeta {
    pub(crate) fn new(members: Map<String, Value>) -> FixedMeta {
        FixedMeta(
            members
                .into_iter()
                .map(|(k, v)| {
                    let raw = serde_json::value::to_raw_value(&v).expect("a Value serializes");
                    (k, raw)
                })
                .collect(),
        )
    }

    fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }
}

/// A request as one line, its params with the members of `fixed` and then of `meta` merged
/// into their `_meta` (replacing those of the same name; `fixed` and `meta` name different
/// members), written from borrowed parts: nothing is copied.
pub(crate) fn request_with_meta(
    id: &RequestId,
    method: &str,
    params: &Value,
    fixed: Option<&FixedMeta>,
    meta: &Map<String, Value>,
) -> Vec<u8> {
    if fixed.is_none_or(|f| f.0.is_empty()) && meta.is_empty() {
        return request(id, method, params);
    }
    // A modern request's fixed members alone are about 300 bytes: room enough at once.
    let mut line = Vec::with_capacity(512);
    let params = WithMeta {
        params: params.as_object(),
        fixed,
        meta,
    };
    write_request(&mut line, id, method, &params).expect("a Value serializes");
    line
}

/// Params with more `_meta` members, serialized as one object.
struct WithMeta<'a> {
    /// `None` when the params are not an object: they are then only the `_meta`.
    params: Option<&'a Map<String, Value>>,
    fixed: Option<&'a FixedMeta>,
    meta: &'a Map<String, Value>,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let mut own = None;
        for (k, v) in self.params.into_iter().flatten() {
            if k == "_meta" {
                own = v.as_object();
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        let merged = MergedMeta {
            own,
            fixed: self.fixed,
            more: self.meta,
        };
        map.serialize_entry("_meta", &merged)?;
        map.end()
    }
}

/// The params' own `_meta` members that the others do not replace, then `fixed`'s, then
/// `more`'s.
struct MergedMeta<'a> {
    own: Option<&'a Map<String, Value>>,
    fixed: Option<&'a FixedMeta>,
    more: &'a Map<String, Value>,
}

impl Serialize for MergedMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.own.into_iter().flatten() {
            let replaced =
                self.more.contains_key(k) || self.fixed.is_some_and(|f| f.contains_key(k));
            if !replaced {
                map.serialize_entry(k, v)?;
            }
        }
        for (k, v) in self.fixed.iter().flat_map(|f| f.0.iter()) {
            map.serialize_entry(k, v)?;
        }
        for (k, v) in self.more {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A notification as one `\n`-terminated line.
pub(crate) fn notification(method: &str, params: &Value) -> Vec<u8> {
    let mut line = Vec::new();
    write_notification(&mut line, method, params).expect("a Value serializes");
    line
}

/// The answer to the server's request `id` (a result or an error), as one line.
pub(crate) fn answer(id: &RequestId, outcome: &Result<Value, ErrorObject>) -> Vec<u8> {
    let mut line = Vec::new();
    match outcome {
        Ok(result) => write_result(&mut line, id, result).expect("a Value serializes"),
        Err(error) => write_error(&mut line, Some(id), error),
    }
    line
}

/// The messages in one line, body or event: one, or each of a batch. Input that is not
/// JSON-RPC at all yields none (a client cannot act on it).
pub(crate) fn messages(bytes: &[u8]) -> Vec<Message> {
    match parse(bytes, &Limits::default()) {
        Parsed::Single(m) => vec![m],
        Parsed::Batch(ms) => ms,
        Parsed::Invalid(_) => Vec::new(),
    }
}

/// The largest line read from a stdio server.
pub(crate) fn max_line() -> usize {
    Limits::default().max_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines() {
        let id = RequestId::from(3);
        assert_eq!(
            request(&id, "tools/list", &json!({"cursor": "c"})),
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"c\"}}\n"
        );
        assert_eq!(
            notification("notifications/initialized", &json!({})),
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}\n"
        );
        assert_eq!(
            answer(&RequestId::from("srv"), &Err(ErrorObject::new(-32601, "no"))),
            b"{\"jsonrpc\":\"2.0\",\"id\":\"srv\",\"error\":{\"code\":-32601,\"message\":\"no\"}}\n"
        );
        assert_eq!(
            answer(&RequestId::from(4), &Ok(json!({"roots": []}))),
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"roots\":[]}}\n"
        );
    }

    #[test]
    fn reading() {
        let kinds = |text: &str| -> Vec<&'static str> {
            messages(text.as_bytes())
                .iter()
                .map(|m| match m {
                    Message::Request(_) => "request",
                    Message::Notification(_) => "notification",
                    Message::Response(_) => "response",
                    Message::ErrorWithoutId(_) => "error",
                    Message::Invalid { .. } => "invalid",
                })
                .collect()
        };
        assert_eq!(
            kinds(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            ["response"]
        );
        assert_eq!(
            kinds(
                r#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"s","method":"roots/list"}]"#
            ),
            ["notification", "request"]
        );
        assert_eq!(
            kinds(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m"}}"#),
            ["error"]
        );
        assert_eq!(kinds(r#"{"id":1,"result":{}}"#), ["invalid"]);
        assert_eq!(kinds("not json"), [] as [&str; 0]);
        assert_eq!(kinds("[]"), [] as [&str; 0]);
    }

    #[test]
    fn fixed_and_own_meta_members_merge_into_one_meta() {
        let fixed = FixedMeta::new(
            json!({"v": "2026-07-28", "info": {"name": "gw", "note": "a \"quoted\" word"}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let params =
            json!({"name": "add", "_meta": {"v": "old", "keep": 1}, "arguments": {"a": 1}});
        let meta = json!({"progressToken": "t-1"})
            .as_object()
            .cloned()
            .unwrap();
        let line = request_with_meta(
            &RequestId::from(7),
            "tools/call",
            &params,
            Some(&fixed),
            &meta,
        );
        let text = std::str::from_utf8(&line).unwrap();
        assert!(text.ends_with('\n'));
        assert_eq!(
            text.trim_end(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1},"_meta":{"keep":1,"v":"2026-07-28","info":{"name":"gw","note":"a \"quoted\" word"},"progressToken":"t-1"}}}"#
        );
        // Nothing to merge: the params as they are.
        let plain = request_with_meta(&RequestId::from(8), "ping", &json!({}), None, &Map::new());
        assert_eq!(plain, request(&RequestId::from(8), "ping", &json!({})));
    }
}
