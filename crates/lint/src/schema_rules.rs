//! Rules on `inputSchema` and `outputSchema`: the root, compiling under the declared
//! dialect, references, and what every subschema says (`required`, `default`, `enum`,
//! ranges, `items`, property types and descriptions, misspelled keywords).

use serde_json::{Map, Value, json};
use toolwright_schema::{
    SchemaError, Subschema, Validator, json_kind, resolve_local, walk_subschemas,
};

use crate::finding::{Rule, Sink, push_pointer};
use crate::keywords::{SCHEMA_KEYWORDS, check_keys};

/// Which of the tool's two schemas is being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// `inputSchema`: describes what the model must produce.
    Input,
    /// `outputSchema`: describes `structuredContent`.
    Output,
}

impl Which {
    fn base(self) -> &'static str {
        match self {
            Which::Input => "/inputSchema",
            Which::Output => "/outputSchema",
        }
    }
}

pub(crate) fn check(schema: &Value, which: Which, sink: &mut Sink<'_>) {
    let base = which.base();
    if !check_root(schema, which, sink) {
        return;
    }
    walk_subschemas(schema, base, &mut |node| {
        check_node(schema, node, which, sink)
    });
    compile(schema, base, sink);
}

/// Root rules; false when the schema cannot be looked into at all.
fn check_root(schema: &Value, which: Which, sink: &mut Sink<'_>) -> bool {
    let base = which.base();
    let kind = json_kind(schema);
    match which {
        Which::Input => {
            if !schema.is_object() {
                sink.add(
                    Rule::InputRootNotObject,
                    base,
                    format!("inputSchema is {kind}; it must be a JSON Schema object with type \"object\""),
                    "use {\"type\": \"object\", \"properties\": {...}} (or {\"type\": \"object\"} for no arguments)",
                );
                return false;
            }
            if !toolwright_schema::root_type_is_object(schema) {
                let (at, found) = match schema.get("type") {
                    Some(t) => (push_pointer(base, "type"), format!("type {t}")),
                    None => (base.to_owned(), "no type".to_owned()),
                };
                sink.add(
                    Rule::InputRootNotObject,
                    at,
                    format!("inputSchema has {found}; MCP requires type \"object\" at the root"),
                    "set \"type\": \"object\" at the root of inputSchema",
                );
            }
        }
        Which::Output => {
            if !(schema.is_object() || schema.is_boolean()) {
                sink.add(
                    Rule::SchemaInvalid,
                    base,
                    format!("outputSchema is {kind}, not a JSON Schema"),
                    "make outputSchema a JSON Schema object, or remove it",
                );
                return false;
            }
            if !toolwright_schema::root_type_is_object(schema) {
                let (at, found) = match schema.get("type") {
                    Some(t) => (push_pointer(base, "type"), format!("type {t}")),
                    None => (base.to_owned(), "no type \"object\"".to_owned()),
                };
                sink.add(
                    Rule::OutputRootNotObject,
                    at,
                    format!(
                        "outputSchema has {found} at the root; clients of 2025-06-18 and \
                         2025-11-25 require an object and break on anything else"
                    ),
                    "wrap the result in an object, e.g. {\"type\": \"object\", \"properties\": {\"result\": ...}}",
                );
            }
        }
    }
    true
}

/// Most external references stripped to look for further compile errors.
const MAX_COMPILE_ROUNDS: usize = 16;

/// Compiles the schema under its dialect. The compiler stops at the first problem, and an
/// external reference stops it before anything else: those are reported, taken out of a
/// copy, and the copy compiled again, so that one bad `$ref` does not hide a bad keyword.
fn compile(schema: &Value, base: &str, sink: &mut Sink<'_>) {
    let mut doc = schema.clone();
    for _ in 0..MAX_COMPILE_ROUNDS {
        let Err(err) = Validator::compile(&doc) else {
            return;
        };
        let SchemaError::ExternalRef { reference, pointer } = err else {
            report_compile_error(err, schema, base, sink);
            return;
        };
        let at = format!("{base}{pointer}");
        if !sink.has(Rule::RefNetwork, &at) {
            sink.add(
                Rule::RefNetwork,
                at,
                format!("$ref {reference:?} points outside the schema; resolving it would mean fetching it, which clients must not do"),
                "inline the referenced schema under $defs and refer to it as \"#/$defs/...\"",
            );
        }
        if !remove_at(&mut doc, &pointer) {
            return;
        }
    }
}

/// Removes the member at `pointer` (an object key); false when there is none.
fn remove_at(doc: &mut Value, pointer: &str) -> bool {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return false;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    doc.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove(&key))
        .is_some()
}

