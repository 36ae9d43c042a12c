//! What the gateway installs of an upstream's listing: each exposed tool built with its
//! standing (pins, policy), a digest of an installed set (to skip a swap that changes
//! nothing), the pinned definitions a lazy upstream is listed from, and the shell words of
//! the commands its messages suggest.

use crate::naming::Exposed;
use crate::pin::Verdict;
use crate::tool::{Standing, UpstreamTool};
use crate::upstream::Upstream;
use serde_json::Value;
use std::sync::Arc;
use toolwright_schema::Validator;
use toolwright_server::{Tool, ToolDefinition};
use toolwright_toolfile::servers::Action;

/// One exposed tool, ready to register.
pub(crate) fn build_tool(
    up: &Arc<Upstream>,
    e: &Exposed,
    verdict: Option<&Verdict>,
    config_flags: &str,
) -> Result<UpstreamTool, String> {
    let server = up.name();
    let compile = |which: &str| -> Result<Option<Arc<Validator>>, String> {
        match e.original.get(which) {
            None | Some(Value::Null) => Ok(None),
            Some(s) => Validator::compile(s)
                .map(|v| Some(Arc::new(v)))
                .map_err(|err| format!("tool {}: its {which} does not compile: {err}", e.upstream)),
        }
    };
    let input = compile("inputSchema")?;
    let output = compile("outputSchema")?;
    let definition: ToolDefinition = serde_json::from_value(e.definition.clone())
        .map_err(|err| format!("tool {}: its definition cannot be read: {err}", e.upstream))?;
    let param_headers = serde_json::from_value::<ToolDefinition>(e.original.clone())
        .ok()
        .and_then(|d| d.param_headers().ok())
        .filter(|p| !p.is_empty());
    let standing = match verdict {
        Some(Verdict::Quarantined { .. }) => Standing::Refused(format!(
            "the definition of {} on upstream {server} changed since it was pinned, so it is quarantined: review it with `toolwright trust list{config_flags}`, then run `toolwright trust accept {server} {}{config_flags}`",
            e.upstream, e.upstream
        )),
        _ => match e.decision.action {
            Action::Allow => Standing::Allowed,
            Action::Confirm => Standing::Confirm,
            Action::Deny => Standing::Refused(format!(
                "the gateway's policy denies calling {} on upstream {server} ({})",
                e.upstream, e.decision.rule
            )),
        },
    };
    Ok(UpstreamTool {
        upstream: up.clone(),
        upstream_name: e.upstream.clone(),
        definition,
        fixed: e.fixed.clone(),
        input,
        output,
        contracts: up.spec().contracts,
        standing,
        timeout: up.spec().timeout.map(|d| d.0),
        param_headers,
    })
}

/// A digest of a set of upstream tools: what clients see of each, and whether it is served.
pub(crate) fn installed_digest(tools: &[Arc<dyn Tool>]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for t in tools {
        let d = t.definition();
        serde_json::to_string(&d).unwrap_or_default().hash(&mut h);
        t.listed().hash(&mut h);
    }
    h.finish()
}

/// The definitions `state` pins for `server`, when it has any.
pub(crate) fn pinned_definitions(state: &crate::pin::State, server: &str) -> Option<Vec<Value>> {
    let pins = state.servers.get(server)?;
    let defs: Vec<Value> = pins
        .tools
        .values()
        // A tool with a pending definition is served as that definition, which the pins
        // then quarantine.
        .filter_map(|t| {
            t.pending_definition
                .clone()
                .or_else(|| t.pinned.as_ref().and(t.definition.clone()))
        })
        .collect();
    (!defs.is_empty()).then_some(defs)
}

/// `word` as one word of a POSIX shell command line: as is when it is plain, else in
/// single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,=:@".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
