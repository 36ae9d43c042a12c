//! Encoding a value for where it lands: a path segment or a query component (everything
//! but RFC 3986's unreserved characters percent-encoded), a header value (checked, never
//! altered), and filling a template's placeholders through such an encoder.

use crate::error::RunError;
use crate::template::{Part, RenderError, Template, scalar_text};
use serde_json::{Map, Value};

/// Reads the server's environment (`${VAR}`).
pub(crate) type Env<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// RFC 3986 `unreserved`: letters, digits, `-`, `.`, `_`, `~`.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Percent-encodes every byte of `text` (as UTF-8) that is not unreserved.
pub(crate) fn encode_unreserved(text: &str, out: &mut String) {
    for &b in text.as_bytes() {
        if is_unreserved(b) {
            out.push(b as char);
        } else {
            push_escape(b, out);
        }
    }
}

fn push_escape(b: u8, out: &mut String) {
    out.push('%');
    out.push(HEX[usize::from(b >> 4)] as char);
    out.push(HEX[usize::from(b & 15)] as char);
}

/// A value as one path segment's text: `/` → `%2F`, `?` → `%3F`, `%` → `%25`, …
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    encode_unreserved(text, &mut out);
    out
}

/// A value as a query component (a name or a value): `&`, `=`, `+`, `#`, `%` and space
/// are encoded like everything else that is not unreserved.
pub(crate) fn component(text: &str) -> String {
    segment(text)
}

/// Author-written URL text, kept as written where a URI allows it there (`extra` lists the
/// characters allowed beside unreserved, sub-delims, `:` and `@`); anything else (a space,
/// non-ASCII, `"`, `<`, a `%` not starting an escape) is percent-encoded.
pub(crate) fn literal(text: &str, extra: &[u8], out: &mut String) {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let escape = b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        let keep =
            is_unreserved(b) || escape || b"!$&'()*+,;=:@".contains(&b) || extra.contains(&b);
        if keep {
            out.push(b as char);
        } else {
            push_escape(b, out);
        }
    }
}

/// What a filled template carried: its text, and which of it came from `${VAR}`.
///
/// Secrets are marked here, where they enter: whatever shows a filled text (a span's
/// `url.full`, a log line, an error) or sends it somewhere the tool did not name (a
/// redirect) asks these marks what it may not show or send.
#[derive(Debug)]
pub(crate) struct Filled {
    /// The text.
    pub text: String,
    /// Some of it is the server's environment (a secret: never shown).
    pub secret: bool,
    /// Where each `${VAR}`'s text is in `text` (byte ranges, as encoded).
    pub secrets: Vec<std::ops::Range<usize>>,
}

impl Filled {
    /// Whether any byte of `range` (of [`Filled::text`]) came from `${VAR}`.
    pub(crate) fn holds_secret(&self, range: &std::ops::Range<usize>) -> bool {
        self.secrets
            .iter()
            .any(|s| s.start < range.end && range.start < s.end)
    }
}

