//! `add` and `multiply`: the seed lesson's example tools, exactly as it defines them
//! (numbers `a` and `b`, both required), with an output schema and honest annotations.
//!
//! The arithmetic is decimal and exact, on the numbers as the client wrote them (read from
//! the call's argument text, so `0.1` is one tenth and a 40-digit integer keeps every
//! digit): `0.1 + 0.2` is `0.3`. A result keeps every significant digit and drops trailing
//! zeros: an integer without a fraction (`3`, not `3.0`), a plain decimal, or `d.ddde±n`
//! when plain digits would need more than 20 zeros at the end or 6 after the point. Operands
//! and results are held to [`Settings::max_digits`] significant digits; beyond it the call
//! fails with a message that says so, before anything large is computed.

use bigdecimal::BigDecimal;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::str::FromStr;
use toolwright_protocol::{CallToolResult, ToolAnnotations};
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

/// Limits of `add` and `multiply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The most significant digits an operand or a result may have (default 1,000).
    pub max_digits: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { max_digits: 1000 }
    }
}

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

/// The operands as written in the argument text.
#[derive(Deserialize)]
struct Written<'a> {
    #[serde(borrow)]
    a: &'a RawValue,
    #[serde(borrow)]
    b: &'a RawValue,
}

/// The two operands' JSON number text: from the call's text when it came over a
/// transport, else from the value (where serde_json writes integers exactly and floats in
/// their shortest round-trip form, which is how they would have been written).
fn operand_texts(args: &Value, ctx: &ToolContext) -> Result<(String, String), ToolError> {
    let misuse = || ToolError::InvalidArguments("a and b must be numbers".into());
    if let Some(text) = ctx.arguments_text()
        && let Ok(w) = serde_json::from_str::<Written<'_>>(text)
    {
        return Ok((w.a.get().trim().to_owned(), w.b.get().trim().to_owned()));
    }
    // The schema guarantees both are numbers; this only guards against misuse in-process.
    let number = |key: &str| match args.get(key) {
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(misuse()),
    };
    Ok((number("a")?, number("b")?))
}

/// An operand as a decimal, within the digit limit.
fn decimal(name: &str, text: &str, settings: Settings) -> Result<BigDecimal, ToolError> {
    let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
    let significant = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&b| b == b'0')
        .count();
    if significant > settings.max_digits {
        return Err(ToolError::InvalidArguments(format!(
            "{name} has {significant} significant digits; this server computes with at most {}",
            settings.max_digits
        )));
    }
    BigDecimal::from_str(text)
        .map(|d| d.normalized())
        .map_err(|e| ToolError::InvalidArguments(format!("{name} is not a number: {e}")))
}

/// A normalized decimal's digit count and the power of ten of its last digit.
fn shape(d: &BigDecimal) -> (i128, i128) {
    let (int, scale) = d.as_bigint_and_exponent();
    let digits = int.magnitude().to_string().len() as i128;
    (digits, -i128::from(scale))
}

/// Refuses, before computing it, a result that would need more digits than allowed.
fn check_size(op: Op, a: &BigDecimal, b: &BigDecimal, settings: Settings) -> Result<(), ToolError> {
    if a == &BigDecimal::from(0) || b == &BigDecimal::from(0) {
        return Ok(());
    }
    let ((la, ea), (lb, eb)) = (shape(a), shape(b));
    let needed = match op {
        Op::Add => (ea + la).max(eb + lb) - ea.min(eb) + 1,
        Op::Multiply => la + lb,
    };
    if needed > settings.max_digits as i128 {
        return Err(ToolError::Failed(format!(
            "the exact {} needs up to {needed} significant digits; this server allows {}",
            op.noun(),
            settings.max_digits
        )));
    }
    Ok(())
}

