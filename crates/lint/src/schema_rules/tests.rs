use super::*;
use crate::finding::findings_of;

/// `(rule id, pointer)` of every finding for this input (or output) schema.
fn found(schema: Value, which: Which) -> Vec<(&'static str, String)> {
    let mut out = findings_of(|sink| check(&schema, which, sink));
    out.sort_by(|a, b| (a.rule, &a.pointer).cmp(&(b.rule, &b.pointer)));
    out.iter()
        .map(|f| (f.rule.id(), f.pointer.clone()))
        .collect()
}

fn input(schema: Value) -> Vec<(&'static str, String)> {
    found(schema, Which::Input)
}

fn output(schema: Value) -> Vec<(&'static str, String)> {
    found(schema, Which::Output)
}

/// An input schema with one property `p`.
fn prop(p: Value) -> Value {
    json!({"type": "object", "properties": {"p": p}})
}

fn one(rule: &'static str, pointer: &str) -> Vec<(&'static str, String)> {
    vec![(rule, pointer.to_owned())]
}

const NONE: Vec<(&str, String)> = Vec::new();

#[test]
fn clean_schemas() {
    assert_eq!(input(json!({"type": "object"})), NONE);
    assert_eq!(
        input(json!({"type": "object", "additionalProperties": false})),
        NONE
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "enum": ["a", "b"], "default": "a"})
        )),
        NONE
    );
    assert_eq!(
        input(prop(
            json!({"type": "integer", "description": "d", "minimum": 1, "maximum": 100, "default": 10})
        )),
        NONE
    );
    assert_eq!(
        input(prop(
            json!({"type": "array", "description": "d", "items": {"type": "string"}, "minItems": 1})
        )),
        NONE
    );
    assert_eq!(
        input(
            prop(json!({"$ref": "#/$defs/P"}))
                .as_object()
                .cloned()
                .map(|mut m| {
                    m.insert(
                        "$defs".into(),
                        json!({"P": {"type": "string", "description": "d"}}),
                    );
                    Value::Object(m)
                })
                .unwrap()
        ),
        NONE
    );
    assert_eq!(
        input(prop(
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d", "default": null})
        )),
        NONE
    );
    assert_eq!(
        output(json!({"type": "object", "properties": {"result": {"type": "number"}}})),
        NONE
    );
}

#[test]
fn input_root() {
    assert_eq!(
        input(json!(null)),
        one("input-root-not-object", "/inputSchema")
    );
    assert_eq!(
        input(json!(true)),
        one("input-root-not-object", "/inputSchema")
    );
    assert_eq!(
        input(json!({"type": "array", "items": {}})),
        one("input-root-not-object", "/inputSchema/type")
    );
    assert_eq!(
        input(json!({"properties": {}})),
        one("input-root-not-object", "/inputSchema")
    );
}

#[test]
fn output_root() {
    assert_eq!(
        output(json!({"type": "array", "items": {"type": "string"}})),
        one("output-root-not-object", "/outputSchema/type")
    );
    assert_eq!(
        output(json!(true)),
        one("output-root-not-object", "/outputSchema")
    );
    assert_eq!(output(json!("x")), one("schema-invalid", "/outputSchema"));
}

