//! The pre-scan that refuses references needing retrieval, before
//! `jsonschema` ever sees the schema.
//!
//! It walks every subschema position (keyword-aware, per dialect, so a
//! `"$ref"` key inside `const` or `enum` data is not mistaken for a
//! reference), tracks the base URI that `$id` (`id` in draft 4) establishes,
//! and records each resource the document defines. A reference is local when
//! it resolves, against its base, to one of those resources (or to a
//! meta-schema `jsonschema` bundles for the document's dialect); anything
//! else is [`SchemaError::ExternalRef`] with the pointer of the reference
//! keyword. A JSON Pointer fragment must lead somewhere in the document, and
//! what it leads to is scanned too; whether an anchor exists is left to
//! `jsonschema`, which reports a dangling one as an invalid schema.

use std::collections::{HashMap, HashSet};

use jsonschema::Uri;
use serde_json::{Map, Value};

use crate::SchemaError;
use crate::dialect::{Dialect, is_bundled_meta_schema};
use crate::pointer::{percent_decode, push_segment};

/// The base URI of a document without `$id`; the one `jsonschema` uses too.
const DEFAULT_BASE: &str = "json-schema:///";

/// Refuse `schema` if any reference in it would need a retrieval, or if an
/// embedded resource declares an unsupported `$schema`.
pub(crate) fn check_references(schema: &Value, dialect: Dialect) -> Result<(), SchemaError> {
    let base = jsonschema::uri::from_str(DEFAULT_BASE).map_err(|err| SchemaError::Invalid {
        pointer: String::new(),
        message: err.to_string(),
    })?;
    let mut scan = Scan::default();
    scan.resources
        .insert(strip_fragment(&base), (String::new(), dialect));
    scan.walk(schema, &mut String::new(), &base, dialect, true)?;
    let root_dialect = dialect;
    // Walking a target may record further references, so index, don't iterate.
    let mut next = 0;
    while let Some(site) = scan.refs.get(next) {
        next += 1;
        let resolved = match jsonschema::uri::resolve_against(&site.base.borrow(), &site.reference)
        {
            Ok(resolved) => resolved,
            // Well-formed but unresolvable here (a relative path against a
            // `urn:` base, say): it cannot name anything in this document.
            Err(_) if jsonschema::uri::from_str(&site.reference).is_ok() => {
                return Err(SchemaError::ExternalRef {
                    reference: site.reference.clone(),
                    pointer: site.pointer.clone(),
                });
            }
            Err(err) => {
                return Err(SchemaError::Invalid {
                    pointer: site.pointer.clone(),
                    message: format!("malformed reference {:?}: {err}", site.reference),
                });
            }
        };
        let resource = strip_fragment(&resolved);
        let Some((resource_pointer, dialect)) = scan.resources.get(&resource) else {
            if is_bundled_meta_schema(&resource, root_dialect) {
                continue;
            }
            return Err(SchemaError::ExternalRef {
                reference: site.reference.clone(),
                pointer: site.pointer.clone(),
            });
        };
        // A JSON Pointer fragment may lead where the walk did not go (under
        // an unknown keyword, say): what `jsonschema` will compile there is
        // scanned too.
        let Some(fragment) = site
            .reference
            .split_once('#')
            .map(|(_, f)| percent_decode(f))
        else {
            continue;
        };
        if !fragment.starts_with('/') {
            continue;
        }
        let mut target_pointer = format!("{resource_pointer}{fragment}");
        if scan.visited.contains(&target_pointer) {
            continue;
        }
        let Some(target) = schema.pointer(&target_pointer) else {
            return Err(SchemaError::Invalid {
                pointer: site.pointer.clone(),
                message: format!(
                    "reference {:?} points to nothing: there is no {target_pointer:?} in this schema",
                    site.reference
                ),
            });
        };
        let dialect = *dialect;
        let base = jsonschema::uri::from_str(&resource).unwrap_or_else(|_| base.clone());
        scan.walk(target, &mut target_pointer, &base, dialect, false)?;
    }
    Ok(())
}

/// One reference keyword: what it says, where it is, what it resolves against.
struct RefSite {
    reference: String,
    pointer: String,
    base: Uri<String>,
}

#[derive(Default)]
struct Scan {
    /// The resources the document defines: absolute URI (without fragment)
    /// to where the resource sits in the document and its dialect.
    resources: HashMap<String, (String, Dialect)>,
    /// Pointers of the schema objects walked so far.
    visited: HashSet<String>,
    refs: Vec<RefSite>,
}

