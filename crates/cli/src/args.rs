//! Command-line arguments.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// toolwright: an MCP tool server and toolkit.
#[derive(Debug, Parser)]
#[command(name = "toolwright", version, about, long_about = None)]
#[command(after_help = "Exit codes: 0 success, 1 tool failure or findings, 2 usage or I/O error.")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the built-in tools over MCP (stdio; newline-delimited JSON-RPC).
    Serve(ServeArgs),
    /// Print the built-in tool definitions.
    Tools(ToolsArgs),
    /// Run one built-in tool in-process and print its result.
    Call(CallArgs),
}

/// Settings shared by every command that builds a server.
#[derive(Debug, Args, Clone)]
pub struct ServerArgs {
    /// A directory file tools may touch (repeatable; default: the current directory).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Seconds a tool call may run before it is cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub call_timeout: f64,
    /// Largest message accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Deepest JSON nesting accepted.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_depth: usize,
    /// Tools per tools/list page.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub page_size: usize,
    /// Report argument validation failures as JSON-RPC -32602 errors instead of isError
    /// results (the behaviour protocol versions up to 2025-06-18 described).
    #[arg(long)]
    pub input_errors_as_protocol_errors: bool,
    /// Also register a fixture tool set (`testing`: tools for protocol tests).
    #[arg(long, value_name = "SET", hide = true)]
    pub fixtures: Option<String>,
    /// Register N synthetic tools (for benchmarks of tools/list).
    #[arg(long, value_name = "N", default_value_t = 0, hide = true)]
    pub bench_extra_tools: usize,
}

/// `toolwright serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Server settings.
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `toolwright tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the definitions as JSON (the tools/list shape) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Server settings.
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `toolwright call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call.
    pub tool: String,
    /// Arguments as key=value; a value that parses as JSON is taken as JSON (a=1 is a
    /// number), anything else as a string.
    #[arg(value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
    /// All arguments as one JSON object (instead of key=value pairs).
    #[arg(long, value_name = "ARGS", conflicts_with = "pairs")]
    pub json: Option<String>,
    /// Server settings.
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Parses the process arguments.
pub fn parse() -> Result<Cli, clap::Error> {
    Cli::try_parse()
}
