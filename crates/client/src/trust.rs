//! Which servers are trusted, and what that changes.
//!
//! Tool annotations are claims a server makes about its own tools. From a server the user
//! has not named trusted, toolwright assumes the worst the spec allows: every tool that
//! does not claim to be read-only may destroy things and reach the open world, and calling
//! it needs the user's explicit consent.
//!
//! The configuration is a JSON file (default `$XDG_CONFIG_HOME/toolwright/trusted.json`,
//! else `~/.config/toolwright/trusted.json`):
//!
//! ```json
//! {"trusted": [
//!   {"command": ["toolwright", "serve"]},
//!   {"command": "node /opt/servers/notes.js"},
//!   {"url": "http://127.0.0.1:8080/mcp"}
//! ]}
//! ```
//!
//! A command matches when the program and every argument are the same (a string is split
//! on whitespace); a URL matches exactly, ignoring a trailing `/` and the case of the
//! scheme and host.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolwright_protocol::{Tool, ToolAnnotations};

use crate::{ClientError, Target, TrustConfigError};

/// The servers the user trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustConfig {
    commands: Vec<Vec<String>>,
    urls: Vec<String>,
}

impl TrustConfig {
    /// Where the configuration lives by default, if a home can be found.
    pub fn default_path() -> Option<PathBuf> {
        let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => {
                PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config")
            }
        };
        Some(base.join("toolwright").join("trusted.json"))
    }

    /// Reads the configuration at `path`.
    ///
    /// # Errors
    ///
    /// [`ClientError::TrustConfig`] when the file cannot be read or is malformed.
    pub fn load(path: &Path) -> Result<TrustConfig, ClientError> {
        let fail = |source: TrustConfigError| ClientError::TrustConfig {
            path: path.display().to_string(),
            source,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|source| fail(TrustConfigError::Read { source }))?;
        TrustConfig::parse(&text).map_err(fail)
    }

    /// Reads the configuration at [`default_path`](Self::default_path); nothing is
    /// trusted when there is no such file.
    ///
    /// # Errors
    ///
    /// [`ClientError::TrustConfig`] when the file exists but cannot be read or is malformed.
    pub fn load_default() -> Result<TrustConfig, ClientError> {
        match Self::default_path() {
            Some(p) if p.exists() => Self::load(&p),
            _ => Ok(TrustConfig::default()),
        }
    }

    /// Parses the JSON text of a configuration.
    ///
    /// # Errors
    ///
    /// What is wrong, with the offending part of the document.
    pub fn parse(text: &str) -> Result<TrustConfig, TrustConfigError> {
        let doc: Value =
            serde_json::from_str(text).map_err(|source| TrustConfigError::NotJson { source })?;
        let Some(entries) = doc.get("trusted").and_then(Value::as_array) else {
            return Err(TrustConfigError::NoTrustedList { found: doc });
        };
        let mut config = TrustConfig::default();
        for (index, entry) in entries.iter().enumerate() {
            if let Some(url) = entry.get("url").and_then(Value::as_str) {
                config.urls.push(normalize_url(url));
                continue;
            }
            let argv: Vec<String> = match entry.get("command") {
                Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| TrustConfigError::CommandItem {
                                index,
                                item: v.clone(),
                            })
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(TrustConfigError::CommandType {
                        index,
                        command: other.clone(),
                    });
                }
                None => {
                    return Err(TrustConfigError::NoTarget {
                        index,
                        entry: entry.clone(),
                    });
                }
            };
            if argv.is_empty() {
                return Err(TrustConfigError::EmptyCommand { index });
            }
            config.commands.push(argv);
        }
        Ok(config)
    }

    /// Whether the user trusts this server.
    pub fn is_trusted(&self, target: &Target) -> bool {
        match target {
            Target::Stdio { program, args } => self
                .commands
                .iter()
                .any(|c| c.len() == args.len() + 1 && c[0] == *program && c[1..] == args[..]),
            Target::Http { url } => self.urls.contains(&normalize_url(url)),
        }
    }
}

