//! The arguments of `toolwright call`: `key=value` pairs typed by the tool's `inputSchema`,
//! or one JSON object (`--args`), each name checked against the schema's properties, and
//! the hint printed when pairs fail the schema.

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

/// A call's arguments as the command line gave them, checked for form before any tool is
/// looked at.
#[derive(Debug, Clone)]
pub enum Given {
    /// `--args JSON`: the object as written.
    Json(Value),
    /// `key=value` pairs, in order.
    Pairs(Vec<(String, String)>),
}

impl Given {
    /// Checks the form: `--args` must be a JSON object, each pair `key=value` with a key.
    pub fn parse(json: Option<&str>, pairs: &[String]) -> Result<Given> {
        if let Some(j) = json {
            let v: Value = serde_json::from_str(j).context("--args is not valid JSON")?;
            if !v.is_object() {
                bail!("--args must be a JSON object, as in --args '{{\"a\": 1}}'");
            }
            return Ok(Given::Json(v));
        }
        let mut out = Vec::with_capacity(pairs.len());
        for p in pairs {
            let Some((k, v)) = p.split_once('=') else {
                if p.trim_start().starts_with('{') {
                    bail!(
                        "argument {p:?} is not of the form key=value; to give every argument as \
                         one JSON object, use --args '{{...}}' (--json, as in list and tools, \
                         asks for JSON output)"
                    );
                }
                bail!("argument {p:?} is not of the form key=value");
            };
            if k.is_empty() {
                bail!("argument {p:?} has an empty key");
            }
            out.push((k.to_owned(), v.to_owned()));
        }
        Ok(Given::Pairs(out))
    }

    /// The arguments object for a tool with this `inputSchema`.
    ///
    /// # Errors
    ///
    /// A name that is not one of the schema's `properties` when the schema lists them and
    /// does not take others (no `additionalProperties` or `patternProperties` that would):
    /// a mistyped name (`cnt=3` for `count`) would otherwise be sent, and ignored by a tool
    /// whose schema lets unknown members through. The message names the closest property.
    pub fn arguments(&self, input_schema: &Value) -> Result<Value> {
        let names: Vec<&str> = match self {
            Given::Json(v) => v
                .as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default(),
            Given::Pairs(pairs) => pairs.iter().map(|(k, _)| k.as_str()).collect(),
        };
        check_names(&names, input_schema)?;
        Ok(self.object(input_schema))
    }

    fn object(&self, input_schema: &Value) -> Value {
        match self {
            Given::Json(v) => v.clone(),
            Given::Pairs(pairs) => {
                let properties = input_schema.get("properties");
                let mut map = Map::new();
                for (k, v) in pairs {
                    let property = properties.and_then(|p| p.get(k));
                    map.insert(k.clone(), typed(v, property));
                }
                Value::Object(map)
            }
        }
    }

    /// What to print on stderr when `arguments` failed the tool's schema: key=value pairs
    /// are a guess at types, and `--args` says exactly what is meant.
    pub fn hint(&self, arguments: &Value) -> Option<String> {
        match self {
            Given::Json(_) => None,
            Given::Pairs(pairs) => {
                let keys: Vec<String> = pairs.iter().map(|(k, _)| format!("{k:?}: …")).collect();
                Some(format!(
                    "hint: key=value gave {arguments}; a value is typed by the tool's inputSchema \
                     (the text for a string property, else JSON when it parses: n=1, on=true, \
                     tags='[\"a\"]'); to say exactly what you mean, give one JSON object: \
                     --args '{{{}}}'",
                    keys.join(", ")
                ))
            }
        }
    }
}

