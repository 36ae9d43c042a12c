//! What an instance got wrong: one [`Violation`] per failed keyword, in a
//! stable order, each naming the offending value and what was expected.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::error::display_pointer;

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    /// JSON Pointer (RFC 6901) to the offending value in the instance; the
    /// root is `""`. For a missing required property it is the object's.
    pub pointer: String,
    /// What is wrong, naming the value found and what was expected, e.g.
    /// `"x" is not of type "number"`.
    pub message: String,
}

impl fmt::Display for Violation {
    /// `<pointer>: <message>`, with `/` standing for the root.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", display_pointer(&self.pointer), self.message)
    }
}

impl PartialOrd for Violation {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Violation {
    /// By pointer, then message. Pointers compare segment by segment, array
    /// indices numerically, so `/tags/2` sorts before `/tags/10`.
    fn cmp(&self, other: &Self) -> Ordering {
        crate::pointer::compare(&self.pointer, &other.pointer)
            .then_with(|| self.message.cmp(&other.message))
    }
}

/// The violations, one per line, in the order given.
#[must_use]
pub fn format_violations(violations: &[Violation]) -> String {
    let mut out = String::new();
    for (i, violation) in violations.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{violation}");
    }
    out
}

impl Violation {
    /// Build from one `jsonschema` error, rendering the message ourselves so
    /// that a huge offending value is shortened rather than echoed whole.
    pub(crate) fn from_error(error: &ValidationError<'_>) -> Violation {
        Violation {
            pointer: error.instance_path().as_str().to_owned(),
            message: render(error),
        }
    }
}

/// Longest rendering of a value in a message, in characters, before it is cut.
const MAX_VALUE_CHARS: usize = 80;

/// `value` as JSON, cut to [`MAX_VALUE_CHARS`] with `…`; a long string also
/// says how long it was. Only the shown prefix is ever serialised, so a huge
/// value costs no more than a small one.
pub(crate) fn show(value: &Value) -> String {
    let mut capped = Capped {
        bytes: Vec::new(),
        // Enough bytes for MAX_VALUE_CHARS + 1 characters of any width.
        limit: (MAX_VALUE_CHARS + 1) * 4,
    };
    // An error here only means the cap was reached.
    let _ = serde_json::to_writer(&mut capped, value);
    let text = String::from_utf8_lossy(&capped.bytes);
    if text.chars().count() <= MAX_VALUE_CHARS {
        return text.into_owned();
    }
    let cut: String = text.chars().take(MAX_VALUE_CHARS - 1).collect();
    match value {
        Value::String(text) => format!("{cut}…\" ({} characters)", text.chars().count()),
        Value::Array(items) => format!(
            "{cut}… (an array of {})",
            plural(items.len() as u64, "item", "items")
        ),
        Value::Object(map) => format!(
            "{cut}… (an object with {})",
            plural(map.len() as u64, "property", "properties")
        ),
        _ => format!("{cut}…"),
    }
}

/// A writer that keeps the first `limit` bytes and then refuses more.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.limit - self.bytes.len();
        if room == 0 {
            return Err(std::io::Error::other("message value cap reached"));
        }
        let taken = room.min(buf.len());
        self.bytes.extend_from_slice(&buf[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| show(&Value::String(name.clone())))
        .collect::<Vec<_>>()
        .join(", ")
}

fn enum_options(options: &Value) -> String {
    const SHOWN: usize = 8;
    let Some(items) = options.as_array() else {
        return show(options);
    };
    let mut shown: Vec<String> = items.iter().take(SHOWN).map(show).collect();
    if items.len() > SHOWN {
        shown.push(format!("… ({} more)", items.len() - SHOWN));
    }
    shown.join(", ")
}

