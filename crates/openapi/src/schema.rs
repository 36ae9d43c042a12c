//! An OpenAPI schema as a self-contained JSON Schema 2020-12: every `$ref` inlined
//! (recursion cut at [`MAX_RECURSION`], nesting at [`MAX_NESTING`], [`MAX_EXPANSIONS`] in
//! all), 3.0's dialect rewritten
//! (`nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum`, `example`), OpenAPI-only
//! keywords (`discriminator`, `xml`, `externalDocs`, `x-*`) left out, and what the linter
//! would refuse repaired where the repair only loosens or restates the schema (an enum value
//! the type already excludes, a default of the wrong type, an array without `items`).
//!
//! Why inline rather than `$defs`: models fill arguments from the schema they are shown,
//! and several clients do not follow `$ref`; a self-contained schema is what every client
//! reads the same way.

use crate::load::{Spec, Version};
use serde_json::{Map, Value, json};

/// How many times one schema is expanded inside itself (a tree's `children: [Tree]`):
/// beyond it, the recursive occurrence is cut to `{type, description}` of the schema (any
/// value of that type), which accepts more than the original, never less.
pub const MAX_RECURSION: usize = 2;

/// How many references deep a schema is expanded at all: past it, a schema is cut the
/// same way. Keeps the tool file readable for APIs whose objects embed objects embedding
/// objects (GitHub's repository → owner → ...).
pub const MAX_NESTING: usize = 6;

/// How many references one schema (a parameter's, a body's, a response's) expands in all;
/// past it every further reference is cut. Bounds the work a description whose schemas
/// each refer to many others can cause (a fan-out of 100 over [`MAX_NESTING`] levels).
pub const MAX_EXPANSIONS: usize = 1000;

/// The longest description kept on a property.
pub const MAX_PROPERTY_DESCRIPTION: usize = 300;

/// Which side of the call a schema describes: `readOnly` properties are not sent, and
/// `writeOnly` ones do not come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Arguments (parameters, request body).
    Input,
    /// The result (a response body).
    Output,
}

/// Converts schemas of one [`Spec`].
pub struct Converter<'a> {
    spec: &'a Spec,
    side: Side,
    /// The identities (`doc#pointer`) of the references being expanded, outermost first.
    stack: Vec<String>,
    /// References expanded so far.
    expanded: usize,
}

impl<'a> Converter<'a> {
    /// A converter for `side`.
    pub fn new(spec: &'a Spec, side: Side) -> Converter<'a> {
        Converter {
            spec,
            side,
            stack: Vec::new(),
            expanded: 0,
        }
    }

    /// The JSON Schema for `schema`, found in document `doc`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Ref`] for a reference that cannot be followed.
    pub fn convert(&mut self, schema: &Value, doc: &str) -> Result<Value, crate::Error> {
        let map = match schema {
            Value::Object(m) => m,
            Value::Bool(_) => return Ok(schema.clone()),
            _ => return Ok(json!({})),
        };
        if let Some(r) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(map, r, doc);
        }
        let mut out = Map::new();
        for (key, value) in map {
            self.keyword(key, value, doc, map, &mut out)?;
        }
        if self.spec.version == Version::V30 {
            rewrite_30(map, &mut out);
        }
        repair(&mut out);
        required_defined(&mut out);
        Ok(Value::Object(out))
    }