/// Refuses a name that `input_schema` has no property for, when it lists its properties and
/// takes no others.
fn check_names(names: &[&str], input_schema: &Value) -> Result<()> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let takes_others = input_schema.get("patternProperties").is_some()
        || input_schema
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false));
    if takes_others {
        return Ok(());
    }
    let Some(unknown) = names.iter().find(|n| !properties.contains_key(**n)) else {
        return Ok(());
    };
    let closest = properties
        .keys()
        .map(|p| (strsim::damerau_levenshtein(unknown, p), p))
        .filter(|(d, p)| *d <= (p.chars().count().max(unknown.chars().count()) / 2).max(1))
        .min();
    let known: Vec<&str> = properties.keys().map(String::as_str).collect();
    let known = match known.is_empty() {
        true => "none".to_owned(),
        false => known.join(", "),
    };
    match closest {
        Some((_, p)) => bail!(
            "the tool has no argument {unknown:?}; did you mean {p:?}? (its arguments: {known})"
        ),
        None => bail!("the tool has no argument {unknown:?} (its arguments: {known})"),
    }
}

/// The value `text` stands for, given the schema of its property (if the tool has one):
/// JSON when it parses as a type the property allows other than a string (or the property
/// says nothing of types), else the text itself when the property allows a string, else
/// the JSON, for the schema check to report.
pub fn typed(text: &str, property: Option<&Value>) -> Value {
    let as_string = || Value::String(text.to_owned());
    let Ok(parsed) = serde_json::from_str::<Value>(text) else {
        return as_string();
    };
    let Some(types) = property.and_then(allowed_types) else {
        return parsed;
    };
    if parsed.is_string() {
        // A string property takes the text as it is, quotes included.
        as_string()
    } else if types.iter().any(|t| admits(t, &parsed)) {
        parsed
    } else if types.iter().any(|t| t == "string") {
        as_string()
    } else {
        parsed
    }
}