/// Why each `anyOf`/`oneOf` branch failed: its first violation (in report
/// order), with its pointer when it is deeper than the `anyOf` itself.
fn branch_reasons(error: &ValidationError<'_>, branches: &[Vec<ValidationError<'_>>]) -> String {
    const SHOWN: usize = 4;
    let here = error.instance_path().as_str();
    let mut reasons: Vec<String> = branches
        .iter()
        .take(SHOWN)
        .filter_map(|branch| {
            let first = branch.iter().min_by(|a, b| {
                crate::pointer::compare(a.instance_path().as_str(), b.instance_path().as_str())
            })?;
            let at = first.instance_path().as_str();
            let message = render(first);
            Some(if at == here {
                message
            } else {
                format!("at {at}: {message}")
            })
        })
        .collect();
    if branches.len() > SHOWN {
        reasons.push(format!("… ({} more)", branches.len() - SHOWN));
    }
    reasons.join("; ")
}

/// One violation as a sentence about the value.
///
/// Long on purpose: a table with one arm per kind of `jsonschema`'s errors, read top to
/// bottom beside that enum; splitting it would scatter the table, not simplify it.
fn render(error: &ValidationError<'_>) -> String {
    let value = show(error.instance());
    match error.kind() {
        ValidationErrorKind::Type {
            kind: TypeKind::Single(expected),
        } => {
            format!("{value} is not of type \"{expected}\"")
        }
        ValidationErrorKind::Type {
            kind: TypeKind::Multiple(expected),
        } => {
            let names: Vec<String> = expected.iter().map(|t| format!("\"{t}\"")).collect();
            format!("{value} is not of type {}", names.join(" or "))
        }
        ValidationErrorKind::Required { property } => {
            format!("required property {} is missing", show(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => format!(
            "additional properties are not allowed, but found {}",
            quoted_list(unexpected)
        ),
        ValidationErrorKind::UnevaluatedProperties { unexpected } => format!(
            "unevaluated properties are not allowed, but found {}",
            quoted_list(unexpected)
        ),
        ValidationErrorKind::AdditionalItems { limit } => {
            let len = error.instance().as_array().map_or(0, Vec::len);
            format!(
                "array has {} but at most {} allowed",
                plural(len as u64, "item", "items"),
                plural(*limit as u64, "item is", "items are")
            )
        }
        ValidationErrorKind::UnevaluatedItems { unexpected } => format!(
            "unevaluated items are not allowed, but found {}",
            unexpected.join(", ")
        ),
        ValidationErrorKind::Enum { options } if options.as_array().is_some_and(Vec::is_empty) => {
            format!("{value} is not allowed (the enum is empty)")
        }
        ValidationErrorKind::Enum { options } => {
            format!(
                "{value} is not one of the allowed values: {}",
                enum_options(options)
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("{value} is not the expected value {}", show(expected_value))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("{value} is less than the minimum of {limit}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("{value} is greater than the maximum of {limit}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("{value} is not greater than the exclusive minimum of {limit}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("{value} is not less than the exclusive maximum of {limit}")
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("{value} is not a multiple of {multiple_of}")
        }
        ValidationErrorKind::MinLength { limit } => format!(
            "{value} is shorter than the minimum length of {}",
            plural(*limit, "character", "characters")
        ),
        ValidationErrorKind::MaxLength { limit } => format!(
            "{value} is longer than the maximum length of {}",
            plural(*limit, "character", "characters")
        ),
        ValidationErrorKind::MinItems { limit } => {
            format!("{value} has fewer than {}", plural(*limit, "item", "items"))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("{value} has more than {}", plural(*limit, "item", "items"))
        }
        ValidationErrorKind::MinProperties { limit } => format!(
            "{value} has fewer than {}",
            plural(*limit, "property", "properties")
        ),
        ValidationErrorKind::MaxProperties { limit } => format!(
            "{value} has more than {}",
            plural(*limit, "property", "properties")
        ),
        ValidationErrorKind::UniqueItems => format!("{value} has non-unique items"),
        ValidationErrorKind::Contains => {
            format!("{value} contains no item that matches the \"contains\" schema")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "{value} does not match the pattern {}",
                show(&Value::String(pattern.clone()))
            )
        }
        ValidationErrorKind::Format { format } => {
            format!("{value} is not a valid \"{format}\"")
        }
        ValidationErrorKind::FalseSchema => {
            format!("{value} is not allowed here (schema is false)")
        }
        ValidationErrorKind::Not { schema } => {
            format!("{value} must not match the schema {}", show(schema))
        }
        ValidationErrorKind::AnyOf { context } => format!(
            "{value} does not match any of the \"anyOf\" schemas: {}",
            branch_reasons(error, context)
        ),
        ValidationErrorKind::OneOfNotValid { context } => format!(
            "{value} does not match any of the \"oneOf\" schemas: {}",
            branch_reasons(error, context)
        ),
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            format!("{value} matches more than one of the \"oneOf\" schemas")
        }
        ValidationErrorKind::PropertyNames { error } => {
            format!("property name {}", render(error))
        }
        ValidationErrorKind::ContentEncoding { content_encoding } => {
            format!("{value} is not valid \"{content_encoding}\" content")
        }
        ValidationErrorKind::ContentMediaType { content_media_type } => {
            format!("{value} is not valid \"{content_media_type}\" content")
        }
        ValidationErrorKind::FromUtf8 { error } => {
            format!("{value} does not decode to UTF-8: {error}")
        }
        ValidationErrorKind::BacktrackLimitExceeded { error } => {
            format!("{value} could not be matched against the pattern: {error}")
        }
        ValidationErrorKind::RegexEngineFailure { message } => {
            format!("{value} could not be matched against the pattern: {message}")
        }
        ValidationErrorKind::Custom { message, .. } => message.clone(),
        ValidationErrorKind::Referencing(error) => {
            format!("reference could not be resolved: {error}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(pointer: &str, message: &str) -> Violation {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    #[test]
    fn orders_by_pointer_then_message() {
        let mut list = vec![
            v("/b", "a"),
            v("/a/10", "a"),
            v("/a/2", "z"),
            v("/a/2", "b"),
            v("", "q"),
        ];
        list.sort();
        assert_eq!(
            list,
            vec![
                v("", "q"),
                v("/a/2", "b"),
                v("/a/2", "z"),
                v("/a/10", "a"),
                v("/b", "a")
            ]
        );
    }

    macro_rules! displays {
        ($($name:ident: $violation:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!($violation.to_string(), $expected);
            }
        )*};
    }

    displays! {
        display_root: v("", "m") => "/: m";
        display_nested: v("/a", "\"x\" is not of type \"number\"") => "/a: \"x\" is not of type \"number\"";
    }

    #[test]
    fn format_violations_one_per_line() {
        let text = format_violations(&[v("", "a"), v("/b", "c")]);
        assert_eq!(text, "/: a\n/b: c");
    }

    #[test]
    fn format_violations_empty() {
        assert_eq!(format_violations(&[]), "");
    }

    macro_rules! shows {
        ($($name:ident: $value:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(show(&$value), $expected);
            }
        )*};
    }

    shows! {
        show_short_string: json!("x") => "\"x\"";
        show_number: json!(12.5) => "12.5";
        show_long_string: json!("a".repeat(200)) => format!("\"{}…\" (200 characters)", "a".repeat(78));
        show_long_array: json!(vec![1; 100]) => format!("[{}… (an array of 100 items)", "1,".repeat(39));
        show_huge_object: json!({"k": "é".repeat(100_000)}) => format!("{{\"k\":\"{}… (an object with 1 property)", "é".repeat(73));
        show_exactly_limit: json!("a".repeat(78)) => format!("\"{}\"", "a".repeat(78));
        show_multibyte_string: json!("é".repeat(100)) => format!("\"{}…\" (100 characters)", "é".repeat(78));
    }
}
