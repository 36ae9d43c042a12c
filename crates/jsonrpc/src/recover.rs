//! Reading the `id` of a message that cannot be parsed as a whole.
//!
//! A message refused before or during parsing (too large, nested too deeply, a number the
//! parser cannot hold, a syntax error late in the text) still deserves an answer its sender
//! can match to the request. [`readable_id`] walks the members of the top-level object
//! without building anything, skipping values with a bracket counter rather than recursion,
//! and returns the `id` if it has seen a whole one: a string, or a number whose value is an
//! integer that fits in an `i64` (`7`, `-0`, `7.0` and `7e0` all read as 7, as JSON Schema
//! counts them integers). It gives up (returning what it found so far) at the first byte
//! that is not JSON, and returns `None` when `id` appears twice, since it cannot know which
//! one the sender meant.

use crate::RequestId;

/// The top-level `id` of `bytes`, if it can be read; see the module documentation.
pub fn readable_id(bytes: &[u8]) -> Option<RequestId> {
    let mut s = Scanner { bytes, at: 0 };
    s.ws();
    if !s.eat(b'{') {
        return None;
    }
    let mut found: Option<RequestId> = None;
    let mut seen = false;
    loop {
        s.ws();
        if s.peek() == Some(b'}') {
            return found;
        }
        let Some(key) = s.string() else {
            return found;
        };
        s.ws();
        if !s.eat(b':') {
            return found;
        }
        s.ws();
        if is_id_key(key) {
            if seen {
                return None;
            }
            seen = true;
            // An `id` that is not a usable id leaves nothing to answer to.
            found = Some(s.id_value()?);
        } else if !s.skip_value() {
            return found;
        }
        s.ws();
        if !s.eat(b',') {
            return found;
        }
    }
}

/// True if the raw (still escaped) key text means `id`.
fn is_id_key(raw: &[u8]) -> bool {
    if raw == b"id" {
        return true;
    }
    raw.contains(&b'\\') && raw.len() <= 32 && unescape(raw).is_some_and(|k| k == "id")
}

/// The string whose raw (still escaped) text between the quotes is `raw`.
fn unescape(raw: &[u8]) -> Option<String> {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok()
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A whole string: the raw text between the quotes, escapes left as they are.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                _ => {}
            }
        }
        None
    }

    /// Skips one value of any depth; false if the text ends or breaks first.
    fn skip_value(&mut self) -> bool {
        match self.peek() {
            Some(b'"') => self.string().is_some(),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(b) = self.peek() {
                    match b {
                        b'"' => {
                            if self.string().is_none() {
                                return false;
                            }
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
                false
            }
            Some(_) => {
                let start = self.at;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                // A scalar cut off by the end of the text is not a whole value.
                self.at > start && self.at < self.bytes.len()
            }
            None => false,
        }
    }

    /// The `id` value, if it is a usable id followed by a delimiter.
    fn id_value(&mut self) -> Option<RequestId> {
        if self.peek() == Some(b'"') {
            return unescape(self.string()?).map(RequestId::String);
        }
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
        ) {
            self.at += 1;
        }
        let next = self.bytes.get(self.at).copied()?;
        if !matches!(next, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
            return None;
        }
        integer_value(&self.bytes[start..self.at]).map(RequestId::Number)
    }
}

/// The value of a JSON number when it is an integer that fits in an `i64`, computed
/// exactly from its digits (no floating point): `-0` is 0, `12.50e1` is 125, `1.5` is not
/// an integer.
pub(crate) fn integer_value(text: &[u8]) -> Option<i64> {
    let (negative, rest) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, exponent) = match rest.iter().position(|&b| b == b'e' || b == b'E') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|&b| b == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &[][..]),
    };
    // The JSON number grammar: no leading zeros, digits on both sides of the point.
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if !digits(int_part) || (int_part.len() > 1 && int_part[0] == b'0') {
        return None;
    }
    if mantissa.len() != int_part.len() && !digits(frac_part) {
        return None;
    }
    let exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let body = e
                .strip_prefix(b"+")
                .or_else(|| e.strip_prefix(b"-"))
                .unwrap_or(e);
            if !digits(body) || body.len() > 6 {
                return None;
            }
            let magnitude: i64 = std::str::from_utf8(body).ok()?.parse().ok()?;
            if e.first() == Some(&b'-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    // All the digits, with the point `point` places from the left.
    let all: Vec<u8> = int_part.iter().chain(frac_part).copied().collect();
    let point = int_part.len() as i64 + exp;
    let significant = all.iter().position(|&d| d != b'0');
    let Some(first) = significant else {
        return Some(0);
    };
    let mut value: i64 = 0;
    for (i, &d) in all.iter().enumerate().skip(first) {
        let d = i64::from(d - b'0');
        if i as i64 >= point {
            if d != 0 {
                return None;
            }
            continue;
        }
        value = value.checked_mul(10)?.checked_sub(d)?;
    }
    // Trailing zeros the exponent adds past the written digits.
    for _ in all.len() as i64..point.max(all.len() as i64) {
        value = value.checked_mul(10)?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Option<RequestId> {
        readable_id(text.as_bytes())
    }

    #[test]
    fn integers_written_any_way() {
        let cases: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("-0", Some(0)),
            ("7", Some(7)),
            ("-7", Some(-7)),
            ("7.0", Some(7)),
            ("7.000", Some(7)),
            ("7e0", Some(7)),
            ("7E+2", Some(700)),
            ("12.50e1", Some(125)),
            ("1250e-1", Some(125)),
            ("1.5", None),
            ("125e-2", None),
            ("0.0", Some(0)),
            ("0e99999", Some(0)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("1e19", None),
            ("01", None),
            ("1.", None),
            (".5", None),
            ("--1", None),
            ("1e", None),
        ];
        for &(text, want) in cases {
            assert_eq!(integer_value(text.as_bytes()), want, "{text}");
        }
    }

    #[test]
    fn ids_of_messages_that_cannot_be_parsed() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"a":{}{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(readable_id(deep.as_bytes()), Some(RequestId::Number(99)));
        let digits = "9".repeat(400);
        let text = format!(r#"{{"jsonrpc":"2.0","method":{digits},"id":"x"}}"#);
        assert_eq!(id(&text), Some(RequestId::String("x".into())));
        assert_eq!(id(r#"{"id": -0, "method": 1}"#), Some(RequestId::Number(0)));
        assert_eq!(
            id(r#" { "\u0069d" : "a\"b" "#),
            Some(RequestId::String("a\"b".into()))
        );
        // Late garbage does not hide an id already read.
        assert_eq!(
            id(r#"{"id":5,"method":"x", oops"#),
            Some(RequestId::Number(5))
        );
        // A truncated value is not read.
        assert_eq!(id(r#"{"method":"x","id":12"#), None);
        assert_eq!(id(r#"{"method":"x","id":"ab"#), None);
        // Not ids.
        for text in [
            r#"{"id":null}"#,
            r#"{"id":1.5}"#,
            r#"{"id":true}"#,
            r#"{"id":[1]}"#,
            r#"{"id":1,"id":2}"#,
            r#"{"params":{"id":3}}"#,
            r#"[{"id":3}]"#,
            r#"{"a":"#,
            r#"{"a":[1,{"id":3}],"b""#,
            "",
        ] {
            assert_eq!(id(text), None, "{text}");
        }
        // An id after a nested member is still found.
        assert_eq!(
            id(r#"{"params":{"x":[1,"]}",{"id":3}]},"id":4}"#),
            Some(RequestId::Number(4))
        );
    }
}
