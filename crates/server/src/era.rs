//! The era of a request: modern (2026-07-28, standing alone) or legacy (the session's).
//!
//! [`claim`] is the one rule that says which era a message asks for, from the protocol
//! version in its `params._meta` and the transport's version header (HTTP's
//! `MCP-Protocol-Version`; stdio has none). HTTP routes a POST with it; the dispatcher
//! resolves the same claim into an [`Era`] (with the modern request's capabilities and log
//! level, or the legacy session's negotiated version) in [`Era::resolve`].

use crate::server::Server;
use crate::session::Session;
use serde_json::json;
use std::sync::Arc;
use toolwright_jsonrpc::{ErrorObject, code};
use toolwright_protocol::meta as keys;
use toolwright_protocol::{ClientCapabilities, LoggingLevel, ProtocolVersion, RequestMeta};

/// The era a request belongs to.
#[derive(Debug, Clone)]
pub enum Era {
    /// A request of the session negotiated at `initialize`, at this version.
    Legacy(ProtocolVersion),
    /// A modern request: what it declared in its own `_meta`.
    Modern {
        /// The version it names.
        version: ProtocolVersion,
        /// The capabilities it declares.
        capabilities: Arc<ClientCapabilities>,
        /// The log level it asks for (none: no log messages).
        log_level: Option<LoggingLevel>,
    },
}

/// Which era a message asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim<'a> {
    /// Modern: a modern version in `_meta` or in the transport's header.
    Modern,
    /// Legacy: no version in `_meta`, and the header (if any) names a legacy version.
    Legacy,
    /// `_meta` names a version toolwright does not speak as modern (as sent).
    Unsupported(&'a str),
}

/// The era that a message with `meta_version` in `params._meta` asks for, sent with
/// `header` as the transport's protocol version (`None`: no such header).
pub fn claim<'a>(meta_version: Option<&'a str>, header: Option<ProtocolVersion>) -> Claim<'a> {
    match meta_version {
        Some(v) => match ProtocolVersion::parse(v) {
            Some(version) if version.is_modern() => Claim::Modern,
            _ => Claim::Unsupported(v),
        },
        None if header.is_some_and(ProtocolVersion::is_modern) => Claim::Modern,
        None => Claim::Legacy,
    }
}

impl Era {
    /// The era of a request with `meta`, in `session`: the error is the reply when neither
    /// places it (an unknown version, a modern request without capabilities, a legacy
    /// request before `initialize`).
    pub fn resolve(meta: Option<&RequestMeta>, session: &Session) -> Result<Era, ErrorObject> {
        let version = meta.and_then(|m| m.protocol_version.as_deref());
        match claim(version, None) {
            Claim::Modern => {
                let meta = meta.expect("a modern claim comes from _meta");
                let version = version
                    .and_then(ProtocolVersion::parse)
                    .expect("a modern claim names a known version");
                let capabilities = meta.client_capabilities.clone().ok_or_else(|| {
                    ErrorObject::invalid_params(format!(
                        "params._meta must include \"{}\"",
                        keys::CLIENT_CAPABILITIES
                    ))
                })?;
                Ok(Era::Modern {
                    version,
                    capabilities: Arc::new(capabilities),
                    log_level: meta.log_level,
                })
            }
            Claim::Unsupported(v) => Err(ErrorObject::new(
                code::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version: {v}"),
            )
            .with_data(json!({"supported": Server::supported_versions(), "requested": v}))),
            Claim::Legacy => match session.negotiated() {
                Some(n) => Ok(Era::Legacy(n.version)),
                None => Err(ErrorObject::invalid_params(format!(
                    "params._meta with \"{}\" is required (2026-07-28); legacy clients must send \
                     initialize first",
                    keys::PROTOCOL_VERSION
                ))),
            },
        }
    }

    /// The protocol version.
    pub fn version(&self) -> ProtocolVersion {
        match self {
            Era::Legacy(v) => *v,
            Era::Modern { version, .. } => *version,
        }
    }

    /// True for a modern request.
    pub fn is_modern(&self) -> bool {
        matches!(self, Era::Modern { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims() {
        let modern = Some(ProtocolVersion::LATEST);
        let legacy = Some(ProtocolVersion::LATEST_LEGACY);
        assert_eq!(claim(Some("2026-07-28"), None), Claim::Modern);
        assert_eq!(claim(Some("2026-07-28"), legacy), Claim::Modern);
        assert_eq!(claim(None, modern), Claim::Modern);
        assert_eq!(claim(None, legacy), Claim::Legacy);
        assert_eq!(claim(None, None), Claim::Legacy);
        assert_eq!(
            claim(Some("2025-06-18"), None),
            Claim::Unsupported("2025-06-18")
        );
        assert_eq!(
            claim(Some("1999-01-01"), modern),
            Claim::Unsupported("1999-01-01")
        );
    }
}
