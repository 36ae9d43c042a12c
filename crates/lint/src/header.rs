//! The `x-mcp-header` rule (2026-07-28, Streamable HTTP): a property schema may ask
//! clients to mirror its argument into an `Mcp-Param-<Name>` header. Clients must drop
//! tools whose declarations break the rules, so each break is an error. The rules are
//! protocol's ([`ParamHeaders`]), as clients and the server apply them.

use serde_json::Value;
use toolwright_protocol::ParamHeaderError as E;
use toolwright_protocol::ParamHeaders;
use toolwright_protocol::headers::PARAM_KEYWORD;

use crate::finding::{Rule, Sink};

/// Where the input schema sits in a tool definition.
const BASE: &str = "/inputSchema";

pub(crate) fn check(input_schema: &Value, sink: &mut Sink<'_>) {
    for error in ParamHeaders::violations(input_schema) {
        let at = format!(
            "{BASE}{}/{PARAM_KEYWORD}",
            error.pointer().unwrap_or_default()
        );
        let fix = match &error {
            E::NotString { .. } => "set x-mcp-header to a header name token such as \"Region\"",
            E::NotToken { .. } => "use a plain header name such as \"Region\"",
            E::NotOnProperty { .. } => {
                "move x-mcp-header onto a property schema under the root's properties"
            }
            E::UnsupportedType { .. } => {
                "declare the property as type string, integer or boolean, or drop x-mcp-header"
            }
            E::UnsafeBounds { .. } => "bound the integer within ±9007199254740991",
            E::Duplicate { .. } => "give every mirrored property its own header name",
            _ => "fix the x-mcp-header declaration",
        };
        let message = match &error {
            // Name the first declaration by its place in the tool, as findings do.
            E::Duplicate { name, first, .. } => format!(
                "x-mcp-header {name:?} repeats the header of {BASE}{first} (names compare \
                 case-insensitively)"
            ),
            other => other.to_string(),
        };
        sink.add(Rule::XMcpHeaderInvalid, at, message, fix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Finding;
    use crate::finding::findings_of;
    use serde_json::json;

    fn findings(schema: Value) -> Vec<Finding> {
        findings_of(|sink| check(&schema, sink))
    }

    fn messages(schema: Value) -> Vec<String> {
        findings(schema).into_iter().map(|f| f.pointer).collect()
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

    #[test]
    fn duplicates_name_the_first_in_the_tool() {
        let f = findings(
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}}),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message,
            "x-mcp-header \"dup\" repeats the header of /inputSchema/properties/a (names compare case-insensitively)"
        );
        assert_eq!(f[0].fix, "give every mirrored property its own header name");
    }
}
