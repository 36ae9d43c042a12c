//! Command-line arguments, and the check that each option given applies to what runs.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// toolwright: an MCP tool server and toolkit.
#[derive(Debug, Parser)]
#[command(name = "toolwright", version, about = "toolwright: an MCP tool server and toolkit", long_about = None)]
#[command(after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, as every help shows them.
pub const EXIT_CODES: &str = "Exit codes: 0 success; 1 findings (lint), a tool that failed (an \
    isError result, an error reply, or a result that breaks the tool's outputSchema) or nothing \
    to accept (trust accept); 2 usage, I/O or connection error. A closed stdout (a broken pipe) \
    exits 0.";

/// The subcommands. Each one's arguments are built only when it runs (`defer`): building
/// every subcommand's arguments took a third of a millisecond of `serve`'s start-up.
///
/// A variant's doc comment is its subcommand's summary in `--help`; the argument structs
/// have none of their own (a struct's doc comment would replace it).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Serve the built-in tools and declared ones (--config) over MCP (stdio, or --http).
    Serve(ServeArgs),
    /// Print the tool definitions: the built-in tools, and declared ones (--config).
    Tools(ToolsArgs),
    /// Run one tool and print its result: in-process (built-in, or declared with --config), or
    /// a tool of any MCP server (`-- CMD ARGS...` or --url).
    Call(CallArgs),
    /// Lint tool definitions: files, or the tools/list of any MCP server.
    Lint(crate::lint_cmd::LintArgs),
    /// List the tools of any MCP server (`-- CMD ARGS...` for stdio, or --url).
    List(crate::client_cmd::ListArgs),
    /// The skills of any MCP server (Skills extension): list them, or get one's files,
    /// each verified against the listing.
    Skills(crate::skills_cmd::SkillsArgs),
    /// The pinned definitions of upstream servers' tools: list them, accept changed ones.
    Trust(crate::trust_cmd::TrustArgs),
    /// Print the `api_keys:` entry of a key (its SHA-256 digest): from stdin, or --generate.
    HashKey(crate::keys_cmd::HashKeyArgs),
    /// Write a tool file to review from another description of an API (`import openapi SPEC`).
    Import(crate::import_cmd::ImportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
}

// `toolwright completions`.
#[derive(Debug, Args)]
#[command(
    after_help = "Install, for example:\n  bash: toolwright completions bash > \
    ~/.local/share/bash-completion/completions/toolwright\n  zsh:  toolwright completions zsh > \
    ~/.zfunc/_toolwright   (with fpath+=~/.zfunc before compinit)\n  fish: toolwright \
    completions fish > ~/.config/fish/completions/toolwright.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "toolwright", out);
}

// Which tools there are (`serve`, `tools`, and `call` in-process).
#[derive(Debug, Args, Clone, Default)]
pub struct ToolSetArgs {
    /// A file of declared tools and upstream servers (YAML, JSON or TOML; repeatable),
    /// served after the built-in tools [default: ./toolwright.yaml when it exists].
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Also register fixture sets, for tests and benchmarks (repeatable, or comma-separated):
    /// `testing` (tools for protocol tests), `conformance` (the tools, resources and prompts
    /// of the official MCP conformance suite), `probe` (transport probes: progress,
    /// cancellation, roots, tool-list changes), `bulk:N` (N generated tools, for benchmarks
    /// of tools/list).
    #[arg(long, value_name = "SET", value_delimiter = ',')]
    pub fixtures: Vec<toolwright_fixtures::Set>,
}

impl ToolSetArgs {
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

// How the tools run (`serve`, and `call` in-process).
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// A directory file tools may touch (repeatable; default: the current directory).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Seconds a tool call may run before it is cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub call_timeout: f64,
    /// Most significant digits add and multiply take in an operand or give in a result;
    /// beyond it the call fails, before anything large is computed.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub arith_max_digits: u32,
    /// Settings of the take_screenshot tool.
    #[command(flatten)]
    pub screenshot: ScreenshotArgs,
}

// What the protocol allows (`serve` only).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Protocol limits")]
pub struct ProtocolArgs {
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
    /// Most subscriptions/listen streams one session may hold open (on stdio, the whole
    /// connection is one session).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_listens: usize,
}

/// The values an argument struct takes when nothing is given (its clap defaults).
pub fn defaults<A: Args + FromArgMatches>() -> A {
    let cmd = A::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd
        .try_get_matches_from(Vec::<OsString>::new())
        .expect("no arguments parse");
    A::from_arg_matches(&matches).expect("defaults convert")
}

