//! JSON Schema dialects (drafts) and how a schema names its own.

use std::fmt;

use serde_json::Value;

use crate::SchemaError;

/// A JSON Schema dialect this crate can compile.
///
/// A schema names its dialect with the `$schema` keyword; without one it is
/// read as [`Dialect::Draft202012`], the current draft (and the one MCP uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// Draft 4 (`http://json-schema.org/draft-04/schema#`).
    Draft4,
    /// Draft 6 (`http://json-schema.org/draft-06/schema#`).
    Draft6,
    /// Draft 7 (`http://json-schema.org/draft-07/schema#`).
    Draft7,
    /// Draft 2019-09 (`https://json-schema.org/draft/2019-09/schema`).
    Draft201909,
    /// Draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`), the default.
    Draft202012,
}

impl Dialect {
    /// Every supported dialect, oldest first.
    pub const ALL: [Dialect; 5] = [
        Dialect::Draft4,
        Dialect::Draft6,
        Dialect::Draft7,
        Dialect::Draft201909,
        Dialect::Draft202012,
    ];

    /// The canonical meta-schema URI of this dialect, as the draft itself spells it.
    #[must_use]
    pub const fn meta_schema_uri(self) -> &'static str {
        match self {
            Dialect::Draft4 => "http://json-schema.org/draft-04/schema#",
            Dialect::Draft6 => "http://json-schema.org/draft-06/schema#",
            Dialect::Draft7 => "http://json-schema.org/draft-07/schema#",
            Dialect::Draft201909 => "https://json-schema.org/draft/2019-09/schema",
            Dialect::Draft202012 => "https://json-schema.org/draft/2020-12/schema",
        }
    }

    /// A short human name: `draft-04`, `draft-06`, `draft-07`, `2019-09` or `2020-12`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Draft4 => "draft-04",
            Dialect::Draft6 => "draft-06",
            Dialect::Draft7 => "draft-07",
            Dialect::Draft201909 => "2019-09",
            Dialect::Draft202012 => "2020-12",
        }
    }

    /// The dialect whose standard meta-schema URI is `uri`, if any.
    ///
    /// `http` and `https` are both accepted, with or without an empty
    /// trailing fragment (`#`). The version-less `https://json-schema.org/schema`
    /// ("whatever is latest") is not a dialect and is refused.
    #[must_use]
    pub fn from_uri(uri: &str) -> Option<Dialect> {
        let rest = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        let rest = rest.strip_suffix('#').unwrap_or(rest);
        Some(match rest {
            "json-schema.org/draft-04/schema" => Dialect::Draft4,
            "json-schema.org/draft-06/schema" => Dialect::Draft6,
            "json-schema.org/draft-07/schema" => Dialect::Draft7,
            "json-schema.org/draft/2019-09/schema" => Dialect::Draft201909,
            "json-schema.org/draft/2020-12/schema" => Dialect::Draft202012,
            _ => return None,
        })
    }

    /// Whether `$ref` siblings are ignored (drafts 4 to 7) rather than applied.
    pub(crate) const fn ignores_ref_siblings(self) -> bool {
        matches!(self, Dialect::Draft4 | Dialect::Draft6 | Dialect::Draft7)
    }

    /// The identifier keyword: `id` in draft 4, `$id` later.
    pub(crate) const fn id_keyword(self) -> &'static str {
        match self {
            Dialect::Draft4 => "id",
            _ => "$id",
        }
    }

    pub(crate) const fn to_draft(self) -> jsonschema::Draft {
        match self {
            Dialect::Draft4 => jsonschema::Draft::Draft4,
            Dialect::Draft6 => jsonschema::Draft::Draft6,
            Dialect::Draft7 => jsonschema::Draft::Draft7,
            Dialect::Draft201909 => jsonschema::Draft::Draft201909,
            Dialect::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dialect `schema` declares with `$schema`; 2020-12 when it declares none.
///
/// # Errors
///
/// - [`SchemaError::UnsupportedDialect`] when `$schema` names anything but the
///   standard meta-schema of a supported draft;
/// - [`SchemaError::Invalid`] when `$schema` is not a string;
/// - [`SchemaError::NotAnObject`] when `schema` is neither an object nor a boolean.
pub fn dialect_of(schema: &Value) -> Result<Dialect, SchemaError> {
    match schema {
        Value::Bool(_) => Ok(Dialect::Draft202012),
        Value::Object(map) => match map.get("$schema") {
            None => Ok(Dialect::Draft202012),
            Some(Value::String(uri)) => Dialect::from_uri(uri)
                .ok_or_else(|| SchemaError::UnsupportedDialect { uri: uri.clone() }),
            Some(other) => Err(SchemaError::Invalid {
                pointer: "/$schema".to_owned(),
                message: format!(
                    "$schema must be a meta-schema URI string, found {}",
                    crate::error::json_kind(other)
                ),
            }),
        },
        other => Err(SchemaError::NotAnObject {
            found: crate::error::json_kind(other),
        }),
    }
}

/// Whether `uri` (absolute, without fragment) names one of the meta-schemas
/// `jsonschema` bundles for a document of `dialect`, so that a reference to
/// it resolves without retrieval: the dialect's own meta-schema and, for
/// 2019-09 and 2020-12, its vocabulary meta-schemas, spelled exactly as the
/// draft spells them (`http` for drafts 4 to 7, `https` after).
pub(crate) fn is_bundled_meta_schema(uri: &str, dialect: Dialect) -> bool {
    let canonical = dialect.meta_schema_uri();
    if uri == canonical.trim_end_matches('#') {
        return true;
    }
    let vocabularies: &[&str] = match dialect {
        Dialect::Draft201909 => &[
            "applicator",
            "content",
            "core",
            "format",
            "meta-data",
            "validation",
        ],
        Dialect::Draft202012 => &[
            "applicator",
            "content",
            "core",
            "format-annotation",
            "format-assertion",
            "meta-data",
            "unevaluated",
            "validation",
        ],
        _ => return false,
    };
    let Some(draft_root) = canonical.strip_suffix("schema") else {
        return false;
    };
    uri.strip_prefix(draft_root)
        .and_then(|rest| rest.strip_prefix("meta/"))
        .is_some_and(|name| vocabularies.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    macro_rules! detects {
        ($($name:ident: $schema:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(dialect_of(&$schema).ok(), $expected);
            }
        )*};
    }

    detects! {
        absent_is_2020_12: json!({"type": "object"}) => Some(Dialect::Draft202012);
        boolean_is_2020_12: json!(true) => Some(Dialect::Draft202012);
        draft4_http_hash: json!({"$schema": "http://json-schema.org/draft-04/schema#"}) => Some(Dialect::Draft4);
        draft4_https_bare: json!({"$schema": "https://json-schema.org/draft-04/schema"}) => Some(Dialect::Draft4);
        draft6_http_hash: json!({"$schema": "http://json-schema.org/draft-06/schema#"}) => Some(Dialect::Draft6);
        draft6_http_bare: json!({"$schema": "http://json-schema.org/draft-06/schema"}) => Some(Dialect::Draft6);
        draft7_http_hash: json!({"$schema": "http://json-schema.org/draft-07/schema#"}) => Some(Dialect::Draft7);
        draft7_https_hash: json!({"$schema": "https://json-schema.org/draft-07/schema#"}) => Some(Dialect::Draft7);
        draft201909_https: json!({"$schema": "https://json-schema.org/draft/2019-09/schema"}) => Some(Dialect::Draft201909);
        draft201909_http_hash: json!({"$schema": "http://json-schema.org/draft/2019-09/schema#"}) => Some(Dialect::Draft201909);
        draft202012_https: json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}) => Some(Dialect::Draft202012);
        draft202012_https_hash: json!({"$schema": "https://json-schema.org/draft/2020-12/schema#"}) => Some(Dialect::Draft202012);
        unknown_uri_refused: json!({"$schema": "https://example.com/my-meta"}) => None;
        versionless_refused: json!({"$schema": "https://json-schema.org/schema"}) => None;
        draft3_refused: json!({"$schema": "http://json-schema.org/draft-03/schema#"}) => None;
        other_scheme_refused: json!({"$schema": "ftp://json-schema.org/draft-07/schema#"}) => None;
        non_string_refused: json!({"$schema": 7}) => None;
        non_schema_refused: json!("object") => None;
    }

    #[test]
    fn unknown_uri_is_unsupported_dialect_with_uri() {
        let err = dialect_of(&json!({"$schema": "https://example.com/my-meta"})).unwrap_err();
        assert!(
            matches!(&err, SchemaError::UnsupportedDialect { uri } if uri == "https://example.com/my-meta"),
            "{err:?}"
        );
    }

    #[test]
    fn non_string_schema_keyword_is_invalid_at_its_pointer() {
        let err = dialect_of(&json!({"$schema": 7})).unwrap_err();
        assert!(
            matches!(&err, SchemaError::Invalid { pointer, .. } if pointer == "/$schema"),
            "{err:?}"
        );
    }

    #[test]
    fn canonical_uris_round_trip() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_uri(dialect.meta_schema_uri()), Some(dialect));
        }
    }

    macro_rules! bundled {
        ($($name:ident: $uri:expr, $dialect:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(is_bundled_meta_schema($uri, $dialect), $expected);
            }
        )*};
    }

    bundled! {
        bundled_draft7: "http://json-schema.org/draft-07/schema", Dialect::Draft7 => true;
        bundled_draft7_https_not: "https://json-schema.org/draft-07/schema", Dialect::Draft7 => false;
        bundled_other_draft_not: "http://json-schema.org/draft-07/schema", Dialect::Draft202012 => false;
        bundled_2020: "https://json-schema.org/draft/2020-12/schema", Dialect::Draft202012 => true;
        bundled_2020_vocab: "https://json-schema.org/draft/2020-12/meta/validation", Dialect::Draft202012 => true;
        bundled_2019_vocab: "https://json-schema.org/draft/2019-09/meta/core", Dialect::Draft201909 => true;
        bundled_2019_vocab_in_2020_not: "https://json-schema.org/draft/2019-09/meta/core", Dialect::Draft202012 => false;
        not_bundled_unknown_vocab: "https://json-schema.org/draft/2020-12/meta/nope", Dialect::Draft202012 => false;
        not_bundled_other_host: "https://evil.example/draft/2020-12/schema", Dialect::Draft202012 => false;
    }
}
