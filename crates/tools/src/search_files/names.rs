//! How file names travel in JSON, which only carries Unicode text.
//!
//! A path that is valid UTF-8 and holds no U+FFFD is written as it is (nearly every path).
//! Otherwise U+FFFD is the escape introducer: each byte that is not part of valid UTF-8 is
//! written as U+FFFD followed by its value in two lowercase hex digits (`bad\xffname` →
//! `bad\u{FFFD}ffname`), and a U+FFFD that really is in the name is written twice. The
//! mapping is one-to-one, so two different names never report the same path, and
//! [`unescape`] gives back the exact bytes. `directory` arguments are read the same way, so
//! a reported directory can be searched as reported.

use std::fmt::Write;

/// The escape introducer, U+REPLACEMENT CHARACTER: what a lossy decoder would show there.
pub(crate) const INTRODUCER: char = '\u{FFFD}';

/// Appends the reported form of `bytes` to `out`.
pub(crate) fn escape_into(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        if valid.contains(INTRODUCER) {
            for c in valid.chars() {
                out.push(c);
                if c == INTRODUCER {
                    out.push(INTRODUCER);
                }
            }
        } else {
            out.push_str(valid);
        }
        for b in chunk.invalid() {
            out.push(INTRODUCER);
            let _ = write!(out, "{b:02x}");
        }
    }
}

/// The reported form of `bytes`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    escape_into(bytes, &mut out);
    out
}

/// An escape that is not U+FFFD followed by U+FFFD or two hex digits.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadEscape {
    /// Where the introducer is, in bytes from the start of the text.
    pub at: usize,
}

/// The bytes a reported path stands for.
pub(crate) fn unescape(text: &str) -> Result<Vec<u8>, BadEscape> {
    if !text.contains(INTRODUCER) {
        return Ok(text.as_bytes().to_vec());
    }
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != INTRODUCER {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        let hex = |c: Option<(usize, char)>| c.and_then(|(_, c)| c.to_digit(16));
        match chars.next() {
            Some((_, INTRODUCER)) => out.extend_from_slice("\u{FFFD}".as_bytes()),
            first => match (hex(first), hex(chars.next())) {
                (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                _ => return Err(BadEscape { at }),
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! escapes {
        ($($name:ident: $bytes:expr => $text:expr;)*) => {$(
            #[test]
            fn $name() {
                let bytes: Vec<u8> = $bytes.to_vec();
                let bytes = bytes.as_slice();
                assert_eq!(escape(bytes), $text);
                assert_eq!(unescape($text).as_deref(), Ok(bytes));
            }
        )*};
    }

    escapes! {
        plain: b"src/lib.rs" => "src/lib.rs";
        utf8: "d\u{e9}j\u{e0}/caf\u{e9}".as_bytes() => "d\u{e9}j\u{e0}/caf\u{e9}";
        invalid_byte: b"bad\xffname.txt" => "bad\u{FFFD}ffname.txt";
        real_replacement_char: "bad\u{FFFD}name.txt".as_bytes() => "bad\u{FFFD}\u{FFFD}name.txt";
        latin1: b"d\xe9j\xe0" => "d\u{FFFD}e9j\u{FFFD}e0";
        truncated_sequence: b"a\xe2\x82" => "a\u{FFFD}e2\u{FFFD}82";
        both: b"\xef\xbf\xbd\xfe" => "\u{FFFD}\u{FFFD}\u{FFFD}fe";
        empty: b"" => "";
    }

    #[test]
    fn different_names_never_share_a_form() {
        let names: [&[u8]; 6] = [
            b"bad\xffname",
            "bad\u{FFFD}name".as_bytes(),
            "bad\u{FFFD}ffname".as_bytes(),
            "bad\u{FFFD}\u{FFFD}name".as_bytes(),
            b"bad\xff\xffname",
            b"bad\xffffname",
        ];
        let forms: std::collections::HashSet<String> = names.iter().map(|n| escape(n)).collect();
        assert_eq!(forms.len(), names.len(), "{forms:?}");
    }

    #[test]
    fn malformed_escapes_are_refused() {
        assert_eq!(unescape("a\u{FFFD}"), Err(BadEscape { at: 1 }));
        assert_eq!(unescape("a\u{FFFD}f"), Err(BadEscape { at: 1 }));
        assert_eq!(unescape("a\u{FFFD}zz"), Err(BadEscape { at: 1 }));
        assert_eq!(unescape("\u{FFFD}FF").as_deref(), Ok(&b"\xff"[..]));
    }
}