// Settings of `take_screenshot` (headless Chromium).
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
    /// Refuse loopback addresses (127.0.0.0/8, ::1, localhost). They are allowed by
    /// default, except when `serve --http` listens on an address other than loopback (then
    /// any client on the network could have the host's loopback-only services rendered).
    #[arg(long, conflicts_with = "screenshot_allow_loopback")]
    pub screenshot_no_loopback: bool,
    /// Allow loopback addresses even when `serve --http` listens beyond loopback.
    #[arg(long)]
    pub screenshot_allow_loopback: bool,
    /// Run Chromium without its sandbox (it always runs without one as root).
    #[arg(long)]
    pub screenshot_no_sandbox: bool,
}

impl ScreenshotArgs {
    /// The tool's settings, checked. `exposed`: the server is reached over a network, not
    /// only from this machine (`serve --http` on an address other than loopback), so
    /// loopback pages are refused unless `--screenshot-allow-loopback` says otherwise.
    pub fn settings(
        &self,
        exposed: bool,
    ) -> anyhow::Result<toolwright_tools::screenshot::Settings> {
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
            allow_loopback: self.screenshot_allow_loopback
                || !(self.screenshot_no_loopback || exposed),
            concurrency: self.screenshot_concurrency.unwrap_or(d.concurrency),
            sandbox: !self.screenshot_no_sandbox,
        })
    }
}

// `toolwright serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Which tools.
    #[command(flatten)]
    pub tools: ToolSetArgs,
    /// Do not watch the tool files (by default an edit is loaded at once, and an edit that
    /// does not load is logged and ignored).
    #[arg(long)]
    pub no_watch: bool,
    /// Serve the skills in DIR (the MCP Skills extension): each directory below it that
    /// holds a SKILL.md is a skill, served at skill://PATH/ with its files' digests. In
    /// place of the tool files' `skills:`.
    #[arg(long, value_name = "DIR")]
    pub skills: Option<PathBuf>,
    /// How they run.
    #[command(flatten)]
    pub run: RunArgs,
    /// Protocol limits.
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Streamable HTTP settings.
    #[command(flatten)]
    pub http: HttpArgs,
    /// How log lines on stderr are written: `text`, or `json` (one object a line, with the
    /// trace and span ids of the request being handled, and a line for each request and
    /// notification; the default level is then info). Each tool call also writes an audit
    /// line (target `toolwright::audit`: caller, view, tool, decision, outcome, duration);
    /// in text, `TOOLWRIGHT_LOG=toolwright::audit=info` shows them.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Record each tool call's arguments and result in its log line and its audit line, cut
    /// to BYTES each (off by default: they may hold secrets).
    #[arg(long, value_name = "BYTES")]
    pub capture_bytes: Option<usize>,
    /// Over stdio, serve the tool files' view NAME (by default the view named `default`
    /// when there is one, else every tool).
    #[arg(long, value_name = "NAME", conflicts_with = "addr")]
    pub view: Option<String>,
}

/// Why a value of `--http` is not an address to listen on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
enum ListenAddrError {
    /// A port alone: which interfaces to expose is the user's choice, not a default.
    #[error(
        "it needs ADDR:PORT, not a port alone: --http 127.0.0.1:{0} (this machine only) \
         or --http 0.0.0.0:{0} (every interface)"
    )]
    PortAlone(u16),
    /// A host name, which would need resolving (`localhost` gets the address to use).
    #[error("ADDR must be an IP address (127.0.0.1, 0.0.0.0, [::1]), not a host name{}", localhost_hint(*.localhost_port))]
    HostName {
        /// The port, when the name was `localhost`.
        localhost_port: Option<u16>,
    },
    /// Neither.
    #[error(
        "it needs ADDR:PORT with an IP address, e.g. 127.0.0.1:8080 or [::1]:8080 (port 0 \
         picks a free port)"
    )]
    Shape,
}

fn localhost_hint(port: Option<u16>) -> String {
    port.map(|p| format!(": --http 127.0.0.1:{p}"))
        .unwrap_or_default()
}

/// What `--http` takes: an IP address and a port (a name would need resolving, and a port
/// alone says nothing about which interfaces to expose).
fn listen_addr(s: &str) -> Result<String, ListenAddrError> {
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(s.to_owned());
    }
    if let Ok(port) = s.strip_prefix(':').unwrap_or(s).parse::<u16>() {
        return Err(ListenAddrError::PortAlone(port));
    }
    if let Some((host, port)) = s.rsplit_once(':')
        && let Ok(port) = port.parse::<u16>()
    {
        return Err(ListenAddrError::HostName {
            localhost_port: (host == "localhost").then_some(port),
        });
    }
    Err(ListenAddrError::Shape)
}