    /// A `$ref` (with its siblings: 3.1 applies them beside the reference; a sibling
    /// description is kept in both versions).
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        r: &str,
        doc: &str,
    ) -> Result<Value, crate::Error> {
        let id = self.spec.id_of(doc, r);
        let found = self.spec.resolve(doc, r)?;
        let seen = self.stack.iter().filter(|s| **s == id).count();
        let mut out = if seen >= MAX_RECURSION
            || self.stack.len() >= MAX_NESTING
            || self.expanded >= MAX_EXPANSIONS
        {
            cut(found.value, r, seen >= MAX_RECURSION)
        } else {
            self.expanded += 1;
            self.stack.push(id);
            let converted = self.convert(found.value, found.doc);
            self.stack.pop();
            converted?
        };
        let siblings: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| k.as_str() != "$ref")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !siblings.is_empty() {
            let keep_all = self.spec.version == Version::V31;
            let mut extra = Map::new();
            for (k, v) in &siblings {
                if keep_all || k == "description" {
                    self.keyword(k, v, doc, &siblings, &mut extra)?;
                }
            }
            if self.spec.version == Version::V30 {
                rewrite_30(&siblings, &mut extra);
            }
            if let Value::Object(o) = &mut out {
                let clash = extra
                    .keys()
                    .any(|k| o.contains_key(k) && k != "description");
                if clash {
                    // Both apply: keep each whole, side by side.
                    out = json!({"allOf": [out, Value::Object(extra)]});
                } else {
                    o.extend(extra);
                }
            }
        }
        Ok(out)
    }

    /// One keyword of a schema object, converted into `out`.
    fn keyword(
        &mut self,
        key: &str,
        value: &Value,
        doc: &str,
        parent: &Map<String, Value>,
        out: &mut Map<String, Value>,
    ) -> Result<(), crate::Error> {
        match key {
            k if k.starts_with("x-") => {}
            "discriminator" | "xml" | "externalDocs" | "nullable" | "$schema" | "$id" => {}
            // 3.0's `example` is one value; 3.1 deprecates it for `examples`.
            "example" => {
                if !parent.contains_key("examples") {
                    out.insert("examples".into(), json!([value]));
                }
            }
            "properties" | "patternProperties" | "dependentSchemas" | "$defs" | "definitions" => {
                let Value::Object(members) = value else {
                    return Ok(());
                };
                let mut converted = Map::new();
                for (name, s) in members {
                    if key == "properties" && self.hidden(s, doc) {
                        continue;
                    }
                    let mut c = self.convert(s, doc)?;
                    if key == "properties" && self.side == Side::Input {
                        describe_property(name, &mut c);
                    }
                    converted.insert(name.clone(), c);
                }
                out.insert(key.into(), Value::Object(converted));
            }
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "if"
            | "then"
            | "else"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems" => {
                out.insert(key.into(), self.convert(value, doc)?);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                let Value::Array(items) = value else {
                    return Ok(());
                };
                let mut converted = Vec::with_capacity(items.len());
                for s in items {
                    converted.push(self.convert(s, doc)?);
                }
                out.insert(key.into(), Value::Array(converted));
            }
            "required" => {
                // 3.0 descriptions sometimes say `required: true` on a property.
                if let Value::Array(names) = value {
                    out.insert(key.into(), Value::Array(names.clone()));
                }
            }
            "description" | "title" => {
                if let Value::String(s) = value {
                    let limit = if key == "description" {
                        MAX_PROPERTY_DESCRIPTION
                    } else {
                        120
                    };
                    out.insert(key.into(), Value::String(crate::text::cut(s, limit)));
                }
            }
            _ => {
                out.insert(key.into(), value.clone());
            }
        }
        Ok(())
    }

    /// Whether a property is left out on this side (`readOnly` in arguments, `writeOnly` in
    /// results).
    fn hidden(&self, schema: &Value, doc: &str) -> bool {
        let flag = match self.side {
            Side::Input => "readOnly",
            Side::Output => "writeOnly",
        };
        let direct = schema.get(flag).and_then(Value::as_bool) == Some(true);
        direct
            || self
                .spec
                .deref(schema, doc)
                .is_ok_and(|f| f.value.get(flag).and_then(Value::as_bool) == Some(true))
    }
}

/// What stands for a schema not expanded: its type (when it names one) and description,
/// saying why it stops there.
fn cut(target: &Value, reference: &str, recursive: bool) -> Value {
    let mut out = Map::new();
    if let Some(t) = target.get("type").filter(|t| t.is_string() || t.is_array()) {
        out.insert("type".into(), t.clone());
        if t == "array" || t.as_array().is_some_and(|a| a.iter().any(|x| x == "array")) {
            out.insert("items".into(), json!({}));
        }
    }
    let name = reference.rsplit('/').next().unwrap_or(reference);
    let why = if recursive {
        format!("recursive {name}, not expanded past {MAX_RECURSION} levels")
    } else {
        format!("{name}, not expanded past {MAX_NESTING} levels of nesting")
    };
    let text = match target.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{} ({why})", crate::text::cut(d, 200)),
        _ => format!("A {why}."),
    };
    out.insert("description".into(), Value::String(text));
    Value::Object(out)
}

