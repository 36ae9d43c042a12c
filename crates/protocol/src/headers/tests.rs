//! Tables for `headers.rs`: values, declarations, and arguments.

use super::*;
use serde_json::json;

use toolwright_testkit::table;

#[test]
fn values_encode() {
    table! { |plain: &str, sent: &str| assert_eq!(encode_value(plain), sent, "{plain:?}");
        ("add", "add");
        ("a b", "a b");
        ("", "");
        ("écho", "=?base64?w6ljaG8=?=");
        (" leading", "=?base64?IGxlYWRpbmc=?=");
        ("trailing ", "=?base64?dHJhaWxpbmcg?=");
        ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?=");
        ("line\nbreak", "=?base64?bGluZQpicmVhaw==?=");
        ("tab\there", "=?base64?dGFiCWhlcmU=?=");
    }
}

#[test]
fn values_decode() {
    table! { |sent: &str, plain: Option<&str>| assert_eq!(decode_value(sent).as_deref(), plain, "{sent:?}");
        ("add", Some("add"));
        ("=?base64?w6ljaG8=?=", Some("écho"));
        ("=?base64?IGxlYWRpbmc=?=", Some(" leading"));
        ("=?base64?***?=", None);
        ("=?base64?/w==?=", None);
        ("=?base64?", Some("=?base64?"));
    }
    for v in ["écho", " x ", "=?base64?x?=", "a\r\nb", "plain"] {
        assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
    }
}

/// An input schema with one property `p`.
fn prop(p: Value) -> Value {
    json!({"type": "object", "properties": {"p": p}})
}

/// `(header, path)` of each compiled declaration.
fn compiled(schema: &Value) -> Vec<(String, Vec<String>)> {
    ParamHeaders::compile(schema)
        .unwrap_or_else(|e| panic!("{schema}: {e}"))
        .iter()
        .map(|p| (p.header().to_owned(), p.path().to_vec()))
        .collect()
}

#[test]
fn valid_declarations() {
    let one = |h: &str, path: &[&str]| {
        vec![(
            h.to_owned(),
            path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )]
    };
    table! { |schema: Value, want: Vec<(String, Vec<String>)>| assert_eq!(compiled(&schema), want, "{schema}");
        (json!({"type": "object"}), vec![]);
        (prop(json!({"type": "string", "x-mcp-header": "Region"})), one("Mcp-Param-Region", &["p"]));
        (prop(json!({"type": "integer", "x-mcp-header": "N", "maximum": 10})), one("Mcp-Param-N", &["p"]));
        (prop(json!({"type": "integer", "x-mcp-header": "N", "minimum": -9_007_199_254_740_991_i64})), one("Mcp-Param-N", &["p"]));
        (prop(json!({"type": "boolean", "x-mcp-header": "A!#$%&'*+-.^_`|~9"})), one("Mcp-Param-A!#$%&'*+-.^_`|~9", &["p"]));
        (json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "boolean", "x-mcp-header": "B"}}}}}), one("Mcp-Param-B", &["a", "b"]));
        // A property *named* x-mcp-header is not the keyword.
        (json!({"type": "object", "properties": {"x-mcp-header": {"type": "string"}}}), vec![]);
        (prop(json!({"type": "string", "default": {"x-mcp-header": "NotASchema"}})), vec![]);
    }
    let two = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"}
    }});
    let params = ParamHeaders::compile(&two).unwrap();
    assert_eq!((params.len(), params.is_empty()), (2, false));
    let names: Vec<&str> = (&params).into_iter().map(ParamHeader::name).collect();
    assert_eq!(names, ["Region", "Count"]);
    assert_eq!(
        params.iter().next().unwrap().param_type(),
        ParamType::String
    );
    assert!(ParamHeaders::compile(&json!({})).unwrap().is_empty());
}

/// The variant name and pointer of each violation.
fn violations(schema: &Value) -> Vec<(&'static str, String)> {
    ParamHeaders::violations(schema)
        .iter()
        .map(|e| {
            let kind = match e {
                ParamHeaderError::NotString { .. } => "not-string",
                ParamHeaderError::NotToken { .. } => "not-token",
                ParamHeaderError::NotOnProperty { .. } => "not-on-property",
                ParamHeaderError::UnsupportedType { .. } => "type",
                ParamHeaderError::UnsafeBounds { .. } => "bounds",
                ParamHeaderError::Duplicate { .. } => "duplicate",
                _ => "other",
            };
            (kind, e.pointer().unwrap_or("?").to_owned())
        })
        .collect()
}