/// How a keyword holds subschemas.
enum Children {
    One,
    Many,
    Named,
    /// `dependencies`: a map whose object or boolean values are subschemas.
    Dependencies,
}

/// The subschema keywords of `dialect`, deliberately generous (`$defs` and
/// `definitions` everywhere): scanning a position `jsonschema` ignores can
/// only make the check stricter, never let a retrieval through.
fn children(keyword: &str, dialect: Dialect) -> Option<Children> {
    let modern = dialect >= Dialect::Draft201909;
    Some(match keyword {
        "additionalProperties" | "contains" | "not" | "propertyNames" => Children::One,
        "if" | "then" | "else" if dialect >= Dialect::Draft7 => Children::One,
        "additionalItems" if dialect < Dialect::Draft202012 => Children::One,
        "unevaluatedItems" | "unevaluatedProperties" | "contentSchema" if modern => Children::One,
        // `items` is one schema, or (before 2020-12) an array of them.
        "items" => Children::One,
        "allOf" | "anyOf" | "oneOf" => Children::Many,
        "prefixItems" if dialect == Dialect::Draft202012 => Children::Many,
        "properties" | "patternProperties" | "definitions" | "$defs" => Children::Named,
        "dependentSchemas" if modern => Children::Named,
        "dependencies" => Children::Dependencies,
        _ => return None,
    })
}

impl Scan {
    fn walk(
        &mut self,
        schema: &Value,
        pointer: &mut String,
        base: &Uri<String>,
        dialect: Dialect,
        is_root: bool,
    ) -> Result<(), SchemaError> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if !self.visited.insert(pointer.clone()) {
            return Ok(());
        }
        let dialect = self.nested_dialect(map, pointer, dialect, is_root)?;
        // Drafts 4-7 ignore every sibling of `$ref`, `$id` included. Its
        // subschemas are still scanned: a `$ref` may point into them.
        let base = if map.contains_key("$ref") && dialect.ignores_ref_siblings() {
            base.clone()
        } else {
            self.enter_resource(map, pointer, base, dialect)?
        };
        self.record_ref(map, "$ref", pointer, &base);
        match dialect {
            Dialect::Draft201909 => self.record_ref(map, "$recursiveRef", pointer, &base),
            Dialect::Draft202012 => self.record_ref(map, "$dynamicRef", pointer, &base),
            _ => {}
        }
        for (keyword, value) in map {
            let Some(kind) = children(keyword, dialect) else {
                continue;
            };
            let len = pointer.len();
            push_segment(pointer, keyword);
            match (kind, value) {
                (Children::One | Children::Many, Value::Array(items)) => {
                    self.walk_items(items, pointer, &base, dialect)?;
                }
                (Children::One, sub) => self.walk(sub, pointer, &base, dialect, false)?,
                (Children::Named, Value::Object(named)) => {
                    self.walk_named(named, pointer, &base, dialect, false)?;
                }
                (Children::Dependencies, Value::Object(named)) => {
                    self.walk_named(named, pointer, &base, dialect, true)?;
                }
                _ => {}
            }
            pointer.truncate(len);
        }
        Ok(())
    }

    fn walk_items(
        &mut self,
        items: &[Value],
        pointer: &mut String,
        base: &Uri<String>,
        dialect: Dialect,
    ) -> Result<(), SchemaError> {
        for (index, item) in items.iter().enumerate() {
            let len = pointer.len();
            push_segment(pointer, &index.to_string());
            self.walk(item, pointer, base, dialect, false)?;
            pointer.truncate(len);
        }
        Ok(())
    }

    fn walk_named(
        &mut self,
        named: &Map<String, Value>,
        pointer: &mut String,
        base: &Uri<String>,
        dialect: Dialect,
        skip_arrays: bool,
    ) -> Result<(), SchemaError> {
        for (name, sub) in named {
            if skip_arrays && sub.is_array() {
                continue;
            }
            let len = pointer.len();
            push_segment(pointer, name);
            self.walk(sub, pointer, base, dialect, false)?;
            pointer.truncate(len);
        }
        Ok(())
    }

    /// The dialect a nested `$schema` switches to; the root's was settled by
    /// the caller (possibly overridden), so only nested ones are read here.
    fn nested_dialect(
        &self,
        map: &Map<String, Value>,
        pointer: &str,
        dialect: Dialect,
        is_root: bool,
    ) -> Result<Dialect, SchemaError> {
        if is_root {
            return Ok(dialect);
        }
        match map.get("$schema") {
            Some(Value::String(uri)) => Dialect::from_uri(uri)
                .ok_or_else(|| SchemaError::UnsupportedDialect { uri: uri.clone() }),
            Some(other) => Err(SchemaError::Invalid {
                pointer: format!("{pointer}/$schema"),
                message: format!(
                    "$schema must be a meta-schema URI string, found {}",
                    crate::error::json_kind(other)
                ),
            }),
            None => Ok(dialect),
        }
    }

    /// The base URI inside `map`: changed by a non-fragment `$id`, which also
    /// defines a resource that references may name.
    fn enter_resource(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        base: &Uri<String>,
        dialect: Dialect,
    ) -> Result<Uri<String>, SchemaError> {
        let keyword = dialect.id_keyword();
        let Some(Value::String(id)) = map.get(keyword) else {
            return Ok(base.clone());
        };
        // In drafts 4-7 an `$id` of just a fragment is a plain-name anchor.
        if id.starts_with('#') {
            return Ok(base.clone());
        }
        let resolved = jsonschema::uri::resolve_against(&base.borrow(), id).map_err(|err| {
            SchemaError::Invalid {
                pointer: format!("{pointer}/{keyword}"),
                message: format!("cannot resolve {keyword} {id:?}: {err}"),
            }
        })?;
        self.resources
            .insert(strip_fragment(&resolved), (pointer.to_owned(), dialect));
        Ok(resolved)
    }

    fn record_ref(
        &mut self,
        map: &Map<String, Value>,
        keyword: &str,
        pointer: &str,
        base: &Uri<String>,
    ) {
        // A non-string reference is the meta-schema check's to report.
        if let Some(Value::String(reference)) = map.get(keyword) {
            let mut at = pointer.to_owned();
            push_segment(&mut at, keyword);
            self.refs.push(RefSite {
                reference: reference.clone(),
                pointer: at,
                base: base.clone(),
            });
        }
    }
}

