//! The legacy handshake (`initialize`), the modern `server/discover`, capabilities and
//! implementation info.

use crate::{Icon, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Name and version of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the implementation does (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
        }
    }
}

/// What a client can do. Unknown capabilities are kept in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// The client can list its roots (`roots/list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Value>,
    /// The client can sample from a model (`sampling/createMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// The client can ask its user for input (`elicitation/create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// Task support (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Anything else the client declared.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl ClientCapabilities {
    /// True when the client declared `roots` and may be asked for `roots/list`.
    pub fn has_roots(&self) -> bool {
        self.roots.is_some()
    }
    /// True when the client declared `roots.listChanged`.
    pub fn roots_list_changed(&self) -> bool {
        self.roots
            .as_ref()
            .and_then(|r| r.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// The `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// What a server can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Resources (`{subscribe?, listChanged?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Prompts (`{listChanged?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Argument completion (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Tasks (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
}

/// Parameters of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The newest version the client speaks.
    pub protocol_version: String,
    /// What the client can do.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server will speak.
    pub protocol_version: String,
    /// What the server can do.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// `cacheScope` of a modern cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Shareable across authorization contexts.
    Public,
    /// Only within one authorization context.
    Private,
}

/// Result of the modern `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always `"complete"`.
    pub result_type: String,
    /// Every version the server serves, newest first.
    pub supported_versions: Vec<String>,
    /// What the server can do.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the client may cache this, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share the cached copy.
    pub cache_scope: CacheScope,
    /// Carries `io.modelcontextprotocol/serverInfo`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initialize_params_keep_unknown_capabilities() {
        let p: InitializeParams = serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": true}, "x-custom": {}},
            "clientInfo": {"name": "c", "version": "1"}
        }))
        .unwrap();
        assert!(p.capabilities.has_roots());
        assert!(p.capabilities.roots_list_changed());
        assert!(p.capabilities.other.contains_key("x-custom"));
    }

    #[test]
    fn capabilities_omit_absent() {
        let caps = ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(caps).unwrap(),
            json!({"tools": {"listChanged": true}})
        );
    }
}
