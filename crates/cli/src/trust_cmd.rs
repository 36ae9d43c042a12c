//! `toolwright trust`: the pinned definitions of upstream tools, and accepting the ones that
//! changed (quarantined until then).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::Value;
use toolwright_gateway::pin::{PinError, Pins, ToolPin, changed_fields, line_diff};
use toolwright_toolfile::GatewayConfig;

// `toolwright trust` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 done; 1 nothing to accept (nothing pending, or a server of the \
    config not contacted yet); 2 usage (a server or tool neither the config nor the state file \
    knows), config or state file error."
)]
pub struct TrustArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TrustCommand,
}

/// The config files that name the state file.
#[derive(Debug, Args, Clone)]
pub struct ConfigArgs {
    /// The config file (YAML, JSON or TOML; repeatable) whose `gateway.state_file` holds the
    /// pins [default: ./toolwright.yaml; the state file defaults to .toolwright-pins.json
    /// next to the first file].
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
}

// `toolwright trust …` (no doc comment: it would replace the summary in --help).
#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Accept the changed or new definitions of SERVER's tools and skills (all of them, or
    /// TOOL only): they are pinned and listed again.
    Accept {
        /// The server, as named under `servers:`.
        server: String,
        /// One tool by its upstream name, or one skill by its upstream path [default:
        /// everything pending for SERVER].
        tool: Option<String>,
        /// Config files.
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Show each server's pinned and pending tools, and what changed in each pending one.
    List {
        /// Config files.
        #[command(flatten)]
        config: ConfigArgs,
    },
}

/// `toolwright trust`.
pub fn run(a: TrustArgs) -> Result<ExitCode> {
    match a.command {
        TrustCommand::Accept {
            server,
            tool,
            config,
        } => accept(&server, tool.as_deref(), &config),
        TrustCommand::List { config } => list(&config),
    }
}

fn load(a: &ConfigArgs) -> Result<GatewayConfig> {
    let mut files = a.configs.clone();
    if files.is_empty() {
        let default = PathBuf::from("toolwright.yaml");
        if !default.is_file() {
            bail!("no config file: name one with --config FILE (the state file is found from it)");
        }
        files.push(default);
    }
    crate::commands::load_gateway(&files)
}

fn accept(server: &str, tool: Option<&str>, a: &ConfigArgs) -> Result<ExitCode> {
    let config = load(a)?;
    let pins = Pins::new(&config.state_file);
    let e = match pins.accept(server, tool) {
        Ok(names) => {
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "accepted {} of server {server}: {} (in {})",
                if names.len() == 1 {
                    "1 tool"
                } else {
                    "the tools"
                },
                names.join(", "),
                pins.path().display()
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => e,
    };
    let code = match &e {
        // A server the config names has no pins until it is first listed: nothing to
        // accept yet, as when nothing is pending.
        PinError::UnknownServer { .. } if config.server(server).is_some() => 1,
        PinError::NothingPending { .. } => 1,
        // A name nothing knows is a mistake on the command line.
        PinError::UnknownServer { .. } | PinError::UnknownTool { .. } => 2,
        _ => return Err(e.into()),
    };
    eprintln!("toolwright: {e} (state file {})", pins.path().display());
    Ok(ExitCode::from(code))
}

fn list(a: &ConfigArgs) -> Result<ExitCode> {
    let config = load(a)?;
    let pins = Pins::new(&config.state_file);
    let state = pins.load()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "state file: {}", pins.path().display())?;
    let mut names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    names.extend(
        state
            .servers
            .keys()
            .map(String::as_str)
            .filter(|n| config.server(n).is_none()),
    );
    if names.is_empty() {
        writeln!(out, "no servers")?;
    }
    for name in names {
        let note = if config.server(name).is_none() {
            " (not in the config)"
        } else {
            ""
        };
        let Some(server) = state.servers.get(name) else {
            writeln!(
                out,
                "server {name}: not contacted yet (its tools are pinned at first contact)"
            )?;
            continue;
        };
        let pending = server.pending().len();
        writeln!(
            out,
            "server {name}{note}: {} pinned, {pending} pending",
            server.tools.values().filter(|t| t.pinned.is_some()).count()
        )?;
        for (tool, pin) in &server.tools {
            write_tool(&mut out, tool, pin)?;
        }
        // Upstream skills (Skills extension), pinned by frontmatter and file digests.
        if let Some(skills) = &server.skills {
            writeln!(
                out,
                "server {name} skills: {} pinned, {} pending",
                skills.values().filter(|t| t.pinned.is_some()).count(),
                server.pending_skills().len()
            )?;
            for (path, pin) in skills {
                write_tool(&mut out, &format!("skill {path}"), pin)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_tool(out: &mut impl Write, tool: &str, pin: &ToolPin) -> Result<()> {
    let short = |fp: &Option<String>| {
        fp.as_deref()
            .map(|f| f.chars().take(19).collect::<String>())
            .unwrap_or_default()
    };
    let Some(new) = &pin.pending_definition else {
        writeln!(out, "  pinned   {tool}  {}", short(&pin.pinned))?;
        return Ok(());
    };
    let Some(old) = &pin.definition else {
        writeln!(
            out,
            "  pending  {tool}  new since the server was pinned ({})",
            short(&pin.pending)
        )?;
        let desc = new.get("description").and_then(Value::as_str).unwrap_or("");
        for line in desc.lines() {
            writeln!(out, "      + {line}")?;
        }
        return Ok(());
    };
    let fields = changed_fields(old, new);
    writeln!(
        out,
        "  pending  {tool}  changed: {} ({} -> {})",
        fields.join(", "),
        short(&pin.pinned),
        short(&pin.pending)
    )?;
    for field in fields {
        writeln!(out, "    {field}:")?;
        let (a, b) = (text_of(old.get(&field)), text_of(new.get(&field)));
        let whole = field == "description";
        for (mark, line) in line_diff(&a, &b) {
            if whole || mark != ' ' {
                writeln!(out, "      {mark} {line}")?;
            }
        }
    }
    Ok(())
}

/// A member's text for a diff: a string as it is, anything else as pretty JSON, an absent
/// member as nothing.
fn text_of(v: Option<&Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other)
            .context("writing JSON")
            .unwrap_or_default(),
    }
}
