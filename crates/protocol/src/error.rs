//! Why a tool definition breaks a rule of the spec: [`ToolNameError`] for its name,
//! [`ParamHeaderError`] for its `x-mcp-header` declarations (and the arguments they
//! mirror). Each carries the offending input; the messages are the ones people read, in
//! the server's refusals, the client's errors and the linter's findings alike.

use serde_json::{Number, Value};

use crate::tool::MAX_NAME_LEN;

/// Why a tool name breaks the spec's rule (1–128 characters of `A-Za-z0-9_.-`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolNameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// The name has more than [`MAX_NAME_LEN`] characters.
    #[error(
        "the name is {len} characters long; the spec allows at most {}",
        MAX_NAME_LEN
    )]
    TooLong {
        /// The name.
        name: String,
        /// Its length in characters.
        len: usize,
    },
    /// The name has characters outside `A-Za-z0-9_.-`.
    #[error(
        "the name contains {:?}{}; only A-Z, a-z, 0-9, '_', '-' and '.' are allowed",
        .chars[0],
        if .chars.len() > 1 { " and more" } else { "" }
    )]
    Charset {
        /// The name.
        name: String,
        /// Every character that is not allowed, in order (never empty).
        chars: Vec<char>,
    },
}

/// Why a tool's `x-mcp-header` declarations must be rejected (clients drop such tools), or
/// why an argument cannot travel in its `Mcp-Param-*` header.
///
/// `pointer` is the JSON Pointer, from the input schema's root, of the subschema that
/// carries the `x-mcp-header` keyword (`""` for the root itself).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamHeaderError {
    /// The keyword's value is not a string.
    #[error("x-mcp-header is {value}, not a string")]
    NotString {
        /// Where the keyword is.
        pointer: String,
        /// Its value.
        value: Value,
    },
    /// The header name is empty or not an RFC 9110 token.
    #[error(
        "x-mcp-header {name:?} is not an HTTP token (RFC 9110): letters, digits and \
         !#$%&'*+-.^_`|~ only, no spaces or controls"
    )]
    NotToken {
        /// Where the keyword is.
        pointer: String,
        /// The name as declared.
        name: String,
    },
    /// The keyword is on the root, or on a subschema not reached from the root through
    /// `properties` only (under `items`, `$defs`, `anyOf`…).
    #[error(
        "x-mcp-header {name:?} is not on a property reached from the root through \
         `properties` only"
    )]
    NotOnProperty {
        /// Where the keyword is.
        pointer: String,
        /// The name as declared.
        name: String,
    },
    /// The property's `type` is not `string`, `integer` or `boolean` (or there is none).
    #[error(
        "x-mcp-header {name:?} is on a property with {}; only string, integer and boolean \
         properties can be mirrored into headers",
        found_type(.found)
    )]
    UnsupportedType {
        /// Where the keyword is.
        pointer: String,
        /// The name as declared.
        name: String,
        /// The property's `type`, if it has one.
        found: Option<Value>,
    },
    /// An integer property whose bounds allow values beyond ±(2^53−1).
    #[error("x-mcp-header {name:?} is on an integer whose bounds exceed ±(2^53−1)")]
    UnsafeBounds {
        /// Where the keyword is.
        pointer: String,
        /// The name as declared.
        name: String,
    },
    /// Another property already uses this header name (names compare case-insensitively).
    #[error(
        "x-mcp-header {name:?} repeats the header of {first} (names compare \
         case-insensitively)"
    )]
    Duplicate {
        /// Where the keyword is.
        pointer: String,
        /// The name as declared.
        name: String,
        /// Where the first declaration of the name is.
        first: String,
    },
    /// An integer argument beyond ±(2^53−1), or not a whole number.
    #[error("argument for header {header} is not a safe integer: {value}")]
    UnsafeInteger {
        /// The header name, e.g. `Mcp-Param-Count`.
        header: String,
        /// The argument.
        value: Number,
    },
    /// An argument that is not a string, a number or a boolean.
    #[error("argument for header {header} cannot be a header value: {value}")]
    NotScalar {
        /// The header name, e.g. `Mcp-Param-Region`.
        header: String,
        /// The argument.
        value: Value,
    },
}

