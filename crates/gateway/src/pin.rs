//! Pinning upstream tool definitions: a silently changed description is how tool poisoning
//! works, so every upstream tool's definition is fingerprinted ([`fingerprint`]) and kept in
//! a state file; a definition that differs from its pin, or a tool new to a server already
//! pinned, is quarantined until the operator accepts it (`toolwright trust accept SERVER
//! [TOOL]`, [`Pins::accept`]).
//!
//! # The fingerprint
//!
//! `sha256:` and the lowercase hex SHA-256 of the definition as the upstream listed it,
//! written as canonical JSON ([`canonical_json`]: object members sorted by key, no
//! whitespace, numbers and strings as `serde_json` writes them), **without its top-level
//! `_meta`**. Everything else counts, known or not: `name`, `title`, `description`,
//! `inputSchema`, `outputSchema`, `annotations`, `icons`, `execution`, and any member a
//! later spec adds, since each is something a model or a client reads and acts on. `_meta`
//! is left out because it is the protocol's and the SDKs' channel for metadata about the
//! listing rather than the tool (SDKs and proxies put per-process values there, such as
//! timestamps, tags and tracing data) and it is not shown to models; counting it would
//! quarantine tools on restarts where nothing a model reads changed. The gateway's own
//! rewriting (prefix, renames, overrides, hidden fixed arguments) is not part of the
//! fingerprint: it is the operator's, and the same for every listing.
//!
//! # The state file
//!
//! ```json
//! {"version": 1, "servers": {"NAME": {"tools": {"TOOL": {
//!     "pinned": "sha256:…", "definition": {…},
//!     "pending": "sha256:…", "pending_definition": {…}}}}}}
//! ```
//!
//! `definition` is the pinned definition (so `trust list` can show what changed), `pending`
//! and `pending_definition` a quarantined one; a tool new to a pinned server has only the
//! pending pair. Every change is a read-modify-write of the file on disk, under an exclusive
//! lock on a `.lock` file beside it, written to a temporary file in the same directory
//! (mode 0600) and renamed over it: the running gateway and `toolwright trust accept`
//! never clobber each other's changes, and a reader never sees half a file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use toolwright_server::digest::sha256_hex;

/// The state file's format version.
pub const VERSION: u32 = 1;

/// Canonical JSON, as fingerprinted: the one writer, shared with the server's sealed
/// request states.
pub use toolwright_server::digest::canonical_json;

/// The definition as fingerprinted: without its top-level `_meta`.
pub fn pinned_part(definition: &Value) -> Value {
    match definition {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "_meta")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `sha256:` + the hex SHA-256 of the canonical JSON of the definition without `_meta`.
pub fn fingerprint(definition: &Value) -> String {
    format!("sha256:{}", sha256_hex(&pinned_part(definition)))
}

/// The whole state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// [`VERSION`].
    pub version: u32,
    /// By server name.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerPins>,
}

impl Default for State {
    fn default() -> Self {
        State {
            version: VERSION,
            servers: BTreeMap::new(),
        }
    }
}

impl State {
    /// What the state says of `tools` (upstream name and definition as listed) of
    /// `server`, and whether the state changed: on first contact (no entry for the server)
    /// every tool is pinned; afterwards a tool whose fingerprint differs from its pin, or
    /// that has none, is quarantined and its definition recorded as pending (a definition
    /// back at its pin clears the pending one). Only memory is touched; [`Pins::check`]
    /// reads and writes the file around it.
    pub fn check(&mut self, server: &str, tools: &[(&str, &Value)]) -> (Vec<Verdict>, bool) {
        // An entry made for the server's skills alone is still the tools' first contact.
        let first = self.servers.get(server).is_none_or(|e| e.skills_only);
        let entry = self.servers.entry(server.to_owned()).or_default();
        entry.skills_only = false;
        judge_all(&mut entry.tools, tools, first)
    }