/// What `--trusted-proxy` takes: `10.0.0.0/8`, or one address (`127.0.0.1`, `::1`).
fn network(s: &str) -> Result<ipnet::IpNet, ipnet::AddrParseError> {
    match s.parse::<std::net::IpAddr>() {
        Ok(ip) => Ok(ip.into()),
        Err(_) => s.parse(),
    }
}

// `toolwright serve --http`: Streamable HTTP instead of stdio.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Streamable HTTP")]
pub struct HttpArgs {
    /// Serve Streamable HTTP at http://ADDR:PORT/mcp instead of stdio [default when given
    /// bare: 127.0.0.1:8080]; port 0 picks a free port.
    #[arg(long = "http", value_name = "ADDR:PORT", num_args = 0..=1, default_missing_value = "127.0.0.1:8080", value_parser = listen_addr)]
    pub addr: Option<String>,
    /// No sessions: any replica can answer any request (no GET stream, no resumption, no
    /// server-to-client requests for legacy clients).
    #[arg(long, requires = "addr")]
    pub stateless: bool,
    /// Seconds after which an idle legacy session ends.
    #[arg(long, value_name = "SECS", default_value_t = 1800, requires = "addr")]
    pub session_idle_timeout: u64,
    /// Keep legacy sessions, their event logs and server-to-client requests in Redis
    /// (redis://HOST:PORT/DB), so replicas sharing it serve each other's sessions, and the
    /// counts of the tool file's `limits:` there, so they share one budget [default: in this
    /// process].
    #[arg(
        long,
        value_name = "URL",
        requires = "addr",
        conflicts_with = "stateless"
    )]
    pub session_store: Option<String>,
    /// Milliseconds to wait for the session store before answering 503.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 2000,
        requires = "session_store"
    )]
    pub session_store_timeout: u64,
    /// An Origin allowed besides `localhost`, `127.0.0.1` and `[::1]` (repeatable; `*` for any).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "addr")]
    pub allowed_origins: Vec<String>,
    /// A Host allowed besides the loopback names, as NAME or NAME:PORT (repeatable; `*` for
    /// any).
    #[arg(long = "allowed-host", value_name = "HOST", requires = "addr")]
    pub allowed_hosts: Vec<String>,
    /// A reverse proxy, as an address or CIDR network (repeatable), whose X-Forwarded-For
    /// names the client that limits, stream budgets and the audit count; otherwise that
    /// header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR", requires = "addr", value_parser = network)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Require `Authorization: Bearer <token>`, the token being this environment variable's
    /// value (one static token; --auth-issuer for OAuth access tokens instead).
    #[arg(long, value_name = "VAR", requires = "addr")]
    pub auth_token_env: Option<String>,
    /// An authorization server to name in the Protected Resource Metadata (repeatable).
    #[arg(long = "authorization-server", value_name = "URL", requires = "addr")]
    pub authorization_servers: Vec<String>,
    /// This server's canonical URL, as clients reach it [default: http://ADDR/mcp].
    #[arg(long, value_name = "URL", requires = "addr")]
    pub resource_url: Option<String>,
    /// Require OAuth 2.1 access tokens: JWTs signed by this authorization server (its
    /// issuer URL; its metadata and keys are fetched at start-up) for this server's URL,
    /// named in the Protected Resource Metadata. Instead of --auth-token-env.
    #[arg(
        long,
        value_name = "URL",
        requires = "addr",
        conflicts_with_all = ["auth_token_env", "authorization_servers"]
    )]
    pub auth_issuer: Option<String>,
    /// The audience access tokens must name [default: the resource URL].
    #[arg(long, value_name = "AUD", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// A scope every request needs (repeatable); a token without it gets 403
    /// insufficient_scope.
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scopes: Vec<String>,
    /// Seconds an access token's expiry and not-before times may be off.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 60,
        requires = "auth_issuer"
    )]
    pub auth_leeway: u64,
    /// Accept opaque access tokens too, asking the issuer about each (RFC 7662
    /// introspection, at its metadata's `introspection_endpoint`); an answer is kept a
    /// minute at most.
    #[arg(long, requires = "auth_issuer")]
    pub auth_introspect: bool,
    /// The introspection endpoint, when the issuer's metadata names none (implies
    /// --auth-introspect).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_introspect_url: Option<String>,
    /// This server's client id at the issuer, sent (HTTP Basic, with
    /// --auth-client-secret-env) with each introspection request.
    #[arg(long, value_name = "ID", requires = "auth_client_secret_env")]
    pub auth_client_id: Option<String>,
    /// The environment variable holding the client secret of --auth-client-id.
    #[arg(long, value_name = "VAR", requires = "auth_client_id")]
    pub auth_client_secret_env: Option<String>,
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
    /// Do not serve /metrics, /healthz and /readyz (and record no metrics).
    #[arg(long, requires = "addr")]
    pub no_metrics: bool,
}