fn normalize_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            format!(
                "{}://{}{}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase(),
                path
            )
        }
        None => url.to_owned(),
    }
}

/// The hints to act on: a trusted server's claims as they are; for an untrusted one, the
/// worst case (destructive, not idempotent, open world), keeping only its read-only claim.
pub fn effective_hints(tool: &Tool, trusted: bool) -> ToolAnnotations {
    let claimed = tool.hints();
    if trusted {
        return claimed;
    }
    ToolAnnotations {
        read_only_hint: Some(claimed.read_only()),
        title: claimed.title,
        destructive_hint: Some(true),
        idempotent_hint: Some(false),
        open_world_hint: Some(true),
    }
}

/// Whether calling `tool` needs the user's explicit consent: the server is not trusted
/// and the tool does not claim to be read-only.
pub fn needs_consent(tool: &Tool, trusted: bool) -> bool {
    !trusted && !tool.hints().read_only()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stdio(p: &str, a: &[&str]) -> Target {
        Target::Stdio {
            program: p.into(),
            args: a.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn matching() {
        let c = TrustConfig::parse(r#"{"trusted": [{"command": ["toolwright", "serve"]}, {"command": "node s.js --x"}, {"url": "HTTP://Example.test:8/mcp/"}]}"#).unwrap();
        assert!(c.is_trusted(&stdio("toolwright", &["serve"])));
        assert!(!c.is_trusted(&stdio("toolwright", &["serve", "--root", "/"])));
        assert!(c.is_trusted(&stdio("node", &["s.js", "--x"])));
        assert!(!c.is_trusted(&stdio("node", &[])));
        assert!(c.is_trusted(&Target::Http {
            url: "http://example.test:8/mcp".into()
        }));
        assert!(!c.is_trusted(&Target::Http {
            url: "http://example.test:8/other".into()
        }));
    }

    #[test]
    fn malformed_configs() {
        let check = |text: &str, message: &str| {
            let err = TrustConfig::parse(text).unwrap_err();
            assert_eq!(err.to_string(), message, "{text}");
        };
        check("[]", "expected {\"trusted\": [...]}");
        check(r#"{"trusted": {}}"#, "expected {\"trusted\": [...]}");
        check(
            r#"{"trusted": [{"url": "http://x/"}, {}]}"#,
            "trusted[1] needs a \"command\" or a \"url\"",
        );
        check(
            r#"{"trusted": [{"command": []}]}"#,
            "trusted[0].command is empty",
        );
        check(
            r#"{"trusted": [{"command": " "}]}"#,
            "trusted[0].command is empty",
        );
        check(
            r#"{"trusted": [{"command": [1]}]}"#,
            "trusted[0].command: every item must be a string",
        );
        check(
            r#"{"trusted": [{"command": 7}]}"#,
            "trusted[0].command must be a string or an array",
        );
        assert!(matches!(
            TrustConfig::parse(""),
            Err(TrustConfigError::NotJson { .. })
        ));
        assert!(matches!(
            TrustConfig::parse(r#"{"trusted": [{"command": ["a", null]}]}"#),
            Err(TrustConfigError::CommandItem {
                index: 0,
                item: Value::Null
            })
        ));
        assert_eq!(
            TrustConfig::parse(r#"{"trusted": []}"#).unwrap(),
            TrustConfig::default()
        );
    }

    #[test]
    fn unreadable_files_name_their_path() {
        let err = TrustConfig::load(Path::new("/nonexistent/trusted.json")).unwrap_err();
        assert!(
            matches!(&err, ClientError::TrustConfig { path, source: TrustConfigError::Read { .. } } if path == "/nonexistent/trusted.json"),
            "{err}"
        );
    }

    #[test]
    fn hints_and_consent() {
        let tool: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}})).unwrap();
        let worst = effective_hints(&tool, false);
        assert!(worst.destructive() && worst.open_world() && !worst.read_only());
        assert!(!effective_hints(&tool, true).destructive());
        assert!(needs_consent(&tool, false));
        assert!(!needs_consent(&tool, true));
        let ro: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}})).unwrap();
        assert!(!needs_consent(&ro, false));
    }
}