    /// What the state says of `skills` (upstream skill path and definition) of `server`,
    /// as [`State::check`] for tools: on the skills' first contact (the server has no
    /// skill pins yet) every skill is pinned; afterwards a changed or new one is
    /// quarantined. A server with no pins at all gets an entry marked `skills_only`, so
    /// that its tools' first listing is still their first contact.
    pub fn check_skills(
        &mut self,
        server: &str,
        skills: &[(&str, &Value)],
    ) -> (Vec<Verdict>, bool) {
        let entry = self
            .servers
            .entry(server.to_owned())
            .or_insert_with(|| ServerPins {
                skills_only: true,
                ..ServerPins::default()
            });
        let first = entry.skills.is_none();
        judge_all(
            entry.skills.get_or_insert_with(BTreeMap::new),
            skills,
            first,
        )
    }
}

/// Each of `items` (name and definition) judged against its pin in `pins` (made empty when
/// missing), all pinned on `first` contact; the verdicts, and whether a pin changed (always
/// on first contact).
fn judge_all(
    pins: &mut BTreeMap<String, ToolPin>,
    items: &[(&str, &Value)],
    first: bool,
) -> (Vec<Verdict>, bool) {
    let mut changed = first;
    let verdicts = items
        .iter()
        .map(|(name, def)| {
            let (verdict, touched) = pins
                .entry((*name).to_owned())
                .or_default()
                .judge(def, first);
            changed |= touched;
            verdict
        })
        .collect();
    (verdicts, changed)
}

/// One server's pins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerPins {
    /// By upstream tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolPin>,
    /// The server's skills by upstream skill path, pinned like tools (the definition is
    /// the skill's frontmatter and every file's digest, as `skills.rs` builds it); absent until
    /// the gateway first lists the server's skills, which is the skills' first contact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<BTreeMap<String, ToolPin>>,
    /// True while the entry holds skills only: the server's tools were never listed, and
    /// their first listing is first contact (pinned, not quarantined).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skills_only: bool,
}

impl ServerPins {
    /// The names of the tools with a pending definition.
    pub fn pending(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter(|(_, t)| t.pending.is_some())
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// The paths of the skills with a pending definition.
    pub fn pending_skills(&self) -> Vec<&str> {
        self.skills
            .iter()
            .flatten()
            .filter(|(_, t)| t.pending.is_some())
            .map(|(k, _)| k.as_str())
            .collect()
    }
}

/// One tool's pin and, when quarantined, its pending definition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolPin {
    /// The accepted fingerprint (absent for a tool never accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<String>,
    /// The accepted definition (without `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<Value>,
    /// The fingerprint of a definition seen since, waiting to be accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
    /// That definition (without `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_definition: Option<Value>,
}

impl ToolPin {
    /// The verdict on `def` as listed now, recording it (`first`: the server's first
    /// contact, so it is pinned); true when the pin changed.
    fn judge(&mut self, def: &Value, first: bool) -> (Verdict, bool) {
        let fp = fingerprint(def);
        if first {
            *self = ToolPin {
                pinned: Some(fp),
                definition: Some(pinned_part(def)),
                ..ToolPin::default()
            };
            return (Verdict::New, true);
        }
        if self.pinned.as_deref() == Some(fp.as_str()) {
            let cleared = self.pending.take().is_some();
            if cleared {
                self.pending_definition = None;
            }
            return (Verdict::Pinned, cleared);
        }
        let touched = self.pending.as_deref() != Some(fp.as_str());
        if touched {
            self.pending = Some(fp.clone());
            self.pending_definition = Some(pinned_part(def));
        }
        let verdict = Verdict::Quarantined {
            old: self.pinned.clone(),
            new: fp,
        };
        (verdict, touched)
    }
}

