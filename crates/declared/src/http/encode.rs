//! Encoding a value for where it lands in a request: a path segment or a query component
//! (everything but RFC 3986's unreserved characters percent-encoded), a header value
//! (checked, never altered), and the [`Hook`]s that fill a template's pieces so
//! ([`toolwright_toolfile::fill`] walks the pieces).

use crate::error::RunError;
use percent_encoding::{AsciiSet, utf8_percent_encode};
use serde_json::{Map, Value};
use std::borrow::Cow;
use toolwright_toolfile::fill::{self, Filled, Hook, Piece, Placed, Source, Verbatim};
use toolwright_toolfile::template::{Part, Template};

/// Reads the server's environment (`${VAR}`).
pub(crate) type Env<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

use toolwright_toolfile::uri::UNRESERVED;

/// What author-written text keeps in a URL's path: RFC 3986's path characters.
pub(crate) const PATH_TEXT: &AsciiSet = toolwright_toolfile::uri::PATH;

/// What author-written text keeps in a URL's query: [`PATH_TEXT`]'s and `?`.
pub(crate) const QUERY_TEXT: &AsciiSet = toolwright_toolfile::uri::QUERY;

/// A value as one path segment's text: `/` → `%2F`, `?` → `%3F`, `%` → `%25`, …
pub(crate) fn segment(text: &str) -> String {
    utf8_percent_encode(text, UNRESERVED).to_string()
}

/// A value as a query component (a name or a value): `&`, `=`, `+`, `#`, `%` and space
/// are encoded like everything else that is not unreserved.
pub(crate) fn component(text: &str) -> String {
    segment(text)
}

/// Author-written URL text, kept as written where a URI allows it there (`set` escapes
/// all but unreserved, sub-delims, `:`, `@` and what the part allows beside them:
/// [`PATH_TEXT`], [`QUERY_TEXT`]); anything else (a space, non-ASCII, `"`, `<`, a `%` not
/// starting an escape) is percent-encoded.
pub(crate) fn literal(text: &str, set: &'static AsciiSet, out: &mut String) {
    let mut rest = text;
    // `%` is in the set, so an escape the author wrote is copied here, not re-encoded.
    while let Some(i) = rest.find('%') {
        out.extend(utf8_percent_encode(&rest[..i], set));
        let escape = rest
            .get(i..i + 3)
            .filter(|e| e.bytes().skip(1).all(|b| b.is_ascii_hexdigit()));
        match escape {
            Some(e) => {
                out.push_str(e);
                rest = &rest[i + 3..];
            }
            None => {
                out.push_str("%25");
                rest = &rest[i + 1..];
            }
        }
    }
    out.extend(utf8_percent_encode(rest, set));
}

/// The hook of a URL's path or query: the author's text as compiled (already in URI form),
/// each argument's and variable's text through `encode` ([`segment`] or [`component`]),
/// each variable marked secret.
pub(crate) struct UrlPart(pub fn(&str) -> String);

impl Hook for UrlPart {
    type Error = RunError;

    fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, RunError> {
        let text = match piece.source {
            Source::Literal => piece.text,
            _ => Cow::Owned((self.0)(&piece.text)),
        };
        Ok(Placed::marked(piece.source, text))
    }
}

/// The hook of a header's value: every piece checked by [`check_header_piece`], never
/// altered; each variable marked secret (the value is then sent as sensitive).
pub(crate) struct HeaderPiece<'n>(pub &'n str);

impl Hook for HeaderPiece<'_> {
    type Error = RunError;

    fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, RunError> {
        check_header_piece(self.0, piece.source, &piece.text)?;
        Ok(Placed::marked(piece.source, piece.text))
    }
}

/// Fills `parts` through `hook` ([`fill::fill`] with the server's environment).
pub(crate) fn fill<H: Hook<Error = RunError>>(
    parts: &[Part],
    args: &Map<String, Value>,
    env: Env<'_>,
    hook: &mut H,
) -> Result<Option<Filled>, RunError> {
    fill::fill(parts, args, env, hook)
}

/// A whole template with no encoding and no check ([`Verbatim`]).
pub(crate) fn fill_plain(
    t: &Template,
    args: &Map<String, Value>,
    env: Env<'_>,
) -> Result<Option<Filled>, RunError> {
    Ok(fill::fill(t.parts(), args, env, &mut Verbatim)?)
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
        other => other.describe(),
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
            literal(text, PATH_TEXT, &mut out);
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
        let a = toolwright_toolfile::template::ArgRef {
            name: "a".into(),
            dash: false,
            spread: false,
            path: false,
        };
        for (value, ok) in cases {
            let got = check_header_piece("X-Test", Source::Arg(&a), value);
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
