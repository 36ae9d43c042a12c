//! JSON text as a value, refusing a key written twice in one object (`serde_json::Value`
//! keeps the last, so a reader of the file would see one `command` and the server run
//! another; YAML and TOML refuse it too).
//!
//! serde_json parses (its syntax errors, its nesting limit); a [`Visitor`] of our own builds
//! the value and stops at the first repeated key, which is placed where that second key
//! begins.

use crate::error::Location;
use crate::locate;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// Why a text is not a JSON value with unique keys, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Where it is, when known.
    pub location: Option<Location>,
    /// What is wrong (serde_json's words for a syntax error, with their place).
    pub message: String,
}

/// Parses `text`, one JSON value with no key twice in any object.
///
/// # Errors
///
/// [`JsonError`] for text that is not JSON, or an object that holds a key twice.
pub fn to_value(text: &str) -> Result<Value, JsonError> {
    let twice = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Strict { twice: &twice }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| match twice.into_inner() {
        Some(key) => JsonError {
            location: key_start(text, e.line(), e.column()),
            message: format!("the key `{key}` appears twice"),
        },
        None => JsonError {
            location: error_place(text, e.line(), e.column()),
            message: e.to_string(),
        },
    })
}

/// Where serde_json's `line` and `column` of a syntax error are, in characters: its column
/// counts bytes (a line with `é` in it would be placed past its end) and is 0 when the
/// error is the newline that ended the line before (a control character in a string).
fn error_place(text: &str, line: usize, column: usize) -> Option<Location> {
    let line_start = match line {
        0 => return None,
        1 => 0,
        n => text.match_indices('\n').nth(n - 2)?.0 + 1,
    };
    let offset = match column.checked_sub(1) {
        Some(c) => line_start + c,
        None => line_start.saturating_sub(1),
    };
    Some(locate::location_of(text, offset))
}

/// Where the key string that ends at serde_json's `line` and `column` (1-based; the column
/// counts bytes and names the key's closing quote) begins.
fn key_start(text: &str, line: usize, column: usize) -> Option<Location> {
    let line_start = match line {
        0 => return None,
        1 => 0,
        n => text.match_indices('\n').nth(n - 2)?.0 + 1,
    };
    let close = line_start + column.checked_sub(1)?;
    let bytes = text.as_bytes();
    if bytes.get(close) != Some(&b'"') {
        return None;
    }
    // The opening quote: the nearest `"` before it that no odd run of backslashes escapes
    // (inside a JSON string every `"` is escaped so).
    let open = (0..close).rev().find(|&i| {
        bytes[i] == b'"' && bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 0
    })?;
    Some(locate::location_of(text, open))
}

/// Builds a [`Value`] as serde_json's own would, but notes the first key an object repeats
/// (in `twice`) and stops there.
#[derive(Clone, Copy)]
struct Strict<'a> {
    twice: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = items.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = members.next_key::<String>()? {
            if out.contains_key(&key) {
                let message = format!("the key `{key}` appears twice");
                *self.twice.borrow_mut() = Some(key);
                return Err(de::Error::custom(message));
            }
            let value = members.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_read_as_serde_json_reads_them() {
        let text = r#"{"a": [1, -2, 3.5, "x", true, null, {"b": {}}], "c": "\u00e9"}"#;
        assert_eq!(
            to_value(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert_eq!(to_value("[]").unwrap(), json!([]));
    }

    #[test]
    fn a_key_twice_is_placed_at_its_second_start() {
        table! {
            |text: &str, key: &str, line: usize, column: usize| {
                let e = to_value(text).unwrap_err();
                assert_eq!(e.message, format!("the key `{key}` appears twice"), "{text}");
                assert_eq!(e.location, Some(Location { line, column }), "{text}");
            };
            (r#"{"a": 1, "a": 2}"#, "a", 1, 10);
            ("{\n  \"tools\": [{\"name\": \"x\",\n    \"command\": [\"true\"],\n    \"command\": [\"rm\"]}]\n}", "command", 4, 5);
            (r#"{"a": {"b": 1, "c": 2, "b": 3}}"#, "b", 1, 24);
            (r#"{"q\"\\": 1, "q\"\\": 2}"#, "q\"\\", 1, 14);
            (r#"{"é": 1, "é": 2}"#, "é", 1, 10);
        }
    }

    #[test]
    fn syntax_errors_keep_serde_jsons_place() {
        let e = to_value("{\n  \"a\": }").unwrap_err();
        assert_eq!(e.location, Some(Location { line: 2, column: 8 }));
        assert!(e.message.starts_with("expected value"), "{}", e.message);
        assert!(to_value("[1] 2").is_err());
        assert!(to_value(&"[".repeat(200)).is_err());
    }

    #[test]
    fn syntax_errors_are_placed_in_characters_on_a_line_of_the_text() {
        table! {
            |text: &str, line: usize, column: usize| {
                let e = to_value(text).unwrap_err();
                assert_eq!(e.location, Some(Location { line, column }), "{text:?}: {}", e.message);
            };
            // A newline inside a string: serde_json says column 0 of the next line.
            ("{\"a\": \"x\ny\"}", 1, 9);
            // Its columns count bytes; `é` is one character.
            ("{\"é\": }", 1, 7);
            ("", 1, 1);
        }
    }
}
