//! What each subcommand does.

use crate::args::{Cli, Command, ProtocolArgs, RunArgs, ServeArgs, ToolSetArgs, ToolsArgs};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolwright_fixtures::Set;
use toolwright_protocol::{Implementation, ProtocolVersion, Tool as ToolDefinition};
use toolwright_server::{Config, InputErrorMode, Server};

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Serve(a) => serve(a),
        Command::Tools(a) => tools(a),
        Command::Call(a) => crate::call_cmd::call(a),
        Command::Lint(a) => crate::lint_cmd::run(a),
        Command::List(a) => crate::client_cmd::list(a),
        Command::Skills(a) => crate::skills_cmd::run(a),
        Command::Trust(a) => crate::trust_cmd::run(a),
        Command::HashKey(a) => crate::keys_cmd::run(a),
        Command::Import(a) => crate::import_cmd::run(a),
        Command::Completions(a) => {
            let mut out = Vec::new();
            crate::args::completions(a.shell, &mut out);
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&out)?;
            stdout.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A server and the declared tools it serves.
pub(crate) struct Built {
    pub(crate) server: Server,
    /// The tool files loaded.
    pub(crate) files: Vec<std::path::PathBuf>,
    /// The names of the declared tools.
    pub(crate) declared: Vec<String>,
    /// The gateway, when the files name upstream servers.
    pub(crate) gateway: Option<std::sync::Arc<toolwright_gateway::Gateway>>,
    /// The files' `api_keys:`, for `serve --http`.
    pub(crate) api_keys: Vec<toolwright_http::ApiKey>,
}

/// What a server is built from: which tools, how they run, what the protocol allows.
pub(crate) struct Settings<'a> {
    pub(crate) tools: &'a ToolSetArgs,
    pub(crate) run: &'a RunArgs,
    pub(crate) protocol: &'a ProtocolArgs,
    /// Where requests are observed (`serve --http` unless `--no-metrics`).
    pub(crate) telemetry: Option<Arc<toolwright_server::telemetry::Telemetry>>,
    /// Served over HTTP on an address other than loopback.
    pub(crate) exposed: bool,
    /// `serve --view NAME`: the view of the stdio session.
    pub(crate) stdio_view: Option<&'a str>,
    /// Where `limits:` are counted when replicas share them (`--session-store`); none: in
    /// this process.
    pub(crate) shared_limits: Option<Arc<dyn toolwright_server::limit::Counters>>,
    /// Where tasks are copied for the other replicas' `tasks/get` (`--session-store`);
    /// none: a task is known to this process only.
    pub(crate) task_mirror: Option<Arc<dyn toolwright_server::task::TaskMirror>>,
    /// Where tokens exchanged for upstreams are shared by replicas (`--session-store`);
    /// none: in this process.
    pub(crate) shared_tokens: Option<Arc<dyn toolwright_gateway::exchange::TokenStore>>,
}

/// Loads the declared tools and the gateway's settings of the config files, all or nothing:
/// every problem of either is printed (file:line:column: what is wrong), and warnings go to
/// stderr.
fn load_declared(
    files: &[std::path::PathBuf],
) -> Result<(
    Vec<std::sync::Arc<toolwright_declared::DeclaredTool>>,
    toolwright_toolfile::GatewayConfig,
    toolwright_toolfile::builtins::Builtins,
)> {
    // Every check is the loader's (`toolwright lint` runs the same ones).
    let (declared, gateway, builtins) =
        toolwright_declared::load_set(files, toolwright_tools::NAMES)
            .map_err(|e| problems_error(e.problems(), "nothing was served"))?;
    for w in &gateway.warnings {
        eprintln!("toolwright: warning: {w}");
    }
    Ok((declared, gateway, builtins))
}

/// The skills below `dir`, for `serve --skills` or a tool file's `skills:` (`what`).
fn load_skills(dir: &std::path::Path, what: &str) -> Result<toolwright_server::skills::SkillSet> {
    toolwright_declared::skills::load(dir)
        .with_context(|| format!("{what} {}: nothing was served", dir.display()))
}

