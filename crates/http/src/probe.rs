//! Transport probes: small tools that make a server exercise what a transport must carry —
//! progress and log notifications during a call, long calls and their cancellation,
//! requests to the client, and changes to the tool list. `toolwright serve --probe-tools`
//! registers them; the integration tests and anyone checking a client's transport use them.
//!
//! - `probe_progress {steps, delay_ms}`: one progress notification (when the request has a
//!   `progressToken`) and one log message per step, pausing `delay_ms` between steps.
//! - `probe_sleep {ms}`: waits, honouring cancellation; `probe_stats` counts how such calls
//!   ended, so a test can see whether a call was cancelled.
//! - `probe_roots`: asks the client for `roots/list` (legacy clients that declared roots).
//! - `probe_toggle`: registers `probe_extra`, or removes it, so that clients are told the
//!   tool list changed.
//!
//! `probe_toggle` holds a handle to the server it changes, so a server with the probes
//! lives until the process ends.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use toolwright_protocol::{CallToolResult, ClientCapabilities, Content, LoggingLevel};
use toolwright_server::{
    FnTool, RegisterError, Server, Tool, ToolContext, ToolDefinition, ToolError, ToolFuture,
};

#[derive(Default)]
struct Stats {
    started: AtomicU64,
    completed: AtomicU64,
    cancelled: AtomicU64,
}

/// Counts how a `probe_sleep` call ended, whether it returned or was dropped.
struct Ending {
    stats: Arc<Stats>,
    completed: bool,
}

impl Drop for Ending {
    fn drop(&mut self) {
        let counter = if self.completed {
            &self.stats.completed
        } else {
            &self.stats.cancelled
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

fn int_arg(args: &Value, key: &str, default: u64) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or(default)
}

/// Waits `ms`, or returns false as soon as the call is cancelled.
async fn pause(ctx: &ToolContext, ms: u64) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => true,
        _ = ctx.cancellation().cancelled() => false,
    }
}

fn tool(def: Value, f: impl Fn(Value, ToolContext) -> ToolFut + Send + Sync + 'static) -> FnTool {
    FnTool::from_json(def, f).expect("the probe definitions are valid")
}

type ToolFut =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<CallToolResult, ToolError>> + Send>>;

fn extra() -> FnTool {
    tool(
        json!({"name": "probe_extra", "description": "Appears and disappears with probe_toggle.",
               "inputSchema": {"type": "object", "additionalProperties": false}}),
        |_, _| Box::pin(async { Ok(CallToolResult::content(vec![Content::text("extra")])) }),
    )
}

/// A tool that cannot work without the client's `roots` capability: modern requests that do
/// not declare it get -32021 before it runs.
struct NeedsRoots(FnTool);

impl Tool for NeedsRoots {
    fn definition(&self) -> ToolDefinition {
        self.0.definition()
    }
    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        self.0.call(args, ctx)
    }
    fn required_client_capabilities(&self) -> Option<ClientCapabilities> {
        Some(ClientCapabilities {
            roots: Some(json!({})),
            ..ClientCapabilities::default()
        })
    }
}

