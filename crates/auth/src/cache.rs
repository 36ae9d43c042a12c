//! The issuer's keys, cached: read without waiting on every request, refreshed in the
//! background once stale, and fetched again at once for a `kid` not seen, within bounds.
//!
//! - **Lookups never wait** while the cache holds the key: [`KeyCache::current`] is a
//!   read of an `Arc`.
//! - **Staleness**: the keys are kept for the JWKS answer's `Cache-Control: max-age`
//!   within [`Refresh::min_ttl`] and [`Refresh::max_ttl`] ([`Refresh::default_ttl`]
//!   without one). A request that finds them stale still uses them and starts one
//!   background refresh (stale-while-revalidate); a failed refresh keeps the old keys and
//!   is tried again [`Refresh::miss_interval`] later. Nothing runs while no token comes.
//! - **An unknown `kid`** (a rotated key) fetches the JWKS again, at most once per
//!   [`Refresh::miss_interval`] (counted from the last fetch an unknown `kid` caused), and
//!   concurrent misses wait for the one fetch under way instead of starting their own, so a
//!   flood of tokens with made-up `kid`s costs the issuer one request per interval.

use crate::error::Error;
use crate::fetch::Fetcher;
use crate::jwks::KeySet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// When the issuer's keys are fetched again.
///
/// Keys are looked up without waiting while the cache holds them. They are kept for the
/// JWKS answer's `Cache-Control: max-age`, bounded by [`Refresh::min_ttl`] and
/// [`Refresh::max_ttl`] ([`Refresh::default_ttl`] without one); a request that finds them
/// stale still uses them and starts one background refresh, and a failed refresh keeps the
/// old keys and is tried again [`Refresh::miss_interval`] later. A token whose `kid` is not
/// in the cache (a rotated key) fetches the JWKS again at once, but at most once per
/// [`Refresh::miss_interval`], and misses at the same time share that one fetch: a flood of
/// made-up `kid`s costs the issuer one request per interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refresh {
    /// Fewest time between two fetches caused by unknown `kid`s (default 30 s).
    pub miss_interval: Duration,
    /// How long keys are kept when the JWKS answer has no `max-age` (default 10 min).
    pub default_ttl: Duration,
    /// The shortest a `max-age` counts for (default 1 min; `no-store` and `no-cache` count
    /// as this).
    pub min_ttl: Duration,
    /// The longest a `max-age` counts for (default 1 h), so a removed key stops working
    /// within it.
    pub max_ttl: Duration,
}

impl Default for Refresh {
    fn default() -> Self {
        Refresh {
            miss_interval: Duration::from_secs(30),
            default_ttl: Duration::from_secs(10 * 60),
            min_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(60 * 60),
        }
    }
}

/// The cache of one `jwks_uri`.
#[derive(Debug)]
pub(crate) struct KeyCache {
    url: String,
    fetcher: Fetcher,
    refresh: Refresh,
    keys: RwLock<Arc<KeySet>>,
    /// When the cache was made: the origin of `stale_at`.
    born: Instant,
    /// When a request should start a background refresh, in milliseconds after `born`.
    stale_at: AtomicU64,
    /// Bumped by every successful fetch: a miss that waited for the lock learns from it
    /// that someone else fetched meanwhile.
    generation: AtomicU64,
    /// Held by whoever fetches; holds when the last miss-caused fetch began.
    fetching: tokio::sync::Mutex<Option<Instant>>,
    /// A background refresh is under way.
    background: AtomicBool,
    /// Fetches made (for the tests and logs).
    fetches: AtomicU64,
}

impl KeyCache {
    /// Fetches the keys a first time.
    ///
    /// # Errors
    ///
    /// [`Error::IssuerUnreachable`] when the JWKS cannot be fetched, [`Error::Jwks`] when it
    /// is not one or holds no usable key.
    pub async fn load(url: String, fetcher: Fetcher, refresh: Refresh) -> Result<KeyCache, Error> {
        let cache = KeyCache::empty(url, fetcher, refresh);
        cache.fetch().await?;
        Ok(cache)
    }

