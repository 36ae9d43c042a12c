//! Modern HTTP request headers: `Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-<Name>`
//! headers a tool asks for with `x-mcp-header`, with the `=?base64?…?=` form for values
//! that cannot travel as they are.

use base64::Engine;
use serde_json::Value;

/// Largest integer a header parameter may carry (2^53 - 1).
const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// A header value as the spec wants it: as is when it is plain visible ASCII (inner spaces
/// allowed), else `=?base64?<UTF-8 in base64>?=`.
pub fn encode_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?");
    if plain || value.is_empty() {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// One `x-mcp-header` declaration: the header name and the argument path it mirrors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `<Name>` of `Mcp-Param-<Name>`.
    pub name: String,
    /// Property names from the arguments' root to the value.
    pub path: Vec<String>,
}

/// The `x-mcp-header` declarations of an input schema.
///
/// # Errors
///
/// A sentence saying why the declarations are invalid (clients must then not call the
/// tool): a name that is not an HTTP token, a repeated name, a declaration off the
/// `properties` path, or on a type other than string, integer and boolean.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut out = Vec::new();
    if input_schema.get("x-mcp-header").is_some() {
        return Err("x-mcp-header on the schema root".into());
    }
    collect(input_schema, &mut Vec::new(), &mut out)?;
    let mut names: Vec<String> = out.iter().map(|p| p.name.to_ascii_lowercase()).collect();
    names.sort();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("two properties use the same header name".into());
    }
    Ok(out)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, sub) in props {
        path.push(name.clone());
        if let Some(h) = sub.get("x-mcp-header") {
            let h = h.as_str().ok_or("x-mcp-header is not a string")?;
            let token = !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
            if !token {
                return Err(format!("{h:?} is not an HTTP token"));
            }
            let ty = sub.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "boolean")) {
                return Err(format!(
                    "{h:?} is on a property that is not a string, integer or boolean"
                ));
            }
            out.push(HeaderParam {
                name: h.to_owned(),
                path: path.clone(),
            });
        }
        collect(sub, path, out)?;
        path.pop();
    }
    Ok(())
}

/// The `Mcp-Param-*` headers for `arguments`.
///
/// # Errors
///
/// When an argument cannot be carried in a header (an integer beyond ±(2^53−1), or a
/// value of the wrong kind).
pub fn param_headers(
    params: &[HeaderParam],
    arguments: &Value,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for p in params {
        let mut v = arguments;
        let mut present = true;
        for key in &p.path {
            match v.get(key) {
                Some(next) => v = next,
                None => {
                    present = false;
                    break;
                }
            }
        }
        if !present || v.is_null() {
            continue;
        }
        let text = match v {
            Value::String(s) => encode_value(s),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => match n.as_i64() {
                Some(i) if i.abs() <= MAX_SAFE_INTEGER => i.to_string(),
                _ => {
                    return Err(format!(
                        "argument for header {} is not a safe integer: {n}",
                        p.name
                    ));
                }
            },
            other => {
                return Err(format!(
                    "argument for header {} cannot be a header value: {other}",
                    p.name
                ));
            }
        };
        out.push((format!("Mcp-Param-{}", p.name), text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values() {
        assert_eq!(encode_value("add"), "add");
        assert_eq!(encode_value("a b"), "a b");
        assert_eq!(encode_value("écho"), "=?base64?w6ljaG8=?=");
        assert_eq!(encode_value(" leading"), "=?base64?IGxlYWRpbmc=?=");
        assert_eq!(encode_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(encode_value("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
    }

    #[test]
    fn params() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "plain": {"type": "string"}
        }});
        let ps = header_params(&schema).unwrap();
        assert_eq!(ps.len(), 2);
        let h = param_headers(&ps, &json!({"region": "eu", "opts": {"n": 7}})).unwrap();
        assert_eq!(
            h,
            [
                ("Mcp-Param-Region".to_owned(), "eu".to_owned()),
                ("Mcp-Param-N".to_owned(), "7".to_owned())
            ]
        );
        assert_eq!(param_headers(&ps, &json!({})).unwrap(), []);
        assert!(param_headers(&ps, &json!({"opts": {"n": 1e300}})).is_err());
    }

    #[test]
    fn invalid_declarations() {
        let bad =
            |p: Value| header_params(&json!({"type": "object", "properties": {"p": p}})).is_err();
        assert!(bad(json!({"type": "number", "x-mcp-header": "N"})));
        assert!(bad(json!({"type": "string", "x-mcp-header": "has space"})));
        assert!(bad(json!({"type": "string", "x-mcp-header": 1})));
        assert!(header_params(&json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}})).is_err());
    }
}