/// `uri` without its fragment, as text.
fn strip_fragment(uri: &Uri<String>) -> String {
    let text = uri.as_str();
    text.split_once('#')
        .map_or(text, |(head, _)| head)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `Ok(())`, or the (reference, pointer) of the refused reference.
    fn scan(schema: Value) -> Result<(), (String, String)> {
        let dialect = crate::dialect_of(&schema).expect("test schemas declare a known dialect");
        check_references(&schema, dialect).map_err(|err| match err {
            SchemaError::ExternalRef { reference, pointer } => (reference, pointer),
            other => panic!("expected ExternalRef, got {other:?}"),
        })
    }

    fn refused(reference: &str, pointer: &str) -> Result<(), (String, String)> {
        Err((reference.to_owned(), pointer.to_owned()))
    }

    macro_rules! scans {
        ($($name:ident: $schema:tt => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(scan(json!($schema)), $expected);
            }
        )*};
    }

    scans! {
        no_refs: {"type": "object"} => Ok(());
        pointer_ref: {"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"} => Ok(());
        root_ref: {"properties": {"self": {"$ref": "#"}}} => Ok(());
        anchor_ref: {"$defs": {"a": {"$anchor": "x"}}, "$ref": "#x"} => Ok(());
        https_ref: {"properties": {"a": {"$ref": "https://evil.example/x.json"}}} => refused("https://evil.example/x.json", "/properties/a/$ref");
        http_ref: {"$ref": "http://evil.example/x.json#/a"} => refused("http://evil.example/x.json#/a", "/$ref");
        file_ref: {"allOf": [{"$ref": "file:///etc/passwd"}]} => refused("file:///etc/passwd", "/allOf/0/$ref");
        relative_ref: {"items": {"$ref": "other.json#/a"}} => refused("other.json#/a", "/items/$ref");
        relative_ref_against_id: {"$id": "https://a.example/root.json", "$ref": "other.json"} => refused("other.json", "/$ref");
        id_defined_inside: {"$id": "https://a.example/root.json", "$defs": {"o": {"$id": "other.json", "type": "string"}}, "$ref": "other.json"} => Ok(());
        absolute_id_defined_inside: {"$defs": {"o": {"$id": "urn:example:o"}}, "properties": {"p": {"$ref": "urn:example:o"}}} => Ok(());
        own_id_with_fragment: {"$id": "https://a.example/root.json", "$defs": {"a": true}, "$ref": "https://a.example/root.json#/$defs/a"} => Ok(());
        dynamic_ref_external: {"$dynamicRef": "https://evil.example/x#meta"} => refused("https://evil.example/x#meta", "/$dynamicRef");
        dynamic_ref_local: {"$dynamicAnchor": "m", "$dynamicRef": "#m"} => Ok(());
        recursive_ref_local: {"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": true, "$recursiveRef": "#"} => Ok(());
        ref_inside_const_is_data: {"const": {"$ref": "https://evil.example/x"}} => Ok(());
        ref_inside_enum_is_data: {"enum": [{"$ref": "https://evil.example/x"}]} => Ok(());
        property_named_ref: {"properties": {"$ref": {"type": "string"}}} => Ok(());
        escaped_pointer: {"properties": {"a/b~c": {"$ref": "https://evil.example/"}}} => refused("https://evil.example/", "/properties/a~1b~0c/$ref");
        bundled_meta_schema: {"$ref": "https://json-schema.org/draft/2020-12/schema"} => Ok(());
        pointer_into_unknown_keyword: {"x-extra": {"items": {"$ref": "https://evil.example/"}}, "$ref": "#/x-extra"} => refused("https://evil.example/", "/x-extra/items/$ref");
        percent_encoded_pointer: {"x-a b": {"$ref": "x.json"}, "$ref": "#/x-a%20b"} => refused("x.json", "/x-a b/$ref");
        pointer_into_id_resource: {"$defs": {"r": {"$id": "https://a.example/r", "x-k": {"$ref": "y.json"}}}, "$ref": "https://a.example/r#/x-k"} => refused("y.json", "/$defs/r/x-k/$ref");
        relative_against_urn: {"$defs": {"r": {"$id": "urn:r", "items": {"$ref": "y.json"}}}} => refused("y.json", "/$defs/r/items/$ref");
        self_cycle_terminates: {"x-a": {"$ref": "#/x-a"}, "$ref": "#/x-a"} => Ok(());
        draft7_dependencies_schema: {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "c": {"$ref": "https://evil.example/"}}} => refused("https://evil.example/", "/dependencies/c/$ref");
        draft7_items_array: {"$schema": "http://json-schema.org/draft-07/schema#", "items": [true, {"$ref": "x.json"}]} => refused("x.json", "/items/1/$ref");
        draft7_ref_sibling_id_ignored: {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$ref": "#", "$id": "https://a.example/x"}}, "properties": {"p": {"$ref": "https://a.example/x"}}} => refused("https://a.example/x", "/properties/p/$ref");
        draft7_ref_siblings_still_scanned: {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/a", "definitions": {"a": {"$ref": "https://evil.example/"}}} => refused("https://evil.example/", "/definitions/a/$ref");
        draft4_id_defines_resource: {"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"a": {"id": "https://a.example/a"}}, "$ref": "https://a.example/a"} => Ok(());
        draft7_fragment_id_is_anchor: {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$id": "#frag"}}, "$ref": "#frag"} => Ok(());
    }

    #[test]
    fn nested_unknown_dialect_refused() {
        let schema =
            json!({"$defs": {"a": {"$id": "urn:a", "$schema": "https://example.com/meta"}}});
        let err = check_references(&schema, Dialect::Draft202012).unwrap_err();
        assert!(
            matches!(&err, SchemaError::UnsupportedDialect { uri } if uri == "https://example.com/meta"),
            "{err:?}"
        );
    }

    #[test]
    fn dangling_pointer_is_invalid_at_the_ref() {
        let schema = json!({"properties": {"a": {"$ref": "#/$defs/missing"}}});
        let err = check_references(&schema, Dialect::Draft202012).unwrap_err();
        assert_eq!(
            err,
            SchemaError::Invalid {
                pointer: "/properties/a/$ref".into(),
                message: r##"reference "#/$defs/missing" points to nothing: there is no "/$defs/missing" in this schema"##.into(),
            }
        );
    }

    #[test]
    fn malformed_reference_is_invalid() {
        let schema = json!({"properties": {"a": {"$ref": "http://[oops"}}});
        let err = check_references(&schema, Dialect::Draft202012).unwrap_err();
        assert!(
            matches!(&err, SchemaError::Invalid { pointer, .. } if pointer == "/properties/a/$ref"),
            "{err:?}"
        );
    }
}
