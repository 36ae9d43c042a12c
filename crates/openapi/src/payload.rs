//! What a request carries and a response brings back: the JSON request body as arguments
//! (an object's members each one, anything else one `body` argument) and the 2xx JSON
//! response as `outputSchema`.

use crate::load::Spec;
use crate::operation::{Args, Operation, Skip, skip};
use crate::schema::{Converter, Side, describe_property};
use crate::text::{cut, placeholder_name};
use serde_json::{Map, Value, json};

/// The JSON media type of a `content` map: `application/json` first, else any `*/json` or
/// `*+json`.
pub(crate) fn json_media(content: &Map<String, Value>) -> Option<&Value> {
    let base = |k: &str| {
        k.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    content
        .iter()
        .find(|(k, _)| base(k) == "application/json")
        .or_else(|| {
            content.iter().find(|(k, _)| {
                let b = base(k);
                b.ends_with("/json") || b.ends_with("+json")
            })
        })
        .map(|(_, v)| v)
}

/// The JSON request body as arguments: an object's properties each an argument (renamed
/// `body_NAME` when a parameter has the name), anything else one `body` argument.
pub(crate) fn request_body(
    spec: &Spec,
    op: &Operation<'_>,
    args: &mut Args,
    notes: &mut Vec<String>,
) -> Result<Option<Value>, Skip> {
    let Some(rb) = op.op.get("requestBody") else {
        return Ok(None);
    };
    let rb = spec
        .deref(rb, op.doc)
        .map_err(|e| skip(format!("the request body: {e}")))?;
    let required = rb.value.get("required").and_then(Value::as_bool) == Some(true);
    let Some(content) = rb.value.get("content").and_then(Value::as_object) else {
        return Ok(None);
    };
    if content.is_empty() {
        return Ok(None);
    }
    let Some(media) = json_media(content) else {
        let types: Vec<&str> = content.keys().map(String::as_str).collect();
        let why = format!(
            "the request body is {}; the http action sends JSON bodies only",
            types.join(", ")
        );
        if required {
            return Err(skip(why));
        }
        notes.push(format!("optional request body left out: {why}"));
        return Ok(None);
    };
    let raw = media.get("schema").cloned().unwrap_or_else(|| json!({}));
    let schema = Converter::new(spec, Side::Input)
        .convert(&raw, rb.doc)
        .map_err(|e| skip(format!("the request body: {e}")))?;
    if let Some((props, body_required)) = flat_object(&schema) {
        let mut template = Map::new();
        for (key, mut s) in props {
            let prop = args.fresh(&placeholder_name(&key), "body");
            describe_property(&key, &mut s);
            template.insert(key.clone(), Value::String(format!("{{{prop}}}")));
            args.add(&prop, s, required && body_required.contains(&key));
        }
        return Ok(Some(Value::Object(template)));
    }
    let prop = args.fresh("body", "request");
    let mut s = schema;
    if let Some(d) = rb.value.get("description").and_then(Value::as_str)
        && !d.trim().is_empty()
        && let Value::Object(m) = &mut s
        && !m.contains_key("description")
    {
        m.insert(
            "description".into(),
            Value::String(cut(d, crate::schema::MAX_PROPERTY_DESCRIPTION)),
        );
    }
    if let Value::Object(m) = &mut s
        && !m.contains_key("description")
    {
        m.insert("description".into(), json!("The request body, as JSON."));
    }
    describe_property(&prop, &mut s);
    args.add(&prop, s, required);
    Ok(Some(Value::String(format!("{{{prop}}}"))))
}

/// An object's properties (name, schema) and the names it requires.
type Members = (Vec<(String, Value)>, Vec<String>);

/// An object schema whose members can each be an argument: its properties and required
/// names (`allOf` of such objects merged). `None` for anything else (a map, an array, a
/// choice of shapes), which travels whole.
fn flat_object(schema: &Value) -> Option<Members> {
    let map = schema.as_object()?;
    let object_type = match map.get("type") {
        None => true,
        Some(t) => t == "object",
    };
    const ALLOWED: &[&str] = &[
        "type",
        "properties",
        "required",
        "description",
        "title",
        "allOf",
        "examples",
        "additionalProperties",
    ];
    if !object_type || map.keys().any(|k| !ALLOWED.contains(&k.as_str())) {
        return None;
    }
    if map
        .get("additionalProperties")
        .is_some_and(|a| a != &json!(false))
    {
        return None;
    }
    let mut props: Vec<(String, Value)> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let mut required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(members)) = map.get("allOf") {
        for m in members {
            let (p, r) = flat_object(m)?;
            for (k, v) in p {
                if props.iter().any(|(pk, _)| *pk == k) {
                    return None;
                }
                props.push((k, v));
            }
            required.extend(r);
        }
    }
    if props.is_empty() {
        return None;
    }
    Some((props, required))
}