// `toolwright tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the definitions as JSON (the tools/list shape) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Which tools.
    #[command(flatten)]
    pub tools: ToolSetArgs,
}

// `toolwright call`.
#[derive(Debug, Args)]
#[command(
    override_usage = "toolwright call [OPTIONS] <TOOL> [KEY=VALUE]...\n       \
    toolwright call [OPTIONS] <TOOL> [KEY=VALUE]... -- <CMD> [ARGS]...\n       \
    toolwright call [OPTIONS] <TOOL> [KEY=VALUE]... --url <URL>"
)]
#[command(after_help = CALL_AFTER_HELP)]
pub struct CallArgs {
    /// The tool to call.
    pub tool: String,
    /// Arguments as key=value, typed by the tool's inputSchema: a string property takes
    /// the text as it is; any other takes JSON when the text parses as JSON (n=1 is a
    /// number, tags='["a","b"]' an array), else the text.
    #[arg(value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
    /// All arguments as one JSON object (instead of key=value pairs).
    #[arg(long = "args", value_name = "JSON", conflicts_with = "pairs")]
    pub args_json: Option<String>,
    /// Print the result as JSON: what `call` always prints (accepted, as `list --json` and
    /// `tools --json` take it, so the flag means the output's format everywhere).
    #[arg(long)]
    pub json: bool,
    /// A server to call instead of running the tool in-process.
    #[command(flatten)]
    pub remote: crate::client_cmd::RemoteArgs,
    /// Which tools, in-process.
    #[command(flatten, next_help_heading = "In-process (without a server)")]
    pub tools: ToolSetArgs,
    /// How they run, in-process.
    #[command(flatten, next_help_heading = "In-process (without a server)")]
    pub run: RunArgs,
}

const CALL_AFTER_HELP: &str = "Examples:\n  toolwright call add a=1 b=2\n  toolwright call \
    search_files pattern='*.rs' directory=src\n  toolwright call get-sum a=2 b=3 -- npx -y \
    @modelcontextprotocol/server-everything\n  toolwright call add --args '{\"a\": 1, \"b\": 2}' \
    --url http://127.0.0.1:8080/mcp";

/// Parses the process arguments.
pub fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os())
}

/// Parses `args` (the program name first), refusing options that do not apply to what the
/// rest of the line asks for.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut cmd = Cli::command();
    let matches = cmd
        .try_get_matches_from_mut(&args)
        .map_err(|e| explain(e, &mut cmd, &args))?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
    if let Some((name, sub)) = matches.subcommand() {
        let sub_cmd = cmd
            .find_subcommand_mut(name)
            .expect("the subcommand just parsed");
        check_applicable(&cli.command, sub, sub_cmd)?;
    }
    Ok(cli)
}

/// Clearer messages for two unknown options: `--server CMD` (a stdio server's command goes
/// last, after `--`), and an option of another subcommand (`tools --root`).
fn explain(e: clap::Error, cmd: &mut clap::Command, args: &[OsString]) -> clap::Error {
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) if e.kind() == ErrorKind::UnknownArgument => s.clone(),
        _ => return e,
    };
    let Some(long) = arg
        .strip_prefix("--")
        .map(|a| a.split('=').next().unwrap_or(a))
    else {
        return e;
    };
    let sub = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| !a.starts_with('-'))
        .filter(|s| cmd.find_subcommand(s).is_some());
    let message = if long == "server" {
        let example = match sub {
            Some("call") => "toolwright call get-sum a=2 b=3 -- npx -y SERVER",
            Some("lint") => "toolwright lint -- npx -y SERVER",
            _ => "toolwright list --json -- npx -y SERVER",
        };
        format!(
            "there is no --server: a stdio server's command and its arguments go last, after \
             `--` ({example})"
        )
    } else {
        let Some(sub) = sub else { return e };
        let mut others = Vec::new();
        for other in cmd.get_subcommands_mut() {
            other.build();
            if other.get_name() != sub && other.get_arguments().any(|a| a.get_long() == Some(long))
            {
                others.push(other.get_name().to_owned());
            }
        }
        if others.is_empty() {
            return e;
        }
        let names: Vec<String> = others.iter().map(|o| format!("`{o}`")).collect();
        let (who, verb) = match names.split_last() {
            Some((last, [])) => (last.clone(), "takes"),
            Some((last, rest)) => (format!("{} and {last}", rest.join(", ")), "take"),
            None => return e,
        };
        format!("--{long} is not an option of `{sub}`; {who} {verb} it")
    };
    let error = clap::Error::raw(ErrorKind::UnknownArgument, message);
    match sub.and_then(|s| cmd.find_subcommand_mut(s)) {
        Some(sub_cmd) => {
            sub_cmd.build();
            error.format(sub_cmd)
        }
        None => error.format(cmd),
    }
}

