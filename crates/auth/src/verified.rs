//! Tokens already verified, so that a client presenting the same token call after call pays
//! for its signature once. An entry holds what the checks found (the identity, `exp` and
//! `nbf`) and the generation of the key set that verified it: a token is taken from here
//! only while that key set is still the current one (any refetch of the JWKS, a rotation
//! or the periodic refresh, sends every token through the full check again) and while its
//! times still pass, checked again at each use with the same leeway. `iss` and `aud` do not
//! change with time, so the verification already answered for them. Only verified tokens
//! are kept; a refused one is checked in full every time it comes.
//!
//! The memory is bounded ([`MAX_TOKENS`]): when it is full, the tokens past their expiry
//! go first, and if none has, everything is forgotten at once (the next call of each client
//! verifies again); no client can grow it past the bound.

use crate::identity::Identity;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most tokens remembered at once.
pub(crate) const MAX_TOKENS: usize = 1024;

/// One verified token.
#[derive(Debug)]
struct Entry {
    /// The key-set generation that verified it.
    generation: u64,
    /// Its `exp` and `nbf` (unix seconds).
    exp: u64,
    nbf: Option<u64>,
    identity: Arc<Identity>,
}

/// The verified tokens, by their text.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    tokens: Mutex<HashMap<Box<str>, Entry>>,
}

impl Verified {
    /// The identity of `token` if it was verified by key-set `generation` and its times
    /// pass at `now` with `leeway` (seconds).
    pub fn get(
        &self,
        token: &str,
        generation: u64,
        now: u64,
        leeway: u64,
    ) -> Option<Arc<Identity>> {
        let tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let entry = tokens.get(token)?;
        let timely = now <= entry.exp.saturating_add(leeway)
            && entry
                .nbf
                .is_none_or(|nbf| nbf <= now.saturating_add(leeway));
        (entry.generation == generation && timely).then(|| entry.identity.clone())
    }

    /// Remembers `token`, verified by key-set `generation`, valid from `nbf` to `exp`.
    pub fn put(
        &self,
        token: &str,
        generation: u64,
        exp: u64,
        nbf: Option<u64>,
        identity: Arc<Identity>,
        now: u64,
    ) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if tokens.len() >= MAX_TOKENS && !tokens.contains_key(token) {
            tokens.retain(|_, e| e.exp >= now);
            if tokens.len() >= MAX_TOKENS {
                tokens.clear();
            }
        }
        tokens.insert(
            token.into(),
            Entry {
                generation,
                exp,
                nbf,
                identity,
            },
        );
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use toolwright_testkit::table;

    fn id() -> Arc<Identity> {
        Arc::new(Identity::from_claims(Map::new()))
    }

    #[test]
    fn a_token_is_taken_only_from_its_generation_and_in_its_time() {
        let v = Verified::default();
        v.put("t", 3, 1_000, Some(500), id(), 600);
        table! { |generation: u64, now: u64, found: bool|
            assert_eq!(v.get("t", generation, now, 60).is_some(), found, "{generation} {now}");
            (3, 600, true);
            (3, 1_000, true);
            (3, 1_060, true);
            (3, 1_061, false);
            (3, 440, true);
            (3, 439, false);
            (4, 600, false);
            (2, 600, false);
        }
        assert!(v.get("other", 3, 600, 60).is_none());
    }

    #[test]
    fn the_memory_is_bounded() {
        let v = Verified::default();
        for i in 0..MAX_TOKENS {
            // Half of them expired by `now` = 100.
            let exp = if i % 2 == 0 { 50 } else { 1_000 };
            v.put(&format!("t{i}"), 1, exp, None, id(), 10);
        }
        assert_eq!(v.len(), MAX_TOKENS);
        v.put("new", 1, 1_000, None, id(), 100);
        assert_eq!(v.len(), MAX_TOKENS / 2 + 1, "the expired ones went first");
        assert!(v.get("t1", 1, 100, 0).is_some());
        for i in 0..MAX_TOKENS {
            v.put(&format!("u{i}"), 1, 1_000, None, id(), 100);
        }
        assert!(v.len() <= MAX_TOKENS);
    }
}
