//! Filling a template in: one walk over its pieces ([`fill`]) that hands each piece to the
//! caller's [`Hook`], which chooses, for the position the text lands in, how the piece is
//! encoded (as is, percent-encoded, …), whether it is refused (a line break in a header, a
//! value starting with `-` at the start of an argv element), and whether it is a secret
//! (shown [`REDACTED`] wherever the filled text is shown). Literals, arguments and `${VAR}`
//! all pass through the hook, so no position can forget one kind of piece; every action
//! (a command's argv and environment, an HTTP request's URL, headers and body) fills its
//! templates here.

use crate::template::{ArgRef, Part, RenderError, scalar_text};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// Reads the server's environment (`${VAR}`): the value, or `None` when it is not set.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What stands for a secret (a `${VAR}`'s text) wherever a filled text is shown.
pub const REDACTED: &str = "REDACTED";

/// Where a piece of a template came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// The author's text.
    Literal,
    /// An argument's value.
    Arg(&'a ArgRef),
    /// The server's environment variable `${VAR}`.
    Env(&'a str),
}

impl Source<'_> {
    /// Names the source for a message, never showing its value: "the template's text",
    /// "argument `a`", "the server's variable `V`".
    pub fn describe(&self) -> String {
        match self {
            Source::Literal => "the template's text".to_owned(),
            Source::Arg(a) => format!("argument `{}`", a.name),
            Source::Env(var) => format!("the server's variable `{var}`"),
        }
    }
}

/// One piece offered to a [`Hook`].
#[derive(Debug)]
pub struct Piece<'a> {
    /// Where it came from.
    pub source: Source<'a>,
    /// Its text: a literal as written, an argument's scalar text ([`scalar_text`]), a
    /// variable's value.
    pub text: Cow<'a, str>,
    /// Nothing has been written before it (so it starts the filled text).
    pub at_start: bool,
}

/// What a [`Hook`] made of a piece: the text to write, and whether it is a secret.
#[derive(Debug)]
pub struct Placed<'a> {
    /// The text, encoded for its position.
    pub text: Cow<'a, str>,
    /// Never to be shown: [`Filled::secrets`] records where it went.
    pub secret: bool,
}

impl<'a> Placed<'a> {
    /// `text`, not a secret.
    pub fn plain(text: Cow<'a, str>) -> Placed<'a> {
        Placed {
            text,
            secret: false,
        }
    }

    /// `text`, a secret when it came from `${VAR}` (the server's environment holds tokens
    /// and keys; an argument is the client's own data).
    pub fn marked(source: Source<'_>, text: Cow<'a, str>) -> Placed<'a> {
        Placed {
            text,
            secret: matches!(source, Source::Env(_)),
        }
    }
}

/// The caller's choice for each piece of a template it fills: encode, check, mark secret.
pub trait Hook {
    /// Why a piece is refused; an unset variable or a value that is not a scalar
    /// ([`RenderError`]) is one too.
    type Error: From<RenderError>;

    /// The text to write for `piece`, or why it is refused.
    ///
    /// # Errors
    ///
    /// [`Hook::Error`] when the piece may not stand in this position.
    fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, Self::Error>;
}

/// Every piece as it is, each `${VAR}` marked secret: for positions that take any text (a
/// JSON body's string, which serde_json then encodes; a gateway setting).
#[derive(Debug, Clone, Copy, Default)]
pub struct Verbatim;

impl Hook for Verbatim {
    type Error = RenderError;

    fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, RenderError> {
        Ok(Placed::marked(piece.source, piece.text))
    }
}

/// A filled template: its text, and which of it is secret.
///
/// Secrets are marked here, where they enter: whatever shows a filled text (a span's
/// `url.full`, a log line, an error) or sends it somewhere the tool did not name (a
/// redirect) asks these marks what it may not show or send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filled {
    /// The text.
    pub text: String,
    /// Some piece was a secret (even one whose text is empty).
    pub secret: bool,
    /// Where each secret piece's text is in `text` (byte ranges, as encoded).
    pub secrets: Vec<Range<usize>>,
}

impl Filled {
    /// Whether any byte of `range` (of [`Filled::text`]) is a secret's.
    pub fn holds_secret(&self, range: &Range<usize>) -> bool {
        self.secrets
            .iter()
            .any(|s| s.start < range.end && range.start < s.end)
    }

    /// The text as a log may show it: each secret's text written [`REDACTED`].
    pub fn redacted(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for r in &self.secrets {
            out.push_str(&self.text[at..r.start]);
            out.push_str(REDACTED);
            at = r.end;
        }
        out.push_str(&self.text[at..]);
        out
    }

