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

/// The subcommands. Each one's arguments are built only when it runs (`defer`): building
/// every subcommand's arguments took a third of a millisecond of `serve`'s start-up.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Serve the built-in tools and declared ones (--config) over MCP (stdio, or --http).
    Serve(ServeArgs),
    /// Print the built-in tool definitions.
    Tools(ToolsArgs),
    /// Run one tool in-process, built-in or declared with --config (or, with --server/--url,
    /// a tool of any MCP server) and print its result.
    Call(CallArgs),
    /// Lint tool definitions: files, or the tools/list of any MCP server.
    Lint(crate::lint_cmd::LintArgs),
    /// List the tools of any MCP server (a stdio command or an HTTP URL).
    List(crate::client_cmd::ListArgs),
    /// The pinned definitions of upstream servers' tools: list them, accept changed ones.
    Trust(crate::trust_cmd::TrustArgs),
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
    /// Most tools per tools/list page (default: no count limit; pages are cut at
    /// --page-bytes).
    #[arg(long, value_name = "N")]
    pub page_size: Option<usize>,
    /// Most bytes of tool definitions per tools/list page.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub page_bytes: usize,
    /// Report argument validation failures as JSON-RPC -32602 errors instead of isError
    /// results (the behaviour protocol versions up to 2025-06-18 described).
    #[arg(long)]
    pub input_errors_as_protocol_errors: bool,
    /// Also register fixture sets, for tests and benchmarks (repeatable, or comma-separated):
    /// `testing` (tools for protocol tests), `conformance` (the tools, resources and prompts
    /// of the official MCP conformance suite), `probe` (transport probes: progress,
    /// cancellation, roots, tool-list changes), `bulk:N` (N generated tools, for benchmarks
    /// of tools/list).
    #[arg(long, value_name = "SET", value_delimiter = ',')]
    pub fixtures: Vec<toolwright_fixtures::Set>,
    /// Most subscriptions/listen streams one session may hold open (on stdio, the whole
    /// connection is one session).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_listens: usize,
    /// Most significant digits add and multiply take in an operand or give in a result;
    /// beyond it the call fails, before anything large is computed.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub arith_max_digits: u32,
    /// A file of declared tools and upstream servers (YAML, JSON or TOML; repeatable),
    /// served after the built-in tools [default: ./toolwright.yaml when it exists].
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Settings of the take_screenshot tool.
    #[command(flatten)]
    pub screenshot: ScreenshotArgs,
}

impl ServerArgs {
    /// The tool files to load: those given, or `./toolwright.yaml` when it exists.
    pub fn config_files(&self) -> Vec<PathBuf> {
        if !self.configs.is_empty() {
            return self.configs.clone();
        }
        let default = PathBuf::from("toolwright.yaml");
        if default.is_file() {
            vec![default]
        } else {
            Vec::new()
        }
    }
}

/// Settings of `take_screenshot` (headless Chromium).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Screenshot tool")]
pub struct ScreenshotArgs {
    /// Chromium or Chrome executable [default: chromium, chromium-browser or google-chrome
    /// on PATH].
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// Seconds a page may take to load [default: 30].
    #[arg(long, value_name = "SECS")]
    pub screenshot_timeout: Option<f64>,
    /// Tallest full-page screenshot, in pixels; taller pages are cut [default: 16384].
    #[arg(long, value_name = "PX")]
    pub screenshot_max_height: Option<u32>,
    /// Screenshots taken at once; more wait their turn [default: 4].
    #[arg(long, value_name = "N")]
    pub screenshot_concurrency: Option<usize>,
    /// Allow pages on private, link-local and other non-public addresses.
    #[arg(long)]
    pub screenshot_allow_private: bool,
    /// Refuse loopback addresses (127.0.0.0/8, ::1, localhost), allowed by default.
    #[arg(long)]
    pub screenshot_no_loopback: bool,
    /// Run Chromium without its sandbox (it always runs without one as root).
    #[arg(long)]
    pub screenshot_no_sandbox: bool,
}

