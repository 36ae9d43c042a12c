//! Numeric error codes used in JSON-RPC error objects.
//!
//! The first five are defined by JSON-RPC 2.0 itself. The others come from
//! MCP; the comment on each says which protocol era uses it. Per the
//! 2026-07-28 allocation, `-32000..=-32019` is legacy/implementation
//! defined and `-32020..=-32099` is reserved for the specification.

/// Invalid JSON was received (JSON-RPC 2.0).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object (JSON-RPC 2.0).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (JSON-RPC 2.0).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (JSON-RPC 2.0).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error (JSON-RPC 2.0).
pub const INTERNAL_ERROR: i64 = -32603;

/// MCP resource not found (protocol versions up to 2025-11-25; modern
/// servers answer -32602 instead and must not emit this code).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP URL elicitation required, with `data.elicitations[]` (2025-11-25
/// only; modern servers must not emit this code).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// MCP `HeaderMismatch` (2026-07-28): a transport header disagrees with the
/// message body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP `MissingRequiredClientCapability` (2026-07-28), with
/// `data.requiredCapabilities`.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// MCP `UnsupportedProtocolVersion` (2026-07-28), with
/// `data: {supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request ran past its deadline and was cancelled.
///
/// **Implementation defined**: neither JSON-RPC nor MCP assigns a timeout
/// code. toolwright uses -32001, inside the `-32000..=-32019` range that the
/// MCP allocation leaves to implementations (pre-release MCP drafts used
/// -32001 for other purposes, so peers must not read meaning into it beyond
/// this crate's documentation).
pub const REQUEST_TIMEOUT: i64 = -32001;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_documented_values() {
        let table: &[(i64, i64)] = &[
            (PARSE_ERROR, -32700),
            (INVALID_REQUEST, -32600),
            (METHOD_NOT_FOUND, -32601),
            (INVALID_PARAMS, -32602),
            (INTERNAL_ERROR, -32603),
            (RESOURCE_NOT_FOUND, -32002),
            (URL_ELICITATION_REQUIRED, -32042),
            (HEADER_MISMATCH, -32020),
            (MISSING_REQUIRED_CLIENT_CAPABILITY, -32021),
            (UNSUPPORTED_PROTOCOL_VERSION, -32022),
            (REQUEST_TIMEOUT, -32001),
        ];
        for &(got, want) in table {
            assert_eq!(got, want);
        }
    }
}