fn read_gateway(
    files: &[std::path::PathBuf],
) -> Result<toolwright_toolfile::GatewayConfig, toolwright_toolfile::LoadError> {
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        match toolwright_toolfile::Document::read(file) {
            Ok(d) => docs.push(d),
            Err(p) => problems.push(*p),
        }
    }
    match toolwright_toolfile::read_config(&docs) {
        Ok(config) if problems.is_empty() => Ok(config),
        Ok(_) => Err(toolwright_toolfile::LoadError::Problems(problems)),
        Err(e) => {
            problems.extend(e.problems().iter().cloned());
            Err(toolwright_toolfile::LoadError::Problems(problems))
        }
    }
}

fn problems_error(problems: &[toolwright_toolfile::FileProblem], outcome: &str) -> anyhow::Error {
    let n = problems.len();
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    anyhow::anyhow!(
        "{}\n{n} problem{} in the config files; {outcome}",
        lines.join("\n"),
        if n == 1 { "" } else { "s" }
    )
}

/// The gateway's settings of the config files (`servers:`, `gateway:`), every problem
/// printed; warnings go to stderr.
pub fn load_gateway(files: &[std::path::PathBuf]) -> Result<toolwright_toolfile::GatewayConfig> {
    let config =
        read_gateway(files).map_err(|e| problems_error(e.problems(), "nothing was done"))?;
    for w in &config.warnings {
        eprintln!("toolwright: warning: {w}");
    }
    Ok(config)
}

pub(crate) fn build(settings: &Settings<'_>) -> Result<Built> {
    let Settings {
        tools: set,
        run: a,
        protocol: p,
        telemetry,
        exposed,
        stdio_view,
        shared_limits,
        task_mirror,
        shared_tokens,
    } = settings;
    let mut config = server_config(a, p, telemetry)?;
    config.task_mirror = task_mirror.clone();
    let mut info = Implementation::new("toolwright", env!("CARGO_PKG_VERSION"));
    info.title = Some("toolwright".into());
    info.description = Some(
        "An MCP tool server: built-in and declared tools, checked against their schemas".into(),
    );
    let options = toolwright_tools::Options {
        arith: toolwright_tools::arith::Settings {
            max_digits: a.arith_max_digits as usize,
        },
        screenshot: a.screenshot.settings(*exposed)?,
    };
    // Generated tools (for the tools/list benchmark) come after the built-in ones and, like
    // them, compile their schemas when warming up; other fixture sets may add resources and
    // prompts, which the capabilities announce at initialize, so they are registered before
    // serving.
    let files = set.config_files();
    // Loading the servers with the declared tools refuses a file whose `servers:` are
    // wrong before anything is served.
    let (declared_tools, servers, builtins) = load_declared(&files)?;
    let declared: Vec<String> = declared_tools
        .iter()
        .map(|t| t.definition_ref().name.clone())
        .collect();
    config.views = Arc::new(crate::views::views(&servers.views));
    if let Some(name) = stdio_view {
        if config.views.named(name).is_none() {
            anyhow::bail!(
                "--view {name:?}: the tool files have no such view (they have: {})",
                match config.views.names() {
                    names if names.is_empty() => "none".to_owned(),
                    names => names.join(", "),
                }
            );
        }
        config.stdio_view = Some((*name).to_owned());
    }
    let api_keys = servers
        .api_keys
        .iter()
        .map(|k| toolwright_http::ApiKey::new(&k.name, k.sha256, k.scopes.clone()))
        .collect();
    config.call_limits = crate::limits::limits(
        servers.limits.as_ref(),
        shared_limits.clone(),
        config.call_timeout,
    );
    let gateway = gateway_for(&servers, &config, telemetry, shared_tokens)?;
    let gw = gateway.clone();
    let (bulk, eager): (Vec<Set>, Vec<Set>) = once_each(&set.fixtures)?
        .iter()
        .copied()
        .partition(|s| matches!(s, Set::Bulk(_)));
    // Built-in tools compile their schemas once the first answers are out (on a thread of
    // their own), or when tools/list or tools/call first needs them.
    let server = Server::new_warming(info, config, move |server| {
        let registered = toolwright_tools::register_where(server, &options, |n| builtins.serves(n))
            .and_then(|()| bulk.iter().try_for_each(|set| set.register(server)));
        if let Err(e) = registered {
            eprintln!("toolwright: registering the built-in tools failed: {e}");
            std::process::exit(2);
        }
        for tool in declared_tools {
            if let Err(e) = server.register_arc(tool) {
                eprintln!("toolwright: a declared tool cannot be served: {e}");
                std::process::exit(2);
            }
        }
        // Upstream tools come last: no upstream may take a built-in or declared name.
        if let Some(g) = &gw {
            let taken = server
                .registered()
                .entries()
                .iter()
                .map(|e| e.definition.name.clone())
                .collect();
            g.register_all(server, taken);
        }
    });
    if let Some(g) = &gateway {
        g.start();
        g.register_catalog(&server);
    }
    for set in eager {
        set.register(&server)
            .with_context(|| format!("--fixtures {set}"))?;
    }
    if let Some(dir) = &servers.skills {
        server.set_skills(load_skills(dir, "skills:")?);
        // The gateway serves these beside its upstreams' skills (read again: the set above
        // checked them, and keeps its own copy).
        if let Some(g) = &gateway {
            let skills = toolwright_declared::skills::read(dir)
                .with_context(|| format!("skills: {}: nothing was served", dir.display()))?;
            g.set_local_skills(skills);
        }
    }
    Ok(Built {
        server,
        files,
        declared,
        gateway,
        api_keys,
    })
}