impl ScreenshotArgs {
    /// The tool's settings, checked.
    pub fn settings(&self) -> anyhow::Result<toolwright_tools::screenshot::Settings> {
        use toolwright_tools::screenshot::Settings;
        let d = Settings::default();
        let timeout = match self.screenshot_timeout {
            None => d.timeout,
            Some(t) if t > 0.0 && t.is_finite() => std::time::Duration::from_secs_f64(t),
            Some(_) => anyhow::bail!("--screenshot-timeout must be a positive number of seconds"),
        };
        if self.screenshot_max_height == Some(0) || self.screenshot_concurrency == Some(0) {
            anyhow::bail!(
                "--screenshot-max-height and --screenshot-concurrency must be at least 1"
            );
        }
        Ok(Settings {
            chromium: self.chromium.clone(),
            timeout,
            max_height: self.screenshot_max_height.unwrap_or(d.max_height),
            allow_private: self.screenshot_allow_private,
            allow_loopback: !self.screenshot_no_loopback,
            concurrency: self.screenshot_concurrency.unwrap_or(d.concurrency),
            sandbox: !self.screenshot_no_sandbox,
        })
    }
}

/// `toolwright serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Server settings.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Streamable HTTP settings.
    #[command(flatten)]
    pub http: HttpArgs,
    /// Do not watch the tool files (by default an edit is loaded at once, and an edit that
    /// does not load is logged and ignored).
    #[arg(long)]
    pub no_watch: bool,
}

/// `toolwright serve --http`: Streamable HTTP instead of stdio.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Streamable HTTP")]
pub struct HttpArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio [default when given bare:
    /// 127.0.0.1:8080]; port 0 picks a free port.
    #[arg(long = "http", value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    pub addr: Option<String>,
    /// No sessions: any replica can answer any request (no GET stream, no resumption, no
    /// server-to-client requests for legacy clients).
    #[arg(long, requires = "addr")]
    pub stateless: bool,
    /// Seconds after which an idle legacy session ends.
    #[arg(long, value_name = "SECS", default_value_t = 1800, requires = "addr")]
    pub session_idle_timeout: u64,
    /// An Origin allowed besides `localhost`, `127.0.0.1` and `[::1]` (repeatable; `*` for any).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "addr")]
    pub allowed_origins: Vec<String>,
    /// A Host allowed besides the loopback names, as NAME or NAME:PORT (repeatable; `*` for
    /// any).
    #[arg(long = "allowed-host", value_name = "HOST", requires = "addr")]
    pub allowed_hosts: Vec<String>,
    /// Require `Authorization: Bearer <token>`, the token being this environment variable's
    /// value.
    #[arg(long, value_name = "VAR", requires = "addr")]
    pub auth_token_env: Option<String>,
    /// An authorization server to name in the Protected Resource Metadata (repeatable).
    #[arg(long = "authorization-server", value_name = "URL", requires = "addr")]
    pub authorization_servers: Vec<String>,
    /// This server's canonical URL, as clients reach it [default: http://ADDR/mcp].
    #[arg(long, value_name = "URL", requires = "addr")]
    pub resource_url: Option<String>,
    /// Most legacy sessions at once.
    #[arg(long, value_name = "N", default_value_t = 10_000, requires = "addr")]
    pub max_sessions: usize,
    /// Most event streams carrying call replies (POST streams and their resumptions) open at
    /// once; more get 503.
    #[arg(long, value_name = "N", default_value_t = 1_000, requires = "addr")]
    pub max_sse_streams: usize,
    /// Most reply streams one client (IP address; IPv6: its /64) has open at once; more get
    /// 429.
    #[arg(long, value_name = "N", default_value_t = 500, requires = "addr")]
    pub max_sse_streams_per_client: usize,
    /// Most standalone GET streams open at once (a budget apart from reply streams; one per
    /// legacy session at most); more get 503.
    #[arg(long, value_name = "N", default_value_t = 1_000, requires = "addr")]
    pub max_get_streams: usize,
    /// Most standalone GET streams one client (IP address; IPv6: its /64) has open at once;
    /// more get 429.
    #[arg(long, value_name = "N", default_value_t = 100, requires = "addr")]
    pub max_get_streams_per_client: usize,
    /// Largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024, requires = "addr")]
    pub max_body_bytes: usize,
    /// Serving threads, each with its own listener on the address (`SO_REUSEPORT`) and a
    /// single-threaded runtime; a connection stays on one thread. One thread serves about
    /// 60k calls/s on a 2-core machine; add threads when one core is not enough.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "addr")]
    pub http_threads: usize,
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
    /// A remote server to call instead of the built-in tools.
    #[command(flatten)]
    pub remote: crate::client_cmd::RemoteArgs,
    /// Server settings.
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Parses the process arguments.
pub fn parse() -> Result<Cli, clap::Error> {
    Cli::try_parse()
}
