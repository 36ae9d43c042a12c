//! Templates: the text of an argv element, an environment value, a URL part or a header,
//! with placeholders for the call's arguments and the server's environment.
//!
//! Syntax: `{name}` is the value of argument `name`; `{name:dash}` the same in a position
//! that accepts a value starting with `-`; `{name:path}` a file path opened beneath the
//! server's roots and passed as the descriptor it opened, `/dev/fd/N` (see [`crate::paths`]);
//! `{name...}` (a whole argv element only) one element per item of an array; `${VAR}` the
//! server's environment variable `VAR`; `{{` and `}}` are literal braces. A template is
//! parsed once, when the file is loaded; a call only
//! fills it in, and each argument's value stays one piece of data wherever it lands: the
//! caller decides how a value is encoded for its position, through the hook it gives
//! [`crate::fill::fill`].

use crate::error::TemplateError;
use crate::fill::{Env, Hook, Piece, Placed, Source, fill};
use crate::paths::Paths;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    source: String,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text written by the author, used as is.
    Literal(String),
    /// An argument's value.
    Arg(ArgRef),
    /// The server's environment variable.
    Env(String),
}

/// A placeholder for an argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRef {
    /// The argument (a property of `inputSchema`).
    pub name: String,
    /// The author marked this position as accepting a value that starts with `-`.
    pub dash: bool,
    /// `{name...}`: one argv element per array item.
    pub spread: bool,
    /// `{name:path}`: a path opened beneath the server's roots, passed as `/dev/fd/N`.
    pub path: bool,
}

impl ArgRef {
    /// The text of one value for this placeholder: a scalar's text checked by
    /// [`ArgRef::check_text`].
    ///
    /// # Errors
    ///
    /// [`RenderError`], naming the argument.
    pub fn value_text<'v>(
        &self,
        value: &'v Value,
        starts_argument: bool,
        paths: &mut Paths<'_>,
    ) -> Result<Cow<'v, str>, RenderError> {
        self.check_text(scalar_text(&self.name, value)?, starts_argument, paths)
    }

    /// An argument's `text` where a program reads it (an argv element, a variable, stdin):
    /// for `:path`, opened in `paths` and named `/dev/fd/N`; refused when it starts with `-`
    /// at the start of an argument (`starts_argument`) unless `:dash`, or when it holds a
    /// NUL.
    ///
    /// # Errors
    ///
    /// [`RenderError`], naming the argument.
    pub fn check_text<'v>(
        &self,
        mut text: Cow<'v, str>,
        starts_argument: bool,
        paths: &mut Paths<'_>,
    ) -> Result<Cow<'v, str>, RenderError> {
        let nul = || RenderError::Nul {
            name: self.name.clone(),
        };
        if self.path {
            if text.contains('\0') {
                return Err(nul());
            }
            let opened = paths.open(&text).map_err(|source| RenderError::Path {
                name: self.name.clone(),
                source,
            })?;
            text = Cow::Owned(opened);
        }
        if starts_argument && text.starts_with('-') && !self.dash {
            return Err(RenderError::LeadingDash {
                name: self.name.clone(),
            });
        }
        if text.contains('\0') {
            return Err(nul());
        }
        Ok(text)
    }
}

/// The [`Hook`] of a position a program reads (an argv element, a variable's value, stdin,
/// a working directory): each argument checked by [`ArgRef::check_text`] then passed
/// through `encode`; literals and `${VAR}` as written, variables marked secret.
struct ProgramText<'e, 'p, 'r> {
    encode: Encoder<'e>,
    paths: &'p mut Paths<'r>,
}

/// A caller's encoding of an argument's text, which may refuse it.
pub type Encoder<'e> = &'e dyn Fn(&str) -> Result<Cow<'_, str>, Refusal>;

/// Why an [`Encoder`] refused a value (the argument is named by [`RenderError::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    /// Why, without the value.
    pub reason: String,
}

