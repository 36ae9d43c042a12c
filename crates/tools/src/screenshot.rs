//! `take_screenshot` (being written; placeholder until the Chromium driver lands).

use serde_json::{Value, json};
use toolwright_protocol::CallToolResult;
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

/// Settings of `take_screenshot`.
#[derive(Debug, Clone, Default)]
pub struct Settings {}

/// `take_screenshot`.
pub struct TakeScreenshot;

impl TakeScreenshot {
    /// A tool with these settings.
    pub fn new(_settings: Settings) -> Self {
        TakeScreenshot
    }
}

impl Tool for TakeScreenshot {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("take_screenshot", json!({"type": "object"}))
    }
    fn call(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async {
            Err::<CallToolResult, _>(ToolError::Failed("not implemented yet".into()))
        })
    }
}
