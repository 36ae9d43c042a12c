//! `toolwright list` and `toolwright call … -- CMD`/`--url`: the client side, against any
//! MCP server.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use toolwright_client::trust::{effective_hints, needs_consent};
use toolwright_client::{
    Authorizer, BearerToken, Client, ClientError, ConnectOptions, ElicitAnswer, EraChoice, Target,
    TlsRoots, TrustConfig, check_output,
};
use toolwright_protocol::{Tool, ToolAnnotations};

use crate::args::CallArgs;
use crate::call_args::Given;

// Which server to talk to (shared by `lint`, `list` and `call`). Argument structs have no
// doc comment: clap would make it the summary of the subcommands they are part of.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// A stdio server to launch: its command and arguments, last on the line, after `--`
    /// (everything after the `--` is the server's, a further `--` included; no shell runs
    /// it).
    #[arg(last = true, value_name = "CMD", num_args = 1.., conflicts_with = "url")]
    pub server: Vec<String>,
    /// Reach a Streamable HTTP server at this http:// or https:// URL.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// HTTPS: also trust the CA certificates (PEM) in FILE, such as a private CA's
    /// (repeatable; $SSL_CERT_FILE is read too).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub ca_cert: Vec<PathBuf>,
    /// Protocol era to speak (auto: detect it).
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub era: EraArg,
    /// Seconds to wait for any one answer from the server.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Seconds to wait for the answer to the era probe (server/discover) before assuming a
    /// legacy server; raise it for servers slow to start.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub probe_timeout: f64,
    /// HTTP: send `Authorization: Bearer <token>` with the token read from this
    /// environment variable.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub bearer_env: Option<String>,
    #[command(flatten)]
    pub auth: crate::auth_cmd::AuthArgs,
    /// Answer the server's elicitation requests: accept with the requested schema's
    /// defaults, decline or cancel [default: declare no elicitation].
    #[arg(long, value_enum, value_name = "HOW")]
    pub elicit: Option<ElicitArg>,
}

/// `--elicit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ElicitArg {
    /// Accept, filling each field with its default.
    AcceptDefaults,
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

/// `--era`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum EraArg {
    /// Probe with a modern request; fall back to the legacy handshake.
    #[default]
    Auto,
    /// 2026-07-28 (stateless, `server/discover`).
    Modern,
    /// 2025-11-25 and before (`initialize`).
    Legacy,
}

impl TargetArgs {
    /// Whether a server was named.
    pub fn is_given(&self) -> bool {
        !self.server.is_empty() || self.url.is_some()
    }

    /// The server, if one was named.
    pub fn target(&self) -> Option<Target> {
        if !self.server.is_empty() {
            Some(Target::command(&self.server))
        } else {
            self.url.as_ref().map(|u| Target::Http { url: u.clone() })
        }
    }

    /// Connection settings.
    pub fn options(&self) -> Result<ConnectOptions> {
        for (flag, secs) in [
            ("--timeout", self.timeout),
            ("--probe-timeout", self.probe_timeout),
        ] {
            if !(secs > 0.0 && secs.is_finite()) {
                bail!("{flag} must be a positive number of seconds");
            }
        }
        let timeout = Duration::from_secs_f64(self.timeout);
        let auth = match &self.bearer_env {
            None if self.url.is_some() => self.auth.authorizer()?,
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(token) if !token.trim().is_empty() => {
                    Some(BearerToken::new(token.trim()) as Arc<dyn Authorizer>)
                }
                Ok(_) => bail!("--bearer-env: the variable {var} is empty"),
                Err(_) => bail!("--bearer-env: the variable {var} is not set"),
            },
        };
        let tls = if self.url.is_some() {
            TlsRoots::from_env_and_files(&self.ca_cert)?
        } else {
            TlsRoots::default()
        };
        Ok(ConnectOptions {
            auth,
            tls,
            elicit: self.elicit.map(|e| match e {
                ElicitArg::AcceptDefaults => ElicitAnswer::AcceptDefaults,
                ElicitArg::Decline => ElicitAnswer::Decline,
                ElicitArg::Cancel => ElicitAnswer::Cancel,
            }),
            era: match self.era {
                EraArg::Auto => EraChoice::Auto,
                EraArg::Modern => EraChoice::Modern,
                EraArg::Legacy => EraChoice::Legacy,
            },
            request_timeout: timeout,
            probe_timeout: Duration::from_secs_f64(self.probe_timeout).min(timeout),
            ..ConnectOptions::default()
        })
    }
}

// `--trusted-config`.
#[derive(Debug, Args, Clone)]
pub struct TrustArgs {
    /// Trust configuration listing trusted server commands and URLs
    /// [default: $XDG_CONFIG_HOME/toolwright/trusted.json or ~/.config/toolwright/trusted.json].
    #[arg(long, value_name = "FILE")]
    pub trusted_config: Option<PathBuf>,
}