impl Hook for ProgramText<'_, '_, '_> {
    type Error = RenderError;

    fn place<'a>(&mut self, piece: Piece<'a>) -> Result<Placed<'a>, RenderError> {
        let Source::Arg(a) = piece.source else {
            return Ok(Placed::marked(piece.source, piece.text));
        };
        let text = a.check_text(piece.text, piece.at_start, self.paths)?;
        let encoded = (self.encode)(&text).map_err(|r| RenderError::Refused {
            name: a.name.clone(),
            reason: r.reason,
        })?;
        Ok(Placed::plain(Cow::Owned(encoded.into_owned())))
    }
}

/// Why a value could not be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The argument is an object or array where one value goes.
    #[error("argument `{name}` is {kind}; this position takes one string, number or boolean")]
    NotScalar {
        /// The argument.
        name: String,
        /// What it was.
        kind: &'static str,
    },
    /// The value starts with `-` where the author did not allow it, so the program could
    /// take it for an option.
    #[error(
        "argument `{name}` starts with '-', which this tool does not accept there (it could be read as an option)"
    )]
    LeadingDash {
        /// The argument.
        name: String,
    },
    /// A NUL byte, which no argv element, variable or header can carry.
    #[error("argument `{name}` contains a NUL character")]
    Nul {
        /// The argument.
        name: String,
    },
    /// `${VAR}` is not set in the server's environment.
    #[error("the server's environment variable `{var}` is not set")]
    MissingEnv {
        /// The variable.
        var: String,
    },
    /// A `{name:path}` value that is not opened beneath the server's roots.
    #[error("argument `{name}`: {source}")]
    Path {
        /// The argument.
        name: String,
        /// Why.
        source: crate::error::PathError,
    },
    /// The position's encoder refused the value (see its message).
    #[error("argument `{name}`: {reason}")]
    Refused {
        /// The argument.
        name: String,
        /// Why.
        reason: String,
    },
}

impl Template {
    /// Parses a template.
    ///
    /// # Errors
    ///
    /// [`TemplateError`] for an unbalanced brace, an empty or malformed name, an unknown
    /// modifier.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let err = |at: usize, reason: &str| refused(text, at, reason);
        let mut parts = Vec::new();
        let mut lit = String::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' if bytes.get(i + 1) == Some(&b'{') => {
                    lit.push('{');
                    i += 2;
                }
                b'}' if bytes.get(i + 1) == Some(&b'}') => {
                    lit.push('}');
                    i += 2;
                }
                b'}' => return Err(err(i, "a '}' with no '{' (write '}}' for a literal brace)")),
                // `${{` is a `$` and a literal brace, not a variable: `{{` is a brace
                // wherever it is written.
                b'$' if bytes.get(i + 1) == Some(&b'{') && bytes.get(i + 2) != Some(&b'{') => {
                    let (var, next) = env_at(text, i)?;
                    flush(&mut lit, &mut parts);
                    parts.push(Part::Env(var));
                    i = next;
                }
                b'{' => {
                    let (arg, next) = arg_at(text, i)?;
                    flush(&mut lit, &mut parts);
                    parts.push(Part::Arg(arg));
                    i = next;
                }
                _ => {
                    let ch = text[i..].chars().next().expect("in bounds");
                    lit.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
        flush(&mut lit, &mut parts);
        let t = Template {
            parts,
            source: text.to_owned(),
        };
        if t.args().any(|a| a.spread) && t.parts.len() != 1 {
            return Err(err(
                0,
                "`{name...}` must be a whole argv element on its own",
            ));
        }
        Ok(t)
    }

    /// The text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The pieces.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The arguments named, in order.
    pub fn args(&self) -> impl Iterator<Item = &ArgRef> {
        self.parts.iter().filter_map(|p| match p {
            Part::Arg(a) => Some(a),
            _ => None,
        })
    }

