//! The one canonical-JSON digest: a JSON value written with object members sorted by key
//! at every level and no whitespace ([`canonical_json`]), and the lowercase hex SHA-256 of
//! those bytes ([`sha256_hex`]).
//!
//! Two things depend on these exact bytes: the gateway's pins (`sha256:` + this digest of
//! a tool definition, kept in users' state files) and the argument digest sealed into a
//! modern `requestState` ([`crate::mrtr`]). Keys and strings are escaped as `serde_json`
//! writes them, numbers too; nothing here may change without invalidating both.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// `value` as canonical JSON: members sorted by key at every level, no whitespace, strings
/// and numbers as `serde_json` writes them. Equal values give equal text whatever the
/// order their members arrived in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_by_key(|(k, _)| *k);
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // A string value writes exactly as a key must (quoted, escaped).
                let _ = write!(out, "{}", Value::String(k.clone()));
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// The lowercase hex SHA-256 (64 characters) of the canonical JSON of `value`.
pub fn sha256_hex(value: &Value) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(canonical_json(value).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_sorted_at_every_level_without_whitespace() {
        let cases = [
            (json!(null), "null"),
            (json!([]), "[]"),
            (json!({}), "{}"),
            (
                json!({"b": 1, "a": [true, 1.5]}),
                r#"{"a":[true,1.5],"b":1}"#,
            ),
            (
                json!({"b": 1, "a": {"y": [1, {"k": "v", "c": null}], "x": "é\n"}}),
                r#"{"a":{"x":"é\n","y":[1,{"c":null,"k":"v"}]},"b":1}"#,
            ),
            (json!({"q\"": "\u{1}"}), r#"{"q\"":"\u0001"}"#),
        ];
        for (value, text) in cases {
            assert_eq!(canonical_json(&value), text, "{value}");
        }
    }

    #[test]
    fn the_digest_is_the_hex_sha256_of_the_canonical_text() {
        // Known values, so the bytes of stored pins and sealed states cannot drift.
        assert_eq!(
            sha256_hex(&json!({"name": "t"})),
            format!("{:x}", Sha256::digest(br#"{"name":"t"}"#))
        );
        assert_eq!(
            sha256_hex(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            sha256_hex(&json!({"b": 1, "a": 2})),
            sha256_hex(&json!({"a": 2, "b": 1}))
        );
    }
}
