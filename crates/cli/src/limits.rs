//! The tool files' `limits:` ([`toolwright_toolfile::limits`]) as the server's
//! [`Limits`](toolwright_server::Limits): the globs are the files' own name filters, and the
//! counts live in this process or, with `--session-store`, in Redis.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use toolwright_server::Limits;
use toolwright_server::limit::{Counters, Memory, NameTest, Rule};
use toolwright_toolfile::limits::{LimitRule, LimitsConfig};

fn rule(r: &LimitRule) -> Rule {
    Rule {
        calls_per_minute: r.calls_per_minute,
        burst: r.burst,
        concurrent: r.concurrent,
    }
}

/// The server's limits of `config` (none without `limits:`), counted in `shared` when given
/// (else in this process); a slot whose release is lost is held one call timeout and a
/// margin at most.
pub(crate) fn limits(
    config: Option<&LimitsConfig>,
    shared: Option<Arc<dyn Counters>>,
    call_timeout: Duration,
) -> Option<Arc<Limits>> {
    let c = config?;
    let views: HashMap<String, Rule> = c.views.iter().map(|(n, r)| (n.clone(), rule(r))).collect();
    let tools = c
        .tools
        .iter()
        .map(|(glob, filter, r)| {
            let filter = filter.clone();
            let test: NameTest = Arc::new(move |name: &str| filter.allows(name));
            (glob.clone(), test, rule(r))
        })
        .collect();
    let counters = shared.unwrap_or_else(|| Arc::new(Memory::new()));
    let limits = Limits::new(rule(&c.default), views, tools, counters)
        .with_lease(call_timeout + Duration::from_secs(10));
    Some(Arc::new(limits))
}