#[test]
fn invalid_declarations() {
    let at = |kind: &'static str, p: &str| vec![(kind, p.to_owned())];
    table! { |schema: Value, want: Vec<(&'static str, String)>| {
            assert_eq!(violations(&schema), want, "{schema}");
            assert_eq!(ParamHeaders::compile(&schema).is_ok(), want.is_empty());
        };
        (prop(json!({"type": "string", "x-mcp-header": ""})), at("not-token", "/properties/p"));
        (prop(json!({"type": "string", "x-mcp-header": "Has Space"})), at("not-token", "/properties/p"));
        (prop(json!({"type": "string", "x-mcp-header": "A\r\nB"})), at("not-token", "/properties/p"));
        (prop(json!({"type": "string", "x-mcp-header": "Ré"})), at("not-token", "/properties/p"));
        (prop(json!({"type": "string", "x-mcp-header": 7})), at("not-string", "/properties/p"));
        (prop(json!({"type": "number", "x-mcp-header": "N"})), at("type", "/properties/p"));
        (prop(json!({"type": ["string", "null"], "x-mcp-header": "N"})), at("type", "/properties/p"));
        (prop(json!({"x-mcp-header": "N"})), at("type", "/properties/p"));
        (prop(json!({"type": "integer", "x-mcp-header": "N", "maximum": 1e300})), at("bounds", "/properties/p"));
        (prop(json!({"type": "integer", "x-mcp-header": "N", "exclusiveMinimum": -9_007_199_254_740_992_i64})), at("bounds", "/properties/p"));
        (json!({"type": "object", "x-mcp-header": "Root"}), at("not-on-property", ""));
        (json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}), at("not-on-property", "/properties/a/items"));
        (json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}), at("not-on-property", "/$defs/d"));
        (json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}), at("not-on-property", "/anyOf/0/properties/a"));
        (json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}}), at("duplicate", "/properties/b"));
        // One declaration may break several rules.
        (json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "N"}, "b": {"type": "number", "x-mcp-header": "n"}}}),
            vec![("type", "/properties/b".into()), ("duplicate", "/properties/b".into())]);
    }
    let dup = json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}});
    assert!(matches!(
        ParamHeaders::compile(&dup),
        Err(ParamHeaderError::Duplicate { first, .. }) if first == "/properties/a"
    ));
}

fn nested() -> ParamHeaders {
    ParamHeaders::compile(&json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "plain": {"type": "string"}
    }}))
    .unwrap()
}

#[test]
fn headers_for_arguments() {
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(h, x)| (h.to_string(), x.to_string()))
            .collect()
    };
    table! { |args: Value, want: Vec<(String, String)>| assert_eq!(nested().headers(&args).unwrap(), want, "{args}");
        (json!({}), vec![]);
        (json!({"plain": "x", "region": null}), vec![]);
        (json!({"region": "eu", "opts": {"n": 7}, "dry": false}), pairs(&[("Mcp-Param-Region", "eu"), ("Mcp-Param-N", "7"), ("Mcp-Param-Dry", "false")]));
        (json!({"region": "ü"}), pairs(&[("Mcp-Param-Region", "=?base64?w7w=?=")]));
        (json!({"opts": {"n": -9_007_199_254_740_991_i64}}), pairs(&[("Mcp-Param-N", "-9007199254740991")]));
        (json!({"opts": 5}), vec![]);
    }
    table! { |args: Value, header: &str| {
            let err = nested().headers(&args).unwrap_err();
            assert!(matches!(&err, ParamHeaderError::UnsafeInteger { header: h, .. } | ParamHeaderError::NotScalar { header: h, .. } if h == header), "{err}");
        };
        (json!({"opts": {"n": 1e300}}), "Mcp-Param-N");
        (json!({"opts": {"n": 9_007_199_254_740_992_i64}}), "Mcp-Param-N");
        (json!({"opts": {"n": 1.5}}), "Mcp-Param-N");
        (json!({"region": ["eu"]}), "Mcp-Param-Region");
        (json!({"region": {"a": 1}}), "Mcp-Param-Region");
    }
}

#[test]
fn received_headers_match_arguments() {
    let p = ParamHeaders::compile(&prop(json!({"type": "string", "x-mcp-header": "P"}))).unwrap();
    let p = p.iter().next().unwrap();
    assert_eq!(p.argument(&json!({"p": "x"})), Some(&json!("x")));
    assert_eq!(p.argument(&json!({"p": null})), None);
    assert_eq!(p.argument(&json!({})), None);
    table! { |header: &str, arg: Value, same: bool| assert_eq!(p.matches(header, &arg), same, "{header:?} {arg}");
        ("eu", json!("eu"), true);
        ("us", json!("eu"), false);
        ("EU", json!("eu"), false);
        ("007", json!(7), true);
        (" 7", json!(7), true);
        ("8", json!(7), false);
        ("7.0", json!(7), false);
        ("true", json!(true), true);
        ("true", json!(false), false);
        ("1", json!(true), false);
        ("[]", json!([]), false);
    }
}
