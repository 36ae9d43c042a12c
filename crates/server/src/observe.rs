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
    OTHER, Observation, Operation, Outcome, SpanContext, Target, Telemetry, method_name,
};

/// The few fields of a message's params telemetry reads.
#[derive(Deserialize, Default)]
struct Peek {
    #[serde(default)]
    name: Option<String>,
    /// A resource request's `uri` (`mcp.resource.uri`).
    #[serde(default)]
    uri: Option<String>,
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

/// The caller's span and the span's link: `_meta`'s `traceparent` and `tracestate` as the
/// parent, with the ambient context (an HTTP request's headers) linked; without them the
/// ambient context as the parent.
fn parent(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) -> (Option<SpanContext>, Option<SpanContext>) {
    let ambient = || OUTER.with(|o| o.borrow().as_ref().and_then(|o| o.parent.clone()));
    match traceparent {
        Some(tp) => (SpanContext::parse(tp, tracestate), ambient()),
        None => (ambient(), None),
    }
}

/// What came with the message being handled, outside it.
#[derive(Clone)]
pub(crate) struct Outer {
    /// The transport's trace context (an HTTP request's `traceparent` header).
    pub(crate) parent: Option<SpanContext>,
    /// `client.address` and `client.port`.
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// `network.protocol.version`.
    pub(crate) protocol_version: Option<&'static str>,
}

thread_local! {
    /// What came with the message being read, outside it.
    static OUTER: std::cell::RefCell<Option<Outer>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` (which handles messages) with `outer` as what came with them.
pub(crate) fn with_outer<T>(outer: Outer, f: impl FnOnce() -> T) -> T {
    let before = OUTER.with(|o| o.replace(Some(outer)));
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
    let (client, network_protocol_version) = OUTER.with(|o| {
        o.borrow()
            .as_ref()
            .map_or((None, None), |o| (o.peer, o.protocol_version))
    });
    Operation {
        method,
        request_id: id.map(RequestId::text),
        session_id: session.label_id().cloned(),
        transport: session.transport(),
        network_protocol_version,
        client,
        ..Operation::default()
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
    let (parent, link) = parent(
        meta.and_then(|m| m.traceparent.as_deref()),
        meta.and_then(|m| m.tracestate.as_deref()),
    );
    Operation {
        target: Some(Target::Tool(p.name.clone())),
        target_known: known,
        protocol_version: version(session, meta.and_then(|m| m.protocol_version.as_deref())),
        parent,
        link,
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
    let (parent, link) = parent(
        meta.and_then(|m| m.traceparent.as_deref()),
        meta.and_then(|m| m.tracestate.as_deref()),
    );
    let target = match (method, peek.name) {
        ("tools/call", Some(n)) => Some(Target::Tool(n)),
        ("prompts/get", Some(n)) => Some(Target::Prompt(n)),
        _ => None,
    };
    let resource_uri = match method {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => peek.uri,
        _ => None,
    };
    Operation {
        target_known: target.as_ref().is_some_and(known),
        target,
        unknown_method: (method == OTHER).then(|| name.into()),
        resource_uri,
        protocol_version: version(session, modern),
        parent,
        link,
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
            if let Some(message) = r.error_message() {
                observation.set_error_message(message);
            }
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