/// A decimal as an exact JSON number, every significant digit kept: plain digits unless
/// they would need more than 20 zeros after the last significant digit (`1e21`) or more
/// than 6 after the point before the first (`1e-7`), where `d.ddde±n` is written instead.
fn write(d: &BigDecimal) -> String {
    let d = d.normalized();
    let (int, scale) = d.as_bigint_and_exponent();
    let negative = int.sign() == bigdecimal::num_bigint::Sign::Minus;
    let digits = int.magnitude().to_string();
    if digits == "0" {
        return "0".into();
    }
    let len = digits.len() as i128;
    let exp = -i128::from(scale);
    let lead = exp + len - 1;
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if exp > 20 || lead < -6 {
        out.push_str(&digits[..1]);
        if len > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push_str(&lead.to_string());
    } else if exp >= 0 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', exp as usize));
    } else if lead >= 0 {
        let point = (lead + 1) as usize;
        out.push_str(&digits[..point]);
        out.push('.');
        out.push_str(&digits[point..]);
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-lead - 1) as usize));
        out.push_str(&digits);
    }
    out
}

/// `{"result": n}` for a result that a `Value` holds exactly.
fn plain(n: i64) -> CallToolResult {
    CallToolResult::structured(json!({"result": n}))
}

/// `{"result": text}` with `text` as written, and the nearest `Value` for checks.
fn exact(text: &str) -> CallToolResult {
    let near = serde_json::from_str::<Value>(text).unwrap_or_else(|_| {
        // Beyond an f64 (`1e400`): the largest finite number of the same sign.
        let f: f64 = text.parse().unwrap_or(0.0);
        json!(f64::MAX.copysign(f))
    });
    let raw = RawValue::from_string(format!("{{\"result\":{text}}}"))
        .expect("a decimal written by write() is a JSON number");
    CallToolResult::structured_exact(json!({"result": near}), raw)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Add,
    Multiply,
}

impl Op {
    fn noun(self) -> &'static str {
        match self {
            Op::Add => "sum",
            Op::Multiply => "product",
        }
    }
}

fn arith_call(
    op: Op,
    args: &Value,
    ctx: &ToolContext,
    settings: Settings,
) -> Result<CallToolResult, ToolError> {
    // Integers the value holds exactly need neither the text nor big arithmetic. One pass
    // over the two members costs less than two hashed lookups.
    let (mut x, mut y) = (None, None);
    for (key, value) in args.as_object().into_iter().flatten() {
        match key.as_str() {
            "a" => x = value.as_i64(),
            "b" => y = value.as_i64(),
            _ => {}
        }
    }
    if let (Some(x), Some(y)) = (x, y) {
        let exact = match op {
            Op::Add => x.checked_add(y),
            Op::Multiply => x.checked_mul(y),
        };
        if let Some(n) = exact {
            return Ok(plain(n));
        }
    }
    let (a, b) = operand_texts(args, ctx)?;
    let (a, b) = (decimal("a", &a, settings)?, decimal("b", &b, settings)?);
    check_size(op, &a, &b, settings)?;
    let result = match op {
        Op::Add => a + b,
        Op::Multiply => a * b,
    };
    Ok(exact(&write(&result)))
}

/// `add`: the sum of two numbers.
#[derive(Debug, Clone, Default)]
pub struct Add {
    settings: Settings,
}

impl Add {
    /// `add` with these limits.
    pub fn new(settings: Settings) -> Self {
        Add { settings }
    }
}

impl Tool for Add {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("add", operands_schema())
            .with_title("Add")
            .with_description(
                "Add two numbers together and return the exact sum. Returns {\"result\": a + b}, \
                 computed in decimal on the numbers as written (0.1 + 0.2 is 0.3; integers of \
                 any length stay exact). Use this for exact arithmetic instead of adding \
                 numbers in your head.",
            )
            .with_output_schema(result_schema("The sum a + b"))
            .with_annotations(ToolAnnotations::read_only_closed_world("Add"))
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        let r = arith_call(Op::Add, &args, &ctx, self.settings);
        Box::pin(std::future::ready(r))
    }
}

/// `multiply`: the product of two numbers.
#[derive(Debug, Clone, Default)]
pub struct Multiply {
    settings: Settings,
}

impl Multiply {
    /// `multiply` with these limits.
    pub fn new(settings: Settings) -> Self {
        Multiply { settings }
    }
}

