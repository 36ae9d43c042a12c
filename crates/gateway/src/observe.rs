//! The gateway's traffic upstream as telemetry sees it: every request and notification it
//! sends (those it forwards for a client, under the client's request, and its own) is a
//! CLIENT span when spans are exported and one observation of
//! `mcp.client.operation.duration`; the upstream gets the CLIENT span as its parent, in
//! `params._meta` (W3C Trace Context, unprefixed, as the MCP conventions carry it).

use crate::upstream::Upstream;
use serde_json::{Value, json};
use std::sync::Arc;
use toolwright_client::{ClientError, Observer, Outcome, Outgoing, Target as PeerTarget, Watch};
use toolwright_jsonrpc::RequestId;
use toolwright_server::ToolContext;
use toolwright_server::telemetry::{
    ClientObservation, OTHER, Operation, Outcome as Ended, Peer as Address, SpanContext, Target,
    Telemetry, Transport, method_name,
};

/// How telemetry names an upstream: `network.transport`, and for an HTTP one its
/// `server.address` and `server.port` and `network.protocol.version`.
#[derive(Debug, Clone)]
pub(crate) struct SeenAs {
    pub(crate) transport: Transport,
    address: Option<Address>,
    /// The HTTP version spoken to it (toolwright-client's HTTP/1.1).
    http: Option<&'static str>,
}

impl SeenAs {
    /// Read from the upstream's target (its URL parsed here, once per upstream).
    pub(crate) fn of(target: &PeerTarget) -> SeenAs {
        match target {
            PeerTarget::Stdio { .. } => SeenAs {
                transport: Transport::Pipe,
                address: None,
                http: None,
            },
            PeerTarget::Http { url } => SeenAs {
                transport: Transport::Tcp,
                address: address_of(url),
                http: Some("1.1"),
            },
        }
    }
}

/// What watches an upstream's traffic for telemetry: each request and notification the
/// gateway sends it is a CLIENT span (when spans are exported) and one observation of
/// `mcp.client.operation.duration`. The peer's own watcher has no parent (the era probe,
/// the handshake, list refreshes, listen streams: the gateway's own work, each a trace of
/// its own); a forwarded call's has the client's request as its parent.
#[derive(Debug)]
pub(crate) struct Watcher {
    telemetry: Arc<Telemetry>,
    seen: SeenAs,
    parent: Option<SpanContext>,
}

impl Watcher {
    /// The watcher of everything sent to an upstream seen as `seen`.
    pub(crate) fn upstream(telemetry: Arc<Telemetry>, seen: SeenAs) -> Arc<dyn Observer> {
        Arc::new(Watcher {
            telemetry,
            seen,
            parent: None,
        })
    }

    /// The watcher of a request forwarded to `upstream` for the request of `ctx`; `None`
    /// when that request is not observed.
    pub(crate) fn call(ctx: &ToolContext, upstream: &Upstream) -> Option<Arc<dyn Observer>> {
        Some(Arc::new(Watcher {
            telemetry: ctx.telemetry()?.clone(),
            seen: upstream.seen_as().clone(),
            parent: ctx.trace_context().cloned(),
        }))
    }
}

impl Observer for Watcher {
    fn start(&self, message: &Outgoing<'_>) -> Option<Box<dyn Watch>> {
        let name = || {
            message
                .params
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let target = match message.method {
            "tools/call" => name().map(Target::Tool),
            "prompts/get" => name().map(Target::Prompt),
            _ => None,
        };
        let resource_uri = match message.method {
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => message
                .params
                .get("uri")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        let method = method_name(message.method);
        let operation = Operation {
            method,
            unknown_method: (method == OTHER).then(|| message.method.into()),
            target,
            // The gateway sends only names its upstream listed.
            target_known: true,
            request_id: message.id.map(RequestId::text),
            resource_uri,
            session_id: message.session_id.map(Into::into),
            protocol_version: Some(message.protocol_version.as_str()),
            transport: self.seen.transport,
            network_protocol_version: self.seen.http,
            parent: self.parent.clone(),
            ..Operation::default()
        };
        let observation = self.telemetry.client(operation, self.seen.address.clone());
        Some(Box::new(Watched(observation)))
    }
}

/// One message sent upstream, until its answer.
struct Watched(ClientObservation);

impl Watch for Watched {
    fn meta(&self) -> Vec<(&'static str, String)> {
        let Some(context) = self.0.context() else {
            return Vec::new();
        };
        let mut meta = vec![("traceparent", context.traceparent())];
        if let Some(state) = &context.state {
            meta.push(("tracestate", state.clone()));
        }
        meta
    }

    fn finish(self: Box<Self>, outcome: Outcome<'_>, session_id: Option<&str>) {
        let mut o = self.0;
        o.set_session_id(session_id.map(Into::into));
        if let Err(ClientError::Rpc { message, .. }) = outcome {
            o.set_error_message(message);
        }
        o.finish(match outcome {
            Ok(Some(raw)) if said_is_error(raw) => Ended::ToolError,
            Ok(_) => Ended::Ok,
            Err(ClientError::Rpc { code, .. }) => Ended::RpcError(*code),
            Err(ClientError::Cancelled { .. }) => Ended::Cancelled,
            Err(ClientError::Timeout { .. }) => Ended::Failed("timeout"),
            Err(_) => Ended::Failed("transport_error"),
        });
    }
}

/// Whether a result says `isError: true`, read without building it.
pub(crate) fn said_is_error(raw: &serde_json::value::RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct IsError {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<IsError>(raw.get()).is_ok_and(|r| r.is_error == Some(true))
}

fn address_of(url: &str) -> Option<Address> {
    let u = url::Url::parse(url).ok()?;
    Some(Address {
        address: u.host_str()?.to_owned(),
        port: u.port_or_known_default(),
    })
}

/// Puts the span of the client's request in `params._meta`, for an upstream request that
/// no [`Watcher`] observes (one that is replaces it with its CLIENT span).
pub(crate) fn propagate(params: &mut Value, ctx: &ToolContext) {
    let Some(t) = ctx.trace_context() else {
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
