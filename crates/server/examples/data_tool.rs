//! Tools defined purely as data (JSON definitions, as in the seed lesson's `TOOLS` list)
//! plus closures.
//!
//! Run: `cargo run -p toolwright-server --example data_tool`.

use serde_json::{Value, json};
use toolwright_protocol::{CallToolResult, Implementation};
use toolwright_server::{Config, FnTool, Server};

fn main() -> std::io::Result<()> {
    let tools: Vec<Value> = serde_json::from_str(
        r#"[
        {"name": "add", "description": "Add two numbers together and return the sum",
         "inputSchema": {"type": "object",
            "properties": {"a": {"type": "number", "description": "First number"},
                           "b": {"type": "number", "description": "Second number"}},
            "required": ["a", "b"]}},
        {"name": "multiply", "description": "Multiply two numbers and return the product",
         "inputSchema": {"type": "object",
            "properties": {"a": {"type": "number", "description": "First number"},
                           "b": {"type": "number", "description": "Second number"}},
            "required": ["a", "b"]}}
    ]"#,
    )
    .expect("valid JSON");
    let server = Server::new(
        Implementation::new("data-tools", "1.0.0"),
        Config::default(),
    );
    for def in tools {
        let name = def["name"].as_str().unwrap_or_default().to_owned();
        let tool = FnTool::from_json(def, move |args, _ctx| {
            let (a, b) = (
                args["a"].as_f64().unwrap_or(0.0),
                args["b"].as_f64().unwrap_or(0.0),
            );
            let result = if name == "add" { a + b } else { a * b };
            async move { Ok(CallToolResult::structured(json!({"result": result}))) }
        })
        .expect("a valid definition");
        server.register(tool).expect("registers");
    }
    let rt = tokio::runtime::Runtime::new()?;
    toolwright_server::serve_stdio(&server, rt.handle())
}
