//! Telemetry's one hook: every request and notification [`Server::handle`] receives, of
//! either era and from either transport, is described as a
//! [`toolwright_telemetry::Operation`] here and its [`Handled`] watched until the reply
//! exists. Nothing here runs when [`Config::telemetry`](crate::Config::telemetry) is `None`.

use crate::reply::{Handled, Outcome as ReplyOutcome, Reply};
use crate::session::Session;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use toolwright_jsonrpc::RequestId;
use toolwright_protocol::ProtocolVersion;
use toolwright_protocol::params::CallToolParams;
use toolwright_telemetry::{
    Observation, Operation, Outcome, SpanContext, Target, Telemetry, method_name,
};

/// The few fields of a message's params telemetry reads.
#[derive(Deserialize, Default)]
struct Peek {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Deserialize, Default)]
struct PeekMeta {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<String>,
    #[serde(default)]
    traceparent: Option<String>,
    #[serde(default)]
    tracestate: Option<String>,
}

/// The caller's span, from `_meta`'s `traceparent` and `tracestate`, else from outside
/// the message (an HTTP request's headers).
fn parent(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<SpanContext> {
    match traceparent {
        Some(tp) => SpanContext::parse(tp, tracestate),
        None => OUTER.with(|o| o.borrow().clone()),
    }
}

thread_local! {
    /// The trace context that came with the message being read, outside it.
    static OUTER: std::cell::RefCell<Option<SpanContext>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` (which handles messages) with `parent` as the parent of the spans of messages
/// whose `_meta` names none.
pub(crate) fn with_outer_parent<T>(parent: SpanContext, f: impl FnOnce() -> T) -> T {
    let before = OUTER.with(|o| o.replace(Some(parent)));
    let out = f();
    OUTER.with(|o| *o.borrow_mut() = before);
    out
}

/// The protocol version of a message: the modern one it names in `_meta`, else the one its
/// session negotiated.
fn version(session: &Session, modern: Option<&str>) -> Option<&'static str> {
    modern
        .and_then(ProtocolVersion::parse)
        .or_else(|| session.negotiated().map(|n| n.version))
        .map(ProtocolVersion::as_str)
}

fn base(session: &Session, method: &'static str, id: Option<&RequestId>) -> Operation {
    Operation {
        method,
        target: None,
        target_known: false,
        request_id: id.map(ToString::to_string),
        session_id: session.label_id().cloned(),
        protocol_version: None,
        transport: session.transport(),
        parent: None,
        arguments: None,
    }
}

/// The operation of a `tools/call` read in one pass; `known`: whether the server has the
/// tool it names (only such names are metric labels).
pub(crate) fn call_operation(
    telemetry: &Telemetry,
    session: &Session,
    id: &RequestId,
    p: &CallToolParams,
    known: bool,
) -> Operation {
    let meta = p.meta.as_deref();
    let arguments = match (telemetry.capture_bytes(), &p.arguments) {
        (Some(_), Some(a)) => Some(a.text.get().to_owned()),
        (Some(_), None) => Some("{}".to_owned()),
        (None, _) => None,
    };
    Operation {
        target: Some(Target::Tool(p.name.clone())),
        target_known: known,
        protocol_version: version(session, meta.and_then(|m| m.protocol_version.as_deref())),
        parent: parent(
            meta.and_then(|m| m.traceparent.as_deref()),
            meta.and_then(|m| m.tracestate.as_deref()),
        ),
        arguments,
        ..base(session, method_name("tools/call"), Some(id))
    }
}

/// The operation of any other request (`id`) or notification; `known` says whether the
/// server has the tool or prompt a target names (only such names are metric labels).
pub(crate) fn operation(
    session: &Session,
    id: Option<&RequestId>,
    name: &str,
    params: Option<&RawValue>,
    known: impl FnOnce(&Target) -> bool,
) -> Operation {
    let method = method_name(name);
    let peek: Peek = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let meta = peek.meta.as_ref();
    let modern = meta.and_then(|m| m.protocol_version.as_deref());
    let parent = parent(
        meta.and_then(|m| m.traceparent.as_deref()),
        meta.and_then(|m| m.tracestate.as_deref()),
    );
    let target = match (method, peek.name) {
        ("tools/call", Some(n)) => Some(Target::Tool(n)),
        ("prompts/get", Some(n)) => Some(Target::Prompt(n)),
        _ => None,
    };
    Operation {
        target_known: target.as_ref().is_some_and(known),
        target,
        protocol_version: version(session, modern),
        parent,
        ..base(session, method, id)
    }
}

fn outcome(reply: &Reply) -> Outcome {
    match reply.outcome() {
        ReplyOutcome::Error(code) => Outcome::RpcError(code),
        ReplyOutcome::Result if reply.is_tool_error() => Outcome::ToolError,
        ReplyOutcome::Result => Outcome::Ok,
    }
}

/// How a request (`is_request`) or notification that produced no reply ended.
fn silent(is_request: bool) -> Outcome {
    if is_request {
        Outcome::Cancelled
    } else {
        Outcome::Ok
    }
}

thread_local! {
    /// The span of the request being handled on this thread, while its handler first runs
    /// (when the tool's context is made).
    static CURRENT: std::cell::RefCell<Option<SpanContext>> = const { std::cell::RefCell::new(None) };
}

/// The span of the request whose handler runs now on this thread.
pub(crate) fn current() -> Option<SpanContext> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Runs `f` with `context` as [`current`] (the one before comes back afterwards, as batches
/// and nested handling need).
fn with_current<T>(context: &SpanContext, f: impl FnOnce() -> T) -> T {
    let before = CURRENT.with(|c| c.replace(Some(context.clone())));
    let out = f();
    CURRENT.with(|c| *c.borrow_mut() = before);
    out
}

/// Runs `handle` inside `observation`'s span, with its context as [`current`].
pub(crate) fn run<T>(observation: &Observation, handle: impl FnOnce() -> T) -> T {
    observation
        .span()
        .in_scope(|| with_current(observation.context(), handle))
}

/// Finishes `observation` with the outcome of `reply`.
fn finish(mut observation: Observation, reply: Option<&Reply>, is_request: bool) {
    match reply {
        Some(r) => {
            observation.capture_result(r.line());
            observation.finish(outcome(r));
        }
        None => observation.finish(silent(is_request)),
    }
}

/// Runs `handle` inside `observation`'s span (so what it logs carries the trace and span
/// ids), then watches what it returns until the reply exists and finishes `observation`
/// with its outcome.
pub(crate) fn observed(observation: Observation, handle: impl FnOnce() -> Handled) -> Handled {
    let is_request = observation.operation().request_id.is_some();
    let handled = run(&observation, handle);
    match handled {
        Handled::Nothing => {
            finish(observation, None, is_request);
            Handled::Nothing
        }
        Handled::Reply(reply) => {
            finish(observation, Some(&reply), is_request);
            Handled::Reply(reply)
        }
        Handled::Later(fut) => {
            use tracing::Instrument;
            let span = observation.span().clone();
            Handled::Later(Box::pin(
                async move {
                    let reply = fut.await;
                    finish(observation, reply.as_ref(), is_request);
                    reply
                }
                .instrument(span),
            ))
        }
    }
}

/// After an `initialize` answered with a result: the session is open from now on, at the
/// version it settled (which its `initialize` operation is recorded with too).
pub(crate) fn session_opened(
    telemetry: &Arc<Telemetry>,
    session: &Session,
    observation: &mut Observation,
) {
    let Some(n) = session.negotiated() else {
        return;
    };
    observation.set_protocol_version(n.version.as_str());
    if !session.is_observed() {
        session.set_observed(telemetry.session(Some(n.version.as_str()), session.transport()));
    }
}
