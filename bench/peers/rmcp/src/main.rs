//! Benchmark peer: the official Rust MCP SDK (`rmcp` 3.11.0) serving one `add` tool.
//!
//! Written the way rmcp's own examples and tests write a tool server (`#[tool_router]`,
//! `#[tool]`, `Parameters<T>`, `Json<T>` for structured output), in rmcp's BEST
//! configuration for throughput:
//!
//! * stdio: `rmcp::transport::io::stdio_pipes()` (non-blocking Linux pipe driver on the IO
//!   reactor) instead of the documented `stdio()`, whose every read and write hops through
//!   tokio's blocking thread pool (~8x slower pipelined).
//! * HTTP: `StreamableHttpService` (legacy sessions, the default, SSE answers) nested at
//!   `/mcp` in an axum router, served by `axum::serve` with `TCP_NODELAY` set on every
//!   accepted socket (`ListenerExt::tap_io`); without it each reply stalls ~44 ms on Nagle
//!   and delayed ACK. `--stateless` switches to rmcp's stateless mode with JSON answers.
//!
//! Usage: `peer-rmcp` (stdio) | `peer-rmcp --http 127.0.0.1:PORT [--stateless]`.
//! With `BENCH_EXTRA_TOOLS=N` in the environment it registers N more tools
//! (`bench_tool_0000`...) with the same input schema, for the `tools/list` figure.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::{
    Json, ServerHandler, ServiceExt,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        wrapper::Parameters,
    },
    model::{CallToolResult, ServerCapabilities, ServerConfig, Tool},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

/// Arguments of `add`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// Left operand.
    a: f64,
    /// Right operand.
    b: f64,
}

/// Structured result of `add`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct AddResult {
    /// The sum.
    result: f64,
}

#[derive(Debug, Clone)]
struct Bench {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bench {
    fn new(extra: usize) -> Self {
        let mut tool_router = Self::tool_router();
        if extra > 0 {
            let schema: Arc<rmcp::model::JsonObject> = Arc::new(
                serde_json::to_value(schemars::schema_for!(AddArgs))
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default(),
            );
            for i in 0..extra {
                let tool = Tool::new(
                    format!("bench_tool_{i:04}"),
                    format!("Synthetic benchmark tool number {i}: adds two numbers."),
                    schema.clone(),
                );
                tool_router.add_route(ToolRoute::new_dyn(tool, |ctx| {
                    let sum = ctx
                        .arguments
                        .as_ref()
                        .map(|args| {
                            let num = |k: &str| args.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
                            num("a") + num("b")
                        })
                        .unwrap_or(0.0);
                    Box::pin(async move {
                        Ok(CallToolResult::structured(serde_json::json!({ "result": sum })).into())
                    })
                }));
            }
        }
        Self { tool_router }
    }

    /// Add two numbers.
    #[tool(description = "Add two numbers and return their sum.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<AddResult> {
        Json(AddResult { result: a + b })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn extra_tools() -> usize {
    std::env::var("BENCH_EXTRA_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let extra = extra_tools();
    let http = args
        .iter()
        .position(|a| a == "--http")
        .map(|i| args.get(i + 1).cloned().ok_or("--http needs ADDR"))
        .transpose()?;
    let stateless = args.iter().any(|a| a == "--stateless");

    match http {
        None => {
            let service = Bench::new(extra)
                .serve(rmcp::transport::io::stdio_pipes())
                .await?;
            service.waiting().await?;
        }
        Some(addr) => {
            let mut config = StreamableHttpServerConfig::default();
            if stateless {
                config = config
                    .with_legacy_session_mode(false)
                    .with_json_response(true);
            }
            let service: StreamableHttpService<Bench, LocalSessionManager> =
                StreamableHttpService::new(
                    move || Ok(Bench::new(extra)),
                    Default::default(),
                    config,
                );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(&addr).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            eprintln!("peer-rmcp listening on http://{addr}/mcp");
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await?;
        }
    }
    Ok(())
}