fn report_compile_error(err: SchemaError, schema: &Value, base: &str, sink: &mut Sink<'_>) {
    match err {
        SchemaError::UnsupportedDialect { uri } => sink.add(
            Rule::SchemaInvalid,
            push_pointer(base, "$schema"),
            format!("$schema {uri:?} names no dialect a client can be expected to support"),
            "remove $schema (2020-12 is the default) or name the 2020-12 meta-schema",
        ),
        SchemaError::Invalid { pointer, message } => {
            let at = format!("{base}{pointer}");
            let fix = if pointer.ends_with("/required")
                && schema.pointer(&pointer).is_some_and(Value::is_boolean)
            {
                "list required property names in the parent object's \"required\" array"
            } else {
                "correct the keyword so the schema is valid under its dialect"
            };
            sink.add(Rule::SchemaInvalid, at, message, fix);
        }
        SchemaError::NotAnObject { found } => sink.add(
            Rule::SchemaInvalid,
            base,
            format!("the schema is {found}"),
            "use a JSON Schema object",
        ),
        other => sink.add(
            Rule::SchemaInvalid,
            base,
            other.to_string(),
            "correct the schema so it compiles",
        ),
    }
}

fn check_node(root: &Value, node: &Subschema<'_>, which: Which, sink: &mut Sink<'_>) {
    if which == Which::Input && node.property.is_some() {
        check_property(root, node, sink);
    }
    let Value::Object(map) = node.schema else {
        return;
    };
    check_keys(map, &node.pointer, SCHEMA_KEYWORDS, sink);
    check_refs(map, &node.pointer, sink);
    check_required(map, &node.pointer, sink);
    check_enum(map, &node.pointer, sink);
    check_ranges(map, &node.pointer, sink);
    check_array(map, &node.pointer, sink);
    if map.contains_key("default") {
        check_default(root, node, map, sink);
    }
}

fn check_property(root: &Value, node: &Subschema<'_>, sink: &mut Sink<'_>) {
    let name = node.property.unwrap_or_default();
    let map = match node.schema {
        Value::Object(map) => Some(map),
        Value::Bool(false) => return,
        _ => None,
    };
    let typed = map.is_some_and(|m| {
        [
            "type",
            "enum",
            "const",
            "$ref",
            "$dynamicRef",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
        ]
        .iter()
        .any(|k| m.contains_key(*k))
    });
    if !typed {
        sink.add(
            Rule::PropertyNoType,
            node.pointer.clone(),
            format!(
                "property {name:?} has no type, so any value is accepted and the model must guess"
            ),
            format!("add \"type\" to {name:?} (string, number, integer, boolean, array or object)"),
        );
    }
    let described = |m: &Map<String, Value>| {
        m.get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| !d.trim().is_empty())
    };
    let has_description = map.is_some_and(|m| {
        described(m)
            || m.get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| resolve_local(root, r))
                .and_then(Value::as_object)
                .is_some_and(described)
    });
    if !has_description {
        sink.add(
            Rule::PropertyNoDescription,
            node.pointer.clone(),
            format!("property {name:?} has no description"),
            format!("add a \"description\" saying what {name:?} means, its units and format"),
        );
    }
}

fn check_refs(map: &Map<String, Value>, at: &str, sink: &mut Sink<'_>) {
    for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
        let Some(r) = map.get(key).and_then(Value::as_str) else {
            continue;
        };
        let has_scheme = r.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
        if (has_scheme && !r.starts_with("urn:")) || r.starts_with("//") {
            sink.add(
                Rule::RefNetwork,
                push_pointer(at, key),
                format!("{key} {r:?} points to another document; clients must not fetch it, so it cannot be resolved"),
                "inline the referenced schema under $defs and refer to it as \"#/$defs/...\"",
            );
        }
    }
}

fn check_required(map: &Map<String, Value>, at: &str, sink: &mut Sink<'_>) {
    let Some(Value::Array(required)) = map.get("required") else {
        return;
    };
    let open = [
        "patternProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "$ref",
        "$dynamicRef",
        "if",
        "dependentSchemas",
        "dependencies",
    ]
    .iter()
    .any(|k| map.contains_key(*k))
        || map
            .get("additionalProperties")
            .is_some_and(Value::is_object);
    if open {
        return;
    }
    let properties = map.get("properties").and_then(Value::as_object);
    for (i, name) in required.iter().enumerate() {
        let Some(name) = name.as_str() else { continue };
        if properties.is_none_or(|p| !p.contains_key(name)) {
            sink.add(
                Rule::RequiredMissingProperty,
                format!("{at}/required/{i}"),
                format!(
                    "{name:?} is required but not defined in properties, so nothing says what it is"
                ),
                format!("define {name:?} under properties, or remove it from required"),
            );
        }
    }
}

fn check_enum(map: &Map<String, Value>, at: &str, sink: &mut Sink<'_>) {
    let Some(Value::Array(values)) = map.get("enum") else {
        return;
    };
    if values.is_empty() {
        sink.add(
            Rule::EnumEmpty,
            format!("{at}/enum"),
            "enum is empty: no value is valid",
            "list the allowed values, or remove enum",
        );
        return;
    }
    for (j, v) in values.iter().enumerate() {
        if let Some(i) = values[..j].iter().position(|u| json_eq(u, v)) {
            sink.add(
                Rule::EnumDuplicate,
                format!("{at}/enum/{j}"),
                format!("enum value {v} repeats /enum/{i}"),
                "remove the repeated value",
            );
        }
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return,
    };
    for (i, v) in values.iter().enumerate() {
        if !types.iter().any(|t| has_type(v, t)) {
            sink.add(
                Rule::EnumTypeMismatch,
                format!("{at}/enum/{i}"),
                format!("enum value {v} is not of type {}", types.join(" or ")),
                "make the enum values match type, or fix type",
            );
        }
    }
}