/// What the pins say of one tool as listed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its definition is the pinned one.
    Pinned,
    /// First contact with the server: pinned now (trust on first use).
    New,
    /// Its definition differs from its pin (`old` is `None` for a tool new to a pinned
    /// server): not listed, calls refused, recorded as pending.
    Quarantined {
        /// The pinned fingerprint.
        old: Option<String>,
        /// The fingerprint listed now.
        new: String,
    },
}

impl Verdict {
    /// Whether the tool may be listed and called.
    pub fn is_usable(&self) -> bool {
        !matches!(self, Verdict::Quarantined { .. })
    }
}

/// What goes wrong with the state file or an acceptance.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// Reading, locking or writing the file failed.
    #[error("state file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a state file.
    #[error("state file {}: not a toolwright state file: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The state file has no entry for the server.
    #[error("no pins for server {server:?}{}", known_list(.known))]
    UnknownServer {
        /// The server asked for.
        server: String,
        /// The servers the file knows.
        known: Vec<String>,
    },
    /// The server has no such tool.
    #[error("server {server:?} has no tool {tool:?} in the state file{}", known_list(.known))]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
        /// The tools the file knows for the server.
        known: Vec<String>,
    },
    /// Nothing is waiting to be accepted.
    #[error("nothing pending for {}", match .tool { Some(t) => format!("tool {t:?} of server {:?}", .server), None => format!("server {:?}", .server) })]
    NothingPending {
        /// The server.
        server: String,
        /// The tool, when one was named.
        tool: Option<String>,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        format!(" (known: {})", known.join(", "))
    }
}

/// The pins of a state file: every change is read-modify-write on the file itself.
#[derive(Debug, Clone)]
pub struct Pins {
    path: PathBuf,
}