    /// A cache holding no key yet.
    fn empty(url: String, fetcher: Fetcher, refresh: Refresh) -> KeyCache {
        KeyCache {
            keys: RwLock::new(Arc::new(KeySet::default())),
            born: Instant::now(),
            stale_at: AtomicU64::new(0),
            url,
            fetcher,
            refresh,
            generation: AtomicU64::new(0),
            fetching: tokio::sync::Mutex::new(None),
            background: AtomicBool::new(false),
            fetches: AtomicU64::new(0),
        }
    }

    /// A cache of `keys` that fetches nothing: fresh for an hour, and as if an unknown
    /// `kid` had just caused a fetch.
    #[cfg(test)]
    pub fn preloaded(keys: KeySet, refresh: Refresh) -> KeyCache {
        let fetcher = Fetcher::new(None, Duration::from_millis(100));
        let cache = KeyCache::empty("http://127.0.0.1:1/jwks".into(), fetcher, refresh);
        *cache.keys.write().unwrap() = Arc::new(keys);
        cache.stale_in(Duration::from_secs(3600));
        *cache.fetching.try_lock().unwrap() = Some(Instant::now());
        cache
    }

    /// Puts `keys` in place of the cached ones, as a fetch would (a new generation).
    #[cfg(test)]
    pub fn replace(&self, keys: KeySet) {
        *self.keys.write().unwrap() = Arc::new(keys);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The keys now, and the generation they belong to.
    pub fn current(&self) -> (u64, Arc<KeySet>) {
        let generation = self.generation.load(Ordering::Acquire);
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner()).clone();
        (generation, keys)
    }

    /// How many fetches were made.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Fetches the JWKS and, when it holds a usable key, keeps it.
    async fn fetch(&self) -> Result<(), Error> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let fetched =
            self.fetcher
                .get_json(&self.url)
                .await
                .map_err(|e| Error::IssuerUnreachable {
                    url: self.url.clone(),
                    reason: e.to_string(),
                })?;
        let bad = |reason: String| Error::Jwks {
            url: self.url.clone(),
            reason,
        };
        let keys = KeySet::parse(&fetched.json).map_err(|r| bad(r.to_string()))?;
        if keys.keys.is_empty() {
            return Err(bad(
                "it holds no usable key (RS256, ES256 or EdDSA signing keys)".into(),
            ));
        }
        let ttl = fetched.max_age.map_or(self.refresh.default_ttl, |age| {
            age.clamp(self.refresh.min_ttl, self.refresh.max_ttl)
        });
        tracing::debug!(url = %self.url, keys = keys.keys.len(), ?ttl, "JWKS fetched");
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        self.stale_in(ttl);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Makes the keys stale `after` from now.
    fn stale_in(&self, after: Duration) {
        let at = (self.born.elapsed() + after).as_millis();
        self.stale_at
            .store(u64::try_from(at).unwrap_or(u64::MAX), Ordering::Release);
    }

    /// Whether the keys are stale.
    fn stale(&self) -> bool {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        now >= self.stale_at.load(Ordering::Acquire)
    }

    /// Starts a background refresh when the keys are stale and none is under way; never
    /// waits. Outside a tokio runtime it does nothing.
    pub fn refresh_if_stale(self: &Arc<Self>) {
        if !self.stale() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.background.swap(true, Ordering::AcqRel) {
            return;
        }
        let cache = self.clone();
        runtime.spawn(async move {
            let guard = cache.fetching.lock().await;
            if cache.stale()
                && let Err(e) = cache.fetch().await
            {
                tracing::warn!("refreshing the issuer's keys failed, keeping the old ones: {e}");
                cache.stale_in(cache.refresh.miss_interval);
            }
            drop(guard);
            cache.background.store(false, Ordering::Release);
        });
    }