    /// The environment variables named.
    pub fn env_vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Env(v) => Some(v.as_str()),
            _ => None,
        })
    }

    /// The placeholder when the template is exactly one `{name...}`.
    pub fn spread(&self) -> Option<&ArgRef> {
        match self.parts.as_slice() {
            [Part::Arg(a)] if a.spread => Some(a),
            _ => None,
        }
    }

    /// The placeholder when the template is exactly one `{name}` (no text around it).
    pub fn whole_arg(&self) -> Option<&ArgRef> {
        match self.parts.as_slice() {
            [Part::Arg(a)] => Some(a),
            _ => None,
        }
    }

    /// The same template with every placeholder accepting a value that starts with `-`, for
    /// positions where no program can take a value for an option (a variable's value, stdin,
    /// a working directory).
    pub fn dash_allowed(mut self) -> Template {
        for part in &mut self.parts {
            if let Part::Arg(a) = part {
                a.dash = true;
            }
        }
        self
    }

    /// Whether every argument it names is present (and not null) in `args`.
    pub fn is_complete(&self, args: &Map<String, Value>) -> bool {
        self.args().all(|a| present(args, &a.name))
    }

    /// Fills the template in for a position a program reads; `None` when an argument it
    /// names is absent or null.
    ///
    /// Each argument's text goes through `encode`, which may refuse it; literals are used as
    /// written. A value starting with `-` is refused when it would start the result and the
    /// placeholder is not marked `:dash`. This is [`fill`] with that position's hook; a
    /// caller with other needs (percent-encoding, a header's check) calls [`fill`] with its
    /// own.
    ///
    /// # Errors
    ///
    /// [`RenderError`], naming the argument.
    pub fn render(
        &self,
        args: &Map<String, Value>,
        env: Env<'_>,
        encode: Encoder<'_>,
    ) -> Result<Option<String>, RenderError> {
        self.render_in(args, env, encode, &mut Paths::new(&[]))
    }

    /// [`Template::render`] where `{name:path}` placeholders are opened in `paths` (beneath
    /// its roots; with none, such a placeholder is refused).
    ///
    /// # Errors
    ///
    /// [`RenderError`], naming the argument.
    pub fn render_in(
        &self,
        args: &Map<String, Value>,
        env: Env<'_>,
        encode: Encoder<'_>,
        paths: &mut Paths<'_>,
    ) -> Result<Option<String>, RenderError> {
        let mut hook = ProgramText { encode, paths };
        let Some(filled) = fill(&self.parts, args, env, &mut hook)? else {
            return Ok(None);
        };
        // A literal or a variable may hold a NUL too; no program can be handed one.
        if filled.text.contains('\0') {
            let name = self
                .args()
                .next()
                .map(|a| a.name.clone())
                .unwrap_or_default();
            return Err(RenderError::Nul { name });
        }
        Ok(Some(filled.text))
    }
}

/// The `${VAR}` starting at byte `i` of `text`: the variable, and the byte after it.
fn env_at(text: &str, i: usize) -> Result<(String, usize), TemplateError> {
    let err = |reason: &str| refused(text, i, reason);
    let close = text[i + 2..]
        .find('}')
        .ok_or_else(|| err("'${' is not closed"))?
        + i
        + 2;
    let var = &text[i + 2..close];
    if var.is_empty()
        || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        || var.as_bytes()[0].is_ascii_digit()
    {
        return Err(err(
            "an environment variable's name is letters, digits and '_'",
        ));
    }
    Ok((var.to_owned(), close + 1))
}

/// The `{name[:modifier][...]}` starting at byte `i` of `text`: the placeholder, and the
/// byte after it.
fn arg_at(text: &str, i: usize) -> Result<(ArgRef, usize), TemplateError> {
    let err = |reason: &str| refused(text, i, reason);
    let close = text[i + 1..]
        .find('}')
        .ok_or_else(|| err("'{' is not closed (write '{{' for a literal brace)"))?
        + i
        + 1;
    let inner = &text[i + 1..close];
    let (name, spread) = match inner.strip_suffix("...") {
        Some(n) => (n, true),
        None => (inner, false),
    };
    let (name, dash, path) = match name.split_once(':') {
        Some((n, "dash")) => (n, true, false),
        Some((n, "path")) => (n, false, true),
        Some((_, m)) => {
            return Err(err(&format!(
                "unknown modifier {m:?} (the modifiers are `:dash` and `:path`)"
            )));
        }
        None => (name, false, false),
    };
    if !is_name(name) {
        return Err(err(
            "a placeholder names an argument: letters, digits, '_' and '-', not starting with a digit",
        ));
    }
    let arg = ArgRef {
        name: name.to_owned(),
        dash,
        spread,
        path,
    };
    Ok((arg, close + 1))
}

