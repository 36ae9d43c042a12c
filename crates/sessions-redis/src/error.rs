//! [`Error`]: why a [`RedisStore`](crate::RedisStore) could not be made. Failures of the
//! store's operations are [`StoreError`](toolwright_http::store::StoreError)s, which the HTTP
//! layer answers with 503.

use redis::RedisError;

/// Why [`RedisStore::open`](crate::RedisStore::open) refused a URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one the Redis client accepts (`redis://host:port/db`,
    /// `redis+unix:///path`).
    #[error("{url:?}: {source}")]
    Url {
        /// The URL, as given.
        url: String,
        /// What the Redis client said of it.
        source: RedisError,
    },
}
