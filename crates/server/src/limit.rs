//! Limits on `tools/call`: per caller and per tool, a token bucket (calls per minute, a
//! burst) and a cap on the calls in flight.
//!
//! [`Limits`] holds the rules (a default, per view, per tool glob; a tool's fields over its
//! view's over the default's) and the [`Counters`] that keep the buckets: [`Memory`] in this
//! process, or a shared store (`toolwright-sessions-redis`'s, so replicas keep one budget).
//! Each caller has its own bucket and in-flight count for each tool. The check runs before
//! the tool (`gate.rs`); a call over a limit is answered with a tool error the model can act
//! on and, over HTTP, `Retry-After`.
//!
//! The bucket: `burst` tokens at most (default: a minute's worth), refilled at
//! `calls_per_minute / 60` a second; a call takes one, and a call that finds less than one
//! waits for the missing fraction ([`take`], the one rule, which the Redis script repeats).

use crate::catalog::BoxFuture;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one rule bounds; every field is optional, and absent fields come from the wider rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rule {
    /// Calls a minute, refilled evenly.
    pub calls_per_minute: Option<u32>,
    /// Calls that may come at once from a full bucket (default: `calls_per_minute`).
    pub burst: Option<u32>,
    /// Calls in flight at once.
    pub concurrent: Option<u32>,
}

impl Rule {
    /// `self`'s fields, else `wider`'s.
    fn over(self, wider: Rule) -> Rule {
        Rule {
            calls_per_minute: self.calls_per_minute.or(wider.calls_per_minute),
            burst: self.burst.or(wider.burst),
            concurrent: self.concurrent.or(wider.concurrent),
        }
    }

    fn is_empty(&self) -> bool {
        self.calls_per_minute.is_none() && self.concurrent.is_none()
    }
}

/// The bounds one call is checked against, as [`Counters`] receive them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Tokens a millisecond (`None`: no bucket).
    pub per_ms: Option<f64>,
    /// The bucket's size.
    pub burst: u32,
    /// Calls in flight at once (`None`: no cap).
    pub concurrent: Option<u32>,
    /// How long a slot is held at most when its release is lost (a replica that died): the
    /// call timeout and a margin.
    pub lease: Duration,
}

/// Whether a call may run.
pub enum Admission {
    /// It may; the slot is given back when dropped (when the call ends).
    Allowed(Slot),
    /// The bucket is empty: a token comes after this long.
    RateLimited {
        /// When to try again.
        retry_after: Duration,
    },
    /// As many calls are in flight as the rule allows.
    TooMany {
        /// The cap.
        max: u32,
    },
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Admission::Allowed(_) => f.write_str("Allowed"),
            Admission::RateLimited { retry_after } => {
                write!(f, "RateLimited({retry_after:?})")
            }
            Admission::TooMany { max } => write!(f, "TooMany({max})"),
        }
    }
}

/// A place among the calls in flight, given back when dropped.
pub struct Slot(Option<Box<dyn FnOnce() + Send>>);

impl Slot {
    /// A slot that `release` gives back.
    pub fn new(release: impl FnOnce() + Send + 'static) -> Slot {
        Slot(Some(Box::new(release)))
    }

    /// A slot with nothing to give back (no cap on calls in flight).
    pub fn none() -> Slot {
        Slot(None)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

/// Why a store could not answer (the call is then let through, and the failure logged).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CountersError {
    /// The store did not answer or refused.
    #[error("the limit store is unavailable: {0}")]
    Unavailable(String),
}

/// Where the buckets and in-flight counts live.
pub trait Counters: Send + Sync + fmt::Debug {
    /// Checks the call keyed `key` against `bounds` and, when it may run, takes its token and
    /// its slot, both at once. A store in this process answers on the first poll.
    fn admit(
        &self,
        key: &str,
        bounds: &Bounds,
    ) -> BoxFuture<'static, Result<Admission, CountersError>>;
}

/// A glob of tool names as a test (the tool files' one glob rule, compiled by the caller).
pub type NameTest = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The rules and where their counts are kept.
pub struct Limits {
    default: Rule,
    views: HashMap<String, Rule>,
    tools: Vec<(String, NameTest, Rule)>,
    counters: Arc<dyn Counters>,
    lease: Duration,
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("default", &self.default)
            .field("views", &self.views)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|(p, _, r)| (p, r))
                    .collect::<Vec<_>>(),
            )
            .field("counters", &self.counters)
            .finish()
    }
}

