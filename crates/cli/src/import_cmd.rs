//! `toolwright import openapi SPEC`: a tool file made of an OpenAPI description, to review.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use toolwright_openapi::{Location, NetLoader, Options};

// `toolwright import` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Where the tools come from.
    #[command(subcommand)]
    pub source: ImportSource,
}

// `toolwright import …` (no doc comment: it would replace the summary in --help).
#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// An OpenAPI 3.0 or 3.1 description (YAML or JSON, a file or an http(s) URL): one `http`
    /// tool per selected operation, written as a tool file to review. Operations that cannot
    /// be sent are listed on stderr and at the top of the file, with why.
    #[command(
        after_help = "Example:\n  toolwright import openapi petstore.yaml --include-tag \
        pets -o petstore.yaml.tools.yaml\n  toolwright lint --deny warn \
        petstore.yaml.tools.yaml\n\nExit codes: 0 written; 2 usage, or a description that \
        cannot be read or imported."
    )]
    Openapi(OpenapiArgs),
}

// `toolwright import openapi` (no doc comment: it would replace the summary in --help).
#[derive(Debug, Args)]
pub struct OpenapiArgs {
    /// The description: a file path or an http(s) URL.
    pub spec: String,
    /// Write the tool file here (YAML) [default: stdout].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only operations with this tag (repeatable).
    #[arg(long = "include-tag", value_name = "TAG")]
    pub include_tags: Vec<String>,
    /// No operation with this tag (repeatable).
    #[arg(long = "exclude-tag", value_name = "TAG")]
    pub exclude_tags: Vec<String>,
    /// Only this operation, by operationId or tool name (repeatable).
    #[arg(long = "operation", value_name = "ID")]
    pub operations: Vec<String>,
    /// Only operations whose path matches this glob, `*` within a segment, `**` across
    /// segments (repeatable), e.g. '/pets/*'.
    #[arg(long = "path", value_name = "GLOB")]
    pub paths: Vec<String>,
    /// Call this server URL instead of the description's servers[0] (needed when that one is
    /// relative and the description is a file).
    #[arg(long = "server", value_name = "URL")]
    pub server: Option<String>,
    /// The prefix of the environment variables credentials come from [default: the API
    /// title's first two words, e.g. SWAGGER_PETSTORE].
    #[arg(long = "env-prefix", value_name = "PREFIX")]
    pub env_prefix: Option<String>,
}

/// `toolwright import`.
pub fn run(a: ImportArgs) -> Result<ExitCode> {
    match a.source {
        ImportSource::Openapi(o) => openapi(o),
    }
}

fn openapi(a: OpenapiArgs) -> Result<ExitCode> {
    let location = Location::parse(&a.spec)?;
    let loader = NetLoader::new()?;
    let options = Options {
        include_tags: a.include_tags,
        exclude_tags: a.exclude_tags,
        operations: a.operations,
        paths: a.paths,
        server: a.server,
        env_prefix: a.env_prefix,
    };
    let (imported, text) = toolwright_openapi::import_to_file(location, &loader, &options)?;
    let mut err = std::io::stderr().lock();
    for s in &imported.skipped {
        writeln!(err, "skipped {}: {}", s.operation, s.reason)?;
    }
    for s in &imported.notes {
        writeln!(err, "left out of {}: {}", s.operation, s.reason)?;
    }
    writeln!(
        err,
        "{} tools written, {} operations skipped",
        imported.tools.len(),
        imported.skipped.len()
    )?;
    match &a.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
