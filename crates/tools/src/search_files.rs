//! `search_files` (being written; placeholder until the sandboxed walker lands).

use serde_json::{Value, json};
use toolwright_protocol::CallToolResult;
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

/// `search_files`.
#[derive(Default)]
pub struct SearchFiles;

impl Tool for SearchFiles {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("search_files", json!({"type": "object"}))
    }
    fn call(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async {
            Err::<CallToolResult, _>(ToolError::Failed("not implemented yet".into()))
        })
    }
}
