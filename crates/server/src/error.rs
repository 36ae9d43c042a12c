//! Errors of the server library.

use toolwright_schema::SchemaError;

/// Why a tool call failed, as the tool reports it.
///
/// The variant decides how the client sees it: `Failed` and `InvalidArguments` become a
/// `CallToolResult` with `isError: true` (the model can read it and correct itself);
/// `Internal` becomes a JSON-RPC -32603 error; `Cancelled` sends nothing, as the spec asks
/// for a cancelled request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed; the text says why.
    #[error("{0}")]
    Failed(String),
    /// The arguments passed the schema but the tool still cannot use them.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A fault in the server or tool, not the caller's doing.
    #[error("internal error: {0}")]
    Internal(String),
    /// What was asked for does not exist (a resource handler's answer for a URI its
    /// template matched but that names nothing); `resources/read` answers it with the
    /// era's not-found error rather than an internal one.
    #[error("not found: {0}")]
    NotFound(String),
    /// The call is not allowed (an operator's policy); the text says why. The client sees
    /// it as `Failed`, and the audit trail records the call as denied by policy.
    #[error("{0}")]
    Denied(String),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Modern era: the tool needs an answer from the client that this request does not
    /// carry yet; the call ends with an `input_required` result asking for it.
    #[error("input required from the client")]
    InputRequired,
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Another tool already has this name.
    #[error("a tool named {name:?} is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The name breaks the spec's rule.
    #[error("invalid tool name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: toolwright_protocol::ToolNameError,
    },
    /// `inputSchema` does not have `type: "object"` at its root.
    #[error("tool {name:?}: inputSchema must have \"type\": \"object\" at its root, found {found}")]
    InputRootNotObject {
        /// The tool.
        name: String,
        /// What the root's `type` was.
        found: String,
    },
    /// A resource with this URI (or a template with this pattern) already exists.
    #[error("a resource {uri:?} is already registered")]
    DuplicateResource {
        /// The URI or template.
        uri: String,
    },
    /// A resource template that is not a valid RFC 6570 level-1 template.
    #[error("invalid URI template {template:?}")]
    InvalidTemplate {
        /// The template.
        template: String,
    },
    /// An `x-mcp-header` declaration in `inputSchema` breaks the spec's rules (clients
    /// would drop the tool).
    #[error("tool {name:?}: {source}")]
    ParamHeader {
        /// The tool.
        name: String,
        /// What is wrong.
        #[source]
        source: Box<toolwright_protocol::ParamHeaderError>,
    },
    /// A schema does not compile (invalid, unsupported dialect, or a network `$ref`).
    #[error("tool {name:?}: {which} does not compile: {source}")]
    Schema {
        /// The tool.
        name: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// The compiler's error.
        #[source]
        source: SchemaError,
    },
}

/// Why a request was refused before or instead of running (becomes a JSON-RPC error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// The client answered with an error.
    #[error("the client answered with error {}: {}", .0.code, .0.message)]
    Rejected(toolwright_jsonrpc::ErrorObject),
    /// The client did not answer in time.
    #[error("the client did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The client did not declare the capability this request needs.
    #[error("the client did not declare the {0} capability")]
    NotSupported(&'static str),
    /// The connection is gone.
    #[error("the connection to the client is closed")]
    Closed,
    /// The channel this call's messages travel on cannot carry requests to the client (an
    /// HTTP client that accepts only `application/json` replies).
    #[error(
        "requests to the client cannot be sent on this call's channel (an HTTP client must accept text/event-stream for them)"
    )]
    NoChannel,
    /// Modern era: the answer is not in this request yet; the call ends with an
    /// `input_required` result asking for it. Return this error (or any error) from the
    /// tool: the server replaces the outcome with the question.
    #[error("input required from the client")]
    InputRequired,
    /// The client's answer could not be read.
    #[error("the client's answer could not be read: {0}")]
    BadResponse(String),
}

impl From<ClientRequestError> for ToolError {
    fn from(e: ClientRequestError) -> Self {
        match e {
            ClientRequestError::InputRequired => ToolError::InputRequired,
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// Why a modern `requestState` token was refused (becomes -32602).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not a token this server's format can read.
    #[error("requestState is malformed")]
    Malformed,
    /// The integrity tag does not match.
    #[error("requestState failed its integrity check (altered or from another server)")]
    Tampered,
    /// Past its time to live.
    #[error("requestState has expired; start the request again without it")]
    Expired,
    /// Sealed for another method, target or arguments.
    #[error("requestState belongs to a different request")]
    OtherRequest,
}

/// A `tools/list` cursor this server did not issue (becomes -32602).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor {cursor:?}: it was not issued by this server")]
pub struct CursorError {
    /// The cursor as sent.
    pub cursor: String,
}

/// Why a set of skills cannot be served ([`crate::skills::SkillSet::new`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A skill breaks a rule of the Skills extension.
    #[error("skill {skill:?}: {why}")]
    Invalid {
        /// The skill path.
        skill: String,
        /// The rule it breaks.
        why: String,
    },
    /// One skill's directory is inside another's (or both are the same).
    #[error("skill {inner:?} is inside skill {outer:?}; a skill's files belong to it alone")]
    Nested {
        /// The enclosing skill path.
        outer: String,
        /// The enclosed skill path.
        inner: String,
    },
}
