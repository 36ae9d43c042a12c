//! Compile-and-validate tests across the whole crate, one case per line.

use serde_json::{Value, json};

use crate::{
    Dialect, Options, SchemaError, Validator, Violation, format_violations, root_type_is_object,
};

const D4: &str = "http://json-schema.org/draft-04/schema#";
const D7: &str = "http://json-schema.org/draft-07/schema#";

fn compile(schema: Value) -> Validator {
    Validator::compile(&schema).unwrap_or_else(|err| panic!("{schema} should compile: {err}"))
}

/// Whether `instance` is valid under `schema`, checking that `is_valid` and
/// `validate` agree.
fn valid(schema: Value, instance: Value) -> bool {
    let validator = compile(schema);
    let quick = validator.is_valid(&instance);
    assert_eq!(
        quick,
        validator.validate(&instance).is_ok(),
        "is_valid and validate disagree"
    );
    quick
}

/// The violations of `instance` as `format_violations` prints them.
fn report(schema: Value, instance: Value) -> String {
    match compile(schema).validate(&instance) {
        Ok(()) => "valid".to_owned(),
        Err(violations) => format_violations(&violations),
    }
}

macro_rules! validity {
    ($($name:ident: $schema:tt, $instance:tt => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(valid(json!($schema), json!($instance)), $expected);
        }
    )*};
}

