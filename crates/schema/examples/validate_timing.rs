//! Rough timing of validating a realistic tool-argument object.
//!
//! Run with `cargo run --release -p toolwright-schema --example validate_timing`.
//! It prints nanoseconds per call; it asserts nothing (timings vary by machine).

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use toolwright_schema::Validator;

fn main() -> Result<(), toolwright_schema::SchemaError> {
    let validator = Validator::compile(&json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "mode": {"type": "string", "enum": ["literal", "regex", "glob"]},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
            "case_sensitive": {"type": "boolean"},
            "include": {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": 32},
            "context_lines": {"type": "integer", "minimum": 0, "maximum": 20}
        },
        "required": ["path", "query"],
        "additionalProperties": false
    }))?;
    let good = json!({
        "path": "/srv/project", "query": "fn main", "mode": "literal", "max_results": 50,
        "case_sensitive": false, "include": ["*.rs", "*.toml", "src/**"], "context_lines": 2
    });
    let bad = json!({"path": "", "query": "x", "mode": "fuzzy", "max_results": 0});
    let rounds = 200_000u32;
    for (name, instance) in [("valid", &good), ("invalid", &bad)] {
        for _ in 0..rounds / 10 {
            let _ = black_box(validator.validate(black_box(instance)));
        }
        let start = Instant::now();
        for _ in 0..rounds {
            let _ = black_box(validator.validate(black_box(instance)));
        }
        let per_call = start.elapsed().as_nanos() / u128::from(rounds);
        println!("validate ({name}): {per_call} ns per call");
    }
    Ok(())
}
