//! Visiting every subschema of a schema document, knowing which keywords hold subschemas
//! (so that a property *named* `default` is never mistaken for the keyword, nor data under
//! `enum` or `const` for a schema), and resolving local references.

use serde_json::Value;

use crate::pointer::{percent_decode, push_segment};

/// Keywords whose value is a map of name to subschema.
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is one subschema.
const ONE_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Deeper than this, subschemas are not visited (documents that deep are not tool schemas).
pub const MAX_WALK_DEPTH: usize = 64;

/// One subschema met by [`walk_subschemas`], and where it is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Subschema<'a> {
    /// The subschema (an object or a boolean).
    pub schema: &'a Value,
    /// JSON Pointer from the walk's `base`, e.g. `/inputSchema/properties/a`.
    pub pointer: String,
    /// JSON Pointer from the schema document's root, e.g. `/properties/a`.
    pub rel: String,
    /// `Some(name)` when this schema is the value of a `properties` entry.
    pub property: Option<&'a str>,
    /// The property names leading here when the path from the root goes only through
    /// `properties` (empty for the root itself); `None` otherwise.
    pub property_path: Option<Vec<&'a str>>,
}

/// Calls `visit` on `root` and on every subschema below it (not following `$ref`), parents
/// before children, in document order, at most [`MAX_WALK_DEPTH`] levels deep. `base`
/// prefixes every [`Subschema::pointer`]: where the document sits in a larger one
/// (`/inputSchema`), or `""`.
pub fn walk_subschemas<'a>(root: &'a Value, base: &str, visit: &mut dyn FnMut(&Subschema<'a>)) {
    let node = Subschema {
        schema: root,
        pointer: base.to_owned(),
        rel: String::new(),
        property: None,
        property_path: Some(Vec::new()),
    };
    walk_node(&node, base.len(), visit, 0);
}

fn walk_node<'a>(
    node: &Subschema<'a>,
    base_len: usize,
    visit: &mut dyn FnMut(&Subschema<'a>),
    depth: usize,
) {
    visit(node);
    let Value::Object(map) = node.schema else {
        return;
    };
    if depth >= MAX_WALK_DEPTH {
        return;
    }
    let child = |pointer: String, property: Option<&'a str>, path: Option<Vec<&'a str>>, schema| {
        let rel = pointer[base_len..].to_owned();
        Subschema {
            schema,
            pointer,
            rel,
            property,
            property_path: path,
        }
    };
    let pushed = |base: &str, token: &str| {
        let mut p = base.to_owned();
        push_segment(&mut p, token);
        p
    };
    for (key, value) in map {
        let key = key.as_str();
        if MAP_KEYWORDS.contains(&key) || (key == "dependencies" && value.is_object()) {
            let Value::Object(entries) = value else {
                continue;
            };
            let at = pushed(&node.pointer, key);
            for (name, sub) in entries {
                if !is_schema(sub) {
                    continue;
                }
                let (property, path) = if key == "properties" {
                    let path = node.property_path.as_ref().map(|p| {
                        let mut p = p.clone();
                        p.push(name.as_str());
                        p
                    });
                    (Some(name.as_str()), path)
                } else {
                    (None, None)
                };
                let n = child(pushed(&at, name), property, path, sub);
                walk_node(&n, base_len, visit, depth + 1);
            }
        } else if ONE_KEYWORDS.contains(&key) || (key == "items" && is_schema(value)) {
            if is_schema(value) {
                let n = child(pushed(&node.pointer, key), None, None, value);
                walk_node(&n, base_len, visit, depth + 1);
            }
        } else if LIST_KEYWORDS.contains(&key) || (key == "items" && value.is_array()) {
            let Value::Array(items) = value else {
                continue;
            };
            let at = pushed(&node.pointer, key);
            for (i, sub) in items.iter().enumerate() {
                if is_schema(sub) {
                    let n = child(pushed(&at, &i.to_string()), None, None, sub);
                    walk_node(&n, base_len, visit, depth + 1);
                }
            }
        }
    }
}

fn is_schema(v: &Value) -> bool {
    v.is_object() || v.is_boolean()
}

/// Resolves a local reference (`#`, or `#/…` with `%XX` escapes) against `root`; `None`
/// for anything else, or when nothing is there.
#[must_use]
pub fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    // A `#` fragment is a URI fragment: percent-decode it, then `pointer` unescapes ~0/~1.
    root.pointer(&percent_decode(pointer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pointers(schema: Value) -> Vec<String> {
        let mut out = Vec::new();
        walk_subschemas(&schema, "/s", &mut |n| {
            assert_eq!(n.pointer, format!("/s{}", n.rel));
            out.push(n.rel.clone());
        });
        out
    }

    #[test]
    fn visits_subschemas_only() {
        let s = json!({
            "type": "object",
            "properties": {"default": {"type": "string"}, "a/b": {"items": {"type": "integer"}}},
            "required": ["default"],
            "anyOf": [{"required": ["x"]}, true],
            "$defs": {"D": {"not": {}}},
            "enum": [{"type": "not a schema"}]
        });
        assert_eq!(
            pointers(s),
            [
                "",
                "/properties/default",
                "/properties/a~1b",
                "/properties/a~1b/items",
                "/anyOf/0",
                "/anyOf/1",
                "/$defs/D",
                "/$defs/D/not"
            ]
        );
    }

    #[test]
    fn property_paths_stop_at_other_keywords() {
        let s = json!({"properties": {"a": {"properties": {"b": {}}}, "c": {"items": {"properties": {"d": {}}}}}});
        let mut paths = Vec::new();
        walk_subschemas(&s, "", &mut |n| {
            paths.push((n.rel.clone(), n.property, n.property_path.clone()))
        });
        assert!(paths.contains(&("".into(), None, Some(vec![]))));
        assert!(paths.contains(&(
            "/properties/a/properties/b".into(),
            Some("b"),
            Some(vec!["a", "b"])
        )));
        assert!(paths.contains(&("/properties/c/items/properties/d".into(), Some("d"), None)));
    }

    #[test]
    fn depth_is_bounded() {
        let mut deep = json!({});
        for _ in 0..100 {
            deep = json!({"not": deep});
        }
        let mut count = 0;
        walk_subschemas(&deep, "", &mut |_| count += 1);
        assert_eq!(count, MAX_WALK_DEPTH + 1);
    }

    #[test]
    fn local_refs_resolve() {
        let root = json!({"$defs": {"a b": {"x": 1}, "c/d": 2}});
        assert_eq!(resolve_local(&root, "#/$defs/a%20b/x"), Some(&json!(1)));
        assert_eq!(resolve_local(&root, "#/$defs/c~1d"), Some(&json!(2)));
        assert_eq!(resolve_local(&root, "#"), Some(&root));
        assert_eq!(resolve_local(&root, "#/nothing"), None);
        assert_eq!(resolve_local(&root, "other.json#/x"), None);
    }
}