impl Tool for Multiply {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("multiply", operands_schema())
            .with_title("Multiply")
            .with_description(
                "Multiply two numbers and return the exact product. Returns {\"result\": a * b}, \
                 computed in decimal on the numbers as written (0.1 * 3 is 0.3; integers of \
                 any length stay exact). Use this for exact arithmetic instead of multiplying \
                 numbers in your head.",
            )
            .with_output_schema(result_schema("The product a * b"))
            .with_annotations(ToolAnnotations::read_only_closed_world("Multiply"))
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        let r = arith_call(Op::Multiply, &args, &ctx, self.settings);
        Box::pin(std::future::ready(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &dyn Tool, args: Value) -> Result<CallToolResult, ToolError> {
        let ctx = ToolContext::detached(vec![], None);
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(t.call(args, ctx))
    }

    /// What goes on the wire: the exact text when there is one, else the value.
    fn wire(r: &CallToolResult) -> String {
        match &r.structured_text {
            Some(t) => t.get().to_owned(),
            None => r.structured_content.as_ref().unwrap().to_string(),
        }
    }

    #[test]
    fn exact_decimal_results() {
        let add = Add::default();
        let mul = Multiply::default();
        let cases: &[(&dyn Tool, Value, &str)] = &[
            (&add, json!({"a": 1, "b": 2}), "3"),
            (&add, json!({"a": 0.1, "b": 0.2}), "0.3"),
            (&add, json!({"a": 0.5, "b": 0.25}), "0.75"),
            (&add, json!({"a": -3, "b": 3}), "0"),
            (
                &add,
                json!({"a": 9007199254740993_u64, "b": 0}),
                "9007199254740993",
            ),
            (&add, json!({"a": i64::MAX, "b": 1}), "9223372036854775808"),
            (
                &add,
                json!({"a": 1e300, "b": 1}),
                &format!("1{}1", "0".repeat(299)),
            ),
            (&mul, json!({"a": 6, "b": 7}), "42"),
            (&mul, json!({"a": 1.5, "b": 2}), "3"),
            (&mul, json!({"a": -2, "b": 0.5}), "-1"),
            (&mul, json!({"a": 0.1, "b": 3}), "0.3"),
            (&mul, json!({"a": 1e-300, "b": 1e-300}), "1e-600"),
            (&mul, json!({"a": 1e308, "b": 10}), "1e309"),
            (
                &add,
                json!({"a": 1e20, "b": 0.5}),
                "100000000000000000000.5",
            ),
        ];
        for (tool, args, want) in cases {
            let r = run(*tool, args.clone()).unwrap();
            assert_eq!(wire(&r), format!("{{\"result\":{want}}}"), "{args}");
        }
    }

    #[test]
    fn writing_keeps_every_digit_in_javascript_s_form() {
        for (text, want) in [
            ("120", "120"),
            ("1.20", "1.2"),
            ("-0.000123", "-0.000123"),
            ("0.000001", "0.000001"),
            ("1e-7", "1e-7"),
            ("1e11", "100000000000"),
            ("1.5e20", "150000000000000000000"),
            ("1e21", "1e21"),
            ("-12.5e30", "-1.25e31"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1234567890123456789012345.5", "1234567890123456789012345.5"),
            ("-0", "0"),
        ] {
            assert_eq!(write(&BigDecimal::from_str(text).unwrap()), want, "{text}");
        }
    }

    #[test]
    fn limits_are_refused_before_computing() {
        let s = Settings { max_digits: 20 };
        let add = Add::new(s);
        let mul = Multiply::new(s);
        let err = run(&add, json!({"a": 1e300, "b": 1}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("exact sum needs up to 302 significant digits"),
            "{err}"
        );
        let err = run(&mul, json!({"a": 12345678901.0, "b": 12345678901.0}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exact product"), "{err}");
        assert!(run(&mul, json!({"a": 1e300, "b": 1e300})).is_ok());
    }

    #[test]
    fn definitions_follow_the_seed() {
        for t in [&Add::default() as &dyn Tool, &Multiply::default()] {
            let d = t.definition();
            assert_eq!(d.input_schema["required"], json!(["a", "b"]));
            let h = d.hints();
            assert!(h.read_only() && !h.destructive() && h.idempotent() && !h.open_world());
        }
    }
}