impl Limits {
    /// Rules: `default` for every call, `views` by view name over it, `tools` (a glob, its
    /// test, its rule; the first that matches) over both; counts in `counters`.
    pub fn new(
        default: Rule,
        views: HashMap<String, Rule>,
        tools: Vec<(String, NameTest, Rule)>,
        counters: Arc<dyn Counters>,
    ) -> Limits {
        Limits {
            default,
            views,
            tools,
            counters,
            lease: Duration::from_secs(60),
        }
    }

    /// How long a slot is held at most when its release is lost (set from the call
    /// timeout by the server).
    pub fn with_lease(mut self, lease: Duration) -> Limits {
        self.lease = lease;
        self
    }

    /// Where the counts live.
    pub(crate) fn counters(&self) -> &Arc<dyn Counters> {
        &self.counters
    }

    /// The bounds of a call to `tool` in `view`; `None` when nothing bounds it.
    pub fn bounds(&self, view: Option<&str>, tool: &str) -> Option<Bounds> {
        let mut rule = self.default;
        if let Some(r) = view.and_then(|v| self.views.get(v)) {
            rule = r.over(rule);
        }
        if let Some((_, _, r)) = self.tools.iter().find(|(_, test, _)| test(tool)) {
            rule = r.over(rule);
        }
        if rule.is_empty() {
            return None;
        }
        let per_ms = rule
            .calls_per_minute
            .map(|n| f64::from(n.max(1)) / 60_000.0);
        Some(Bounds {
            per_ms,
            burst: rule.burst.or(rule.calls_per_minute).unwrap_or(1).max(1),
            concurrent: rule.concurrent.map(|c| c.max(1)),
            lease: self.lease,
        })
    }
}

/// A bucket as stored: its tokens at a time (milliseconds on some clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Tokens left then.
    pub tokens: f64,
    /// When (ms).
    pub at: f64,
}

/// One call against a bucket at `now` (ms): `Ok` with the bucket after taking a token, or
/// `Err` with the milliseconds until a token comes. A missing bucket is full; a clock that
/// went back refills nothing.
pub fn take(bucket: Option<Bucket>, now: f64, per_ms: f64, burst: u32) -> Result<Bucket, f64> {
    let burst = f64::from(burst);
    let tokens = match bucket {
        None => burst,
        Some(b) => (b.tokens + (now - b.at).max(0.0) * per_ms).min(burst),
    };
    if tokens < 1.0 {
        return Err(((1.0 - tokens) / per_ms).ceil());
    }
    Ok(Bucket {
        tokens: tokens - 1.0,
        at: now,
    })
}

/// Counts kept in this process: one budget per process.
#[derive(Debug, Default)]
pub struct Memory {
    inner: Arc<Mutex<MemoryState>>,
}

#[derive(Debug, Default)]
struct MemoryState {
    entries: HashMap<String, Entry>,
    /// The number of entries after the last sweep: the next comes at twice as many.
    swept_at: usize,
}

#[derive(Debug)]
struct Entry {
    bucket: Option<Bucket>,
    in_flight: u32,
    /// When its bucket is full again (ms), and so forgettable once nothing is in flight.
    full_at: f64,
}

impl Memory {
    /// An empty store.
    pub fn new() -> Memory {
        Memory::default()
    }

    fn now(&self) -> f64 {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
    }

