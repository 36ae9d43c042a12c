//! Reading documents: JSON or YAML text, and the shapes tool definitions come in.

use serde_json::Value;
use toolwright_schema::json_kind;

use crate::LintError;

/// Parses `text` as JSON, or as YAML when it is not JSON.
///
/// # Errors
///
/// [`LintError::Parse`] when it is neither.
pub fn parse_document(text: &str) -> Result<Value, LintError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(json) => toolwright_toolfile::yaml::to_json(text).map_err(|yaml| LintError::Parse {
            json: json.to_string(),
            yaml: yaml.to_string(),
        }),
    }
}

/// The tool definitions in `doc`, which may be one tool, an array of tools, a `tools/list`
/// result (`{"tools": [...]}`), a JSON-RPC response carrying one, or an array of results or
/// responses (the pages of one listing). Tools are returned as given, however malformed.
///
/// # Errors
///
/// [`LintError::ErrorResponse`] for a JSON-RPC error response, [`LintError::NotTools`] for
/// anything else that holds no tools.
pub fn extract_tools(doc: &Value) -> Result<Vec<Value>, LintError> {
    match doc {
        Value::Array(items) => {
            if !items.is_empty() && items.iter().all(is_container) {
                let mut out = Vec::new();
                for item in items {
                    out.extend(extract_tools(item)?);
                }
                Ok(out)
            } else {
                Ok(items.clone())
            }
        }
        Value::Object(map) => {
            if let Some(err) = map.get("error").filter(|_| map.contains_key("jsonrpc")) {
                return Err(LintError::ErrorResponse {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                });
            }
            if let Some(result) = map.get("result") {
                return extract_tools(result);
            }
            if let Some(Value::Array(tools)) = map.get("tools") {
                return Ok(tools.clone());
            }
            if map.contains_key("name") || map.contains_key("inputSchema") {
                return Ok(vec![doc.clone()]);
            }
            Err(LintError::NotTools {
                found: describe(doc),
            })
        }
        other => Err(LintError::NotTools {
            found: describe(other),
        }),
    }
}

/// A tools/list result or a JSON-RPC response: something holding tools rather than a tool.
fn is_container(v: &Value) -> bool {
    v.get("tools").is_some_and(Value::is_array)
        || (v.get("jsonrpc").is_some() && (v.get("result").is_some() || v.get("error").is_some()))
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(map) if map.is_empty() => "an empty object".into(),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().take(5).map(|k| format!("{k:?}")).collect();
            format!("an object with keys {}", keys.join(", "))
        }
        other => json_kind(other).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn count(doc: Value) -> usize {
        extract_tools(&doc).unwrap().len()
    }

    #[test]
    fn shapes() {
        let t = json!({"name": "a", "inputSchema": {"type": "object"}});
        assert_eq!(count(t.clone()), 1);
        assert_eq!(count(json!([t, t])), 2);
        assert_eq!(count(json!({"tools": [t]})), 1);
        assert_eq!(
            count(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [t, t]}})),
            2
        );
        assert_eq!(count(json!([{"tools": [t]}, {"tools": [t, t]}])), 3);
        assert_eq!(count(json!([])), 0);
        assert_eq!(count(json!([{"nameless": true}])), 1);
    }

    #[test]
    fn refusals() {
        assert!(matches!(
            extract_tools(
                &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}})
            ),
            Err(LintError::ErrorResponse { code: -32601, .. })
        ));
        assert!(matches!(
            extract_tools(&json!({"a": 1})),
            Err(LintError::NotTools { .. })
        ));
        assert!(matches!(
            extract_tools(&json!("x")),
            Err(LintError::NotTools { .. })
        ));
    }

    #[test]
    fn yaml_is_accepted_and_garbage_is_not() {
        let v = parse_document("name: add\ninputSchema:\n  type: object\n").unwrap();
        assert_eq!(v, json!({"name": "add", "inputSchema": {"type": "object"}}));
        assert_eq!(parse_document("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(parse_document("\u{feff}[]").unwrap(), json!([]));
        assert!(matches!(
            parse_document("{\"a\": [}"),
            Err(LintError::Parse { .. })
        ));
    }
}
