//! `Accept` (RFC 9110 §12.5.1), reduced to the question this endpoint asks: which of its two
//! reply types, `application/json` and `text/event-stream`, may a request get?
//!
//! Each header value is a comma-separated list of media ranges (`type/subtype`, `type/*` or
//! `*/*`), each with optional parameters, among them the weight `q` (0 to 1, three decimals at
//! most). For each reply type the most specific range that matches it decides (`text/event-stream`
//! over `text/*` over `*/*`; among equally specific ones the highest weight), and weight 0
//! means "not acceptable". A type no range matches is not acceptable. Other parameters are
//! ignored, and so are elements that are not media ranges (they match nothing). Several
//! `Accept` headers count as one list.
//!
//! A small parser rather than a crate: it runs on every POST, so it allocates nothing, and the
//! crates that parse `Accept` build a list of owned media types per request.

use http::HeaderMap;
use http::header::ACCEPT;

/// A reply type this endpoint produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    EventStream,
}

impl Kind {
    fn parts(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Json => (b"application", b"json"),
            Kind::EventStream => (b"text", b"event-stream"),
        }
    }
}

/// Which reply types a request allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    /// `application/json` may be sent.
    pub json: bool,
    /// `text/event-stream` may be sent.
    pub sse: bool,
}

impl Accepts {
    /// Both types: what a request without `Accept` allows (RFC 9110: any type).
    pub(crate) const BOTH: Accepts = Accepts {
        json: true,
        sse: true,
    };

    /// What `headers` allow. Without an `Accept` header (or with only empty ones), both.
    pub(crate) fn of(headers: &HeaderMap) -> Accepts {
        if !present(headers) {
            return Accepts::BOTH;
        }
        Accepts {
            json: allows(headers, Kind::Json),
            sse: allows(headers, Kind::EventStream),
        }
    }

    /// True when neither type may be sent.
    pub(crate) fn none(self) -> bool {
        !self.json && !self.sse
    }
}

/// True when the request has an `Accept` header with something in it.
pub(crate) fn present(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .any(|v| !v.as_bytes().trim_ascii().is_empty())
}

/// True when `headers` have an `Accept` that allows `kind` (no `Accept`: false).
pub(crate) fn allows(headers: &HeaderMap, kind: Kind) -> bool {
    // (specificity, weight in thousandths) of the best match so far.
    let mut best: Option<(u8, u16)> = None;
    for value in headers.get_all(ACCEPT) {
        for element in split(value.as_bytes(), b',') {
            let Some((specificity, q)) = match_range(element, kind) else {
                continue;
            };
            best = match best {
                Some((s, w)) if s > specificity || (s == specificity && w >= q) => Some((s, w)),
                _ => Some((specificity, q)),
            };
        }
    }
    best.is_some_and(|(_, q)| q > 0)
}

/// The pieces of `s` between `sep` bytes outside quoted strings, trimmed, empty ones
/// skipped.
struct Split<'a> {
    rest: &'a [u8],
    sep: u8,
}

fn split(s: &[u8], sep: u8) -> Split<'_> {
    Split { rest: s, sep }
}

