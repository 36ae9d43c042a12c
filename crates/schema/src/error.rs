//! The crate's one error type: why a schema could not be compiled.

use serde_json::Value;

/// Why a schema was refused. Validation failures of an *instance* are not
/// errors of this kind: they are [`Violation`](crate::Violation)s.
///
/// Pointers are JSON Pointers (RFC 6901) into the schema document; the
/// document root is `""`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// `$schema` names a dialect this crate does not support.
    #[error(
        "unsupported JSON Schema dialect {uri:?}: $schema must name the meta-schema of \
         draft-04, draft-06, draft-07, 2019-09 or 2020-12 (or be left out for 2020-12)"
    )]
    UnsupportedDialect {
        /// The `$schema` value as written.
        uri: String,
    },
    /// A `$ref` (or `$dynamicRef`/`$recursiveRef`) points outside the schema
    /// document. Nothing is ever fetched, so such a schema cannot be compiled.
    #[error(
        "external reference {reference:?} at {}: only references to this same document \
         (\"#...\" fragments, or $id/anchors defined in it) are allowed; nothing is fetched",
        display_pointer(pointer)
    )]
    ExternalRef {
        /// The reference as written.
        reference: String,
        /// Where the reference keyword sits in the schema, e.g. `/properties/a/$ref`.
        pointer: String,
    },
    /// The schema breaks the rules of its dialect (its meta-schema), or
    /// cannot be compiled for another reason (a bad regex, a dangling local
    /// reference, ...).
    #[error("invalid schema at {}: {message}", display_pointer(pointer))]
    Invalid {
        /// Where in the schema the problem is.
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// The schema document is neither a JSON object nor a boolean.
    #[error("a JSON Schema must be an object or a boolean, but this one is {found}")]
    NotAnObject {
        /// What it is instead, e.g. `"a string"` or `"an array"`.
        found: &'static str,
    },
}

/// `/` for the root pointer, the pointer itself otherwise: a bare `""` reads
/// as nothing at all in a message.
pub(crate) fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// The kind of a JSON value with its article, for messages: `null`, `a boolean`,
/// `a number`, `a string`, `an array` or `an object`.
#[must_use]
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! displays {
        ($($name:ident: $err:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!($err.to_string(), $expected);
            }
        )*};
    }

    displays! {
        not_an_object: SchemaError::NotAnObject { found: "an array" } => "a JSON Schema must be an object or a boolean, but this one is an array";
        invalid_root: SchemaError::Invalid { pointer: String::new(), message: "m".into() } => "invalid schema at /: m";
        invalid_nested: SchemaError::Invalid { pointer: "/type".into(), message: "m".into() } => "invalid schema at /type: m";
        external_ref: SchemaError::ExternalRef { reference: "https://x/y".into(), pointer: "/$ref".into() } => "external reference \"https://x/y\" at /$ref: only references to this same document (\"#...\" fragments, or $id/anchors defined in it) are allowed; nothing is fetched";
        unsupported: SchemaError::UnsupportedDialect { uri: "u".into() } => "unsupported JSON Schema dialect \"u\": $schema must name the meta-schema of draft-04, draft-06, draft-07, 2019-09 or 2020-12 (or be left out for 2020-12)";
    }
}
