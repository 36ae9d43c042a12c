//! `toolwright lint`: tool definitions from files or a live server, checked against the
//! spec and the seeds' guidance.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use toolwright_declared::{Document, Format as FileFormat};
use toolwright_lint::{Options, Report, Rule, Severity};

use crate::client_cmd::{TargetArgs, connect, runtime};

// `toolwright lint` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
#[command(override_usage = "toolwright lint [OPTIONS] <FILE>...\n       \
    toolwright lint [OPTIONS] --config <FILE>... [FILE]...\n       \
    toolwright lint [OPTIONS] -- <CMD> [ARGS]...\n       \
    toolwright lint [OPTIONS] --url <URL>\n       \
    toolwright lint --rules")]
#[command(
    after_help = "Exit codes: 0 no findings at or above --deny, 1 findings at or above \
    --deny, 2 usage, I/O or connection error.\nRules: toolwright lint --rules"
)]
pub struct LintArgs {
    /// Files of tool definitions: one tool, an array, a tools/list result or a JSON-RPC
    /// response, in JSON or YAML ("-" reads stdin); or files of declared tools (as
    /// `serve --config` reads them, YAML, JSON or TOML by extension), whose actions are
    /// checked too, whose findings name their line and column, and in which everything
    /// `serve --config FILE` would refuse is an error. Each file is linted on its own.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A config file whose declared tools are linted, and whose `servers:` are started and
    /// the tools they serve linted (repeatable: the files are loaded together, as
    /// `serve --config A --config B` loads them).
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// The server whose tools/list to lint (instead of files): `-- CMD ARGS...` or --url.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 1 when a finding is at or above this severity (info, warning, error).
    #[arg(long, value_name = "LEVEL", default_value = "error", value_parser = str::parse::<Severity>)]
    pub deny: Severity,
    /// A rule not to report (repeatable), e.g. --ignore description-no-return.
    #[arg(long = "ignore", value_name = "RULE", value_parser = str::parse::<Rule>)]
    pub ignore: Vec<Rule>,
    /// Print every rule with its severity and what it checks, and exit.
    #[arg(long, exclusive = true)]
    pub rules: bool,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A report for people, grouped by tool (coloured on a terminal).
    Human,
    /// One JSON document.
    Json,
}

/// One linted source and its report.
struct Linted {
    source: String,
    era: Option<(String, String)>,
    report: Report,
}