impl Pins {
    /// The pins kept in `path` (the file is created on the first change).
    pub fn new(path: impl Into<PathBuf>) -> Pins {
        Pins { path: path.into() }
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state as on disk now (empty when there is no file yet).
    ///
    /// # Errors
    ///
    /// [`PinError::Io`], [`PinError::Invalid`].
    pub fn load(&self) -> Result<State, PinError> {
        read_state(&self.path)
    }

    /// What the state says of `tools` (upstream name and definition as listed) of `server`,
    /// recording what changed: on first contact (no entry for the server) every tool is
    /// pinned; afterwards a tool whose fingerprint differs from its pin, or that has none,
    /// is quarantined and its definition recorded as pending (a definition back at its pin
    /// clears the pending one). The file is written only when something changed.
    ///
    /// # Errors
    ///
    /// [`PinError::Io`], [`PinError::Invalid`].
    pub fn check(&self, server: &str, tools: &[(&str, &Value)]) -> Result<Vec<Verdict>, PinError> {
        self.update(|state| state.check(server, tools))
    }

    /// Runs `change` on the state on disk, under the file's lock, and writes the state back
    /// when it says something changed (the gateway's install plan, [`State::check`] for
    /// every listed server in one read-modify-write).
    ///
    /// # Errors
    ///
    /// [`PinError::Io`], [`PinError::Invalid`].
    pub fn with_state<T>(
        &self,
        change: impl FnOnce(&mut State) -> (T, bool),
    ) -> Result<T, PinError> {
        self.update(change)
    }

    /// What the state on disk says of one tool's definition, without recording anything
    /// (the running gateway asks this when the file changes, to list an accepted tool).
    ///
    /// # Errors
    ///
    /// [`PinError::Io`], [`PinError::Invalid`].
    pub fn verdict(
        &self,
        server: &str,
        tool: &str,
        definition: &Value,
    ) -> Result<Verdict, PinError> {
        let state = self.load()?;
        let fp = fingerprint(definition);
        Ok(match state.servers.get(server).filter(|s| !s.skills_only) {
            None => Verdict::New,
            Some(s) => {
                let old = s.tools.get(tool).and_then(|t| t.pinned.clone());
                if old.as_deref() == Some(fp.as_str()) {
                    Verdict::Pinned
                } else {
                    Verdict::Quarantined { old, new: fp }
                }
            }
        })
    }

    /// Accepts the pending definition of `tool` of `server` (a tool name or a skill path),
    /// or of every pending tool and skill of `server` when `tool` is `None`: pending
    /// becomes pinned. The names accepted, sorted.
    ///
    /// # Errors
    ///
    /// [`PinError::UnknownServer`], [`PinError::UnknownTool`], [`PinError::NothingPending`],
    /// and those of reading and writing the file.
    pub fn accept(&self, server: &str, tool: Option<&str>) -> Result<Vec<String>, PinError> {
        self.update(|state| {
            let known: Vec<String> = state.servers.keys().cloned().collect();
            let Some(entry) = state.servers.get_mut(server) else {
                return (
                    Err(PinError::UnknownServer {
                        server: server.to_owned(),
                        known,
                    }),
                    false,
                );
            };
            // Skills accepted by path beside tools (a server never listed for skills has none).
            let mut no_skills = BTreeMap::new();
            let skills = entry.skills.as_mut().unwrap_or(&mut no_skills);
            let names: Vec<String> = match tool {
                Some(t) if !entry.tools.contains_key(t) && !skills.contains_key(t) => {
                    return (
                        Err(PinError::UnknownTool {
                            server: server.to_owned(),
                            tool: t.to_owned(),
                            known: entry.tools.keys().chain(skills.keys()).cloned().collect(),
                        }),
                        false,
                    );
                }
                Some(t) => vec![t.to_owned()],
                None => entry.tools.keys().chain(skills.keys()).cloned().collect(),
            };
            let mut accepted = Vec::new();
            for name in names {
                for pin in [entry.tools.get_mut(&name), skills.get_mut(&name)]
                    .into_iter()
                    .flatten()
                {
                    if let Some(fp) = pin.pending.take() {
                        pin.pinned = Some(fp);
                        pin.definition = pin.pending_definition.take();
                        accepted.push(name.clone());
                    }
                }
            }
            accepted.sort();
            accepted.dedup();
            if accepted.is_empty() {
                return (
                    Err(PinError::NothingPending {
                        server: server.to_owned(),
                        tool: tool.map(str::to_owned),
                    }),
                    false,
                );
            }
            (Ok(accepted), true)
        })?
    }

    /// Runs `change` on the state on disk, under the lock, and writes the state back when it
    /// says something changed.
    fn update<T>(&self, change: impl FnOnce(&mut State) -> (T, bool)) -> Result<T, PinError> {
        let io = |source| PinError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut lock_name = self.path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        let lock = open_private(&dir.join(lock_name)).map_err(io)?;
        lock.lock().map_err(io)?;
        let mut state = read_state(&self.path)?;
        let (out, changed) = change(&mut state);
        if changed {
            write_state(&self.path, &dir, &state).map_err(io)?;
        }
        drop(lock);
        Ok(out)
    }
}

fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

fn read_state(path: &Path) -> Result<State, PinError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
        Err(source) => {
            return Err(PinError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let invalid = |reason: String| PinError::Invalid {
        path: path.to_owned(),
        reason,
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(invalid(format!(
                "version {v}; this toolwright reads version {VERSION}"
            )));
        }
        None => return Err(invalid("no `version`".into())),
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

fn write_state(path: &Path, dir: &Path, state: &State) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(state).map_err(std::io::Error::other)?;
    text.push('\n');
    // tempfile creates it with mode 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(".toolwright-pins.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The members in which two definitions differ, sorted (`description`, `inputSchema`…).
pub fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect()
}

/// A line-by-line diff of two texts: each line with `' '` (both), `'-'` (old only) or
/// `'+'` (new only), in order (longest common subsequence).
pub fn line_diff<'a>(old: &'a str, new: &'a str) -> Vec<(char, &'a str)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
#[path = "pin_tests.rs"]
mod tests;
