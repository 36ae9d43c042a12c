//! `toolwright hash-key`: the `api_keys:` entry of a key, which the tool file keeps instead
//! of the key (its SHA-256 digest). The key is read from stdin, or made up with
//! `--generate` and shown once on stderr.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use clap::Args;
use ring::rand::SecureRandom;
use toolwright_toolfile::api_keys::{ApiKeyConfig, good_name};

// `toolwright hash-key` (no doc comment: it would replace the subcommand's summary in --help).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  toolwright hash-key --generate --name ci-bot --scope \
    tickets:read >> toolwright.yaml\n  printf %s \"$KEY\" | toolwright hash-key --name ops\n\n\
    The entry goes under `api_keys:` of a tool file; `serve --http` then accepts \
    `Authorization: Bearer KEY` as the caller `key:NAME` with its scopes.\n\n\
    Exit codes: 0 printed; 2 usage (a bad name or scope, an empty key)."
)]
pub struct HashKeyArgs {
    /// The key's name: requests with it speak for `key:NAME`.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// A scope the key grants (repeatable): views and limits chosen by scope apply.
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// Make up a key (32 random bytes, base64url) and print it once on stderr, instead of
    /// reading one from stdin.
    #[arg(long)]
    pub generate: bool,
}

/// A new key: `tw_` and 32 random bytes in base64url.
fn generate() -> Result<String> {
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("the system's random number generator failed"))?;
    Ok(format!(
        "tw_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    ))
}

/// The entry's text (YAML, a mapping under `api_keys:`).
fn entry(key: &ApiKeyConfig) -> String {
    let scopes = key
        .scopes
        .iter()
        .map(|s| serde_json::Value::String(s.clone()).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "api_keys:\n  {}:\n    sha256: {}\n    scopes: [{scopes}]\n",
        key.name,
        key.hex()
    )
}

/// Runs `toolwright hash-key`.
pub fn run(a: HashKeyArgs) -> Result<ExitCode> {
    if !good_name(&a.name) {
        bail!(
            "--name {:?}: a key's name is 1 to 64 letters, digits, `_`, `-` or `.`",
            a.name
        );
    }
    if let Some(s) = a
        .scopes
        .iter()
        .find(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        bail!("--scope {s:?}: a scope is one word, without spaces");
    }
    let key = if a.generate {
        let key = generate()?;
        eprintln!("the key (shown once; give it to the client, keep it nowhere else): {key}");
        key
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the key from stdin")?;
        let key = text.strip_suffix('\n').unwrap_or(&text);
        let key = key.strip_suffix('\r').unwrap_or(key);
        if key.trim().is_empty() {
            bail!("no key on stdin (or --generate to make one)");
        }
        if key.trim() != key {
            bail!("the key begins or ends with whitespace, which no client can send");
        }
        key.to_owned()
    };
    let config = ApiKeyConfig::of_key(&a.name, &key, a.scopes);
    let mut out = std::io::stdout().lock();
    out.write_all(entry(&config).as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_long_and_differ() {
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 43);
        assert!(a.starts_with("tw_"));
    }

    #[test]
    fn the_entry_reads_back() {
        let k = ApiKeyConfig::of_key("ci-bot", "s3cret", vec!["a:b".into(), "c".into()]);
        let text = entry(&k);
        let doc = toolwright_toolfile::Document::parse(
            std::path::Path::new("k.yaml"),
            toolwright_toolfile::Format::Yaml,
            text,
        )
        .unwrap();
        let read = toolwright_toolfile::read_config(&[doc]).unwrap();
        assert_eq!(read.api_keys, vec![k]);
    }
}