/// `toolwright lint`.
pub fn run(a: LintArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if a.rules {
        let width = Rule::ALL.iter().map(|r| r.id().len()).max().unwrap_or(0);
        for r in Rule::ALL {
            writeln!(
                out,
                "{:width$}  {:7}  {}",
                r.id(),
                r.severity().as_str(),
                r.description()
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = Options {
        disabled: a.ignore.clone(),
    };
    let linted = match (
        a.files.is_empty() && a.configs.is_empty(),
        a.target.is_given(),
    ) {
        _ if !a.configs.is_empty() => {
            if a.target.is_given() {
                bail!("lint config files or a server (-- CMD or --url), not both");
            }
            let mut all = lint_files(&a.files, &options)?;
            // The config files load together, as `serve --config A --config B` loads them.
            let (configs, config) = lint_set(&a.configs, &options)?;
            all.extend(configs);
            match config {
                Some(config) => all.extend(lint_upstreams(&config, &options)?),
                None => eprintln!(
                    "toolwright: the upstream servers were not started: the config files have problems (above)"
                ),
            }
            all
        }
        (false, true) => bail!("lint files or a server (-- CMD or --url), not both"),
        (true, false) => {
            bail!("nothing to lint: name files, or a server: -- CMD ARGS... (stdio) or --url URL")
        }
        (false, false) => lint_files(&a.files, &options)?,
        (true, true) => vec![lint_server(&a.target, &options)?],
    };
    match a.format {
        Format::Json => {
            let docs: Vec<Value> = linted.iter().map(to_json).collect();
            let doc = if docs.len() == 1 {
                docs.into_iter().next().unwrap_or_default()
            } else {
                Value::Array(docs)
            };
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        }
        Format::Human => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let many = linted.len() > 1;
            for l in &linted {
                if many {
                    writeln!(out, "== {}", l.source)?;
                }
                out.write_all(l.report.render_human(color).as_bytes())?;
                if many {
                    writeln!(out)?;
                }
            }
        }
    }
    let fails = linted.iter().any(|l| l.report.fails(a.deny));
    Ok(ExitCode::from(u8::from(fails)))
}

/// Lints each file on its own.
fn lint_files(files: &[PathBuf], options: &Options) -> Result<Vec<Linted>> {
    let mut out = Vec::new();
    for f in files {
        out.extend(lint_set(std::slice::from_ref(f), options)?.0);
    }
    Ok(out)
}

/// What one file is, for lint.
enum Loaded {
    /// A tool file (declared tools, servers, gateway settings), parsed.
    Declared(Box<Document>),
    /// Tool definitions, or a tool file the loader refuses as a whole: linted already.
    Linted(Linted),
}

/// Lints `files` as one set, as `serve --config` loads them together: each tool file with
/// lint's rules and everything the loader refuses in it (the loader's own checks, run
/// here: [`toolwright_declared::check_documents`]), each problem placed where `serve`
/// places it. The gateway's settings come back when
/// the loader took them.
fn lint_set(
    files: &[PathBuf],
    options: &Options,
) -> Result<(Vec<Linted>, Option<toolwright_toolfile::GatewayConfig>)> {
    // In file order: a tool file as its place in `docs`, anything else linted already.
    let mut order: Vec<Result<usize, Linted>> = Vec::new();
    let mut docs: Vec<Document> = Vec::new();
    for f in files {
        match read_file(f, options)? {
            Loaded::Declared(d) => {
                order.push(Ok(docs.len()));
                docs.push(*d);
            }
            Loaded::Linted(l) => order.push(Err(l)),
        }
    }
    // Every check `serve --config` makes, run by the same function.
    let checked = toolwright_declared::check_documents(&docs, toolwright_tools::NAMES);
    let problems = checked.problems;
    let config = checked.config;
    for w in config.iter().flat_map(|c| &c.warnings) {
        eprintln!("toolwright: warning: {w}");
    }
    let refused = order
        .iter()
        .any(|r| r.as_ref().is_err_and(|l| !l.report.outside.is_empty()));
    let linted = order
        .into_iter()
        .map(|r| match r {
            Err(l) => l,
            Ok(i) => {
                let doc = &docs[i];
                let mut report = toolwright_lint::lint_declared(doc, options);
                toolwright_lint::add_refusals(&mut report, doc, &problems, options);
                Linted {
                    source: doc.file.display().to_string(),
                    era: None,
                    report,
                }
            }
        })
        .collect();
    Ok((linted, config.filter(|_| !refused)))
}

fn read_file(path: &PathBuf, options: &Options) -> Result<Loaded> {
    let (text, source) = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading stdin")?;
        (s, "<stdin>".to_owned())
    } else {
        let s =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        (s, path.display().to_string())
    };
    if is_blank(&text) {
        bail!(
            "linting {source}: the file is empty; it should hold tool definitions (one tool, an \
             array of tools, a tools/list result or a JSON-RPC response to tools/list) or \
             declared tools (`tools:`)"
        );
    }
    if let Some(format) = FileFormat::of(path).filter(|_| path.as_os_str() != "-") {
        match Document::parse(path, format, text.clone()) {
            Ok(doc) if toolwright_lint::is_declared(&doc) => {
                return Ok(Loaded::Declared(Box::new(doc)));
            }
            // Definitions without actions: linted as such, below.
            Ok(_) => {}
            // Only declared tools come in TOML.
            Err(problem) if format == FileFormat::Toml => bail!("linting {problem}"),
            // A tool file the loader refuses as a whole (an unknown top-level member, `tools`
            // that is not a list): its problem, placed. Other documents are left to the
            // definitions' reader, which knows more shapes (one tool, JSON-RPC responses)
            // and says what is wrong with the rest.
            Err(problem) => match toolwright_lint::parse_document(&text) {
                Ok(v) if toolwright_lint::looks_like_a_tool_file(&v) => {
                    return Ok(Loaded::Linted(Linted {
                        source,
                        era: None,
                        report: toolwright_lint::refused_file(&problem, options),
                    }));
                }
                Ok(_) => {}
                // Text that does not parse: the loader's word on it, placed as `serve`
                // places it.
                Err(_) => bail!("linting {problem}"),
            },
        }
    }
    let report = toolwright_lint::lint_document(&text, options)
        .with_context(|| format!("linting {source}"))?;
    Ok(Loaded::Linted(Linted {
        source,
        era: None,
        report,
    }))
}

/// Nothing but whitespace and `#` comment lines (YAML and TOML comments): nothing to lint.
fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

fn lint_server(target: &TargetArgs, options: &Options) -> Result<Linted> {
    let rt = runtime()?;
    let (tools, era, version, source) = rt.block_on(async {
        let mut client = connect(target).await?;
        let tools = client.list_tools_raw().await.context("listing tools");
        let era = client.era();
        let version = client.protocol_version();
        let source = client.target().describe();
        client.close().await;
        anyhow::Ok((tools?, era, version, source))
    })?;
    eprintln!(
        "toolwright: {} tool{} from {source} ({} era, protocol {version})",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        era.as_str()
    );
    Ok(Linted {
        source,
        era: Some((era.as_str().to_owned(), version.as_str().to_owned())),
        report: toolwright_lint::lint(&tools, options),
    })
}

/// Starts every upstream the config names and lints what each lists that its
/// `include`/`exclude` let through (what the gateway would serve); an upstream that cannot
/// be listed is an error naming it.
fn lint_upstreams(
    config: &toolwright_toolfile::GatewayConfig,
    options: &Options,
) -> Result<Vec<Linted>> {
    if config.servers.is_empty() {
        return Ok(Vec::new());
    }
    let gateway = toolwright_gateway::Gateway::new(
        config,
        toolwright_gateway::gateway::Settings {
            call_timeout: std::time::Duration::from_secs(30),
            telemetry: None,
            tokens: None,
        },
    )?;
    let listed = gateway.list_each(std::time::Duration::from_secs(60));
    gateway.shutdown();
    let mut out = Vec::new();
    for (name, defs) in listed {
        let defs = match defs {
            Ok(defs) => defs,
            Err(why) => bail!("upstream {name} could not be listed: {why}"),
        };
        let chosen: Vec<Value> = match config.server(&name) {
            Some(server) => defs
                .into_iter()
                .filter(|d| {
                    // A definition without a name is linted (and reported) as it is.
                    d.get("name")
                        .and_then(Value::as_str)
                        .is_none_or(|n| server.filter.allows(n))
                })
                .collect(),
            None => defs,
        };
        out.push(lint_upstream(&name, &chosen, options));
    }
    Ok(out)
}

/// Lints the tool definitions upstream server `server` listed (as received), as one
/// server's set: each tool is named `SERVER: TOOL` in the report, whose source is the
/// server.
fn lint_upstream(server: &str, definitions: &[Value], options: &Options) -> Linted {
    let mut report = toolwright_lint::lint(definitions, options);
    for entry in &mut report.tools {
        entry.name = format!("{server}: {}", entry.name);
    }
    Linted {
        source: format!("server {server}"),
        era: None,
        report,
    }
}

fn to_json(l: &Linted) -> Value {
    let mut doc = json!({"source": l.source});
    if let Some((era, version)) = &l.era {
        doc["era"] = json!(era);
        doc["protocolVersion"] = json!(version);
    }
    if let (Value::Object(d), Value::Object(r)) = (&mut doc, l.report.to_json()) {
        d.extend(r);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_files_are_whitespace_and_comments() {
        for (text, blank) in [
            ("", true),
            ("\n  \n", true),
            ("# tools come later\n\n", true),
            ("[]", false),
            ("tools: []  # none yet", false),
        ] {
            assert_eq!(is_blank(text), blank, "{text:?}");
        }
    }

    #[test]
    fn upstream_findings_name_the_server() {
        let defs = [
            json!({"name": "bad name", "inputSchema": {"type": "object"}}),
            json!({"name": "fine", "description": "Returns the time now, as RFC 3339 text.", "inputSchema": {"type": "object"}}),
        ];
        let l = lint_upstream("everything", &defs, &Options::default());
        assert_eq!(l.source, "server everything");
        let human = l.report.render_human(false);
        assert!(human.contains("everything: bad name\n"), "{human}");
        assert!(l.report.fails(Severity::Error), "{human}");
        assert_eq!(to_json(&l)["source"], "server everything");
    }
}
