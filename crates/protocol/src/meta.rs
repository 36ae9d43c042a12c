//! The `_meta` object of a request, and the reserved keys of the modern era.

use crate::{ClientCapabilities, LoggingLevel};
use serde::Deserialize;
use serde_json::Value;
use toolwright_jsonrpc::RequestId;

/// `_meta` key: the protocol version of a modern request (required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (required, modern).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: who the client is (modern, should be sent).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level wanted for this request (modern, optional).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: who the server is (modern).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on messages of a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key tying a task's result to its task (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The parts of a request's `_meta` that a server acts on.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestMeta {
    /// `progressToken`: the client wants `notifications/progress` for this request.
    #[serde(default, rename = "progressToken")]
    pub progress_token: Option<RequestId>,
    /// Modern: the request's protocol version.
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: Option<String>,
    /// Modern: the client's capabilities for this request.
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: Option<ClientCapabilities>,
    /// Modern: who the client says it is (unverified).
    #[serde(default, rename = "io.modelcontextprotocol/clientInfo")]
    pub client_info: Option<Value>,
    /// Modern: the log level for this request; no log messages when absent.
    #[serde(default, rename = "io.modelcontextprotocol/logLevel")]
    pub log_level: Option<LoggingLevel>,
    /// W3C Trace Context: the caller's span (unprefixed, as SEP-414 and OpenTelemetry's
    /// MCP conventions put it).
    #[serde(default)]
    pub traceparent: Option<String>,
    /// W3C Trace Context: vendor state passed along with `traceparent`.
    #[serde(default)]
    pub tracestate: Option<String>,
}

impl RequestMeta {
    /// True when the request claims to be modern (it names a protocol version in `_meta`).
    pub fn is_modern(&self) -> bool {
        self.protocol_version.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_modern_keys() {
        let m: RequestMeta = serde_json::from_value(json!({
            "progressToken": 7,
            PROTOCOL_VERSION: "2026-07-28",
            CLIENT_CAPABILITIES: {},
            LOG_LEVEL: "debug",
            "com.example/other": true
        }))
        .unwrap();
        assert!(m.is_modern());
        assert_eq!(m.progress_token, Some(RequestId::Number(7)));
        assert_eq!(m.log_level, Some(LoggingLevel::Debug));
    }

    #[test]
    fn bad_log_level_is_an_error() {
        let r: Result<RequestMeta, _> = serde_json::from_value(json!({LOG_LEVEL: "loud"}));
        assert!(r.is_err());
    }
}