/// The 2xx JSON response's schema as `outputSchema` (an object root as is; another type
/// wrapped as `{result: ...}`, as the action wraps such a value), and whether the response
/// is JSON at all.
pub(crate) fn response(spec: &Spec, op: &Operation<'_>) -> Result<(Option<Value>, bool), Skip> {
    let Some(responses) = op.op.get("responses").and_then(Value::as_object) else {
        return Ok((None, false));
    };
    let mut codes: Vec<&String> = responses
        .keys()
        .filter(|k| k.starts_with('2') && k.len() == 3)
        .collect();
    codes.sort_by_key(|k| {
        (
            k.as_str() == "2XX" || k.as_str() == "2xx",
            k.as_str().to_owned(),
        )
    });
    let Some(code) = codes.first() else {
        return Ok((None, false));
    };
    let r = spec
        .deref(&responses[code.as_str()], op.doc)
        .map_err(|e| skip(format!("response {code}: {e}")))?;
    let Some(media) = r
        .value
        .get("content")
        .and_then(Value::as_object)
        .and_then(json_media)
    else {
        return Ok((None, false));
    };
    let Some(raw) = media.get("schema") else {
        return Ok((None, true));
    };
    let schema = Converter::new(spec, Side::Output)
        .convert(raw, r.doc)
        .map_err(|e| skip(format!("response {code}: {e}")))?;
    Ok((output_schema(schema), true))
}

/// `outputSchema` for a response schema: MCP wants an object at the root.
fn output_schema(mut schema: Value) -> Option<Value> {
    let Value::Object(map) = &mut schema else {
        return None;
    };
    let root_types: Option<Vec<String>> = match map.get("type") {
        Some(Value::String(t)) => Some(vec![t.clone()]),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    };
    match root_types {
        Some(ts) if ts.iter().any(|t| t == "object") => {
            // A null result would be wrapped as {result: null}: the object is what is said.
            map.insert("type".into(), json!("object"));
            Some(schema)
        }
        Some(_) => Some(json!({
            "type": "object",
            "properties": {"result": schema},
            "required": ["result"],
        })),
        None => {
            let all_objects = ["allOf", "oneOf", "anyOf"].iter().any(|k| {
                map.get(*k).and_then(Value::as_array).is_some_and(|ms| {
                    !ms.is_empty() && ms.iter().all(|m| m.get("type") == Some(&json!("object")))
                })
            }) || map.contains_key("properties");
            if all_objects {
                map.insert("type".into(), json!("object"));
                Some(schema)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_schemas() {
        table! { |schema: Value, want: Option<Value>| assert_eq!(output_schema(schema.clone()), want, "{schema}");
            (json!({"type": "object"}), Some(json!({"type": "object"})));
            (json!({"type": ["object", "null"]}), Some(json!({"type": "object"})));
            (json!({"type": "array", "items": {}}), Some(json!({"type": "object", "properties": {"result": {"type": "array", "items": {}}}, "required": ["result"]})));
            (json!({"allOf": [{"type": "object"}]}), Some(json!({"allOf": [{"type": "object"}], "type": "object"})));
            (json!({"oneOf": [{"type": "object"}, {"type": "string"}]}), None);
        }
    }

    #[test]
    fn flat_bodies() {
        let obj =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(flat_object(&obj).unwrap().1, vec!["a".to_owned()]);
        assert!(flat_object(&json!({"type": "array", "items": {}})).is_none());
        assert!(
            flat_object(&json!({"type": "object", "additionalProperties": {"type": "string"}}))
                .is_none()
        );
        assert!(flat_object(&json!({"oneOf": [obj.clone()]})).is_none());
        let merged =
            json!({"allOf": [obj, {"type": "object", "properties": {"b": {"type": "integer"}}}]});
        assert_eq!(flat_object(&merged).unwrap().0.len(), 2);
    }
}
