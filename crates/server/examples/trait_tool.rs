//! A tool as a type implementing `Tool`, served over stdio.
//!
//! Run: `cargo run -p toolwright-server --example trait_tool`, then speak MCP on stdin.

use serde_json::{Value, json};
use toolwright_protocol::{CallToolResult, Implementation, LoggingLevel, ToolAnnotations};
use toolwright_server::{Config, Server, Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

/// Counts the words of a text, reporting progress per line.
struct WordCount;

impl Tool for WordCount {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "count_words",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to count", "maxLength": 1000000}},
                "required": ["text"],
                "additionalProperties": false
            }),
        )
        .with_title("Count words")
        .with_description(
            "Count the words and lines of a text. Returns {\"words\": n, \"lines\": n}. \
             Use this when you need exact counts rather than estimates.",
        )
        .with_output_schema(json!({
            "type": "object",
            "properties": {"words": {"type": "integer"}, "lines": {"type": "integer"}},
            "required": ["words", "lines"]
        }))
        .with_annotations(ToolAnnotations::read_only_closed_world("Count words"))
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let text = args["text"].as_str().unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let mut words = 0;
            for (i, line) in lines.iter().enumerate() {
                if ctx.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                words += line.split_whitespace().count();
                ctx.progress((i + 1) as f64, Some(lines.len() as f64), None);
            }
            ctx.log(
                LoggingLevel::Debug,
                Some("count_words"),
                json!({"words": words}),
            );
            Ok(CallToolResult::structured(
                json!({"words": words, "lines": lines.len()}),
            ))
        })
    }
}

fn main() -> std::io::Result<()> {
    let server = Server::new(
        Implementation::new("word-count", "1.0.0"),
        Config::default(),
    );
    server.register(WordCount).expect("a valid definition");
    let rt = tokio::runtime::Runtime::new()?;
    toolwright_server::serve_stdio(&server, rt.handle())
}
