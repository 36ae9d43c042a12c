//! What the gateway installs of an upstream's listing: each exposed tool built with its
//! standing (pins, policy) and then attached to its upstream, a digest of an installed set (to skip a swap that changes
//! nothing), the pinned definitions a lazy upstream is listed from, and the shell words of
//! the commands its messages suggest.

use crate::error::{GatewayError, ToolProblem};
use crate::naming::Exposed;
use crate::pin::Verdict;
use crate::plan::Listing;
use crate::tool::{Standing, UpstreamTool};
use crate::upstream::Upstream;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use toolwright_protocol::{ParamHeaders, TaskSupport, ToolExecution};
use toolwright_schema::Validator;
use toolwright_server::{Tool, ToolDefinition};
use toolwright_toolfile::servers::{Action, ContractMode};

/// One exposed tool, built and judged, short of the connection it is called through: what
/// the install plan decides ([`crate::plan`]) without a runtime.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Its server.
    pub(crate) server: String,
    /// Its name upstream.
    pub(crate) upstream_name: String,
    /// What clients see.
    pub(crate) definition: ToolDefinition,
    /// Injected into every call.
    pub(crate) fixed: serde_json::Map<String, Value>,
    /// The upstream's own `inputSchema`.
    pub(crate) input: Option<Arc<Validator>>,
    /// The upstream's own `outputSchema`.
    pub(crate) output: Option<Arc<Validator>>,
    /// How the upstream's own schemas are held to (checked, or only reported).
    pub(crate) contracts: ContractMode,
    /// Allowed, to confirm, or refused (and why).
    pub(crate) standing: Standing,
    /// The server's call timeout, if its spec sets one.
    pub(crate) timeout: Option<Duration>,
    /// The upstream's `x-mcp-header` arguments, for a modern HTTP upstream.
    pub(crate) param_headers: Option<ParamHeaders>,
}

impl Prepared {
    /// The tool, called through `upstream` (its server's).
    pub(crate) fn attach(self, upstream: Arc<Upstream>) -> UpstreamTool {
        UpstreamTool {
            upstream,
            tool: self,
        }
    }
}

/// One exposed tool of the listing's server, ready to attach: its schemas compiled, its definition
/// read, its standing from the pins' `verdict` and the policy's decision.
///
/// # Errors
///
/// [`GatewayError::Tool`] when a schema does not compile or the definition does not read.
pub(crate) fn prepare(
    listing: &Listing<'_>,
    e: &Exposed,
    verdict: Option<&Verdict>,
    config_flags: &str,
) -> Result<Prepared, GatewayError> {
    let server = listing.server;
    let problem = |problem| GatewayError::Tool {
        server: server.name.clone(),
        tool: e.upstream.clone(),
        problem,
    };
    let compile = |member: &'static str| match e.original.get(member) {
        None | Some(Value::Null) => Ok(None),
        Some(s) => Validator::compile(s)
            .map(|v| Some(Arc::new(v)))
            .map_err(|err| {
                problem(ToolProblem::Schema {
                    member,
                    reason: err.to_string(),
                })
            }),
    };
    let input = compile("inputSchema")?;
    let output = compile("outputSchema")?;
    let mut definition: ToolDefinition = serde_json::from_value(e.definition.clone())
        .map_err(|err| problem(ToolProblem::Unreadable(err.to_string())))?;
    // The upstream's task support is the tool's, but never `required`: the gateway runs the
    // upstream's task itself for a client that did not take up the extension. A modern
    // upstream lists none (its Tool object has no `execution`, the server decides per
    // call), so a tool of one that takes up the Tasks extension may run as a task. The
    // gateway's own rewriting, like its prefix: not pinned.
    match &mut definition.execution {
        Some(ToolExecution {
            task_support: Some(s @ TaskSupport::Required),
            ..
        }) => *s = TaskSupport::Optional,
        None if listing.tasks => {
            definition.execution = Some(ToolExecution {
                task_support: Some(TaskSupport::Optional),
            });
        }
        _ => {}
    }
    let param_headers = serde_json::from_value::<ToolDefinition>(e.original.clone())
        .ok()
        .and_then(|d| d.param_headers().ok())
        .filter(|p| !p.is_empty());
    Ok(Prepared {
        server: server.name.clone(),
        upstream_name: e.upstream.clone(),
        definition,
        fixed: e.fixed.clone(),
        input,
        output,
        contracts: server.spec.contracts,
        standing: standing(&server.name, e, verdict, config_flags),
        timeout: server.spec.timeout.map(|d| d.0),
        param_headers,
    })
}

/// Whether a tool may be called: a quarantined definition is refused (with the commands
/// that review and accept it), else the policy decides.
fn standing(server: &str, e: &Exposed, verdict: Option<&Verdict>, config_flags: &str) -> Standing {
    if let Some(Verdict::Quarantined { .. }) = verdict {
        return Standing::Refused(format!(
            "the definition of {} on upstream {server} changed since it was pinned, so it is quarantined: review it with `toolwright trust list{config_flags}`, then run `toolwright trust accept {server} {}{config_flags}`",
            e.upstream, e.upstream
        ));
    }
    match e.decision.action {
        Action::Allow => Standing::Allowed,
        Action::Confirm => Standing::Confirm,
        Action::Deny => Standing::Refused(format!(
            "the gateway's policy denies calling {} on upstream {server} ({})",
            e.upstream, e.decision.rule
        )),
    }
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