    fn admit_now(&self, key: &str, bounds: &Bounds) -> Admission {
        let now = self.now();
        let mut state = self.inner.lock();
        if state.entries.len() > (2 * state.swept_at).max(1024) {
            state
                .entries
                .retain(|_, e| e.in_flight > 0 || e.full_at > now);
            state.swept_at = state.entries.len();
        }
        let entry = state.entries.entry(key.to_owned()).or_insert(Entry {
            bucket: None,
            in_flight: 0,
            full_at: now,
        });
        if let Some(max) = bounds.concurrent
            && entry.in_flight >= max
        {
            return Admission::TooMany { max };
        }
        if let Some(per_ms) = bounds.per_ms {
            match take(entry.bucket, now, per_ms, bounds.burst) {
                Ok(b) => {
                    entry.full_at = now + (f64::from(bounds.burst) - b.tokens) / per_ms;
                    entry.bucket = Some(b);
                }
                Err(wait) => {
                    return Admission::RateLimited {
                        retry_after: Duration::from_millis(wait as u64),
                    };
                }
            }
        }
        if bounds.concurrent.is_none() {
            return Admission::Allowed(Slot::none());
        }
        entry.in_flight += 1;
        let inner = self.inner.clone();
        let key = key.to_owned();
        Admission::Allowed(Slot::new(move || {
            let mut state = inner.lock();
            if let Some(e) = state.entries.get_mut(&key) {
                e.in_flight = e.in_flight.saturating_sub(1);
            }
        }))
    }
}

impl Counters for Memory {
    fn admit(
        &self,
        key: &str,
        bounds: &Bounds,
    ) -> BoxFuture<'static, Result<Admission, CountersError>> {
        let admission = self.admit_now(key, bounds);
        Box::pin(std::future::ready(Ok(admission)))
    }
}