/// The server's settings from the command line: the call timeout, the roots (the current
/// directory when none is given; each must be a directory), paging and message limits.
fn server_config(
    a: &RunArgs,
    p: &ProtocolArgs,
    telemetry: &Option<Arc<toolwright_server::telemetry::Telemetry>>,
) -> Result<Config> {
    if !(a.call_timeout > 0.0 && a.call_timeout.is_finite()) {
        bail!("--call-timeout must be a positive number of seconds");
    }
    let mut roots = a.roots.clone();
    if roots.is_empty() {
        roots.push(std::env::current_dir().context("reading the current directory")?);
    }
    for r in &roots {
        if !r.is_dir() {
            bail!("--root {}: not a directory", r.display());
        }
    }
    let mut config = Config {
        call_timeout: Duration::from_secs_f64(a.call_timeout),
        paging: toolwright_server::registry::Paging {
            max_tools: p.page_size.unwrap_or(usize::MAX).max(1),
            max_bytes: p.page_bytes,
        },
        roots,
        telemetry: telemetry.clone(),
        ..Config::default()
    };
    config.limits.max_bytes = p.max_message_bytes;
    config.max_listens_per_session = p.max_listens;
    config.limits.max_depth = p.max_depth;
    if p.input_errors_as_protocol_errors {
        config.input_errors = InputErrorMode::ProtocolError;
    }
    Ok(config)
}

/// The gateway over the files' `servers:`, if they name any (not started yet).
fn gateway_for(
    servers: &toolwright_toolfile::GatewayConfig,
    config: &Config,
    telemetry: &Option<Arc<toolwright_server::telemetry::Telemetry>>,
    tokens: &Option<Arc<dyn toolwright_gateway::exchange::TokenStore>>,
) -> Result<Option<Arc<toolwright_gateway::Gateway>>> {
    Ok(match servers.servers.is_empty() {
        true => None,
        false => Some(
            toolwright_gateway::Gateway::new(
                servers,
                toolwright_gateway::gateway::Settings {
                    call_timeout: config.call_timeout,
                    telemetry: telemetry.clone(),
                    tokens: tokens.clone(),
                },
            )
            .context("starting the gateway")?,
        ),
    })
}