fn check_ranges(map: &Map<String, Value>, at: &str, sink: &mut Sink<'_>) {
    let num = |k: &str| map.get(k).and_then(Value::as_f64);
    let flag = |k: &str| map.get(k).and_then(Value::as_bool) == Some(true);
    // Lower and upper bounds as (keyword, value, exclusive); draft 4 uses booleans.
    let mut lower: Option<(&str, f64, bool)> =
        num("minimum").map(|v| ("minimum", v, flag("exclusiveMinimum")));
    if let Some(v) = num("exclusiveMinimum")
        && lower.is_none_or(|(_, l, _)| v >= l)
    {
        lower = Some(("exclusiveMinimum", v, true));
    }
    let mut upper: Option<(&str, f64, bool)> =
        num("maximum").map(|v| ("maximum", v, flag("exclusiveMaximum")));
    if let Some(v) = num("exclusiveMaximum")
        && upper.is_none_or(|(_, u, _)| v <= u)
    {
        upper = Some(("exclusiveMaximum", v, true));
    }
    if let (Some((lk, lv, lx)), Some((uk, uv, ux))) = (lower, upper)
        && (lv > uv || (lv == uv && (lx || ux)))
    {
        sink.add(
            Rule::RangeInverted,
            push_pointer(at, lk),
            format!(
                "{lk} {} is not below {uk} {}: no number is valid",
                show_num(lv),
                show_num(uv)
            ),
            format!("swap {lk} and {uk}, or correct one of them"),
        );
    }
    for (lo, hi, what) in [
        ("minLength", "maxLength", "string"),
        ("minItems", "maxItems", "array"),
        ("minProperties", "maxProperties", "object"),
        ("minContains", "maxContains", "array"),
    ] {
        if let (Some(l), Some(h)) = (num(lo), num(hi))
            && l > h
        {
            sink.add(
                Rule::LengthInverted,
                push_pointer(at, lo),
                format!(
                    "{lo} {} is above {hi} {}: no {what} is valid",
                    show_num(l),
                    show_num(h)
                ),
                format!("swap {lo} and {hi}, or correct one of them"),
            );
        }
    }
}

fn check_array(map: &Map<String, Value>, at: &str, sink: &mut Sink<'_>) {
    let is_array = match map.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    };
    let described = [
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
    ]
    .iter()
    .any(|k| map.contains_key(*k));
    if is_array && !described {
        sink.add(
            Rule::ArrayNoItems,
            at.to_owned(),
            "an array without items: nothing says what its elements are",
            "add \"items\" with the element schema, e.g. {\"type\": \"string\"}",
        );
    }
}

/// The name under which the root is embedded when a subschema is compiled on its own.
const EMBEDDED_ROOT: &str = "__toolwright_lint_root";

fn check_default(
    root: &Value,
    node: &Subschema<'_>,
    map: &Map<String, Value>,
    sink: &mut Sink<'_>,
) {
    let default = &map["default"];
    // Compile the subschema in the context of its document, so local references resolve:
    // the root goes under $defs, next to copies of its own $defs and definitions.
    let mut defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    defs.insert(EMBEDDED_ROOT.to_owned(), root.clone());
    let mut doc = json!({
        "$defs": defs,
        "$ref": format!("#/$defs/{EMBEDDED_ROOT}{}", fragment_encode(&node.rel)),
    });
    if let Some(s) = root.get("$schema") {
        doc["$schema"] = s.clone();
    }
    if let Some(d) = root.get("definitions") {
        doc["definitions"] = d.clone();
    }
    // When the document does not compile (schema-invalid says why), the subschema alone
    // may still: it is enough when it refers to nothing else.
    let Some(validator) = Validator::compile(&doc)
        .or_else(|_| Validator::compile(node.schema))
        .ok()
    else {
        return;
    };
    if let Err(violations) = validator.validate(default) {
        let first = &violations[0];
        let what = if first.pointer.is_empty() {
            first.message.clone()
        } else {
            format!("{}: {}", first.pointer, first.message)
        };
        sink.add(
            Rule::DefaultInvalid,
            push_pointer(&node.pointer, "default"),
            format!("default {default} fails its own schema: {what}"),
            "change default to a value the schema accepts, or remove it",
        );
    }
}

/// What a URI fragment escapes: all but RFC 3986's unreserved characters, sub-delims,
/// `:`, `@` and `/` (a JSON Pointer's separators stay readable).
const FRAGMENT: &percent_encoding::AsciiSet = toolwright_toolfile::uri::PATH;

/// Percent-encodes what may not appear literally in a URI fragment.
fn fragment_encode(pointer: &str) -> String {
    percent_encoding::utf8_percent_encode(pointer, FRAGMENT).to_string()
}

/// JSON equality as JSON Schema sees it: `1` equals `1.0`.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `v` is of JSON Schema type `t` (`integer` includes `1.0`).
fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

fn show_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests;
