//! The crate's one error type.

use std::time::Duration;

use serde_json::Value;
use toolwright_protocol::ParamHeaderError;

/// Why talking to a server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server command could not be started.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Reading or writing the connection failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The server closed the connection (a stdio server exited) before answering.
    #[error(
        "the server closed the connection while waiting for {method}{}",
        stderr_tail(stderr)
    )]
    Closed {
        /// The request that got no answer.
        method: String,
        /// The last lines the server wrote to stderr, if any.
        stderr: String,
    },
    /// No answer within the timeout.
    #[error("no answer to {method} within {} s", after.as_secs_f64())]
    Timeout {
        /// The request.
        method: String,
        /// How long we waited.
        after: Duration,
    },
    /// The caller cancelled the request before the answer came (it was cancelled
    /// upstream too).
    #[error("{method} was cancelled")]
    Cancelled {
        /// The request.
        method: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{method} failed: {message} ({code})")]
    Rpc {
        /// The request.
        method: String,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
        /// The error data, if any.
        data: Option<Box<Value>>,
    },
    /// An HTTP answer that is neither a JSON-RPC message nor a stream of them.
    #[error("HTTP {status} from the server for {method}{}", body_tail(body))]
    Http {
        /// The request.
        method: String,
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The server refused the request's credentials (HTTP 401, or 403 for too narrow a
    /// scope), and the authorizer, if any, could not do better.
    #[error(
        "HTTP {status} from the server for {method}: not authorized{}",
        auth_detail(detail)
    )]
    Unauthorized {
        /// The request.
        method: String,
        /// 401 or 403.
        status: u16,
        /// What the server said: its `WWW-Authenticate` values and OAuth error, if any.
        detail: String,
    },
    /// The URL is not one this client can reach.
    #[error("bad URL {url:?}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A skill file that does not match the entry the server listed for it (size,
    /// digest or frontmatter): its content is not used.
    #[error("{uri}: refused, it does not match its skill entry: {why}")]
    Unverified {
        /// The file.
        uri: String,
        /// What differs.
        why: String,
    },
    /// The server sent something that is not valid MCP.
    #[error("the server sent an invalid {what}: {detail}")]
    Malformed {
        /// What it sent (e.g. `tools/list result`).
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// The server and this client share no protocol version.
    #[error(
        "the server supports protocol versions {supported:?}, none of which this client speaks"
    )]
    NoCommonVersion {
        /// What the server said it supports.
        supported: Vec<String>,
    },
    /// The server asked for input mid-call (modern `input_required`) that this client
    /// does not provide: a request it has no answer for (`elicitation/create` is answered
    /// only with `--elicit`; sampling and roots never).
    #[error(
        "{method} needs input from the client (input_required: {wanted}), which toolwright does not provide"
    )]
    InputRequired {
        /// The request.
        method: String,
        /// What the server asked for.
        wanted: String,
    },
    /// The server kept asking for input, round after round, past the limit.
    #[error("{method} still needed input from the client after {rounds} rounds; giving up")]
    InputRounds {
        /// The request.
        method: String,
        /// How many rounds were answered.
        rounds: usize,
    },
    /// A tool declares `x-mcp-header` parameters that clients must reject.
    #[error("tool {tool:?} declares an invalid x-mcp-header ({source}); clients must not call it")]
    InvalidHeaderParam {
        /// The tool.
        tool: String,
        /// What is wrong.
        source: Box<ParamHeaderError>,
    },
    /// An argument that a tool mirrors in an `Mcp-Param-*` header cannot travel in one.
    #[error("cannot call tool {tool:?} over HTTP: {source}")]
    HeaderArgument {
        /// The tool.
        tool: String,
        /// What is wrong.
        source: Box<ParamHeaderError>,
    },
    /// Authorization (OAuth discovery, registration, the authorization code, a token)
    /// failed.
    #[error("authorization failed: {reason}")]
    Auth {
        /// What went wrong.
        reason: String,
    },
    /// No TLS connection could be set up with an `https://` server (or an OAuth server).
    #[error("{}", tls_message(host, *kind, detail))]
    Tls {
        /// The server, `host:port`.
        host: String,
        /// What went wrong.
        kind: TlsFailure,
        /// The particulars: the roots checked, the names the certificate holds, the
        /// handshake's error.
        detail: String,
    },
    /// A file of extra trusted CA certificates could not be used.
    #[error("CA certificate file {}: {reason}", path.display())]
    CaCert {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The trust configuration could not be read.
    #[error("trust configuration {path}: {source}")]
    TrustConfig {
        /// The file.
        path: String,
        /// What is wrong.
        source: TrustConfigError,
    },
}

/// Why a TLS connection failed (in [`ClientError::Tls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The certificate chain does not lead to a trusted root.
    Untrusted,
    /// The certificate is not valid for the host's name.
    NameMismatch,
    /// The certificate has expired, or is not valid yet.
    Expired,
    /// What answered on the port does not speak TLS.
    NotTls,
    /// Any other handshake failure (an alert from the server, no common cipher or
    /// version, a bad certificate).
    Handshake,
}

fn tls_message(host: &str, kind: TlsFailure, detail: &str) -> String {
    match kind {
        TlsFailure::Untrusted => format!(
            "the TLS certificate of {host} is not trusted: it is not signed by a CA among {detail}; \
             to trust a private CA, give its certificate (PEM) with --ca-cert FILE \
             (a gateway server: ca_cert)"
        ),
        TlsFailure::NameMismatch => {
            format!("the TLS certificate of {host} is not valid for that name ({detail})")
        }
        TlsFailure::Expired => format!("the TLS certificate of {host} {detail}"),
        TlsFailure::NotTls => {
            format!("{host} does not speak TLS ({detail}); is it a plain http:// server?")
        }
        TlsFailure::Handshake => format!("the TLS handshake with {host} failed: {detail}"),
    }
}

/// Why a trust configuration could not be used: what [`TrustConfig::parse`] and
/// [`TrustConfig::load`] report (the latter inside [`ClientError::TrustConfig`], with the
/// file's path).
///
/// [`TrustConfig::parse`]: crate::TrustConfig::parse
/// [`TrustConfig::load`]: crate::TrustConfig::load
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustConfigError {
    /// The file could not be read.
    #[error("{source}")]
    Read {
        /// Why.
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("not JSON: {source}")]
    NotJson {
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// The document has no `trusted` array.
    #[error("expected {{\"trusted\": [...]}}")]
    NoTrustedList {
        /// The document.
        found: Value,
    },
    /// An entry has neither `command` nor `url`.
    #[error("trusted[{index}] needs a \"command\" or a \"url\"")]
    NoTarget {
        /// Its position in `trusted`.
        index: usize,
        /// The entry.
        entry: Value,
    },
    /// A `command` that is neither a string nor an array.
    #[error("trusted[{index}].command must be a string or an array")]
    CommandType {
        /// Its position in `trusted`.
        index: usize,
        /// The `command` value.
        command: Value,
    },
    /// A `command` array with an item that is not a string.
    #[error("trusted[{index}].command: every item must be a string")]
    CommandItem {
        /// Its position in `trusted`.
        index: usize,
        /// The item.
        item: Value,
    },
    /// An empty `command`.
    #[error("trusted[{index}].command is empty")]
    EmptyCommand {
        /// Its position in `trusted`.
        index: usize,
    },
}

fn stderr_tail(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with:\n{s}")
    }
}

fn body_tail(body: &str) -> String {
    let s = body.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!(": {s}")
    }
}

fn auth_detail(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}
