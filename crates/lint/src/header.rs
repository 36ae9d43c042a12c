//! The `x-mcp-header` rule (2026-07-28, Streamable HTTP): a property schema may ask
//! clients to mirror its argument into an `Mcp-Param-<Name>` header. Clients must drop
//! tools whose declarations break the rules, so each break is an error.

use std::collections::HashMap;

use serde_json::Value;

use crate::finding::{Rule, Sink};
use toolwright_schema::walk_subschemas;

const KEYWORD: &str = "x-mcp-header";
/// Largest integer magnitude a header value may carry (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub(crate) fn check(input_schema: &Value, sink: &mut Sink<'_>) {
    let mut seen: HashMap<String, String> = HashMap::new();
    walk_subschemas(input_schema, "/inputSchema", &mut |node| {
        let Some(value) = node.schema.get(KEYWORD) else {
            return;
        };
        let at = format!("{}/{KEYWORD}", node.pointer);
        let Some(name) = value.as_str() else {
            sink.add(
                Rule::XMcpHeaderInvalid,
                at,
                format!("x-mcp-header is {value}, not a string"),
                "set x-mcp-header to a header name token such as \"Region\"",
            );
            return;
        };
        if name.is_empty() || !name.chars().all(is_tchar) {
            sink.add(
                Rule::XMcpHeaderInvalid,
                at,
                format!("x-mcp-header {name:?} is not an HTTP token (RFC 9110): letters, digits and !#$%&'*+-.^_`|~ only, no spaces or controls"),
                "use a plain header name such as \"Region\"",
            );
            return;
        }
        match &node.property_path {
            Some(path) if !path.is_empty() => {}
            _ => {
                sink.add(
                    Rule::XMcpHeaderInvalid,
                    at,
                    format!(
                        "x-mcp-header {name:?} is not on a property reached from the root through \
                         `properties` only"
                    ),
                    "move x-mcp-header onto a property schema under the root's properties",
                );
                return;
            }
        }
        let ty = node.schema.get("type").and_then(Value::as_str);
        if !matches!(ty, Some("string" | "integer" | "boolean")) {
            let found = match node.schema.get("type") {
                Some(t) => format!("type {t}"),
                None => "no type".to_owned(),
            };
            sink.add(
                Rule::XMcpHeaderInvalid,
                at.clone(),
                format!("x-mcp-header {name:?} is on a property with {found}; only string, integer and boolean properties can be mirrored into headers"),
                "declare the property as type string, integer or boolean, or drop x-mcp-header",
            );
        }
        if ty == Some("integer") {
            let beyond = |k: &str| {
                node.schema
                    .get(k)
                    .and_then(Value::as_f64)
                    .is_some_and(|v| v.abs() > MAX_SAFE_INTEGER)
            };
            if ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
                .iter()
                .any(|k| beyond(k))
            {
                sink.add(
                    Rule::XMcpHeaderInvalid,
                    at.clone(),
                    format!("x-mcp-header {name:?} is on an integer whose bounds exceed ±(2^53−1)"),
                    "bound the integer within ±9007199254740991",
                );
            }
        }
        let key = name.to_ascii_lowercase();
        if let Some(first) = seen.get(&key) {
            sink.add(
                Rule::XMcpHeaderInvalid,
                at,
                format!("x-mcp-header {name:?} repeats the header of {first} (names compare case-insensitively)"),
                "give every mirrored property its own header name",
            );
        } else {
            seen.insert(key, node.pointer.clone());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Finding;
    use serde_json::json;

    fn messages(schema: Value) -> Vec<String> {
        let mut out: Vec<Finding> = Vec::new();
        let mut sink = Sink {
            index: 0,
            tool: "t",
            disabled: &[],
            out: &mut out,
        };
        check(&schema, &mut sink);
        out.iter().map(|f| f.pointer.clone()).collect()
    }

    fn prop(p: Value) -> Value {
        json!({"type": "object", "properties": {"p": p}})
    }

    #[test]
    fn valid_declarations() {
        let none: Vec<String> = vec![];
        assert_eq!(
            messages(prop(json!({"type": "string", "x-mcp-header": "Region"}))),
            none
        );
        assert_eq!(
            messages(prop(
                json!({"type": "integer", "x-mcp-header": "N", "maximum": 10})
            )),
            none
        );
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "boolean", "x-mcp-header": "B"}}}}})
            ),
            none
        );
    }

    #[test]
    fn invalid_declarations() {
        let at = |p: &str| vec![format!("/inputSchema{p}/x-mcp-header")];
        assert_eq!(
            messages(prop(json!({"type": "string", "x-mcp-header": ""}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(json!({"type": "string", "x-mcp-header": "Has Space"}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(json!({"type": "string", "x-mcp-header": "A\r\nB"}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(json!({"type": "string", "x-mcp-header": 7}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(json!({"type": "number", "x-mcp-header": "N"}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(json!({"x-mcp-header": "N"}))),
            at("/properties/p")
        );
        assert_eq!(
            messages(prop(
                json!({"type": "integer", "x-mcp-header": "N", "maximum": 1e300})
            )),
            at("/properties/p")
        );
        assert_eq!(
            messages(json!({"type": "object", "x-mcp-header": "Root"})),
            at("")
        );
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}})
            ),
            at("/properties/a/items")
        );
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}})
            ),
            at("/properties/b")
        );
    }
}
