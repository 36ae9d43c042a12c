//! [`RedisValues`]: short-lived values shared by replicas (the gateway's exchanged tokens):
//! one string under each key, gone when its time to live ends (`SET … PX`).

use crate::RedisStore;
use std::sync::Arc;
use std::time::Duration;
use toolwright_http::store::StoreError;

/// Values with a time to live, in Redis, shared by every replica on it.
#[derive(Debug, Clone)]
pub struct RedisValues {
    store: Arc<RedisStore>,
}

impl RedisValues {
    /// Values on `store`'s Redis (on a connection of their own).
    pub fn new(store: RedisStore) -> RedisValues {
        RedisValues {
            store: Arc::new(store),
        }
    }

    /// The value under `key`, if one is there.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when Redis does not answer within the store's timeout.
    pub async fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.store.run(redis::cmd("GET").arg(key)).await
    }

    /// Sets `value` under `key` for `ttl` (at least a millisecond).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when Redis does not answer within the store's timeout.
    pub async fn put(&self, key: &str, value: &str, ttl: Duration) -> Result<(), StoreError> {
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.store
            .run(redis::cmd("SET").arg(key).arg(value).arg("PX").arg(ms))
            .await
    }
}