/// 3.0's dialect as 2020-12: `nullable: true` allows null (in `type`, in `enum`, or beside
/// a schema with no type); `exclusiveMinimum: true` with `minimum: n` becomes
/// `exclusiveMinimum: n` (and the same for the maximum).
fn rewrite_30(original: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match original.get(flag) {
            Some(Value::Bool(true)) => {
                out.remove(flag);
                if let Some(n) = out.remove(bound) {
                    out.insert(flag.into(), n);
                }
            }
            Some(Value::Bool(false)) => {
                out.remove(flag);
            }
            _ => {}
        }
    }
    if original.get("nullable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            out.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) => {
            if !ts.iter().any(|t| t == "null") {
                ts.push(json!("null"));
            }
        }
        _ => {
            let mut inner = std::mem::take(out);
            // What describes the value as a whole (a `default: null` above all) moves out,
            // beside the choice.
            let mut outer = Map::new();
            for k in ["description", "title", "default", "examples", "deprecated"] {
                if let Some(v) = inner.remove(k) {
                    outer.insert(k.into(), v);
                }
            }
            outer.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            *out = outer;
        }
    }
}

/// The JSON types a schema's `type` names.
fn types(map: &Map<String, Value>) -> Option<Vec<String>> {
    match map.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Whether `v` is of JSON Schema type `t`.
pub(crate) fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|n| n.fract() == 0.0),
        _ => true,
    }
}

/// Repairs that only restate or loosen: enum values the `type` already excludes (they could
/// never validate) and repeats are taken out (an enum left empty goes, the type stays); a
/// `default` of a type or value the schema excludes goes; an `array` gets `items: {}`
/// (any item) when nothing says what its items are; an unknown `type` goes.
fn repair(out: &mut Map<String, Value>) {
    if let Some(Value::Array(ts)) = out.get("type")
        && ts.iter().any(|t| !t.is_string())
    {
        out.remove("type");
    }
    if let Some(Value::String(t)) = out.get("type")
        && !matches!(
            t.as_str(),
            "null" | "boolean" | "object" | "array" | "string" | "number" | "integer"
        )
    {
        out.remove("type");
    }
    let ts = types(out);
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        let mut kept: Vec<Value> = Vec::with_capacity(values.len());
        for v in values.drain(..) {
            let typed = ts
                .as_ref()
                .is_none_or(|ts| ts.iter().any(|t| has_type(&v, t)));
            if typed && !kept.contains(&v) {
                kept.push(v);
            }
        }
        if kept.is_empty() {
            out.remove("enum");
        } else {
            *values = kept;
        }
    } else if out.get("enum").is_some() {
        out.remove("enum");
    }
    if let Some(d) = out.get("default") {
        let typed = ts
            .as_ref()
            .is_none_or(|ts| ts.iter().any(|t| has_type(d, t)));
        let listed = out
            .get("enum")
            .and_then(Value::as_array)
            .is_none_or(|e| e.contains(d));
        let valid = typed && listed && (simple_default(out) || default_validates(out));
        if !valid {
            out.remove("default");
        }
    }
    let is_array = ts
        .as_ref()
        .is_some_and(|ts| ts.iter().any(|t| t == "array"));
    let described = [
        "items",
        "prefixItems",
        "contains",
        "allOf",
        "anyOf",
        "oneOf",
    ]
    .iter()
    .any(|k| out.contains_key(*k));
    if is_array && !described {
        out.insert("items".into(), json!({}));
    }
    if out.get("items").is_some_and(Value::is_array) {
        // Draft 4's tuple form: 2020-12 spells it `prefixItems`.
        let items = out.remove("items").unwrap_or_default();
        out.insert("prefixItems".into(), items);
    }
}