/// The ids and names (`--long`, or `<VALUE>` for a positional) of an argument struct's
/// arguments, nested ones included.
fn arguments_of<A: Args>() -> Vec<(String, String)> {
    A::augment_args(clap::Command::new("probe"))
        .get_arguments()
        .map(|a| {
            let name = match a.get_long() {
                Some(long) => format!("--{long}"),
                None => format!("-- {}...", a.get_id()),
            };
            (a.get_id().to_string(), name)
        })
        .collect()
}

/// Refuses the first argument of `ids` given on the command line, saying `why` it does not
/// apply.
fn refuse_given(
    matches: &clap::ArgMatches,
    cmd: &mut clap::Command,
    ids: &[(String, String)],
    why: &str,
) -> Result<(), clap::Error> {
    let given = ids.iter().find(|(id, _)| {
        matches.try_contains_id(id).unwrap_or(false)
            && matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    });
    match given {
        None => Ok(()),
        Some((_, name)) => {
            Err(clap::Error::raw(ErrorKind::ArgumentConflict, format!("{name} {why}")).format(cmd))
        }
    }
}

/// Options that only mean something for part of what a subcommand does are refused when
/// the line asks for the other part: a server's connection settings without a server, the
/// in-process tools' settings with one.
fn check_applicable(
    command: &Command,
    matches: &clap::ArgMatches,
    cmd: &mut clap::Command,
) -> Result<(), clap::Error> {
    use crate::client_cmd::{RemoteArgs, TargetArgs};
    let targets = ["server", "url"];
    let options_of_a_server = |mut ids: Vec<(String, String)>| {
        ids.retain(|(id, _)| !targets.contains(&id.as_str()));
        ids
    };
    match command {
        Command::Call(a) if a.remote.target.is_given() => {
            let mut local = arguments_of::<ToolSetArgs>();
            local.extend(arguments_of::<RunArgs>());
            refuse_given(
                matches,
                cmd,
                &local,
                "applies to tools run in-process; a server (-- CMD or --url) runs its tools with \
                 its own settings",
            )
        }
        Command::Call(_) => refuse_given(
            matches,
            cmd,
            &options_of_a_server(arguments_of::<RemoteArgs>()),
            "applies only when calling a server (-- CMD ARGS... or --url URL); without one the \
             tool runs in-process",
        ),
        Command::Lint(a) if !a.target.is_given() => refuse_given(
            matches,
            cmd,
            &options_of_a_server(arguments_of::<TargetArgs>()),
            "applies only when linting a server (-- CMD ARGS... or --url URL), not files",
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_are_ip_and_port() {
        assert_eq!(
            listen_addr("127.0.0.1:8080").as_deref(),
            Ok("127.0.0.1:8080")
        );
        assert_eq!(listen_addr("[::1]:0").as_deref(), Ok("[::1]:0"));
        assert_eq!(listen_addr(":8080"), Err(ListenAddrError::PortAlone(8080)));
        assert_eq!(listen_addr("8080"), Err(ListenAddrError::PortAlone(8080)));
        let local = listen_addr("localhost:9000").unwrap_err();
        assert!(
            local.to_string().ends_with(": --http 127.0.0.1:9000"),
            "{local}"
        );
        let named = listen_addr("example.com:9000").unwrap_err();
        assert!(named.to_string().ends_with("not a host name"), "{named}");
        assert_eq!(listen_addr("127.0.0.1"), Err(ListenAddrError::Shape));
    }
}