validity! {
    d7_dependencies_missing: {"$schema": D7, "dependencies": {"a": ["b"]}}, {"a": 1} => false;
    d7_dependencies_present: {"$schema": D7, "dependencies": {"a": ["b"]}}, {"a": 1, "b": 2} => true;
    d7_dependencies_schema: {"$schema": D7, "dependencies": {"a": {"required": ["c"]}}}, {"a": 1} => false;
    d7_exclusive_maximum_number_at_limit: {"$schema": D7, "exclusiveMaximum": 5}, 5 => false;
    d7_exclusive_maximum_number_below: {"$schema": D7, "exclusiveMaximum": 5}, 4.5 => true;
    d4_exclusive_maximum_bool_at_limit: {"$schema": D4, "maximum": 5, "exclusiveMaximum": true}, 5 => false;
    d4_exclusive_maximum_bool_below: {"$schema": D4, "maximum": 5, "exclusiveMaximum": true}, 4.9 => true;
    d4_exclusive_maximum_false_at_limit: {"$schema": D4, "maximum": 5, "exclusiveMaximum": false}, 5 => true;
    d7_ref_siblings_ignored: {"$schema": D7, "definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}}, {"a": "long"} => true;
    d2020_ref_siblings_applied: {"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 1}}}, {"a": "long"} => false;
    defs_ref_ok: {"$defs": {"n": {"type": "integer", "minimum": 0}}, "properties": {"n": {"$ref": "#/$defs/n"}}}, {"n": 3} => true;
    defs_ref_bad: {"$defs": {"n": {"type": "integer", "minimum": 0}}, "properties": {"n": {"$ref": "#/$defs/n"}}}, {"n": -3} => false;
    recursive_root_ref: {"type": "object", "properties": {"child": {"$ref": "#"}}, "additionalProperties": false}, {"child": {"child": {"x": 1}}} => false;
    prefix_items_ok: {"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}, ["a", 1] => true;
    prefix_items_swapped: {"prefixItems": [{"type": "string"}, {"type": "number"}]}, [1, "a"] => false;
    prefix_items_extra_refused: {"prefixItems": [{"type": "string"}], "items": false}, ["a", "b"] => false;
    id_based_ref_ok: {"$id": "https://t.example/root.json", "$defs": {"p": {"$id": "pos.json", "type": "integer", "minimum": 1}}, "properties": {"n": {"$ref": "pos.json"}}}, {"n": 2} => true;
    id_based_ref_bad: {"$id": "https://t.example/root.json", "$defs": {"p": {"$id": "pos.json", "type": "integer", "minimum": 1}}, "properties": {"n": {"$ref": "pos.json"}}}, {"n": 0} => false;
    urn_id_ref_bad: {"$defs": {"p": {"$id": "urn:t:p", "type": "string"}}, "$ref": "urn:t:p"}, 1 => false;
    anchor_ref_bad: {"$defs": {"p": {"$anchor": "pos", "minimum": 1}}, "$ref": "#pos"}, 0 => false;
    dynamic_ref_ok: {"$dynamicAnchor": "node", "type": "object", "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}}}, {"kids": [{"kids": []}]} => true;
    meta_schema_ref_ok: {"$ref": "https://json-schema.org/draft/2020-12/schema"}, {"type": "string"} => true;
    meta_schema_ref_bad: {"$ref": "https://json-schema.org/draft/2020-12/schema"}, {"type": 12} => false;
    embedded_d4_resource: {"$defs": {"a": {"$schema": D4, "id": "urn:a", "maximum": 5, "exclusiveMaximum": true}}, "$ref": "urn:a"}, 5 => false;
    d7_meta_schema_ref_bad: {"$schema": D7, "properties": {"s": {"$ref": "http://json-schema.org/draft-07/schema#"}}}, {"s": {"minimum": "x"}} => false;
    date_time_ok: {"format": "date-time"}, "2024-02-29T12:30:00Z" => true;
    date_time_bad: {"format": "date-time"}, "yesterday at noon" => false;
    date_time_bad_day: {"format": "date-time"}, "2023-02-29T12:30:00Z" => false;
    email_ok: {"format": "email"}, "ada@example.com" => true;
    email_bad: {"format": "email"}, "not an email" => false;
    uri_bad: {"format": "uri"}, "no scheme here" => false;
    ipv4_bad: {"format": "ipv4"}, "256.1.1.1" => false;
    uuid_ok: {"format": "uuid"}, "123e4567-e89b-12d3-a456-426614174000" => true;
    uuid_bad: {"format": "uuid"}, "123e4567" => false;
    d7_format_asserted: {"$schema": D7, "format": "email"}, "nope" => false;
    unknown_format_ignored: {"format": "x-toolwright-custom"}, "anything" => true;
    format_ignores_non_strings: {"format": "email"}, 42 => true;
    unknown_keyword_kept: {"type": "string", "x-ui-widget": "textarea", "deprecatedReason": {"$ref": "https://evil.example/"}}, "hi" => true;
    true_schema: true, {"anything": [1, 2]} => true;
    false_schema: false, null => false;
}

#[test]
fn formats_can_be_annotation_only() {
    let options = Options {
        validate_formats: false,
        ..Options::default()
    };
    let validator = Validator::compile_with(&json!({"format": "email"}), &options).unwrap();
    assert!(validator.is_valid(&json!("not an email")));
}

macro_rules! reports {
    ($($name:ident: $schema:tt, $instance:tt => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(report(json!($schema), json!($instance)), $expected);
        }
    )*};
}

reports! {
    wrong_type: {"properties": {"a": {"type": "number"}}}, {"a": "x"} => r#"/a: "x" is not of type "number""#;
    wrong_type_root: {"type": "object"}, [1] => r#"/: [1] is not of type "object""#;
    wrong_types: {"type": ["string", "null"]}, 5 => r#"/: 5 is not of type "null" or "string""#;
    missing_required: {"properties": {"o": {"required": ["name"]}}}, {"o": {}} => r#"/o: required property "name" is missing"#;
    additional_properties: {"properties": {"a": {}}, "additionalProperties": false}, {"a": 1, "zz": 2} => r#"/: additional properties are not allowed, but found "zz""#;
    minimum: {"properties": {"n": {"minimum": 3}}}, {"n": 2} => "/n: 2 is less than the minimum of 3";
    maximum: {"maximum": 3}, 4 => "/: 4 is greater than the maximum of 3";
    enum_miss: {"properties": {"mode": {"enum": ["fast", "slow"]}}}, {"mode": "medium"} => r#"/mode: "medium" is not one of the allowed values: "fast", "slow""#;
    const_miss: {"const": "on"}, "off" => r#"/: "off" is not the expected value "on""#;
    nested_array_index: {"properties": {"tags": {"items": {"type": "string"}}}}, {"tags": ["a", "b", 3]} => r#"/tags/2: 3 is not of type "string""#;
    min_length: {"minLength": 2}, "a" => r#"/: "a" is shorter than the minimum length of 2 characters"#;
    max_length: {"maxLength": 1}, "ab" => r#"/: "ab" is longer than the maximum length of 1 character"#;
    pattern: {"pattern": "^[a-z]+$"}, "A1" => r#"/: "A1" does not match the pattern "^[a-z]+$""#;
    format_message: {"format": "email"}, "nope" => r#"/: "nope" is not a valid "email""#;
    max_items: {"maxItems": 1}, [1, 2] => "/: [1,2] has more than 1 item";
    unique_items: {"uniqueItems": true}, [1, 1] => "/: [1,1] has non-unique items";
    any_of_reasons: {"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]}}}, {"v": [1, "x"]} => r#"/v: [1,"x"] does not match any of the "anyOf" schemas: [1,"x"] is not of type "string"; at /v/1: "x" is not of type "integer""#;
    one_of_reasons: {"oneOf": [{"minimum": 10}, {"const": 3}]}, 5 => r#"/: 5 does not match any of the "oneOf" schemas: 5 is less than the minimum of 10; 5 is not the expected value 3"#;
    escaped_pointer: {"properties": {"a/b": {"type": "string"}}}, {"a/b": 1} => r#"/a~1b: 1 is not of type "string""#;
    draft4_exclusive: {"$schema": D4, "maximum": 5, "exclusiveMaximum": true}, 5 => "/: 5 is not less than the exclusive maximum of 5";
    long_value_shortened: {"maxLength": 3}, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" => r#"/: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…" (100 characters) is longer than the maximum length of 3 characters"#;
    sorted_by_pointer_then_message: {"properties": {"b": {"type": "string"}, "a": {"minimum": 5, "multipleOf": 2}, "tags": {"items": {"type": "string"}}}, "required": ["z"]}, {"b": 1, "a": 3, "tags": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "ok"]} => concat!(
        "/: required property \"z\" is missing\n",
        "/a: 3 is less than the minimum of 5\n",
        "/a: 3 is not a multiple of 2\n",
        "/b: 1 is not of type \"string\"\n",
        "/tags/0: 0 is not of type \"string\"\n/tags/1: 1 is not of type \"string\"\n",
        "/tags/2: 2 is not of type \"string\"\n/tags/3: 3 is not of type \"string\"\n",
        "/tags/4: 4 is not of type \"string\"\n/tags/5: 5 is not of type \"string\"\n",
        "/tags/6: 6 is not of type \"string\"\n/tags/7: 7 is not of type \"string\"\n",
        "/tags/8: 8 is not of type \"string\"\n/tags/9: 9 is not of type \"string\"\n",
        "/tags/10: 10 is not of type \"string\"",
    );
}

#[test]
fn missing_required_violation_fields() {
    let validator = compile(json!({"type": "object", "required": ["path"]}));
    let violations = validator.validate(&json!({})).unwrap_err();
    assert_eq!(
        violations,
        vec![Violation {
            pointer: String::new(),
            message: r#"required property "path" is missing"#.to_owned()
        }]
    );
}

#[test]
fn ordering_is_stable_across_runs() {
    let validator = compile(
        json!({"properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}, "required": ["x", "y"]}),
    );
    let instance = json!({"c": 1, "a": 1, "b": 1});
    let first = validator.validate(&instance).unwrap_err();
    for _ in 0..20 {
        assert_eq!(validator.validate(&instance).unwrap_err(), first);
    }
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted);
    assert_eq!(first.len(), 5);
}

/// The refused schema's error, asserting that compiling failed.
fn refusal(schema: Value) -> SchemaError {
    match Validator::compile(&schema) {
        Ok(_) => panic!("{schema} should be refused"),
        Err(err) => err,
    }
}

fn external(reference: &str, pointer: &str) -> SchemaError {
    SchemaError::ExternalRef {
        reference: reference.to_owned(),
        pointer: pointer.to_owned(),
    }
}

macro_rules! refuses {
    ($($name:ident: $schema:tt => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(refusal(json!($schema)), $expected);
        }
    )*};
}

refuses! {
    evil_https_ref: {"properties": {"a": {"$ref": "https://evil.example/x.json"}}} => external("https://evil.example/x.json", "/properties/a/$ref");
    relative_ref: {"$defs": {"a": {"$ref": "other.json#/a"}}} => external("other.json#/a", "/$defs/a/$ref");
    file_ref: {"$ref": "file:///etc/passwd"} => external("file:///etc/passwd", "/$ref");
    other_drafts_meta_schema: {"$ref": "http://json-schema.org/draft-07/schema#"} => external("http://json-schema.org/draft-07/schema#", "/$ref");
    meta_schema_wrong_scheme: {"$schema": D7, "$ref": "https://json-schema.org/draft-07/schema#"} => external("https://json-schema.org/draft-07/schema#", "/$ref");
    ref_via_local_pointer_into_unknown_keyword: {"x-extra": {"$ref": "https://evil.example/"}, "$ref": "#/x-extra"} => external("https://evil.example/", "/x-extra/$ref");
    unknown_dialect: {"$schema": "https://example.com/custom-meta", "type": "string"} => SchemaError::UnsupportedDialect { uri: "https://example.com/custom-meta".into() };
    not_an_object_string: "object" => SchemaError::NotAnObject { found: "a string" };
    not_an_object_array: [{"type": "string"}] => SchemaError::NotAnObject { found: "an array" };
    not_an_object_null: null => SchemaError::NotAnObject { found: "null" };
}

/// The pointer of an [`SchemaError::Invalid`], asserting it is one.
fn invalid_at(schema: Value) -> String {
    match refusal(schema) {
        SchemaError::Invalid { pointer, message } => {
            assert!(!message.is_empty());
            pointer
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

macro_rules! invalid {
    ($($name:ident: $schema:tt => $pointer:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(invalid_at(json!($schema)), $pointer);
        }
    )*};
}

invalid! {
    no_such_type: {"type": "nosuchtype"} => "/type";
    minimum_not_number: {"minimum": "x"} => "/minimum";
    nested_bad_keyword: {"properties": {"a": {"maxLength": -1}}} => "/properties/a/maxLength";
    required_not_array: {"required": "a"} => "/required";
    d7_boolean_exclusive_maximum: {"$schema": D7, "exclusiveMaximum": true} => "/exclusiveMaximum";
    d4_numeric_exclusive_maximum: {"$schema": D4, "exclusiveMaximum": 5} => "/exclusiveMaximum";
    schema_keyword_not_string: {"$schema": 4} => "/$schema";
    dangling_pointer_ref: {"properties": {"a": {"$ref": "#/$defs/missing"}}} => "/properties/a/$ref";
    dangling_anchor_ref: {"$ref": "#missing"} => "";
}

#[test]
fn invalid_message_names_the_problem() {
    let err = refusal(json!({"minimum": "x"}));
    assert_eq!(
        err.to_string(),
        r#"invalid schema at /minimum: "x" is not of type "number""#
    );
}

macro_rules! dialects {
    ($($name:ident: $schema:tt => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(compile(json!($schema)).dialect(), $expected);
        }
    )*};
}

dialects! {
    compiled_default: {"type": "object"} => Dialect::Draft202012;
    compiled_d4: {"$schema": D4} => Dialect::Draft4;
    compiled_d6: {"$schema": "http://json-schema.org/draft-06/schema"} => Dialect::Draft6;
    compiled_d7: {"$schema": D7} => Dialect::Draft7;
    compiled_2019: {"$schema": "https://json-schema.org/draft/2019-09/schema"} => Dialect::Draft201909;
}

#[test]
fn dialect_override_wins() {
    let options = Options {
        dialect_override: Some(Dialect::Draft4),
        ..Options::default()
    };
    let schema =
        json!({"$schema": "https://example.com/custom", "maximum": 5, "exclusiveMaximum": true});
    let validator = Validator::compile_with(&schema, &options).unwrap();
    assert_eq!(validator.dialect(), Dialect::Draft4);
    assert!(!validator.is_valid(&json!(5)));
    assert!(validator.is_valid(&json!(4)));
}

macro_rules! object_root {
    ($($name:ident: $schema:tt => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(root_type_is_object(&json!($schema)), $expected);
        }
    )*};
}

object_root! {
    object_string: {"type": "object"} => true;
    object_array: {"type": ["object"]} => false;
    object_or_null: {"type": ["object", "null"]} => false;
    string_type: {"type": "string"} => false;
    no_type: {"properties": {}} => false;
    boolean_schema: true => false;
}

#[test]
fn validator_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Validator>();
    assert_send_sync::<SchemaError>();
}

/// The kind of object an MCP tool receives: used here and in the benchmark.
pub(crate) fn realistic_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "mode": {"type": "string", "enum": ["literal", "regex", "glob"]},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
            "case_sensitive": {"type": "boolean"},
            "include": {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": 32},
            "context_lines": {"type": "integer", "minimum": 0, "maximum": 20}
        },
        "required": ["path", "query"],
        "additionalProperties": false
    })
}

#[test]
fn realistic_validation_many_times() {
    let validator = compile(realistic_tool_schema());
    let good = json!({
        "path": "/srv/project", "query": "fn main", "mode": "literal", "max_results": 50,
        "case_sensitive": false, "include": ["*.rs", "*.toml", "src/**"], "context_lines": 2
    });
    let bad =
        json!({"path": "", "query": "x", "mode": "fuzzy", "max_results": 0, "include": ["a", 3]});
    for _ in 0..10_000 {
        assert!(validator.validate(&good).is_ok());
    }
    let violations = validator.validate(&bad).unwrap_err();
    assert_eq!(violations.len(), 4, "{}", format_violations(&violations));
}
