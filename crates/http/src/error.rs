//! The crate's error type.

use std::net::SocketAddr;

/// What can go wrong starting or running the HTTP transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address could not be resolved or parsed.
    #[error("cannot use {addr:?} as a listening address: {reason}")]
    Address {
        /// The address as given.
        addr: String,
        /// Why it was refused.
        reason: String,
    },
    /// Binding the listening socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A setting is unusable.
    #[error("invalid HTTP setting {setting}: {reason}")]
    Config {
        /// The setting (as its command-line flag).
        setting: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The authorization server of [`HttpConfig::jwt`](crate::HttpConfig::jwt) could not be
    /// used: its metadata or keys were not found or do not fit.
    #[error("--auth-issuer {issuer}: {source}")]
    Authorization {
        /// The issuer.
        issuer: String,
        /// What went wrong.
        source: toolwright_auth::Error,
    },
    /// Accepting connections failed for good.
    #[error("accepting connections failed: {0}")]
    Accept(#[source] std::io::Error),
}

impl Error {
    pub(crate) fn config(setting: &'static str, reason: impl Into<String>) -> Error {
        Error::Config {
            setting,
            reason: reason.into(),
        }
    }
}