    /// After a lookup in generation `seen` missed: fetches again when allowed. `Ok(true)`:
    /// the keys changed since `seen` (look again); `Ok(false)`: no fetch was allowed.
    ///
    /// # Errors
    ///
    /// The fetch's error ([`Error::IssuerUnreachable`], [`Error::Jwks`]).
    pub async fn refresh_for_miss(&self, seen: u64) -> Result<bool, Error> {
        let mut last = self.fetching.lock().await;
        if self.generation.load(Ordering::Acquire) != seen {
            return Ok(true);
        }
        if last.is_some_and(|t| t.elapsed() < self.refresh.miss_interval) {
            return Ok(false);
        }
        *last = Some(Instant::now());
        self.fetch().await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    fn jwk(kid: &str, fill: u8) -> serde_json::Value {
        let x = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            [fill; 32],
        );
        json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": x})
    }

    /// A JWKS stand-in serving `doc`, counting the requests it answers.
    async fn stand_in(doc: Arc<Mutex<String>>) -> (String, Arc<AtomicU64>) {
        let (base, served) =
            crate::stand_in::serve(move |_| Some(doc.lock().unwrap().clone())).await;
        (format!("{base}/jwks"), served)
    }

    #[tokio::test]
    async fn misses_refresh_once_per_interval_and_share_the_fetch() {
        let doc = Arc::new(Mutex::new(json!({"keys": [jwk("a", 1)]}).to_string()));
        let (url, served) = stand_in(doc.clone()).await;
        let fetcher = Fetcher::new(None, Duration::from_secs(10));
        let cache = Arc::new(
            KeyCache::load(url, fetcher, Refresh::default())
                .await
                .unwrap(),
        );
        assert_eq!((served.load(Ordering::SeqCst), cache.fetches()), (1, 1));
        // The key rotates; twenty requests with the new kid miss at once: one fetch.
        *doc.lock().unwrap() = json!({"keys": [jwk("a", 1), jwk("b", 2)]}).to_string();
        let (seen, keys) = cache.current();
        assert!(matches!(
            keys.lookup(Some("b"), crate::jwks::Alg::EdDsa),
            crate::jwks::Lookup::Missing
        ));
        let mut misses = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let cache = cache.clone();
            misses.spawn(async move { cache.refresh_for_miss(seen).await.unwrap() });
        }
        while let Some(changed) = misses.join_next().await {
            assert!(changed.unwrap(), "each miss sees the new keys");
        }
        assert_eq!(served.load(Ordering::SeqCst), 2);
        let (seen, keys) = cache.current();
        assert!(matches!(
            keys.lookup(Some("b"), crate::jwks::Alg::EdDsa),
            crate::jwks::Lookup::Found(_)
        ));
        // Made-up kids within the interval: no fetch at all.
        for _ in 0..50 {
            assert!(!cache.refresh_for_miss(seen).await.unwrap());
        }
        assert_eq!(served.load(Ordering::SeqCst), 2);
        // A document without a usable key is refused at the start.
        *doc.lock().unwrap() = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}).to_string();
        let fetcher = Fetcher::new(None, Duration::from_secs(10));
        let url = cache.url.clone();
        let e = KeyCache::load(url, fetcher, Refresh::default())
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Jwks { .. }), "{e}");
    }

    #[tokio::test]
    async fn stale_keys_are_used_while_one_background_refresh_runs() {
        let doc = Arc::new(Mutex::new(json!({"keys": [jwk("a", 1)]}).to_string()));
        let (url, served) = stand_in(doc.clone()).await;
        let refresh = Refresh {
            min_ttl: Duration::ZERO,
            default_ttl: Duration::ZERO,
            ..Refresh::default()
        };
        let fetcher = Fetcher::new(None, Duration::from_secs(10));
        let cache = Arc::new(KeyCache::load(url, fetcher, refresh).await.unwrap());
        *doc.lock().unwrap() = json!({"keys": [jwk("b", 2)]}).to_string();
        for _ in 0..10 {
            cache.refresh_if_stale();
        }
        let (_, keys) = cache.current();
        assert_eq!(
            keys.keys[0].kid.as_deref(),
            Some("a"),
            "stale keys still serve"
        );
        // The one refresh lands (the test waits for it, not for a time).
        let deadline = Instant::now() + Duration::from_secs(20);
        while cache.current().1.keys[0].kid.as_deref() != Some("b") {
            assert!(
                Instant::now() < deadline,
                "the background refresh never landed"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(served.load(Ordering::SeqCst), 2);
    }
}