    /// Appends `other`, keeping its secrets' marks.
    pub fn push(&mut self, other: &Filled) {
        let by = self.text.len();
        self.secrets
            .extend(other.secrets.iter().map(|r| r.start + by..r.end + by));
        self.secret |= other.secret;
        self.text.push_str(&other.text);
    }
}

/// Fills `parts` in, each piece through `hook`; `None` when an argument they name is
/// absent or null (the caller decides whether that leaves something out or is an error).
///
/// # Errors
///
/// [`RenderError::MissingEnv`] for an unset variable, [`RenderError::NotScalar`] for an
/// array or object argument, and whatever `hook` refuses.
pub fn fill<H: Hook + ?Sized>(
    parts: &[Part],
    args: &Map<String, Value>,
    env: Env<'_>,
    hook: &mut H,
) -> Result<Option<Filled>, H::Error> {
    let mut out = Filled::default();
    for part in parts {
        let (source, text) = match part {
            Part::Literal(l) => (Source::Literal, Cow::Borrowed(l.as_str())),
            Part::Env(var) => {
                let value = env(var).ok_or_else(|| RenderError::MissingEnv { var: var.clone() })?;
                (Source::Env(var), Cow::Owned(value))
            }
            Part::Arg(a) => {
                let Some(value) = args.get(&a.name).filter(|v| !v.is_null()) else {
                    return Ok(None);
                };
                (Source::Arg(a), scalar_text(&a.name, value)?)
            }
        };
        let at_start = out.text.is_empty();
        let placed = hook.place(Piece {
            source,
            text,
            at_start,
        })?;
        let start = out.text.len();
        out.text.push_str(&placed.text);
        if placed.secret {
            out.secret = true;
            out.secrets.push(start..out.text.len());
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Template;
    use serde_json::json;

    /// Upper-cases arguments, refuses `x` anywhere, marks nothing secret.
    struct Shout;

    impl Hook for Shout {
        type Error = RenderError;

        fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, RenderError> {
            if piece.text.contains('x') {
                return Err(RenderError::Refused {
                    name: piece.source.describe(),
                    reason: "x".into(),
                });
            }
            Ok(Placed::plain(match piece.source {
                Source::Arg(_) => Cow::Owned(piece.text.to_uppercase()),
                _ => piece.text,
            }))
        }
    }

    fn env(v: &str) -> Option<String> {
        (v == "TOKEN").then(|| "s3cr3t".into())
    }

    #[test]
    fn every_piece_goes_through_the_hook() {
        let t = Template::parse("a={a} b={b}").unwrap();
        let args = json!({"a": "one", "b": 2});
        let f = fill(t.parts(), args.as_object().unwrap(), &env, &mut Shout)
            .unwrap()
            .unwrap();
        assert_eq!(f.text, "a=ONE b=2");
        assert!(!f.secret);
        let bad = json!({"a": "x", "b": 2});
        assert!(fill(t.parts(), bad.as_object().unwrap(), &env, &mut Shout).is_err());
        let absent = json!({"a": "one"});
        assert_eq!(
            fill(t.parts(), absent.as_object().unwrap(), &env, &mut Shout).unwrap(),
            None
        );
    }

    #[test]
    fn secrets_are_marked_where_they_land() {
        let t = Template::parse("Bearer ${TOKEN} for {who}").unwrap();
        let args = json!({"who": "me"});
        let f = fill(t.parts(), args.as_object().unwrap(), &env, &mut Verbatim)
            .unwrap()
            .unwrap();
        assert_eq!(f.text, "Bearer s3cr3t for me");
        assert!(f.secret);
        assert_eq!(f.secrets, vec![7..13]);
        assert!(f.holds_secret(&(0..8)) && !f.holds_secret(&(13..20)));
        assert_eq!(f.redacted(), "Bearer REDACTED for me");
        let mut joined = Filled {
            text: "x:".into(),
            ..Filled::default()
        };
        joined.push(&f);
        assert_eq!(joined.redacted(), "x:Bearer REDACTED for me");
    }

    #[test]
    fn an_unset_variable_or_a_non_scalar_is_refused() {
        let t = Template::parse("${NOPE}").unwrap();
        assert!(matches!(
            fill(t.parts(), &Map::new(), &env, &mut Verbatim),
            Err(RenderError::MissingEnv { .. })
        ));
        let t = Template::parse("{a}").unwrap();
        let args = json!({"a": [1]});
        assert!(matches!(
            fill(t.parts(), args.as_object().unwrap(), &env, &mut Verbatim),
            Err(RenderError::NotScalar { .. })
        ));
    }
}
