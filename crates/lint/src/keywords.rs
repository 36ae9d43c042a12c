//! `keyword-typo`: keys that are not keywords but are a small edit away from one
//! (`require`, `minimun`, `additionalproperties`), in schemas, in the tool object and in
//! its annotations. Unknown keys far from every keyword are left alone: vendors add their
//! own.

use serde_json::{Map, Value};

use crate::finding::{Rule, Sink, push_pointer};

/// Every keyword of JSON Schema drafts 4 to 2020-12, plus common annotations.
pub(crate) const SCHEMA_KEYWORDS: &[&str] = &[
    "$anchor",
    "$comment",
    "$defs",
    "$dynamicAnchor",
    "$dynamicRef",
    "$id",
    "$recursiveAnchor",
    "$recursiveRef",
    "$ref",
    "$schema",
    "$vocabulary",
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "const",
    "contains",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "default",
    "definitions",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "deprecated",
    "description",
    "else",
    "enum",
    "examples",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "id",
    "if",
    "items",
    "maxContains",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minContains",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "prefixItems",
    "properties",
    "propertyNames",
    "readOnly",
    "required",
    "then",
    "title",
    "type",
    "unevaluatedItems",
    "unevaluatedProperties",
    "uniqueItems",
    "writeOnly",
];

/// Keys that are not JSON Schema but are common and deliberate (OpenAPI and friends).
const TOLERATED: &[&str] = &[
    "discriminator",
    "enumNames",
    "example",
    "externalDocs",
    "nullable",
    "xml",
];

/// The fields of a tool definition.
pub(crate) const TOOL_FIELDS: &[&str] = &[
    "_meta",
    "annotations",
    "description",
    "execution",
    "icons",
    "inputSchema",
    "name",
    "outputSchema",
    "title",
];

/// The fields of tool annotations.
pub(crate) const ANNOTATION_FIELDS: &[&str] = &[
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
    "readOnlyHint",
    "title",
];

/// Checks the keys of one object against `known`.
pub(crate) fn check_keys(
    map: &Map<String, Value>,
    at: &str,
    known: &'static [&'static str],
    sink: &mut Sink<'_>,
) {
    for key in map.keys() {
        if let Some(meant) = suggest(key, known) {
            sink.add(
                Rule::KeywordTypo,
                push_pointer(at, key),
                format!("{key:?} is not a keyword; it is ignored (did you mean {meant:?}?)"),
                format!("rename {key:?} to {meant:?}"),
            );
        }
    }
}

/// The keyword `key` probably meant, if it is not one itself.
pub(crate) fn suggest(key: &str, known: &'static [&'static str]) -> Option<&'static str> {
    if known.contains(&key) || TOLERATED.contains(&key) || key.starts_with("x-") {
        return None;
    }
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let key_norm = norm(key);
    if let Some(k) = known.iter().find(|k| norm(k) == key_norm) {
        return Some(k);
    }
    if let Some(k) = known
        .iter()
        .find(|k| k.ends_with("Hint") && norm(k) == format!("{key_norm}hint"))
    {
        return Some(k);
    }
    if key.chars().count() < 4 {
        return None;
    }
    let mut best: Option<(usize, &'static str)> = None;
    for k in known {
        let limit = match k.len() {
            0..=5 => 1,
            6..=11 => 2,
            _ => 3,
        };
        let d = distance(&key.to_lowercase(), &k.to_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and
/// transpositions of neighbours each cost 1.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        for (a, b, d) in [
            ("", "", 0),
            ("abc", "abc", 0),
            ("require", "required", 1),
            ("minimun", "minimum", 1),
            ("ab", "ba", 1),
            ("kitten", "sitting", 3),
        ] {
            assert_eq!(distance(a, b), d, "{a} {b}");
        }
    }

    #[test]
    fn schema_typos() {
        for (key, meant) in [
            ("require", Some("required")),
            ("minimun", Some("minimum")),
            ("additionalproperties", Some("additionalProperties")),
            ("additional_properties", Some("additionalProperties")),
            ("addtionalProperties", Some("additionalProperties")),
            ("additionalProperty", Some("additionalProperties")),
            ("maxlength", Some("maxLength")),
            ("descripton", Some("description")),
            ("enums", Some("enum")),
            ("$def", Some("$defs")),
            ("required", None),
            ("maximum", None),
            ("x-vendor", None),
            ("example", None),
            ("in", None),
            ("label", None),
            ("tags", None),
            ("units", None),
        ] {
            assert_eq!(suggest(key, SCHEMA_KEYWORDS), meant, "{key}");
        }
    }

    #[test]
    fn tool_and_annotation_typos() {
        assert_eq!(suggest("input_schema", TOOL_FIELDS), Some("inputSchema"));
        assert_eq!(suggest("descripion", TOOL_FIELDS), Some("description"));
        assert_eq!(suggest("parameters", TOOL_FIELDS), None);
        assert_eq!(suggest("readOnly", ANNOTATION_FIELDS), Some("readOnlyHint"));
        assert_eq!(
            suggest("destructivehint", ANNOTATION_FIELDS),
            Some("destructiveHint")
        );
        assert_eq!(suggest("openWorldHint", ANNOTATION_FIELDS), None);
    }
}