/// Where a piece of a filled template came from, for a checker's message.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// The author's text.
    Literal,
    /// An argument.
    Arg(&'a str),
    /// `${VAR}`.
    Env(&'a str),
}

/// Fills `parts`: literals as written, each argument's and variable's text through
/// `encode`; `None` when an argument is absent or null. `check` sees every piece with its
/// source first and may refuse it.
///
/// # Errors
///
/// [`RunError`] from `check`, an unset variable, or an array or object argument.
pub(crate) fn fill(
    parts: &[Part],
    args: &Map<String, Value>,
    env: Env<'_>,
    encode: &dyn Fn(&str) -> String,
    check: &mut dyn FnMut(Source<'_>, &str) -> Result<(), RunError>,
) -> Result<Option<Filled>, RunError> {
    let mut text = String::new();
    let mut secret = false;
    let mut secrets = Vec::new();
    for part in parts {
        match part {
            Part::Literal(l) => {
                check(Source::Literal, l)?;
                text.push_str(l);
            }
            Part::Env(var) => {
                let value = env(var).ok_or_else(|| RenderError::MissingEnv { var: var.clone() })?;
                check(Source::Env(var), &value)?;
                let start = text.len();
                text.push_str(&encode(&value));
                secrets.push(start..text.len());
                secret = true;
            }
            Part::Arg(a) => {
                let Some(value) = args.get(&a.name).filter(|v| !v.is_null()) else {
                    return Ok(None);
                };
                let value = scalar_text(&a.name, value)?;
                check(Source::Arg(&a.name), &value)?;
                text.push_str(&encode(&value));
            }
        }
    }
    Ok(Some(Filled {
        text,
        secret,
        secrets,
    }))
}

/// [`fill`] for a whole template, with no encoding and no check.
pub(crate) fn fill_plain(
    t: &Template,
    args: &Map<String, Value>,
    env: Env<'_>,
) -> Result<Option<Filled>, RunError> {
    fill(t.parts(), args, env, &|s| s.to_owned(), &mut |_, _| Ok(()))
}

/// Refuses a header value piece holding CR, LF or NUL (never stripped: the call fails),
/// naming the header and where the piece came from, never the value.
pub(crate) fn check_header_piece(
    header: &str,
    source: Source<'_>,
    text: &str,
) -> Result<(), RunError> {
    let Some(bad) = text.chars().find(|c| matches!(c, '\r' | '\n' | '\0')) else {
        return Ok(());
    };
    let what = match bad {
        '\0' => "a NUL character",
        _ => "a line break (CR or LF), which would end the header",
    };
    let from = match source {
        Source::Literal => "the header's text".to_owned(),
        Source::Arg(name) => format!("argument `{name}`"),
        Source::Env(var) => format!("the server's variable `{var}`"),
    };
    Err(RunError::Header {
        header: header.to_owned(),
        reason: format!("{from} contains {what}; refused"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments() {
        #[rustfmt::skip]
        let cases = [
            ("plain", "plain"),
            ("a-b_c.d~e", "a-b_c.d~e"),
            ("../etc/passwd", "..%2Fetc%2Fpasswd"),
            ("..", ".."), // encoded as is; the path check refuses it as a whole segment
            ("%2f", "%252f"),
            ("%2E%2E", "%252E%252E"),
            ("a/b", "a%2Fb"),
            ("a?b", "a%3Fb"),
            ("a#b", "a%23b"),
            ("a b", "a%20b"),
            ("a+b&c=d", "a%2Bb%26c%3Dd"),
            ("é", "%C3%A9"),
            ("日本", "%E6%97%A5%E6%9C%AC"),
            ("a\\b", "a%5Cb"),
            ("a\r\nb", "a%0D%0Ab"),
            (";rm -rf", "%3Brm%20-rf"),
            ("$(id)`x`", "%24%28id%29%60x%60"),
        ];
        for (value, want) in cases {
            assert_eq!(segment(value), want, "{value:?}");
            assert_eq!(component(value), want, "{value:?}");
        }
    }

    #[test]
    fn literals() {
        #[rustfmt::skip]
        let cases = [
            ("/users/list", "/users/list"),
            ("/a b", "/a%20b"),
            ("/é", "/%C3%A9"),
            ("/100%", "/100%25"),
            ("/x%2Fy", "/x%2Fy"),
            ("/{x}", "/%7Bx%7D"),
        ];
        for (text, want) in cases {
            let mut out = String::new();
            literal(text, b"/", &mut out);
            assert_eq!(out, want, "{text:?}");
        }
    }

    #[test]
    fn header_pieces() {
        #[rustfmt::skip]
        let cases = [
            ("ok value", true),
            ("tab\there", true),
            ("a\r\nX-Injected: 1", false),
            ("a\nb", false),
            ("a\rb", false),
            ("a\0b", false),
            ("ünïcode", true),
        ];
        for (value, ok) in cases {
            let got = check_header_piece("X-Test", Source::Arg("a"), value);
            assert_eq!(got.is_ok(), ok, "{value:?}");
            if let Err(e) = got {
                let text = e.to_string();
                assert!(text.contains("X-Test") && text.contains("`a`"), "{text}");
                assert!(!text.contains("Injected"), "{text}");
            }
        }
        let secret = check_header_piece("Authorization", Source::Env("TOKEN"), "Bearer s3cr3t\n")
            .unwrap_err()
            .to_string();
        assert!(
            secret.contains("TOKEN") && !secret.contains("s3cr3t"),
            "{secret}"
        );
    }
}