/// The JSON types a property allows: its `type`, else those of its `enum` or `const`
/// values, else the union over the branches of `anyOf`/`oneOf` (one level); `None` when
/// the schema does not say.
fn allowed_types(schema: &Value) -> Option<Vec<String>> {
    match schema.get("type") {
        Some(Value::String(t)) => return Some(vec![t.clone()]),
        Some(Value::Array(ts)) => {
            return Some(
                ts.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            );
        }
        _ => {}
    }
    let values: Option<Vec<&Value>> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(vs)), _) => Some(vs.iter().collect()),
        (_, Some(c)) => Some(vec![c]),
        _ => None,
    };
    if let Some(values) = values {
        return Some(values.into_iter().map(|v| type_of(v).to_owned()).collect());
    }
    let branches = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(Value::as_array))?;
    let mut out = Vec::new();
    for b in branches {
        out.extend(allowed_types(b)?);
    }
    Some(out)
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether JSON Schema type `t` admits `v` (an integer is a number without a fraction).
fn admits(t: &str, v: &Value) -> bool {
    match t {
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => type_of(v) == other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_follow_the_property_type() {
        let cases: &[(&str, Value, Value)] = &[
            // No schema for the property: JSON when it parses.
            ("123", Value::Null, json!(123)),
            ("abc", Value::Null, json!("abc")),
            ("[1]", Value::Null, json!([1])),
            // A string property keeps the text.
            ("123", json!({"type": "string"}), json!("123")),
            ("true", json!({"type": "string"}), json!("true")),
            ("\"q\"", json!({"type": "string"}), json!("\"q\"")),
            ("null", json!({"type": "string"}), json!("null")),
            // Numbers, booleans, arrays, objects as JSON.
            ("123", json!({"type": "number"}), json!(123)),
            ("1.5", json!({"type": "integer"}), json!(1.5)),
            ("2", json!({"type": "integer"}), json!(2)),
            ("false", json!({"type": "boolean"}), json!(false)),
            ("[1, 2]", json!({"type": "array"}), json!([1, 2])),
            ("{\"k\": 1}", json!({"type": "object"}), json!({"k": 1})),
            // Text that is not JSON stays text, for the schema check to report.
            ("x", json!({"type": "number"}), json!("x")),
            // A union: JSON when its type is allowed, else the text when strings are.
            ("7", json!({"type": ["string", "number"]}), json!(7)),
            ("7", json!({"type": ["string", "null"]}), json!("7")),
            ("null", json!({"type": ["string", "null"]}), json!(null)),
            (
                "7",
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!("7"),
            ),
            (
                "7",
                json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
                json!(7),
            ),
            // enum and const say the types too.
            ("1", json!({"enum": ["1", "2"]}), json!("1")),
            ("1", json!({"enum": [1, 2]}), json!(1)),
            ("10", json!({"const": "10"}), json!("10")),
            // A branch without types: the schema does not say, so JSON.
            ("7", json!({"anyOf": [{"type": "string"}, {}]}), json!(7)),
        ];
        for (text, property, want) in cases {
            let property = (!property.is_null()).then_some(property);
            assert_eq!(&typed(text, property), want, "{text} with {property:?}");
        }
    }

    #[test]
    fn pairs_are_typed_per_property() {
        let schema = json!({"type": "object", "properties": {
            "text": {"type": "string"}, "n": {"type": "number"}}});
        let given =
            Given::parse(None, &["text=123".into(), "n=123".into(), "x==1".into()]).unwrap();
        let open = json!({"type": "object", "properties": {
            "text": {"type": "string"}, "n": {"type": "number"}}, "additionalProperties": true});
        assert_eq!(
            given.arguments(&open).unwrap(),
            json!({"text": "123", "n": 123, "x": "=1"})
        );
        assert!(given.hint(&json!({})).unwrap().contains("--args"));
        // The same pairs against a schema that takes only its properties: `x` is refused.
        assert!(given.arguments(&schema).is_err());
    }

    #[test]
    fn a_mistyped_name_is_refused_with_the_closest_property() {
        let schema = json!({"type": "object", "properties": {
            "count": {"type": "integer"}, "pattern": {"type": "string"}}});
        let err = |pairs: &[&str], schema: &Value| {
            let pairs: Vec<String> = pairs.iter().map(|p| (*p).to_owned()).collect();
            let given = Given::parse(None, &pairs).unwrap();
            format!("{:#}", given.arguments(schema).unwrap_err())
        };
        assert_eq!(
            err(&["cnt=3"], &schema),
            "the tool has no argument \"cnt\"; did you mean \"count\"? (its arguments: count, pattern)"
        );
        assert_eq!(
            err(&["count=1", "zzzzzzzzz=1"], &schema),
            "the tool has no argument \"zzzzzzzzz\" (its arguments: count, pattern)"
        );
        let json = Given::parse(Some(r#"{"paternn": "x"}"#), &[]).unwrap();
        assert!(format!("{:#}", json.arguments(&schema).unwrap_err()).contains("\"pattern\""));
        // A schema that takes other members, or lists none, takes any name.
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {}});
        let given = Given::parse(None, &["b=1".into()]).unwrap();
        assert!(given.arguments(&open).is_ok());
        assert!(given.arguments(&json!({"type": "object"})).is_ok());
    }

    #[test]
    fn forms_are_checked() {
        let err = |json: Option<&str>, pairs: &[&str]| {
            let pairs: Vec<String> = pairs.iter().map(|p| (*p).to_owned()).collect();
            format!("{:#}", Given::parse(json, &pairs).unwrap_err())
        };
        assert_eq!(
            err(None, &["novalue"]),
            "argument \"novalue\" is not of the form key=value"
        );
        assert_eq!(err(None, &["=1"]), "argument \"=1\" has an empty key");
        assert!(err(Some("[1]"), &[]).starts_with("--args must be a JSON object"));
        assert!(err(Some("{"), &[]).starts_with("--args is not valid JSON"));
        assert!(err(None, &[r#"{"a": 1}"#]).contains("use --args"));
        let json = Given::parse(Some(r#"{"a": "1"}"#), &[]).unwrap();
        assert_eq!(json.arguments(&json!({})).unwrap(), json!({"a": "1"}));
        assert_eq!(json.hint(&json!({})), None);
    }
}
