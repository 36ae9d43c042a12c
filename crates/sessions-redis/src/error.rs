//! [`Error`]: why a [`RedisStore`](crate::RedisStore) could not be made. Failures of the
//! store's operations are [`StoreError`](toolwright_http::store::StoreError)s, which the HTTP
//! layer answers with 503.

use redis::RedisError;
use std::fmt;

/// Why [`RedisStore::open`](crate::RedisStore::open) refused a URL.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one the Redis client accepts (`redis://host:port/db`,
    /// `redis+unix:///path`).
    Url {
        /// The URL, as given.
        url: String,
        /// What the Redis client said of it.
        source: RedisError,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url { url, source } => write!(f, "{url:?}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Url { source, .. } => Some(source),
        }
    }
}