impl<'a> Iterator for Split<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        while !self.rest.is_empty() {
            let mut quoted = false;
            let mut escaped = false;
            let mut end = self.rest.len();
            for (i, &b) in self.rest.iter().enumerate() {
                if escaped {
                    escaped = false;
                } else if quoted && b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    quoted = !quoted;
                } else if b == self.sep && !quoted {
                    end = i;
                    break;
                }
            }
            let piece = self.rest[..end].trim_ascii();
            self.rest = self.rest.get(end + 1..).unwrap_or_default();
            if !piece.is_empty() {
                return Some(piece);
            }
        }
        None
    }
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// How specifically one media range matches `kind` (2 exact, 1 `type/*`, 0 `*/*`) and its
/// weight in thousandths; `None` when it does not match or is malformed.
fn match_range(element: &[u8], kind: Kind) -> Option<(u8, u16)> {
    let mut parts = split(element, b';');
    let range = parts.next()?;
    let slash = range.iter().position(|&b| b == b'/')?;
    let (ty, sub) = (&range[..slash], &range[slash + 1..]);
    if !is_token(ty) || !is_token(sub) {
        return None;
    }
    let (want_ty, want_sub) = kind.parts();
    let specificity = match (ty, sub) {
        (b"*", b"*") => 0,
        (_, b"*") if ty.eq_ignore_ascii_case(want_ty) => 1,
        _ if ty.eq_ignore_ascii_case(want_ty) && sub.eq_ignore_ascii_case(want_sub) => 2,
        _ => return None,
    };
    let mut q = 1000;
    for param in parts {
        let (name, value) = match param.iter().position(|&b| b == b'=') {
            Some(i) => (param[..i].trim_ascii(), param[i + 1..].trim_ascii()),
            None => (param.trim_ascii(), &b""[..]),
        };
        if name.eq_ignore_ascii_case(b"q") {
            // The weight ends the media type's own parameters; what follows is ignored.
            q = qvalue(value)?;
            break;
        }
    }
    Some((specificity, q))
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn qvalue(v: &[u8]) -> Option<u16> {
    let (int, frac) = match v.iter().position(|&b| b == b'.') {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (v, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn accepts(values: &[&[u8]]) -> Accepts {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(ACCEPT, HeaderValue::from_bytes(v).unwrap());
        }
        Accepts::of(&h)
    }

    const JSON: Accepts = Accepts {
        json: true,
        sse: false,
    };
    const SSE: Accepts = Accepts {
        json: false,
        sse: true,
    };
    const NONE: Accepts = Accepts {
        json: false,
        sse: false,
    };

    #[test]
    fn accept_lists() {
        let check = |v: &str, want: Accepts| assert_eq!(accepts(&[v.as_bytes()]), want, "{v}");
        check("application/json, text/event-stream", Accepts::BOTH);
        check("text/event-stream, application/json", Accepts::BOTH);
        check("application/json", JSON);
        check("text/event-stream", SSE);
        check(" Application/JSON ;q=0.9 ,text/*;q=0.1", Accepts::BOTH);
        check("*/*", Accepts::BOTH);
        check("application/*", JSON);
        check("text/*", SSE);
        check("text/html", NONE);
        check("image/png, text/html;q=0.5", NONE);
        check("application/jsonx", NONE);
        check("application/*x", NONE);
        check("app/json", NONE);
        // Weight 0 is "not acceptable", and the most specific range decides.
        check("application/json;q=0, text/event-stream", SSE);
        check("*/*, text/event-stream;q=0", JSON);
        check("*/*;q=0, application/json", JSON);
        check("application/*;q=0, */*", SSE);
        check("text/*;q=0, text/event-stream;q=0.2", SSE);
        check("application/json;q=0.000", NONE);
        check("application/json;q=0.001", JSON);
        check("application/json; Q=0", NONE);
        check("application/json;q=1.000", JSON);
        check("*/*;q=0", NONE);
        // Equally specific ranges: the highest weight counts.
        check("application/json;q=0, application/json;q=0.5", JSON);
        // Other parameters do not matter; only the weight before extensions counts.
        check("application/json;charset=utf-8", JSON);
        check("application/json;q=0.5;q=0", JSON);
        check("text/event-stream;foo=\"a,b;q=0\";q=0", NONE);
        check(
            "text/event-stream;foo=\"a\\\"b,c\", application/json",
            Accepts::BOTH,
        );
        check("text/event-stream;foo=\"q=0;x\"", SSE);
        // Malformed elements match nothing; the rest of the list still counts.
        check("application/json;q=2, text/event-stream", SSE);
        check("application/json;q=0.5x", NONE);
        check("application/json;q=0.1234", NONE);
        check("application/json;q=", NONE);
        check("application/json;q=1.5", NONE);
        check("application/json;q=-1", NONE);
        check("json, text/event-stream", SSE);
        check("/json, */", NONE);
        check(",,, ,application/json,", JSON);
        check("*", NONE);
    }

    #[test]
    fn several_headers_are_one_list() {
        assert_eq!(
            accepts(&[b"text/event-stream", b"application/json"]),
            Accepts::BOTH
        );
        assert_eq!(accepts(&[b"*/*", b"application/json;q=0"]), SSE);
    }

    #[test]
    fn absent_or_empty_accept_allows_both() {
        assert_eq!(Accepts::of(&HeaderMap::new()), Accepts::BOTH);
        assert_eq!(accepts(&[b""]), Accepts::BOTH);
        assert_eq!(accepts(&[b"  "]), Accepts::BOTH);
        assert!(!allows(&HeaderMap::new(), Kind::EventStream));
        assert!(NONE.none() && !JSON.none());
    }

    #[test]
    fn bytes_that_are_not_visible_ascii_match_nothing() {
        assert_eq!(accepts(&[b"application/\xc3\xa9"]), NONE);
        assert_eq!(accepts(&[b"application/\xc3\xa9, text/event-stream"]), SSE);
    }

    #[test]
    fn qvalues() {
        let check = |v: &str, want: Option<u16>| assert_eq!(qvalue(v.as_bytes()), want, "{v}");
        check("0", Some(0));
        check("0.", Some(0));
        check("0.5", Some(500));
        check("0.05", Some(50));
        check("0.999", Some(999));
        check("1", Some(1000));
        check("1.0", Some(1000));
        check("1.000", Some(1000));
        check("1.001", None);
        check("01", None);
        check("", None);
        check(".5", None);
        check("0.5000", None);
    }
}
