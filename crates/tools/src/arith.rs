//! `add` and `multiply`: the seed lesson's example tools, exactly as it defines them
//! (numbers `a` and `b`, both required), with an output schema and honest annotations.

use serde_json::{Value, json};
use toolwright_protocol::{CallToolResult, ToolAnnotations};
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

fn operands_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "First number"},
            "b": {"type": "number", "description": "Second number"}
        },
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn result_schema(what: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"result": {"type": "number", "description": what}},
        "required": ["result"],
        "additionalProperties": false
    })
}

fn operands(args: &Value) -> Result<(f64, f64), ToolError> {
    // The schema guarantees both are numbers; this only guards against misuse in-process.
    // One pass over the two members costs less than two hashed lookups.
    let (mut a, mut b) = (None, None);
    for (key, value) in args.as_object().into_iter().flatten() {
        match key.as_str() {
            "a" => a = value.as_f64(),
            "b" => b = value.as_f64(),
            _ => {}
        }
    }
    match (a, b) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(ToolError::InvalidArguments(
            "a and b must be numbers".into(),
        )),
    }
}

/// Keeps integers integral on the wire (`3`, not `3.0`) when the exact result is one.
fn number(x: f64) -> Result<Value, ToolError> {
    if !x.is_finite() {
        return Err(ToolError::Failed(format!(
            "the result is not a finite number ({x}); JSON cannot represent it"
        )));
    }
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        Ok(json!(x as i64))
    } else {
        Ok(json!(x))
    }
}

fn arith_call(args: &Value, op: fn(f64, f64) -> f64) -> Result<CallToolResult, ToolError> {
    let (a, b) = operands(args)?;
    Ok(CallToolResult::structured(
        json!({"result": number(op(a, b))?}),
    ))
}

/// `add`: the sum of two numbers.
pub struct Add;

impl Tool for Add {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("add", operands_schema())
            .with_title("Add")
            .with_description(
                "Add two numbers together and return the sum. Returns {\"result\": a + b}. \
                 Use this for exact arithmetic instead of adding numbers in your head.",
            )
            .with_output_schema(result_schema("The sum a + b"))
            .with_annotations(ToolAnnotations::read_only_closed_world("Add"))
    }

    fn call(&self, args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(std::future::ready(arith_call(&args, |a, b| a + b)))
    }
}

/// `multiply`: the product of two numbers.
pub struct Multiply;

impl Tool for Multiply {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("multiply", operands_schema())
            .with_title("Multiply")
            .with_description(
                "Multiply two numbers and return the product. Returns {\"result\": a * b}. \
                 Use this for exact arithmetic instead of multiplying numbers in your head.",
            )
            .with_output_schema(result_schema("The product a * b"))
            .with_annotations(ToolAnnotations::read_only_closed_world("Multiply"))
    }

    fn call(&self, args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(std::future::ready(arith_call(&args, |a, b| a * b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &dyn Tool, args: Value) -> Result<CallToolResult, ToolError> {
        let ctx = ToolContext::detached(vec![], None);
        futures_lite_block_on(t.call(args, ctx))
    }

    fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn add_cases() {
        let cases = [
            (json!({"a": 1, "b": 2}), json!({"result": 3})),
            (json!({"a": 0.5, "b": 0.25}), json!({"result": 0.75})),
            (json!({"a": -3, "b": 3}), json!({"result": 0})),
        ];
        for (args, want) in cases {
            assert_eq!(run(&Add, args).unwrap().structured_content, Some(want));
        }
    }

    #[test]
    fn multiply_cases() {
        let cases = [
            (json!({"a": 6, "b": 7}), json!({"result": 42})),
            (json!({"a": 1.5, "b": 2}), json!({"result": 3})),
            (json!({"a": -2, "b": 0.5}), json!({"result": -1})),
        ];
        for (args, want) in cases {
            assert_eq!(run(&Multiply, args).unwrap().structured_content, Some(want));
        }
    }

    #[test]
    fn overflow_is_a_tool_error() {
        let r = run(&Multiply, json!({"a": 1e308, "b": 10}));
        assert!(matches!(r, Err(ToolError::Failed(_))));
    }

    #[test]
    fn definitions_follow_the_seed() {
        for t in [&Add as &dyn Tool, &Multiply] {
            let d = t.definition();
            assert_eq!(d.input_schema["required"], json!(["a", "b"]));
            let h = d.hints();
            assert!(h.read_only() && !h.destructive() && h.idempotent() && !h.open_world());
        }
    }
}