/// Whether `--http ADDR:PORT` listens on anything but loopback (`0.0.0.0` and `[::]` are
/// every interface).
fn beyond_loopback(addr: &str) -> bool {
    addr.parse::<std::net::SocketAddr>()
        .map_or(true, |a| !a.ip().is_loopback())
}

/// The fixture sets asked for, refused when one is named twice.
fn once_each(sets: &[Set]) -> Result<&[Set]> {
    for (i, set) in sets.iter().enumerate() {
        if sets[..i].iter().any(|s| s.name() == set.name()) {
            bail!("--fixtures {}: given twice", set.name());
        }
    }
    Ok(sets)
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    runtime_with(2)
}

fn runtime_with(workers: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn serve(a: ServeArgs) -> Result<ExitCode> {
    let json_logs = a.log_format == "json";
    crate::logging::init_logging_as(json_logs);
    let metrics = a.http.addr.is_some() && !a.http.no_metrics;
    // OTLP export of spans, when the OTEL_* environment asks for it; it sends what is
    // queued when this function returns (stdio's end of input, --http's SIGTERM or ctrl-c).
    let exporter = match toolwright_otlp::from_env().context("OpenTelemetry settings")? {
        Some(c) => Some(toolwright_otlp::Exporter::start(c).context("OTLP export")?),
        None => None,
    };
    let observed = metrics || json_logs || a.capture_bytes.is_some() || exporter.is_some();
    let settings = toolwright_server::telemetry::Settings {
        capture_bytes: a.capture_bytes,
        spans: exporter.as_ref().map(toolwright_otlp::Exporter::sink),
    };
    let built = build(&Settings {
        tools: &a.tools,
        run: &a.run,
        protocol: &a.protocol,
        telemetry: observed.then(|| toolwright_server::telemetry::Telemetry::with(settings)),
        exposed: a.http.addr.as_deref().is_some_and(beyond_loopback),
        stdio_view: a.view.as_deref(),
        shared_limits: crate::http_settings::shared_limits(&a.http)?,
        task_mirror: crate::http_settings::task_mirror(&a.http)?,
        shared_tokens: crate::http_settings::shared_tokens(&a.http)?,
    })?;
    if a.http.addr.is_none() && std::io::stdin().is_terminal() {
        // Someone ran `toolwright serve` by hand: say what is served and how a client gets
        // it, since a server that waits silently looks hung.
        eprint!("{}", terminal_note(&built));
    }
    let server = built.server;
    if let Some(dir) = &a.skills {
        server.set_skills(load_skills(dir, "--skills")?);
    }
    let gateway = built.gateway;
    let api_keys = built.api_keys;
    if a.http.addr.is_none() && !api_keys.is_empty() {
        tracing::warn!(
            "the tool files' api_keys apply to `serve --http` only: over stdio the client is whoever started the server"
        );
    }
    // Kept alive for as long as the server serves.
    let _watch = if a.no_watch || built.files.is_empty() {
        None
    } else {
        let servers = reload_servers(gateway.clone(), built.files.clone());
        Some(
            toolwright_declared::watch::watch_then(
                server.clone(),
                built.files,
                built.declared,
                servers,
            )
            .context("watching the tool files")?,
        )
    };
    if let Some(addr) = &a.http.addr {
        server.warm_up();
        let mut config = crate::http_settings::http_config(&a.http, addr)?;
        config.ops_endpoints = !a.http.no_metrics;
        config.api_keys = api_keys;
        if let Some(g) = &gateway {
            let g = g.clone();
            config.readiness = Some(toolwright_http::Readiness(Arc::new(move || g.problems())));
        }
        // This thread serves the first listener on a single-threaded runtime, and the
        // server starts one more thread per extra listener (--http-threads). Here one
        // thread did 62-66k calls/s at 15 us of CPU each, p99 2 ms; tokio's two-worker
        // runtime 55-58k at 18-19 us, p99 4.6 ms (its wake-ups cross threads).
        // With a gateway, connections are served on the gateway's runtime instead, the one
        // its upstreams' readers run on, so a forwarded call stays on one thread.
        let serve = async {
            let http = toolwright_http::HttpServer::bind(server, config).await?;
            eprintln!("toolwright: listening on {}", http.url());
            http.run().await
        };
        match &gateway {
            Some(g) => g.runtime().block_on(serve)?,
            None => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting the async runtime")?;
                rt.block_on(serve)?;
                rt.shutdown_timeout(Duration::from_millis(100));
            }
        }
        toolwright_tools::screenshot::close_browsers();
        if let Some(g) = &gateway {
            g.shutdown();
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Over stdio the reader thread answers every call that does not wait, so one worker
    // is enough for those that do (blocking work goes to the blocking pool). It starts
    // after the handshake's answers, unless a call needs it sooner.
    // With a gateway, stdin's reads are handed to its runtime, the one its upstreams'
    // readers run on, and handled there: a forwarded call never changes thread.
    let served = match &gateway {
        Some(g) => toolwright_server::serve_stdio_on(&server, g.runtime()),
        None => toolwright_server::serve_stdio_lazy(&server, || {
            runtime_with(1).map_err(std::io::Error::other)
        }),
    };
    // The browser (if a screenshot started one) goes now, whatever still holds the tool.
    if let Some(g) = &gateway {
        g.shutdown();
    }
    toolwright_tools::screenshot::close_browsers();
    served.context("serving stdio")?;
    Ok(ExitCode::SUCCESS)
}

/// What a settled edit of the files does after the declared tools are reloaded: the
/// gateway's `servers:` are read again and applied (upstreams added, removed, replaced); a
/// file that does not read, or an entry that cannot be used, keeps the running upstreams
/// and logs why. Without a gateway, servers newly named wait for a restart.
fn reload_servers(
    gateway: Option<Arc<toolwright_gateway::Gateway>>,
    files: Vec<std::path::PathBuf>,
) -> impl FnMut() + Send + 'static {
    move || {
        let config = match read_gateway(&files) {
            Ok(config) => config,
            Err(e) => {
                for p in e.problems() {
                    tracing::error!("{p}");
                }
                tracing::error!("the servers were not reloaded; the running upstreams are kept");
                return;
            }
        };
        match &gateway {
            Some(g) => {
                if let Err(e) = g.reload(&config) {
                    tracing::error!(
                        "the servers were not reloaded: {e}; the running upstreams are kept"
                    );
                }
            }
            None if !config.servers.is_empty() => tracing::warn!(
                "the files name servers now; they are served once toolwright serve is started again"
            ),
            None => {}
        }
    }
}

/// What `serve` on a terminal says on stderr: what it serves, how a client connects, how
/// to quit.
fn terminal_note(built: &Built) -> String {
    let listed = definitions(&built.server).len();
    let declared = match built.declared.len() {
        0 => String::new(),
        n => {
            let files: Vec<String> = built
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect();
            format!(", {n} declared in {}", files.join(", "))
        }
    };
    let upstream = match &built.gateway {
        Some(_) => "; upstream servers' tools join as they are listed",
        None => "",
    };
    let roots: Vec<String> = built
        .server
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    let program = std::env::current_exe()
        .map_or_else(|_| "toolwright".to_owned(), |p| p.display().to_string());
    let args = client_args(
        std::env::args().skip(1).collect(),
        &built.files,
        built.server.roots(),
    );
    let entry = json!({"mcpServers": {"toolwright": {"command": program, "args": args}}});
    let claude_code: Vec<String> = ["claude", "mcp", "add", "toolwright", "--", &program]
        .into_iter()
        .map(str::to_owned)
        .chain(args.iter().cloned())
        .map(|a| toolwright_gateway::shell_word(&a))
        .collect();
    format!(
        "toolwright: serving MCP on stdio: {listed} tools{declared}{upstream}; file tools may \
         touch {roots}.\n\
         toolwright: stdin is a terminal, so no client is attached. An MCP client starts this \
         command itself and speaks JSON-RPC on its stdin and stdout, from a working directory of \
         its own, so every path below is absolute. In claude_desktop_config.json (Cursor: \
         .cursor/mcp.json; VS Code's .vscode/mcp.json takes the same entry under \"servers\"):\n  \
         {entry}\n\
         toolwright: Claude Code: {claude_code}\n\
         toolwright: for clients that connect to a URL: toolwright serve --http (serves \
         http://127.0.0.1:8080/mcp). Without a client: toolwright tools, toolwright call TOOL \
         key=value.\n\
         toolwright: waiting for messages on stdin; Ctrl-D (end of input) or Ctrl-C quits.\n",
        roots = roots.join(", "),
        claude_code = claude_code.join(" ")
    )
}

/// The arguments a client should start this server with: the ones given, with each
/// `--config` and `--root` made absolute, and the tool files and roots this run found by
/// default (`./toolwright.yaml`, the current directory) named, since a client starts it in
/// a directory of its own.
fn client_args(
    given: Vec<String>,
    files: &[std::path::PathBuf],
    roots: &[std::path::PathBuf],
) -> Vec<String> {
    let absolute =
        |p: &str| std::path::absolute(p).map_or_else(|_| p.to_owned(), |a| a.display().to_string());
    let mut out = Vec::with_capacity(given.len() + 4);
    let (mut configs, mut rooted) = (false, false);
    let mut it = given.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f == "--config" || f == "--root" => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        if flag == "--config" || flag == "--root" {
            configs |= flag == "--config";
            rooted |= flag == "--root";
            let value = inline.or_else(|| it.next()).unwrap_or_default();
            out.push(flag);
            out.push(absolute(&value));
        } else {
            out.push(arg);
        }
    }
    if !configs {
        for f in files {
            out.push("--config".to_owned());
            out.push(absolute(&f.display().to_string()));
        }
    }
    if !rooted {
        for r in roots {
            out.push("--root".to_owned());
            out.push(absolute(&r.display().to_string()));
        }
    }
    out
}