/// `text` refused at byte `at`.
fn refused(text: &str, at: usize, reason: &str) -> TemplateError {
    TemplateError {
        template: text.to_owned(),
        at,
        reason: reason.to_owned(),
    }
}

fn flush(lit: &mut String, parts: &mut Vec<Part>) {
    if !lit.is_empty() {
        parts.push(Part::Literal(std::mem::take(lit)));
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` is in `args` with a value other than null.
pub fn present(args: &Map<String, Value>, name: &str) -> bool {
    args.get(name).is_some_and(|v| !v.is_null())
}

/// The text of a scalar argument: a string as is, a number or boolean as JSON writes it.
///
/// # Errors
///
/// [`RenderError::NotScalar`] for an array or object.
pub fn scalar_text<'v>(name: &str, value: &'v Value) -> Result<Cow<'v, str>, RenderError> {
    match value {
        Value::String(s) => Ok(Cow::Borrowed(s)),
        Value::Number(n) => Ok(Cow::Owned(n.to_string())),
        Value::Bool(b) => Ok(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Null => Ok(Cow::Borrowed("")),
        Value::Array(_) => Err(RenderError::NotScalar {
            name: name.to_owned(),
            kind: "an array",
        }),
        Value::Object(_) => Err(RenderError::NotScalar {
            name: name.to_owned(),
            kind: "an object",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(t: &str, args: Value) -> Result<Option<String>, RenderError> {
        let args = args.as_object().unwrap().clone();
        Template::parse(t).unwrap().render(
            &args,
            &|v| (v == "HOME").then(|| "/home/me".into()),
            &|s| Ok(Cow::Owned(s.to_owned())),
        )
    }

    #[test]
    fn parses() {
        let t = Template::parse("--out={path:dash}.txt ${HOME} {{x}}").unwrap();
        assert_eq!(
            t.parts(),
            &[
                Part::Literal("--out=".into()),
                Part::Arg(ArgRef {
                    name: "path".into(),
                    dash: true,
                    spread: false,
                    path: false,
                }),
                Part::Literal(".txt ".into()),
                Part::Env("HOME".into()),
                Part::Literal(" {x}".into()),
            ]
        );
        assert!(Template::parse("{files...}").unwrap().spread().is_some());
    }

    #[test]
    fn refuses_malformed() {
        for bad in [
            "{",
            "}",
            "{}",
            "{1x}",
            "{a:glob}",
            "${",
            "${A B}",
            "a{files...}",
            "{a b}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn renders() {
        assert_eq!(
            render("{a}", json!({"a": "x y; rm -rf /"}))
                .unwrap()
                .unwrap(),
            "x y; rm -rf /"
        );
        assert_eq!(render("n={a}", json!({"a": 3})).unwrap().unwrap(), "n=3");
        assert_eq!(render("{a}", json!({"a": true})).unwrap().unwrap(), "true");
        assert_eq!(
            render("${HOME}/x", json!({})).unwrap().unwrap(),
            "/home/me/x"
        );
        assert_eq!(render("{a}", json!({})).unwrap(), None);
        assert_eq!(render("{a}", json!({"a": null})).unwrap(), None);
    }

    #[test]
    fn refuses_values() {
        assert!(matches!(
            render("{a}", json!({"a": "--output=/etc/x"})),
            Err(RenderError::LeadingDash { .. })
        ));
        assert_eq!(
            render("{a:dash}", json!({"a": "-v"})).unwrap().unwrap(),
            "-v"
        );
        // Not at the start of the element: the program cannot read it as an option.
        assert_eq!(
            render("--name={a}", json!({"a": "-v"})).unwrap().unwrap(),
            "--name=-v"
        );
        assert!(matches!(
            render("{a}", json!({"a": [1]})),
            Err(RenderError::NotScalar { .. })
        ));
        assert!(matches!(
            render("{a}", json!({"a": "x\u{0}y"})),
            Err(RenderError::Nul { .. })
        ));
        assert!(matches!(
            render("${NOPE}", json!({})),
            Err(RenderError::MissingEnv { .. })
        ));
    }
}
