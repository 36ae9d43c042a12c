//! `toolwright skills`: the skills of any MCP server (the Skills extension, SEP-2640).
//! `list` reads the listing and nothing else; `get` reads the files asked for, each
//! verified against the listing (size, SHA-256 digest, and a `SKILL.md`'s frontmatter)
//! before it is printed or written, and refuses one that does not match (exit code 1).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::Value;
use toolwright_client::{Client, ClientError};
use toolwright_protocol::skills::{SkillEntry, skill_directory};

use crate::client_cmd::{TargetArgs, connect, runtime};

// `toolwright skills` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 done; 1 a file did not match its skill's entry and was refused; \
    2 usage, connection or I/O error, or no such skill."
)]
pub struct SkillsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SkillsCommand,
}

// `toolwright skills …` (no doc comment: it would replace the summary in --help).
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List a server's skills: name, URI, file count and description. No file is read.
    List {
        /// The server.
        #[command(flatten)]
        target: TargetArgs,
        /// Print the entries as the server sent them (JSON).
        #[arg(long)]
        json: bool,
    },
    /// Read one skill's SKILL.md (or --file), or all its files (--out), each verified
    /// against the server's listing before it is used.
    Get {
        /// The skill: its name, or the URI of its SKILL.md.
        skill: String,
        /// Print this file of the skill instead of its SKILL.md: a path inside the skill
        /// (`references/FORMS.md`) or its URI.
        #[arg(long, value_name = "PATH", conflicts_with = "out")]
        file: Option<String>,
        /// Write every file of the skill below DIR/NAME/, once all are verified.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The server.
        #[command(flatten)]
        target: TargetArgs,
    },
}

/// `toolwright skills`.
pub fn run(a: SkillsArgs) -> Result<ExitCode> {
    crate::logging::init_logging();
    let rt = runtime()?;
    match a.command {
        SkillsCommand::List { target, json } => {
            let (entries, raw_json) = rt.block_on(async {
                let mut client = connect_skills(&target).await?;
                let entries = client.list_skills().await.context("listing skills");
                client.close().await;
                let entries = entries?;
                anyhow::Ok((entries, json))
            })?;
            print_list(&entries, raw_json)?;
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Get {
            skill,
            file,
            out,
            target,
        } => {
            let done = rt.block_on(async {
                let mut client = connect_skills(&target).await?;
                let got = get(&mut client, &skill, file.as_deref(), out.as_deref()).await;
                client.close().await;
                got
            });
            match done {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e) if is_unverified(&e) => {
                    eprintln!("toolwright: {e:#}");
                    Ok(ExitCode::from(1))
                }
                Err(e) => Err(e),
            }
        }
    }
}

fn is_unverified(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ClientError>(),
            Some(ClientError::Unverified { .. })
        )
    })
}

async fn connect_skills(target: &TargetArgs) -> Result<Client> {
    if !target.is_given() {
        bail!("skills needs a server: -- CMD ARGS... (stdio, last on the line) or --url URL");
    }
    let client = connect(target).await?;
    if !client.serves_skills() {
        tracing::warn!(
            "the server does not declare the skills extension (io.modelcontextprotocol/skills); asking anyway"
        );
    }
    Ok(client)
}

fn print_list(entries: &[SkillEntry], json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, entries)?;
        writeln!(out)?;
        return Ok(());
    }
    if entries.is_empty() {
        writeln!(out, "The server lists no skills.")?;
    }
    for e in entries {
        let name = e.frontmatter.get("name").and_then(Value::as_str);
        let description = e.frontmatter.get("description").and_then(Value::as_str);
        writeln!(out, "{}  {}", name.unwrap_or("?"), e.uri)?;
        writeln!(
            out,
            "    {} file(s). {}",
            e.resources.files().len(),
            description.unwrap_or("")
        )?;
    }
    Ok(())
}

/// The entry named by `skill` (its SKILL.md URI, or its name when one entry has it).
fn find<'a>(entries: &'a [SkillEntry], skill: &str) -> Result<&'a SkillEntry> {
    if let Some(e) = entries.iter().find(|e| e.uri == skill) {
        return Ok(e);
    }
    let named: Vec<&SkillEntry> = entries.iter().filter(|e| e.name() == Some(skill)).collect();
    match named.as_slice() {
        [one] => Ok(one),
        [] => {
            bail!("the server lists no skill {skill:?} (toolwright skills list shows those it has)")
        }
        many => bail!(
            "{} skills are named {skill:?}; give the URI of one: {}",
            many.len(),
            many.iter()
                .map(|e| e.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

async fn get(
    client: &mut Client,
    skill: &str,
    file: Option<&str>,
    out: Option<&Path>,
) -> Result<()> {
    let entries = client.list_skills().await.context("listing skills")?;
    let entry = find(&entries, skill)?;
    let dir = skill_directory(&entry.uri)
        .with_context(|| format!("the skill URI {} does not end in /SKILL.md", entry.uri))?;
    let Some(out) = out else {
        let uri = match file {
            None => entry.uri.clone(),
            Some(f) if f.contains("://") => f.to_owned(),
            Some(f) => format!("{dir}/{}", f.trim_start_matches('/')),
        };
        let bytes = client.read_skill_file(entry, &uri).await?;
        std::io::stdout().lock().write_all(&bytes)?;
        return Ok(());
    };
    // SKILL.md first: a skill whose manifest does not verify is not loaded at all.
    let mut files = vec![(
        entry.uri.clone(),
        client.read_skill_file(entry, &entry.uri).await?,
    )];
    for f in entry.resources.files() {
        if f.uri != entry.uri {
            files.push((f.uri.clone(), client.read_skill_file(entry, &f.uri).await?));
        }
    }
    let name = entry.name().unwrap_or("skill");
    let base = out.join(name);
    for (uri, bytes) in &files {
        let rel = relative(dir, uri)?;
        let path = base.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "toolwright: {} file(s) of {} verified and written to {}",
        files.len(),
        entry.uri,
        base.display()
    );
    Ok(())
}

/// The path of `uri` inside the skill directory `dir`, made only of plain names (no `..`,
/// no empty or absolute part), so that writing it stays below the output directory.
fn relative(dir: &str, uri: &str) -> Result<PathBuf> {
    let rest = uri
        .strip_prefix(dir)
        .and_then(|r| r.strip_prefix('/'))
        .with_context(|| format!("{uri} is not inside the skill directory {dir}"))?;
    let mut path = PathBuf::new();
    for part in rest.split('/') {
        if part.is_empty() || part == "." || part == ".." || part.contains('\\') {
            bail!("{uri}: the path part {part:?} cannot be written below the output directory");
        }
        path.push(part);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::relative;

    #[test]
    fn relative_paths_stay_inside() {
        let ok = relative("skill://a", "skill://a/references/F.md").unwrap();
        assert_eq!(ok, std::path::Path::new("references/F.md"));
        for bad in [
            "skill://a/../x",
            "skill://a//x",
            "skill://b/x",
            "skill://a/./x",
        ] {
            assert!(relative("skill://a", bad).is_err(), "{bad}");
        }
    }
}