#[test]
fn required_and_properties() {
    assert_eq!(
        input(json!({"type": "object", "required": ["a"]})),
        one("required-missing-property", "/inputSchema/required/0")
    );
    assert_eq!(
        input(
            json!({"type": "object", "properties": {"a": {"type": "string", "description": "d"}}, "required": ["a", "b"]})
        ),
        one("required-missing-property", "/inputSchema/required/1")
    );
    assert_eq!(
        input(
            json!({"type": "object", "additionalProperties": {"type": "string"}, "required": ["a"]})
        ),
        NONE
    );
    assert_eq!(
        input(
            json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string", "description": "d"}}}], "required": ["a"]})
        ),
        NONE
    );
    assert_eq!(
        input(prop(json!({"description": "d"}))),
        one("property-no-type", "/inputSchema/properties/p")
    );
    assert_eq!(
        input(prop(json!({"type": "string"}))),
        one("property-no-description", "/inputSchema/properties/p")
    );
    assert_eq!(
        input(prop(json!(true))),
        vec![
            ("property-no-type", "/inputSchema/properties/p".to_owned()),
            (
                "property-no-description",
                "/inputSchema/properties/p".to_owned()
            )
        ]
    );
    assert_eq!(input(prop(json!(false))), NONE);
    assert_eq!(
        input(prop(
            json!({"type": "object", "description": "d", "properties": {"q": {"type": "string"}}})
        )),
        one(
            "property-no-description",
            "/inputSchema/properties/p/properties/q"
        )
    );
    // Output schemas are not held to the property rules.
    assert_eq!(
        output(json!({"type": "object", "properties": {"p": {}}})),
        NONE
    );
}

#[test]
fn defaults() {
    assert_eq!(
        input(prop(
            json!({"type": "integer", "description": "d", "minimum": 1, "default": 0})
        )),
        one("default-invalid", "/inputSchema/properties/p/default")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "enum": ["a"], "default": "b"})
        )),
        one("default-invalid", "/inputSchema/properties/p/default")
    );
    assert_eq!(
        input(prop(
            json!({"type": "boolean", "description": "d", "default": "false"})
        )),
        one("default-invalid", "/inputSchema/properties/p/default")
    );
    // References inside the subschema resolve against the document.
    let with_ref = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/N", "description": "d", "default": "x"}}, "$defs": {"N": {"type": "integer"}}});
    assert_eq!(
        input(with_ref),
        one("default-invalid", "/inputSchema/properties/p/default")
    );
    // A property named "default" is not the keyword.
    assert_eq!(
        input(
            json!({"type": "object", "properties": {"default": {"type": "string", "description": "d"}}})
        ),
        NONE
    );
    // Draft 7 documents work too.
    assert_eq!(
        input(
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a b": {"type": "integer", "description": "d", "default": 1.5}}})
        ),
        one("default-invalid", "/inputSchema/properties/a b/default")
    );
}

#[test]
fn enums() {
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "enum": []})
        )),
        one("enum-empty", "/inputSchema/properties/p/enum")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "enum": ["a", "b", "a"]})
        )),
        one("enum-duplicate", "/inputSchema/properties/p/enum/2")
    );
    assert_eq!(
        input(prop(
            json!({"type": "number", "description": "d", "enum": [1, 1.0]})
        )),
        one("enum-duplicate", "/inputSchema/properties/p/enum/1")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "enum": ["a", 1]})
        )),
        one("enum-type-mismatch", "/inputSchema/properties/p/enum/1")
    );
    assert_eq!(
        input(prop(
            json!({"type": "integer", "description": "d", "enum": [1, 2.0, 2.5]})
        )),
        one("enum-type-mismatch", "/inputSchema/properties/p/enum/2")
    );
    assert_eq!(
        input(prop(
            json!({"type": ["string", "null"], "description": "d", "enum": ["a", null]})
        )),
        NONE
    );
}

#[test]
fn ranges_and_lengths() {
    assert_eq!(
        input(prop(
            json!({"type": "number", "description": "d", "minimum": 10, "maximum": 1})
        )),
        one("range-inverted", "/inputSchema/properties/p/minimum")
    );
    assert_eq!(
        input(prop(
            json!({"type": "number", "description": "d", "exclusiveMinimum": 5, "exclusiveMaximum": 5})
        )),
        one(
            "range-inverted",
            "/inputSchema/properties/p/exclusiveMinimum"
        )
    );
    assert_eq!(
        input(prop(
            json!({"type": "number", "description": "d", "minimum": 5, "maximum": 5})
        )),
        NONE
    );
    assert_eq!(
        input(prop(
            json!({"type": "number", "description": "d", "minimum": 5, "exclusiveMaximum": 5})
        )),
        one("range-inverted", "/inputSchema/properties/p/minimum")
    );
    assert_eq!(
        input(
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"p": {"type": "number", "description": "d", "minimum": 5, "maximum": 5, "exclusiveMaximum": true}}})
        ),
        one("range-inverted", "/inputSchema/properties/p/minimum")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "minLength": 5, "maxLength": 1})
        )),
        one("length-inverted", "/inputSchema/properties/p/minLength")
    );
    assert_eq!(
        input(prop(
            json!({"type": "array", "description": "d", "items": {}, "minItems": 3, "maxItems": 2})
        )),
        one("length-inverted", "/inputSchema/properties/p/minItems")
    );
}