/// Registers the probe tools on `server`.
pub fn register(server: &Server) -> Result<(), RegisterError> {
    let stats = Arc::new(Stats::default());
    let count_schema = |what: &str| json!({"type": "object", "properties": {what: {"type": "integer"}}, "required": [what]});

    server.register(tool(
        json!({
            "name": "probe_progress",
            "title": "Progress probe",
            "description": "Sends one progress notification (when asked for) and one log message per step, \
                            pausing delay_ms between steps. Returns {\"steps\": n}.",
            "inputSchema": {"type": "object", "properties": {
                "steps": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 3},
                "delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000, "default": 0}
            }, "additionalProperties": false},
            "outputSchema": count_schema("steps"),
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        |args, ctx| {
            Box::pin(async move {
                let steps = int_arg(&args, "steps", 3);
                let delay = int_arg(&args, "delay_ms", 0);
                for i in 1..=steps {
                    ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i} of {steps}")));
                    ctx.log(LoggingLevel::Info, Some("probe"), json!(format!("step {i} of {steps}")));
                    if delay > 0 && !pause(&ctx, delay).await {
                        return Err(ToolError::Cancelled);
                    }
                }
                Ok(CallToolResult::structured(json!({"steps": steps})))
            })
        },
    ))?;

    let s = stats.clone();
    server.register(tool(
        json!({
            "name": "probe_sleep",
            "title": "Sleep probe",
            "description": "Waits ms milliseconds, or until cancelled, first sending a progress \
                            notification when the request asked for progress. Returns {\"slept_ms\": ms}.",
            "inputSchema": {"type": "object", "properties": {
                "ms": {"type": "integer", "minimum": 0, "maximum": 600000}
            }, "required": ["ms"], "additionalProperties": false},
            "outputSchema": count_schema("slept_ms"),
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        move |args, ctx| {
            let s = s.clone();
            Box::pin(async move {
                let ms = int_arg(&args, "ms", 0);
                s.started.fetch_add(1, Ordering::Relaxed);
                // A call can end by being dropped (an HTTP client went away), so the
                // counting happens in a guard.
                let mut ending = Ending { stats: s, completed: false };
                ctx.progress(0.0, Some(ms as f64), Some("sleeping"));
                if pause(&ctx, ms).await {
                    ending.completed = true;
                    Ok(CallToolResult::structured(json!({"slept_ms": ms})))
                } else {
                    Err(ToolError::Cancelled)
                }
            })
        },
    ))?;

    let s = stats;
    server.register(tool(
        json!({
            "name": "probe_stats",
            "title": "Probe statistics",
            "description": "How probe_sleep calls ended so far: started, completed, cancelled.",
            "inputSchema": {"type": "object", "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {
                "started": {"type": "integer"}, "completed": {"type": "integer"}, "cancelled": {"type": "integer"}
            }, "required": ["started", "completed", "cancelled"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        move |_, _| {
            let v = json!({
                "started": s.started.load(Ordering::Relaxed),
                "completed": s.completed.load(Ordering::Relaxed),
                "cancelled": s.cancelled.load(Ordering::Relaxed),
            });
            Box::pin(async move { Ok(CallToolResult::structured(v)) })
        },
    ))?;

    server.register(NeedsRoots(tool(
        json!({
            "name": "probe_roots",
            "title": "Roots probe",
            "description": "Asks the client for its roots (roots/list) and returns their URIs.",
            "inputSchema": {"type": "object", "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        |_, ctx| {
            Box::pin(async move {
                let v = ctx
                    .request_client("roots/list", json!({}))
                    .await
                    .map_err(|e| ToolError::Failed(format!("roots/list failed: {e}")))?;
                let uris: Vec<Value> = v
                    .get("roots")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|r| r.get("uri").cloned()).collect())
                    .unwrap_or_default();
                Ok(CallToolResult::content(vec![Content::text(
                    Value::Array(uris).to_string(),
                )]))
            })
        },
    )))?;

    let handle = server.clone();
    server.register(tool(
        json!({
            "name": "probe_toggle",
            "title": "Tool-list probe",
            "description": "Registers probe_extra, or removes it if present, so clients are told the tool list changed.",
            "inputSchema": {"type": "object", "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {"registered": {"type": "boolean"}}, "required": ["registered"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}
        }),
        move |_, _| {
            let registered = if handle.unregister("probe_extra") {
                false
            } else {
                handle.register(extra()).is_ok()
            };
            Box::pin(async move { Ok(CallToolResult::structured(json!({"registered": registered}))) })
        },
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_protocol::Implementation;
    use toolwright_server::Config;

    #[test]
    fn registers_every_probe() {
        let server = Server::new(Implementation::new("t", "0"), Config::default());
        register(&server).unwrap();
        for name in [
            "probe_progress",
            "probe_sleep",
            "probe_stats",
            "probe_roots",
            "probe_toggle",
        ] {
            assert!(server.tools().get(name).is_some(), "{name}");
        }
        assert!(register(&server).is_err(), "twice is a duplicate");
    }
}