/// `required` names only defined properties where nothing else could define them (a
/// property left out on this side, or one the description forgot): a name required but
/// undefined would only be refused by the linter.
fn required_defined(out: &mut Map<String, Value>) {
    const OPEN: &[&str] = &[
        "patternProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "if",
        "dependentSchemas",
    ];
    if OPEN.iter().any(|k| out.contains_key(*k))
        || out
            .get("additionalProperties")
            .is_some_and(Value::is_object)
    {
        return;
    }
    let defined: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Array(names)) = out.get_mut("required") {
        names.retain(|n| n.as_str().is_some_and(|n| defined.iter().any(|d| d == n)));
        let mut seen = Vec::new();
        names.retain(|n| {
            let fresh = !seen.contains(n);
            seen.push(n.clone());
            fresh
        });
        if names.is_empty() {
            out.remove("required");
        }
    }
}

/// Whether the schema (already self-contained: references inlined) accepts its own default.
fn default_validates(map: &Map<String, Value>) -> bool {
    let mut schema = map.clone();
    let Some(default) = schema.remove("default") else {
        return true;
    };
    toolwright_schema::Validator::compile(&Value::Object(schema))
        .is_ok_and(|v| v.is_valid(&default))
}

/// A default needs no validator where a glance tells it is valid: beside no keyword that
/// could refuse it other than `type` and `enum`.
fn simple_default(map: &Map<String, Value>) -> bool {
    const SAFE: &[&str] = &[
        "type",
        "enum",
        "default",
        "description",
        "title",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ];
    map.keys().all(|k| SAFE.contains(&k.as_str()))
}

/// A property of the arguments gets a description (the linter wants one on each, and a
/// model needs one): its `title`, else what the name and type say.
pub(crate) fn describe_property(name: &str, schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let has = map
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.trim().is_empty());
    if has {
        return;
    }
    let text = match map.get("title").and_then(Value::as_str) {
        Some(t) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => {
            let kind = types(map)
                .map(|ts| ts.join(" or "))
                .unwrap_or_else(|| "value".into());
            let format = map
                .get("format")
                .and_then(Value::as_str)
                .map(|f| format!(", {f}"))
                .unwrap_or_default();
            format!("`{name}` ({kind}{format}); the API description says no more.")
        }
    };
    map.insert("description".into(), Value::String(text));
    type_untyped(map);
}

