//! The gateway's errors.

/// Why the gateway or one of its upstreams cannot do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A server's settings cannot be used.
    #[error("servers.{server}: {reason}")]
    Config {
        /// The server.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// The server cannot be reached now.
    #[error("upstream {server} ({target}) is unavailable: {reason}")]
    Unavailable {
        /// The server.
        server: String,
        /// Where it is.
        target: String,
        /// Why.
        reason: String,
    },
    /// The server answered, but not usefully.
    #[error("upstream {server}: {reason}")]
    Upstream {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// A variable a server's settings name is not set (a server started with half its
    /// settings fails in obscure ways).
    #[error("servers.{server}.{setting}: the variable {var} is not set")]
    UnsetVariable {
        /// The server.
        server: String,
        /// The setting that names it (`env.KEY`, `bearer_env`).
        setting: String,
        /// The variable.
        var: String,
    },
    /// A request to the server failed (a listing, as `toolwright lint` asks it).
    #[error("upstream {server}: {method} failed: {reason}")]
    Request {
        /// The server.
        server: String,
        /// The method asked.
        method: String,
        /// Why it failed.
        reason: String,
    },
    /// The server did not answer in time.
    #[error("upstream {server}: no answer within {limit:?}")]
    NoAnswer {
        /// The server.
        server: String,
        /// How long it was given.
        limit: std::time::Duration,
    },
    /// One of the server's tools cannot be served as listed: a schema that does not
    /// compile, or a definition that does not read as one.
    #[error("upstream {server}: tool {tool}: {problem}")]
    Tool {
        /// The server.
        server: String,
        /// The tool's upstream name.
        tool: String,
        /// What is wrong with it.
        problem: ToolProblem,
    },
    /// Starting this gateway would start a gateway loop (it was started by a gateway of
    /// the same config), or nest gateways too deep: what the loop is.
    #[error("{0}")]
    Loop(String),
    /// The gateway's runtime could not start.
    #[error("starting the gateway's runtime: {0}")]
    Runtime(String),
}

/// What is wrong with an upstream tool's definition ([`GatewayError::Tool`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolProblem {
    /// Its `inputSchema` or `outputSchema` (`member`) does not compile.
    #[error("its {member} does not compile: {reason}")]
    Schema {
        /// `inputSchema` or `outputSchema`.
        member: &'static str,
        /// The compiler's complaint.
        reason: String,
    },
    /// The definition, as clients would see it, is not a tool definition.
    #[error("its definition cannot be read: {0}")]
    Unreadable(String),
}