pub(crate) fn definitions(server: &Server) -> Vec<ToolDefinition> {
    server
        .tools()
        .entries()
        .iter()
        .filter(|e| e.listed)
        .map(|e| e.definition.clone())
        .collect()
}

fn tools(a: ToolsArgs) -> Result<ExitCode> {
    let server = build(&Settings {
        tools: &a.tools,
        run: &crate::args::defaults(),
        protocol: &crate::args::defaults(),
        telemetry: None,
        exposed: false,
        stdio_view: None,
        shared_limits: None,
        task_mirror: None,
        shared_tokens: None,
    })?
    .server;
    let defs = definitions(&server);
    let mut out = std::io::stdout().lock();
    if a.json {
        let wire: Vec<Value> = defs
            .iter()
            .map(|d| d.to_wire(ProtocolVersion::LATEST))
            .collect();
        serde_json::to_writer_pretty(&mut out, &json!({"tools": wire}))?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = defs.iter().map(|d| d.name.len()).max().unwrap_or(4).max(4);
    writeln!(out, "{:width$}  {:5}  DESCRIPTION", "NAME", "HINTS")?;
    for d in defs {
        let h = d.hints();
        let hints = crate::client_cmd::hint_letters(&h);
        let desc = d.description.as_deref().unwrap_or("");
        let first = desc.split(". ").next().unwrap_or(desc);
        writeln!(out, "{:width$}  {hints:5}  {first}", d.name)?;
    }
    writeln!(
        out,
        "\nHINTS: R read-only / w writes, D destructive, I idempotent, O open world"
    )?;
    Ok(ExitCode::SUCCESS)
}