/// A property that says nothing of its type accepts any JSON value: say so in `type` (the
/// linter asks every property for one).
pub(crate) fn type_untyped(map: &mut Map<String, Value>) {
    const TYPING: &[&str] = &[
        "type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf", "not", "if",
    ];
    if !TYPING.iter().any(|k| map.contains_key(*k)) {
        map.insert(
            "type".into(),
            json!(["string", "number", "boolean", "object", "array", "null"]),
        );
        map.insert("items".into(), json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{FilesOnly, Location};

    fn spec(version: &str, schemas: Value) -> Spec {
        let doc = json!({"openapi": version, "components": {"schemas": schemas}});
        Spec::with_root(Location::File("api.json".into()), doc, &FilesOnly).unwrap()
    }

    fn convert(version: &str, side: Side, schemas: Value, schema: Value) -> Value {
        let s = spec(version, schemas);
        Converter::new(&s, side)
            .convert(&schema, "api.json")
            .unwrap()
    }

    #[test]
    fn dialect_30() {
        table! { |schema: Value, want: Value| assert_eq!(convert("3.0.3", Side::Output, json!({}), schema.clone()), want, "{schema}");
            (json!({"type": "string", "nullable": true}), json!({"type": ["string", "null"]}));
            (json!({"type": "string", "enum": ["a"], "nullable": true}), json!({"type": ["string", "null"], "enum": ["a", null]}));
            (json!({"minimum": 1, "exclusiveMinimum": true}), json!({"exclusiveMinimum": 1}));
            (json!({"maximum": 9, "exclusiveMaximum": false}), json!({"maximum": 9}));
            (json!({"type": "integer", "example": 3}), json!({"type": "integer", "examples": [3]}));
            (json!({"type": "object", "discriminator": {}, "xml": {}, "x-go": 1}), json!({"type": "object"}));
            (json!({"allOf": [{"type": "object"}], "nullable": true}), json!({"anyOf": [{"allOf": [{"type": "object"}]}, {"type": "null"}]}));
            (json!({"allOf": [{"type": "string"}], "nullable": true, "default": null, "description": "d"}), json!({"description": "d", "default": null, "anyOf": [{"allOf": [{"type": "string"}]}, {"type": "null"}]}));
        }
    }

    #[test]
    fn dialect_31_is_kept() {
        table! { |schema: Value| assert_eq!(convert("3.1.0", Side::Output, json!({}), schema.clone()), schema);
            (json!({"type": ["string", "null"]}));
            (json!({"exclusiveMinimum": 1}));
            (json!({"const": 3}));
        }
    }

    #[test]
    fn repairs() {
        table! { |schema: Value, want: Value| assert_eq!(convert("3.1.0", Side::Output, json!({}), schema.clone()), want, "{schema}");
            (json!({"type": "string", "enum": ["a", 1, "a"]}), json!({"type": "string", "enum": ["a"]}));
            (json!({"type": "string", "enum": [1]}), json!({"type": "string"}));
            (json!({"type": "integer", "default": "x"}), json!({"type": "integer"}));
            (json!({"type": "integer", "default": 3}), json!({"type": "integer", "default": 3}));
            (json!({"type": "integer", "minimum": 1, "default": 3}), json!({"type": "integer", "minimum": 1, "default": 3}));
            (json!({"type": "integer", "minimum": 5, "default": 3}), json!({"type": "integer", "minimum": 5}));
            (json!({"type": "string", "format": "uri", "default": ""}), json!({"type": "string", "format": "uri"}));
            (json!({"type": "string", "default": "b", "enum": ["a"]}), json!({"type": "string", "enum": ["a"]}));
            (json!({"type": "array"}), json!({"type": "array", "items": {}}));
            (json!({"type": "file"}), json!({}));
        }
    }

    #[test]
    fn refs_are_inlined_and_recursion_cut() {
        let schemas = json!({
            "Node": {"type": "object", "description": "A node.",
                     "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}},
        });
        let got = convert(
            "3.0.0",
            Side::Output,
            schemas,
            json!({"$ref": "#/components/schemas/Node"}),
        );
        let inner = &got["properties"]["children"]["items"]["properties"]["children"]["items"];
        assert_eq!(inner["type"], "object", "{got}");
        assert!(
            inner["description"]
                .as_str()
                .unwrap()
                .contains("recursive Node"),
            "{got}"
        );
        assert!(inner.get("properties").is_none(), "{got}");
    }

    #[test]
    fn sides_leave_out_read_only_and_write_only() {
        let schema = json!({"type": "object", "properties": {
            "id": {"type": "integer", "readOnly": true}, "secret": {"type": "string", "writeOnly": true}}});
        let input = convert("3.0.0", Side::Input, json!({}), schema.clone());
        let output = convert("3.0.0", Side::Output, json!({}), schema);
        assert!(
            input["properties"].get("id").is_none() && input["properties"].get("secret").is_some()
        );
        assert!(
            output["properties"].get("id").is_some()
                && output["properties"].get("secret").is_none()
        );
        assert!(
            input["properties"]["secret"]["description"]
                .as_str()
                .unwrap()
                .contains("`secret`")
        );
    }

    #[test]
    fn siblings_of_a_ref() {
        let schemas = json!({"Id": {"type": "integer"}});
        let got = convert(
            "3.1.0",
            Side::Output,
            schemas.clone(),
            json!({"$ref": "#/components/schemas/Id", "description": "The id."}),
        );
        assert_eq!(got, json!({"type": "integer", "description": "The id."}));
        let got = convert(
            "3.0.0",
            Side::Output,
            schemas,
            json!({"$ref": "#/components/schemas/Id", "minimum": 3}),
        );
        assert_eq!(got, json!({"type": "integer"}));
    }
}
