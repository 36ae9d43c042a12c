//! The gateway's part of the file: `servers:` (the MCP servers toolwright stands in front
//! of) and `gateway:` (settings for all of them), as serde reads them.
//!
//! Nothing here starts a server; `toolwright-gateway` does, with these settings.

use crate::model::DurationSpec;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `gateway:` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    /// Between a server's prefix and a tool's name: `__`, `_`, `.` or `-` [default `__`].
    #[serde(default)]
    pub separator: Option<String>,
    /// Where pinned tool definitions are kept, relative to the config file's directory
    /// [default: `.toolwright-pins.json` there].
    #[serde(default)]
    pub state_file: Option<PathBuf>,
}

/// One upstream server: how to reach it and what of it to expose.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// A stdio server: its argv (no shell).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Variables set for a stdio server; values may hold `${VAR}` (the gateway's own).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The gateway's variables passed through besides the default allow-list.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// A stdio server's working directory, relative to the config file's directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// A Streamable HTTP server: its endpoint URL.
    #[serde(default)]
    pub url: Option<String>,
    /// The variable holding a bearer token for an HTTP server.
    #[serde(default)]
    pub bearer_env: Option<String>,
    /// An `https://` server: a PEM file of CA certificates trusted for it besides the
    /// built-in roots (a private CA), relative to the config file's directory.
    #[serde(default)]
    pub ca_cert: Option<PathBuf>,
    /// An HTTP server: each call carries the caller's token exchanged for one meant for
    /// this server (RFC 8693), not `bearer_env`'s.
    #[serde(default)]
    pub exchange: Option<crate::exchange::ExchangeSpec>,
    /// Which protocol era to speak [default: auto].
    #[serde(default)]
    pub era: EraSpec,
    /// When to start (stdio) or first reach (HTTP) the server [default: lazy].
    #[serde(default)]
    pub start: StartSpec,
    /// Whether the server's annotations are believed [default: untrusted].
    #[serde(default)]
    pub trust: TrustSpec,
    /// The namespace of its tools [default: the server's name]; `""` for none.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Globs on upstream tool names to expose [default: all].
    #[serde(default)]
    pub include: Option<Vec<String>>,
    /// Globs on upstream tool names to hide.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Upstream name → name before prefixing.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// The operator's annotations for every tool of an untrusted server.
    #[serde(default)]
    pub annotations: Option<Map<String, Value>>,
    /// What calls to tools that are not read-only, or are destructive, need.
    #[serde(default)]
    pub policy: PolicySpec,
    /// What an `outputSchema` violation does [default: enforce].
    #[serde(default)]
    pub contracts: ContractMode,
    /// How long one call may take [default: the server's call timeout].
    #[serde(default)]
    pub timeout: Option<DurationSpec>,
    /// Per upstream tool (keyed by its upstream name).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverride>,
    /// The roots the server is given: directories (relative to the config file's
    /// directory), or `client` for the calling client's own [default: none, and the
    /// `roots` capability is not declared to it].
    #[serde(default)]
    pub roots: Option<RootsSpec>,
}

/// `roots:` of a server: what it gets when it asks `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootsSpec {
    /// These directories, as written (relative to the config file's directory).
    Dirs(Vec<PathBuf>),
    /// The roots of the client whose call the server is serving (`roots: client`).
    Client,
}

impl<'de> Deserialize<'de> for RootsSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RootsSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of directories, or `client`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RootsSpec, E> {
                match v {
                    "client" => Ok(RootsSpec::Client),
                    other => Err(E::custom(format!(
                        "{other:?} is not a roots setting: say `client` (the calling client's roots) or give a list of directories, such as [docs]"
                    ))),
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RootsSpec, A::Error> {
                let mut dirs = Vec::new();
                while let Some(dir) = seq.next_element::<PathBuf>()? {
                    dirs.push(dir);
                }
                Ok(RootsSpec::Dirs(dirs))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Which protocol era to speak to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EraSpec {
    /// Probe with `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// The `initialize` handshake only.
    Legacy,
}

/// When an upstream is started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartSpec {
    /// On the first `tools/list` or call that needs it.
    #[default]
    Lazy,
    /// When the gateway starts.
    Eager,
}

/// Whether an upstream's annotations are believed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustSpec {
    /// Annotations are claims: replaced by the operator's values or the worst case.
    #[default]
    Untrusted,
    /// Annotations pass through.
    Trusted,
}

/// What a call needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Forwarded.
    #[default]
    Allow,
    /// Forwarded once the client's user confirms (elicitation).
    Confirm,
    /// Not listed, and refused.
    Deny,
}

/// `policy:` of a server, applied to each tool's effective annotations.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Tools whose `readOnlyHint` is not true [default: allow].
    #[serde(default)]
    pub not_read_only: Action,
    /// Tools whose `destructiveHint` is true (or absent, which means true) [default: allow].
    #[serde(default)]
    pub destructive: Action,
}

/// What an upstream's `structuredContent` that violates its `outputSchema` becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContractMode {
    /// An `isError` result naming the upstream.
    #[default]
    Enforce,
    /// Passed through; the violation is logged.
    Warn,
}

/// Settings for one upstream tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// A title instead of the upstream's.
    #[serde(default)]
    pub title: Option<String>,
    /// A description instead of the upstream's.
    #[serde(default)]
    pub description: Option<String>,
    /// Annotations over the server's (and, for a trusted server, the upstream's).
    #[serde(default)]
    pub annotations: Option<Map<String, Value>>,
    /// Fixed arguments: removed from the advertised `inputSchema`, injected into every call.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Overrides the server's policy for this tool.
    #[serde(default)]
    pub policy: Option<Action>,
}