/// The text a refused call's tool error carries, and its `Retry-After` in whole seconds.
pub(crate) fn refusal_text(admission: &Admission) -> Option<(String, u64)> {
    match admission {
        Admission::Allowed(_) => None,
        Admission::RateLimited { retry_after } => {
            let secs = retry_after.as_millis().div_ceil(1000).max(1) as u64;
            Some((format!("rate limited: retry after {secs} s"), secs))
        }
        Admission::TooMany { max } => Some((
            format!("too many calls in flight for this tool: at most {max}"),
            1,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_testkit::table;

    #[test]
    fn the_bucket() {
        // 60 a minute is 0.001 a millisecond.
        let per_ms = 0.001;
        let b = |tokens, at| Some(Bucket { tokens, at });
        table! { |bucket: Option<Bucket>, now: f64, burst: u32, want: Result<Bucket, f64>| {
                assert_eq!(take(bucket, now, per_ms, burst), want, "{bucket:?} at {now}");
            };
            // A new bucket is full.
            (None, 0.0, 10, Ok(Bucket { tokens: 9.0, at: 0.0 }));
            // The last token goes.
            (b(1.0, 0.0), 0.0, 10, Ok(Bucket { tokens: 0.0, at: 0.0 }));
            // Empty: the next token is a second away.
            (b(0.0, 0.0), 0.0, 10, Err(1000.0));
            // Half refilled: half a second to go.
            (b(0.0, 0.0), 500.0, 10, Err(500.0));
            // Refilled exactly.
            (b(0.0, 0.0), 1000.0, 10, Ok(Bucket { tokens: 0.0, at: 1000.0 }));
            // Refill stops at the burst.
            (b(0.0, 0.0), 60_000.0, 10, Ok(Bucket { tokens: 9.0, at: 60_000.0 }));
            // A clock that went back refills nothing.
            (b(0.5, 1000.0), 0.0, 10, Err(500.0));
            // A bucket of one.
            (None, 0.0, 1, Ok(Bucket { tokens: 0.0, at: 0.0 }));
        }
    }

    fn limits(default: Rule, tools: &[(&'static str, Rule)]) -> Limits {
        let tools = tools
            .iter()
            .map(|(p, r)| {
                let prefix = p.trim_end_matches('*');
                let test: NameTest = Arc::new(move |n: &str| n.starts_with(prefix));
                (p.to_string(), test, *r)
            })
            .collect();
        let views = HashMap::from([(
            "support".to_owned(),
            Rule {
                calls_per_minute: Some(30),
                ..Rule::default()
            },
        )]);
        Limits::new(default, views, tools, Arc::new(Memory::new()))
    }

    #[test]
    fn rules_merge_field_by_field() {
        let default = Rule {
            calls_per_minute: Some(60),
            burst: Some(10),
            concurrent: Some(4),
        };
        let gh = Rule {
            calls_per_minute: Some(6),
            ..Rule::default()
        };
        let l = limits(default, &[("gh_*", gh)]);
        table! { |view: Option<&str>, tool: &str, per_minute: f64, burst: u32, concurrent: Option<u32>| {
                let b = l.bounds(view, tool).unwrap();
                assert_eq!(b.per_ms, Some(per_minute / 60_000.0), "{view:?} {tool}");
                assert_eq!((b.burst, b.concurrent), (burst, concurrent), "{view:?} {tool}");
            };
            (None, "add", 60.0, 10, Some(4));
            (None, "gh_issue", 6.0, 10, Some(4));
            (Some("support"), "add", 30.0, 10, Some(4));
            (Some("support"), "gh_issue", 6.0, 10, Some(4));
            (Some("other"), "add", 60.0, 10, Some(4));
        }
        let bare = limits(Rule::default(), &[("gh_*", gh)]);
        assert_eq!(bare.bounds(None, "add"), None);
        // The burst defaults to a minute's worth.
        assert_eq!(bare.bounds(None, "gh_x").unwrap().burst, 6);
    }

    fn bounds(per_minute: Option<u32>, burst: u32, concurrent: Option<u32>) -> Bounds {
        Bounds {
            per_ms: per_minute.map(|n| f64::from(n) / 60_000.0),
            burst,
            concurrent,
            lease: Duration::from_secs(60),
        }
    }

    #[test]
    fn memory_counts_per_key() {
        let m = Memory::new();
        let b = bounds(Some(1), 2, None);
        assert!(matches!(m.admit_now("a", &b), Admission::Allowed(_)));
        assert!(matches!(m.admit_now("a", &b), Admission::Allowed(_)));
        match m.admit_now("a", &b) {
            Admission::RateLimited { retry_after } => {
                assert!(retry_after > Duration::from_secs(55), "{retry_after:?}");
            }
            other => panic!("{other:?}"),
        }
        // Another key has its own bucket.
        assert!(matches!(m.admit_now("b", &b), Admission::Allowed(_)));
    }

    #[test]
    fn memory_caps_calls_in_flight() {
        let m = Memory::new();
        let b = bounds(None, 1, Some(2));
        let one = m.admit_now("a", &b);
        let two = m.admit_now("a", &b);
        assert!(matches!(
            m.admit_now("a", &b),
            Admission::TooMany { max: 2 }
        ));
        drop(one);
        let three = m.admit_now("a", &b);
        assert!(matches!(three, Admission::Allowed(_)));
        drop((two, three));
    }

    #[test]
    fn refusals_say_when() {
        table! { |a: Admission, text: Option<(&str, u64)>| {
                let got = refusal_text(&a);
                assert_eq!(got.as_ref().map(|(t, s)| (t.as_str(), *s)), text);
            };
            (Admission::RateLimited { retry_after: Duration::from_millis(11_001) }, Some(("rate limited: retry after 12 s", 12)));
            (Admission::RateLimited { retry_after: Duration::from_millis(3) }, Some(("rate limited: retry after 1 s", 1)));
            (Admission::TooMany { max: 4 }, Some(("too many calls in flight for this tool: at most 4", 1)));
            (Admission::Allowed(Slot::none()), None);
        }
    }
}
