//! The gateway's calls upstream as telemetry sees them: each request it forwards for a
//! client is a CLIENT span under the client's request (when spans are exported) and one
//! observation of `mcp.client.operation.duration`; the upstream gets the CLIENT span as
//! its parent, in `params._meta` (W3C Trace Context, unprefixed, as the MCP conventions
//! carry it). Nothing here runs when the request is not observed.

use crate::upstream::Upstream;
use serde_json::{Value, json};
use toolwright_client::{ClientError, Peer, Target as PeerTarget};
use toolwright_server::ToolContext;
use toolwright_server::telemetry::{
    ClientObservation, Operation, Outcome, Peer as Address, SpanContext, Target, Transport,
    method_name,
};

/// How telemetry names an upstream: `network.transport`, and for an HTTP one its
/// `server.address` and `server.port`.
#[derive(Debug, Clone)]
pub(crate) struct SeenAs {
    pub(crate) transport: Transport,
    address: Option<Address>,
}

impl SeenAs {
    /// Read from the upstream's target (its URL parsed here, once per upstream).
    pub(crate) fn of(target: &PeerTarget) -> SeenAs {
        match target {
            PeerTarget::Stdio { .. } => SeenAs {
                transport: Transport::Pipe,
                address: None,
            },
            PeerTarget::Http { url } => SeenAs {
                transport: Transport::Tcp,
                address: address_of(url),
            },
        }
    }
}

/// Starts observing `method` (about `target`) sent to `peer`, the connection of `upstream`,
/// for the request of `ctx`.
pub(crate) fn start(
    ctx: &ToolContext,
    upstream: &Upstream,
    peer: &Peer,
    method: &str,
    target: Option<Target>,
) -> Option<ClientObservation> {
    let telemetry = ctx.telemetry()?;
    let seen = upstream.seen_as();
    let operation = Operation {
        method: method_name(method),
        target,
        request_id: None,
        session_id: peer.session_id().map(Into::into),
        protocol_version: Some(peer.protocol_version().as_str()),
        transport: seen.transport,
        parent: ctx.trace_context().cloned(),
        arguments: None,
    };
    Some(telemetry.client(operation, seen.address.clone()))
}

fn address_of(url: &str) -> Option<Address> {
    let u = url::Url::parse(url).ok()?;
    Some(Address {
        address: u.host_str()?.to_owned(),
        port: u.port_or_known_default(),
    })
}

/// Puts the span the upstream's request belongs to in `params._meta`: the CLIENT span of
/// `observation`, else the span of the client's request.
pub(crate) fn propagate(
    params: &mut Value,
    observation: Option<&ClientObservation>,
    ctx: &ToolContext,
) {
    let context: Option<&SpanContext> = match observation {
        Some(o) => o.context(),
        None => ctx.trace_context(),
    };
    let Some(t) = context else {
        return;
    };
    let Some(obj) = params.as_object_mut() else {
        return;
    };
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.insert("traceparent".into(), json!(t.traceparent()));
        match &t.state {
            Some(state) => m.insert("tracestate".into(), json!(state)),
            None => m.remove("tracestate"),
        };
    }
}

/// Finishes `observation` with what the upstream answered.
pub(crate) fn finish(
    observation: Option<ClientObservation>,
    peer: &Peer,
    outcome: &Result<Value, ClientError>,
) {
    let Some(mut o) = observation else {
        return;
    };
    // A legacy HTTP upstream names its session in its answer to `initialize`, before this.
    o.set_session_id(peer.session_id().map(Into::into));
    o.finish(match outcome {
        Ok(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => Outcome::ToolError,
        Ok(_) => Outcome::Ok,
        Err(ClientError::Rpc { code, .. }) => Outcome::RpcError(*code),
        Err(ClientError::Cancelled { .. }) => Outcome::Cancelled,
        Err(ClientError::Timeout { .. }) => Outcome::Failed("timeout"),
        Err(_) => Outcome::Failed("transport_error"),
    });
}