impl TrustArgs {
    fn load(&self) -> Result<TrustConfig> {
        Ok(match &self.trusted_config {
            Some(p) => TrustConfig::load(p)?,
            None => TrustConfig::load_default()?,
        })
    }

    fn describe(&self) -> String {
        match &self.trusted_config {
            Some(p) => p.display().to_string(),
            None => TrustConfig::default_path().map_or_else(
                || "no trust configuration".to_owned(),
                |p| p.display().to_string(),
            ),
        }
    }
}

// What `toolwright call` adds to reach a remote server.
#[derive(Debug, Args, Clone)]
pub struct RemoteArgs {
    /// The server (without `-- CMD` or --url, the tool runs in-process).
    #[command(flatten)]
    pub target: TargetArgs,
    /// Call the tool even though an untrusted server does not claim it is read-only.
    #[arg(long)]
    pub yes: bool,
    /// Trust settings.
    #[command(flatten)]
    pub trust: TrustArgs,
}

// `toolwright list` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
#[command(
    override_usage = "toolwright list [OPTIONS] -- <CMD> [ARGS]...\n       \
    toolwright list [OPTIONS] --url <URL>"
)]
pub struct ListArgs {
    /// The server.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print JSON (the tools as sent, plus the era and trust) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Trust settings.
    #[command(flatten)]
    pub trust: TrustArgs,
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Connects to the named server, with a message that names it when that fails.
pub(crate) async fn connect(target: &TargetArgs) -> Result<Client> {
    let Some(t) = target.target() else {
        bail!("name a server: -- CMD ARGS... (stdio) or --url URL (Streamable HTTP)");
    };
    let describe = t.describe();
    Client::connect(t, target.options()?)
        .await
        .with_context(|| format!("connecting to {describe}"))
}

/// `toolwright list`.
pub fn list(a: ListArgs) -> Result<ExitCode> {
    crate::logging::init_logging();
    if !a.target.is_given() {
        bail!(
            "list needs a server: -- CMD ARGS... (stdio, last on the line) or --url \
             URL (Streamable HTTP)"
        );
    }
    let trust = a.trust.load()?;
    let rt = runtime()?;
    let (client, raw) = rt.block_on(async {
        let mut client = connect(&a.target).await?;
        let raw = client.list_tools_raw().await.context("listing tools")?;
        anyhow::Ok((client, raw))
    })?;
    let trusted = trust.is_trusted(client.target());
    let era = client.era();
    let version = client.protocol_version();
    let info = client.server_info().cloned();
    rt.block_on(client.close());
    let mut out = std::io::stdout().lock();
    if a.json {
        let doc = json!({
            "server": info,
            "era": era.as_str(),
            "protocolVersion": version.as_str(),
            "trusted": trusted,
            "tools": raw,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let who = info.as_ref().map_or_else(
        || "server".to_owned(),
        |i| format!("{} {}", i.name, i.version),
    );
    writeln!(
        out,
        "{who}: {} era, protocol {version}, {}",
        era.as_str(),
        if trusted { "trusted" } else { "NOT trusted" }
    )?;
    writeln!(out)?;
    write_tool_table(&mut out, &raw, trusted)?;
    if !trusted {
        writeln!(
            out,
            "The server is not trusted ({}): its hints are unverified claims, so every tool that \
             does not claim read-only is shown as destructive and open-world, and calling it \
             needs --yes.",
            a.trust.describe()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The tools as `list` shows them: name, the hints a client should believe (all claims of an
/// untrusted server but read-only are replaced by the worst case), whether a call needs
/// `--yes`, and the description's first sentence; then the legend of the hints.
fn write_tool_table(out: &mut impl Write, raw: &[Value], trusted: bool) -> Result<()> {
    let tools: Vec<Option<Tool>> = raw
        .iter()
        .map(|v| serde_json::from_value(v.clone()).ok())
        .collect();
    let name_of = |i: usize| match &tools[i] {
        Some(t) => t.name.clone(),
        None => raw[i]
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
    };
    let width = (0..raw.len())
        .map(|i| name_of(i).len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:width$}  {:5}  {:7}  DESCRIPTION",
        "NAME", "HINTS", "CALL"
    )?;
    for (i, tool) in tools.iter().enumerate() {
        let (hints, call, desc) = match tool {
            Some(t) => {
                let shown = effective_hints(t, trusted);
                let call = if needs_consent(t, trusted) {
                    "--yes"
                } else {
                    "ok"
                };
                let desc = t.description.as_deref().unwrap_or("");
                (hint_letters(&shown), call, first_sentence(desc))
            }
            None => (
                "?".to_owned(),
                "invalid",
                "(definition does not parse)".to_owned(),
            ),
        };
        writeln!(out, "{:width$}  {hints:5}  {call:7}  {desc}", name_of(i))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "HINTS: R read-only / w writes, D destructive, I idempotent, O open world"
    )?;
    Ok(())
}

/// Hints as four letters: R/w read-only or writes, D destructive, I idempotent, O open world.
pub(crate) fn hint_letters(h: &ToolAnnotations) -> String {
    format!(
        "{}{}{}{}",
        if h.read_only() { "R" } else { "w" },
        if h.destructive() && !h.read_only() {
            "D"
        } else {
            "-"
        },
        if h.idempotent() { "I" } else { "-" },
        if h.open_world() { "O" } else { "-" }
    )
}

fn first_sentence(desc: &str) -> String {
    let line = desc.lines().next().unwrap_or("");
    let first = line.split(". ").next().unwrap_or(line).trim();
    if first.chars().count() > 90 {
        format!("{}…", first.chars().take(89).collect::<String>())
    } else {
        first.to_owned()
    }
}

/// `toolwright call TOOL … -- CMD ARGS...` or `--url URL`.
pub fn call(a: &CallArgs, given: &Given) -> Result<ExitCode> {
    crate::logging::init_logging();
    let remote = &a.remote;
    let trust = remote.trust.load()?;
    let rt = runtime()?;
    rt.block_on(async {
        let mut client = connect(&remote.target).await?;
        let outcome = call_on(&mut client, &a.tool, given, &trust, remote).await;
        client.close().await;
        outcome
    })
}

async fn call_on(
    client: &mut Client,
    name: &str,
    given: &Given,
    trust: &TrustConfig,
    remote: &RemoteArgs,
) -> Result<ExitCode> {
    let mut err = std::io::stderr();
    let raw = client.list_tools_raw().await.context("listing tools")?;
    let Some(found) = raw
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    else {
        let names: Vec<&str> = raw
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        writeln!(
            err,
            "toolwright: the server has no tool {name:?}; it offers: {}",
            names.join(", ")
        )?;
        return Ok(ExitCode::from(2));
    };
    // Only this tool's definition has to be valid to call it.
    let tool: Tool = serde_json::from_value(found.clone())
        .with_context(|| format!("the server's definition of {name:?} is invalid"))?;
    let tool = &tool;
    let trusted = trust.is_trusted(client.target());
    if needs_consent(tool, trusted) && !remote.yes {
        writeln!(
            err,
            "toolwright: refusing to call {name:?} without --yes: the server is not trusted and \
             the tool does not claim to be read-only, so it may modify or destroy things and \
             reach the outside world. Pass --yes to call it anyway, or list the server in {}.",
            remote.trust.describe()
        )?;
        return Ok(ExitCode::from(2));
    }
    let args = given.arguments(&tool.input_schema)?;
    // The hint needs a schema that compiles; one that does not is the server's to report.
    let hint = toolwright_schema::Validator::compile(&tool.input_schema)
        .ok()
        .filter(|v| !v.is_valid(&args))
        .and_then(|_| given.hint(&args));
    let print_hint = |err: &mut std::io::Stderr| -> std::io::Result<()> {
        match &hint {
            Some(h) => writeln!(err, "toolwright: {h}"),
            None => Ok(()),
        }
    };
    let outcome = match client.call_tool(name, args.clone(), Some(tool)).await {
        Ok(o) => o,
        // The server answered the call with an error: the tool failed (exit 1), as when
        // toolwright's own server refuses a result that breaks the tool's outputSchema.
        Err(ClientError::Rpc { code, message, .. }) => {
            writeln!(err, "toolwright: {name}: {message} ({code})")?;
            print_hint(&mut err)?;
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e).context(format!("calling {name}")),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &outcome.raw)?;
    writeln!(out)?;
    out.flush()?;
    print_hint(&mut err)?;
    if outcome.result.is_error() {
        return Ok(ExitCode::from(1));
    }
    if let Err(problem) = check_output(tool, &outcome.result, client.protocol_version()) {
        writeln!(err, "toolwright: {name}: {problem}")?;
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_letters_and_sentences() {
        assert_eq!(hint_letters(&ToolAnnotations::default()), "wD-O");
        assert_eq!(
            hint_letters(&ToolAnnotations::read_only_closed_world("t")),
            "R-I-"
        );
        assert_eq!(first_sentence("Adds. Then more."), "Adds");
        assert_eq!(first_sentence("Adds two. Then more.\nLine two"), "Adds two");
        assert_eq!(first_sentence(&"x".repeat(100)).chars().count(), 90);
    }
}
