//! [`RedisLimits`]: the buckets and in-flight counts of `limits:` in Redis, so replicas
//! behind one load balancer enforce one budget.
//!
//! - `tw:l:b:<key>`: a hash, the bucket: its tokens (`t`) at a time (`ts`, Redis's clock in
//!   ms). It expires once it would be full again.
//! - `tw:l:c:<key>`: a sorted set of the calls in flight, each a unique member scored by
//!   when its lease ends (the call timeout and a margin). A call that ends removes its
//!   member; a replica that dies mid-call leaves members that the next check drops once
//!   their lease has ended, so a slot is never lost for longer than a lease.
//!
//! One Lua script checks both and takes both at once; the clock is Redis's own (`TIME`), so
//! replicas with skewed clocks share one bucket. The bucket's rule is
//! `toolwright_server::limit::take`'s, repeated in Lua.

use crate::RedisStore;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use toolwright_server::catalog::BoxFuture;
use toolwright_server::limit::{Admission, Bounds, Counters, CountersError, Slot};

/// KEYS: bucket, in-flight set. ARGV: tokens a ms (0: no bucket), burst, cap (0: none),
/// lease in ms, this call's member. Returns `{0, 0}` (taken), `{1, ms to wait}` or `{2, 0}`
/// (too many in flight).
const ADMIT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
if cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= cap then return {2, 0} end
end
if rate > 0 then
  local tokens = burst
  local b = redis.call('HMGET', KEYS[1], 't', 'ts')
  if b[1] then
    tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate)
  end
  if tokens < 1 then return {1, math.ceil((1 - tokens) / rate)} end
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', now)
  redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 1000)
end
if cap > 0 then
  redis.call('ZADD', KEYS[2], now + lease, ARGV[5])
  redis.call('PEXPIRE', KEYS[2], lease + 1000)
end
return {0, 0}
";

const RELEASE: &str = r"return redis.call('ZREM', KEYS[1], ARGV[1])";

/// `limits:` counted in Redis, shared by every replica on it.
#[derive(Debug)]
pub struct RedisLimits {
    store: Arc<RedisStore>,
    /// This process's part of every in-flight member (random per process).
    nonce: u64,
    next: AtomicU64,
}

impl RedisLimits {
    /// Counts on `store`'s Redis (on a connection of its own).
    pub fn new(store: RedisStore) -> RedisLimits {
        use std::hash::{BuildHasher, Hasher};
        // Seeded at random for each process: replicas' members never collide.
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        RedisLimits {
            store: Arc::new(store),
            nonce,
            next: AtomicU64::new(0),
        }
    }
}

fn unavailable(e: impl std::fmt::Display) -> CountersError {
    CountersError::Unavailable(e.to_string())
}

impl Counters for RedisLimits {
    fn admit(
        &self,
        key: &str,
        bounds: &Bounds,
    ) -> BoxFuture<'static, Result<Admission, CountersError>> {
        let store = self.store.clone();
        let bucket = format!("tw:l:b:{key}");
        let in_flight = format!("tw:l:c:{key}");
        let member = format!(
            "{:016x}:{}",
            self.nonce,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let rate = bounds.per_ms.unwrap_or(0.0).to_string();
        let burst = bounds.burst.to_string();
        let cap = bounds.concurrent.unwrap_or(0);
        let cap_text = cap.to_string();
        let lease = bounds.lease.as_millis().max(1).to_string();
        Box::pin(async move {
            let args: [&[u8]; 5] = [
                rate.as_bytes(),
                burst.as_bytes(),
                cap_text.as_bytes(),
                lease.as_bytes(),
                member.as_bytes(),
            ];
            let (code, wait): (i64, i64) = store
                .script(ADMIT, &[bucket.as_str(), in_flight.as_str()], &args)
                .await
                .map_err(unavailable)?;
            Ok(match code {
                0 if cap == 0 => Admission::Allowed(Slot::none()),
                0 => {
                    let handle = tokio::runtime::Handle::try_current().ok();
                    Admission::Allowed(Slot::new(move || {
                        // Given back in the background; if that fails, the lease ends it.
                        if let Some(h) = handle {
                            h.spawn(async move {
                                let r: Result<i64, _> = store
                                    .script(RELEASE, &[in_flight.as_str()], &[member.as_bytes()])
                                    .await;
                                if let Err(e) = r {
                                    tracing::debug!("a call's slot was not given back: {e}");
                                }
                            });
                        }
                    }))
                }
                1 => Admission::RateLimited {
                    retry_after: Duration::from_millis(wait.max(1) as u64),
                },
                _ => Admission::TooMany { max: cap },
            })
        })
    }
}