impl ParamHeaderError {
    /// Where in the input schema the faulty declaration is; `None` for errors in
    /// arguments.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            ParamHeaderError::NotString { pointer, .. }
            | ParamHeaderError::NotToken { pointer, .. }
            | ParamHeaderError::NotOnProperty { pointer, .. }
            | ParamHeaderError::UnsupportedType { pointer, .. }
            | ParamHeaderError::UnsafeBounds { pointer, .. }
            | ParamHeaderError::Duplicate { pointer, .. } => Some(pointer),
            ParamHeaderError::UnsafeInteger { .. } | ParamHeaderError::NotScalar { .. } => None,
        }
    }
}

fn found_type(found: &Option<Value>) -> String {
    match found {
        Some(t) => format!("type {t}"),
        None => "no type".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    macro_rules! displays {
        ($($name:ident: $err:expr => $text:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!($err.to_string(), $text);
            }
        )*};
    }

    fn at() -> String {
        "/properties/p".to_owned()
    }

    displays! {
        name_empty: ToolNameError::Empty => "the name is empty";
        name_long: ToolNameError::TooLong { name: "x".repeat(130), len: 130 } => "the name is 130 characters long; the spec allows at most 128";
        name_char: ToolNameError::Charset { name: "a b".into(), chars: vec![' '] } => "the name contains ' '; only A-Z, a-z, 0-9, '_', '-' and '.' are allowed";
        name_chars: ToolNameError::Charset { name: "a b/c".into(), chars: vec![' ', '/'] } => "the name contains ' ' and more; only A-Z, a-z, 0-9, '_', '-' and '.' are allowed";
        not_string: ParamHeaderError::NotString { pointer: at(), value: json!(7) } => "x-mcp-header is 7, not a string";
        not_token: ParamHeaderError::NotToken { pointer: at(), name: "A B".into() } => "x-mcp-header \"A B\" is not an HTTP token (RFC 9110): letters, digits and !#$%&'*+-.^_`|~ only, no spaces or controls";
        off_path: ParamHeaderError::NotOnProperty { pointer: String::new(), name: "R".into() } => "x-mcp-header \"R\" is not on a property reached from the root through `properties` only";
        typed: ParamHeaderError::UnsupportedType { pointer: at(), name: "N".into(), found: Some(json!("number")) } => "x-mcp-header \"N\" is on a property with type \"number\"; only string, integer and boolean properties can be mirrored into headers";
        untyped: ParamHeaderError::UnsupportedType { pointer: at(), name: "N".into(), found: None } => "x-mcp-header \"N\" is on a property with no type; only string, integer and boolean properties can be mirrored into headers";
        bounds: ParamHeaderError::UnsafeBounds { pointer: at(), name: "N".into() } => "x-mcp-header \"N\" is on an integer whose bounds exceed ±(2^53−1)";
        duplicate: ParamHeaderError::Duplicate { pointer: at(), name: "dup".into(), first: "/properties/a".into() } => "x-mcp-header \"dup\" repeats the header of /properties/a (names compare case-insensitively)";
        unsafe_integer: ParamHeaderError::UnsafeInteger { header: "Mcp-Param-N".into(), value: serde_json::Number::from_f64(1e300).unwrap() } => "argument for header Mcp-Param-N is not a safe integer: 1e+300";
        not_scalar: ParamHeaderError::NotScalar { header: "Mcp-Param-R".into(), value: json!([1]) } => "argument for header Mcp-Param-R cannot be a header value: [1]";
    }

    #[test]
    fn pointers() {
        let e = ParamHeaderError::NotToken {
            pointer: at(),
            name: String::new(),
        };
        assert_eq!(e.pointer(), Some("/properties/p"));
        let e = ParamHeaderError::NotScalar {
            header: "Mcp-Param-R".into(),
            value: json!(null),
        };
        assert_eq!(e.pointer(), None);
    }
}
