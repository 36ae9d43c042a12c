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
    /// Starting this gateway would start a gateway loop (it was started by a gateway of
    /// the same config), or nest gateways too deep: what the loop is.
    #[error("{0}")]
    Loop(String),
    /// The gateway's runtime could not start.
    #[error("starting the gateway's runtime: {0}")]
    Runtime(String),
}
