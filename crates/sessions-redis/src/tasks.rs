//! [`RedisTasks`]: tasks (the Tasks extension) copied to Redis, so that `tasks/get` on any
//! replica finds a task another replica runs.
//!
//! - `tw:t:<task id>`: a hash, the task as `tasks/get` shows it with its owner (`r`) and the
//!   number of its save (`s`). A save of an older number is dropped (saves may land out of
//!   order). It expires when the server says (the task's ttl after a terminal change; while
//!   it runs, its timeout as well).

use crate::RedisStore;
use std::sync::Arc;
use std::time::Duration;
use toolwright_server::catalog::BoxFuture;
use toolwright_server::task::TaskMirror;

/// KEYS: the task's hash. ARGV: the save's number, the record, how long to keep it (ms).
const SAVE: &str = r"
local cur = redis.call('HGET', KEYS[1], 's')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// Tasks copied to Redis, read by every replica on it.
#[derive(Debug)]
pub struct RedisTasks {
    store: Arc<RedisStore>,
}

impl RedisTasks {
    /// Tasks on `store`'s Redis (on a connection of their own).
    pub fn new(store: RedisStore) -> RedisTasks {
        RedisTasks {
            store: Arc::new(store),
        }
    }
}

fn key(id: &str) -> String {
    format!("tw:t:{id}")
}

impl TaskMirror for RedisTasks {
    fn save(&self, id: &str, seq: u64, record: String, keep: Duration) -> BoxFuture<'static, ()> {
        let store = self.store.clone();
        let key = key(id);
        Box::pin(async move {
            let (seq, keep) = (seq.to_string(), keep.as_millis().max(1).to_string());
            let args: [&[u8]; 3] = [seq.as_bytes(), record.as_bytes(), keep.as_bytes()];
            let r: Result<i64, _> = store.script(SAVE, &[key.as_str()], &args).await;
            if let Err(e) = r {
                tracing::warn!("a task was not copied to the session store: {e}");
            }
        })
    }

    fn load(&self, id: &str) -> BoxFuture<'static, Option<String>> {
        let store = self.store.clone();
        let key = key(id);
        Box::pin(async move {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(&key).arg("r");
            match store.run::<Option<String>>(&cmd).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("a task could not be read from the session store: {e}");
                    None
                }
            }
        })
    }
}
