//! Checking a call's `structuredContent` against the tool's `outputSchema`, as the spec
//! says clients should.

use std::fmt;

use toolwright_protocol::{CallToolResult, ProtocolVersion, Tool};
use toolwright_schema::{SchemaError, Validator, Violation, format_violations};

/// Why a result breaks its tool's output contract.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OutputProblem {
    /// The tool declares an `outputSchema` but the result has no `structuredContent`.
    Missing,
    /// Before 2026-07-28, `structuredContent` must be an object.
    NotAnObject {
        /// The negotiated version.
        version: ProtocolVersion,
    },
    /// `structuredContent` does not match the schema.
    Violations(Vec<Violation>),
    /// The `outputSchema` itself does not compile, so nothing can be checked.
    BadSchema(SchemaError),
}

impl fmt::Display for OutputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputProblem::Missing => f.write_str(
                "the tool declares an outputSchema but the result has no structuredContent",
            ),
            OutputProblem::NotAnObject { version } => write!(
                f,
                "structuredContent is not an object, which protocol {version} requires"
            ),
            OutputProblem::Violations(v) => {
                write!(
                    f,
                    "structuredContent does not match the outputSchema:\n{}",
                    format_violations(v)
                )
            }
            OutputProblem::BadSchema(e) => write!(f, "the outputSchema cannot be used: {e}"),
        }
    }
}

/// Checks `result` against `tool.outputSchema`. Failed calls (`isError`) and tools without
/// an output schema pass.
///
/// # Errors
///
/// The [`OutputProblem`].
pub fn check_output(
    tool: &Tool,
    result: &CallToolResult,
    version: ProtocolVersion,
) -> Result<(), OutputProblem> {
    let Some(schema) = &tool.output_schema else {
        return Ok(());
    };
    if result.is_error() {
        return Ok(());
    }
    let Some(structured) = &result.structured_content else {
        return Err(OutputProblem::Missing);
    };
    if !version.is_modern() && !structured.is_object() {
        return Err(OutputProblem::NotAnObject { version });
    }
    let validator = Validator::compile(schema).map_err(OutputProblem::BadSchema)?;
    validator
        .validate(structured)
        .map_err(OutputProblem::Violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]}}))
        .unwrap()
    }

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn outcomes() {
        let v = ProtocolVersion::V2026_07_28;
        assert_eq!(
            check_output(
                &tool(),
                &result(json!({"content": [], "structuredContent": {"result": 1}})),
                v
            ),
            Ok(())
        );
        assert_eq!(
            check_output(&tool(), &result(json!({"content": []})), v),
            Err(OutputProblem::Missing)
        );
        assert_eq!(
            check_output(&tool(), &result(json!({"content": [], "isError": true})), v),
            Ok(())
        );
        assert!(matches!(
            check_output(
                &tool(),
                &result(json!({"content": [], "structuredContent": {"result": "x"}})),
                v
            ),
            Err(OutputProblem::Violations(_))
        ));
        assert!(matches!(
            check_output(
                &tool(),
                &result(json!({"content": [], "structuredContent": [1]})),
                ProtocolVersion::V2025_06_18
            ),
            Err(OutputProblem::NotAnObject { .. })
        ));
        let no_schema: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap();
        assert_eq!(
            check_output(&no_schema, &result(json!({"content": []})), v),
            Ok(())
        );
    }

    #[test]
    fn violations_name_the_pointer() {
        let e = check_output(
            &tool(),
            &result(json!({"content": [], "structuredContent": {"result": "x"}})),
            ProtocolVersion::V2026_07_28,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "structuredContent does not match the outputSchema:\n/result: \"x\" is not of type \"number\""
        );
    }
}
