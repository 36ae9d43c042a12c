//! [`RequestId`]: the `id` of a request and of its response.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Unexpected, Visitor};
use serde::ser::{Serialize, Serializer};

use crate::write::write_json_str;

/// The `id` of a JSON-RPC request: a JSON integer or a JSON string.
///
/// MCP's schema allows exactly `["string", "integer"]`, so `null`, floats
/// (including `1.0` and `1e3`), booleans, arrays and objects are rejected
/// when deserializing, as are integers outside the `i64` range. Serializing
/// writes the bare integer or string.
///
/// `Display` writes the JSON form (`7` or `"abc"`, with JSON escapes), so
/// the integer `7` and the string `"7"` stay distinguishable in logs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id, such as `7`.
    Number(i64),
    /// A string id, such as `"req-7"`.
    String(String),
}

impl RequestId {
    /// Appends the JSON form of the id to `buf`.
    pub fn write_json(&self, buf: &mut Vec<u8>) {
        match self {
            RequestId::Number(n) => write_i64(buf, *n),
            RequestId::String(s) => write_json_str(buf, s),
        }
    }

    /// The id's string form, as telemetry's `jsonrpc.request.id` records it: the integer's
    /// digits, or the string itself (no JSON quotes or escapes).
    pub fn text(&self) -> String {
        match self {
            RequestId::Number(n) => n.to_string(),
            RequestId::String(s) => s.clone(),
        }
    }

    /// The id for a JSON integer, or `None` if it does not fit in an `i64`.
    pub(crate) fn from_u64(v: u64) -> Option<RequestId> {
        i64::try_from(v).ok().map(RequestId::Number)
    }
}

/// Appends the decimal form of `n` to `buf` without going through `fmt`.
pub(crate) fn write_i64(buf: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut pos = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        pos -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        digits[pos] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        buf.push(b'-');
    }
    buf.extend_from_slice(&digits[pos..]);
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => {
                let mut buf = Vec::with_capacity(s.len() + 2);
                write_json_str(&mut buf, s);
                f.write_str(&String::from_utf8_lossy(&buf))
            }
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictIdVisitor)
    }
}

struct StrictIdVisitor;

impl Visitor<'_> for StrictIdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC id (an integer or a string)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
        RequestId::from_u64(v).ok_or_else(|| E::invalid_value(Unexpected::Unsigned(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
        Ok(RequestId::String(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserialize_accepts_integers_and_strings_only() {
        let cases: &[(&str, Option<RequestId>)] = &[
            ("0", Some(RequestId::Number(0))),
            ("42", Some(RequestId::Number(42))),
            ("-7", Some(RequestId::Number(-7))),
            ("9223372036854775807", Some(RequestId::Number(i64::MAX))),
            ("-9223372036854775808", Some(RequestId::Number(i64::MIN))),
            ("9223372036854775808", None),
            (r#""abc""#, Some(RequestId::String("abc".into()))),
            (r#""""#, Some(RequestId::String(String::new()))),
            (r#""a\"b\u00e9""#, Some(RequestId::String("a\"bé".into()))),
            ("null", None),
            ("1.0", None),
            ("1e3", None),
            ("1.5", None),
            ("true", None),
            ("false", None),
            ("[1]", None),
            (r#"{"a":1}"#, None),
        ];
        for (input, want) in cases {
            let got = serde_json::from_str::<RequestId>(input).ok();
            assert_eq!(&got, want, "input {input}");
        }
    }

    #[test]
    fn serialize_and_display_use_the_json_form() {
        let cases: &[(RequestId, &str)] = &[
            (RequestId::Number(0), "0"),
            (RequestId::Number(-12), "-12"),
            (RequestId::Number(i64::MIN), "-9223372036854775808"),
            (RequestId::Number(i64::MAX), "9223372036854775807"),
            (RequestId::String("7".into()), r#""7""#),
            (RequestId::String("a\"b\n".into()), r#""a\"b\n""#),
        ];
        for (id, want) in cases {
            assert_eq!(serde_json::to_string(id).unwrap(), *want, "serde {id:?}");
            assert_eq!(id.to_string(), *want, "display {id:?}");
            let mut buf = Vec::new();
            id.write_json(&mut buf);
            assert_eq!(buf, want.as_bytes(), "write_json {id:?}");
        }
    }

    #[test]
    fn write_i64_matches_std_formatting() {
        let check = |n: i64| {
            let mut buf = Vec::new();
            write_i64(&mut buf, n);
            assert_eq!(buf, n.to_string().as_bytes());
        };
        table! { check; (0); (1); (9); (10); (99); (100); (-1); (-10); (123_456_789); (i64::MIN); (i64::MAX) }
    }

    #[test]
    fn conversions() {
        assert_eq!(RequestId::from(3), RequestId::Number(3));
        assert_eq!(RequestId::from("x"), RequestId::String("x".into()));
        assert_eq!(
            RequestId::from(String::from("y")),
            RequestId::String("y".into())
        );
    }
}