#[test]
fn arrays() {
    assert_eq!(
        input(prop(json!({"type": "array", "description": "d"}))),
        one("array-no-items", "/inputSchema/properties/p")
    );
    assert_eq!(
        input(prop(json!({"type": ["array", "null"], "description": "d"}))),
        one("array-no-items", "/inputSchema/properties/p")
    );
    assert_eq!(
        input(prop(
            json!({"type": "array", "description": "d", "prefixItems": [{"type": "string"}]})
        )),
        NONE
    );
}

#[test]
fn keyword_typos() {
    assert_eq!(
        input(json!({"type": "object", "require": []})),
        one("keyword-typo", "/inputSchema/require")
    );
    assert_eq!(
        input(prop(
            json!({"type": "integer", "description": "d", "minimun": 1})
        )),
        one("keyword-typo", "/inputSchema/properties/p/minimun")
    );
    assert_eq!(
        input(json!({"type": "object", "additionalproperties": false})),
        one("keyword-typo", "/inputSchema/additionalproperties")
    );
    assert_eq!(
        input(json!({"type": "object", "x-additionalproperties": false, "examples": [{}]})),
        NONE
    );
}

#[test]
fn compile_and_references() {
    assert_eq!(
        input(
            json!({"type": "object", "properties": {"p": {"type": "strin", "description": "d"}}})
        ),
        one("schema-invalid", "/inputSchema/properties/p/type")
    );
    assert_eq!(
        input(json!({"$schema": "https://example.com/my-dialect", "type": "object"})),
        one("schema-invalid", "/inputSchema/$schema")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "pattern": "("})
        )),
        one("schema-invalid", "/inputSchema/properties/p/pattern")
    );
    assert_eq!(
        input(prop(
            json!({"type": "string", "description": "d", "required": true})
        )),
        one("schema-invalid", "/inputSchema/properties/p/required")
    );
    assert_eq!(
        input(prop(
            json!({"$ref": "https://example.com/s.json", "description": "d"})
        )),
        one("ref-network", "/inputSchema/properties/p/$ref")
    );
    assert_eq!(
        input(prop(json!({"$ref": "other.json#/x", "description": "d"}))),
        one("ref-network", "/inputSchema/properties/p/$ref")
    );
    assert_eq!(
        input(prop(json!({"$ref": "#/$defs/missing", "description": "d"}))),
        one("schema-invalid", "/inputSchema/properties/p/$ref")
    );
}

#[test]
fn one_problem_does_not_hide_another() {
    // An external reference stops the compiler; the bad keyword behind it is still found.
    let s = json!({"type": "object", "properties": {
        "r": {"$ref": "https://example.com/s.json", "description": "d"},
        "f": {"type": "boolean", "required": true, "description": "d"},
        "n": {"type": "integer", "minimum": 1, "default": 0, "description": "d"}
    }});
    assert_eq!(
        input(s),
        vec![
            (
                "default-invalid",
                "/inputSchema/properties/n/default".to_owned()
            ),
            (
                "schema-invalid",
                "/inputSchema/properties/f/required".to_owned()
            ),
            ("ref-network", "/inputSchema/properties/r/$ref".to_owned()),
        ]
    );
}
