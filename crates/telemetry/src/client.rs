//! The calls this process makes: an MCP request to an upstream server (a CLIENT span and
//! `mcp.client.operation.duration`), an upstream session (`mcp.client.session.duration`),
//! and an HTTP request of a declared tool (a CLIENT span per the HTTP client conventions).

use crate::Telemetry;
use crate::context::SpanContext;
use crate::observe::{Operation, Outcome, Side, Transport, operation_attributes, status};
use crate::spans::{Attributes, FinishedSpan, SpanKind, Value, start_context};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// Where the peer of a call listens, for `server.address` and `server.port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// `server.address`: the host name or address.
    pub address: String,
    /// `server.port`.
    pub port: Option<u16>,
}

/// One MCP request or notification sent upstream, until its answer arrives. Finish it with
/// [`ClientObservation::finish`]; dropped unfinished, it is recorded as cancelled.
#[must_use = "an observation records when it is finished or dropped"]
pub struct ClientObservation {
    telemetry: Arc<Telemetry>,
    operation: Operation,
    peer: Option<Peer>,
    /// The CLIENT span, when spans are exported.
    own: Option<(SpanContext, SystemTime)>,
    started: Instant,
    finished: bool,
    /// The JSON-RPC error's message (kept only when spans are exported).
    error_message: Option<String>,
}

impl std::fmt::Debug for ClientObservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientObservation")
            .field("operation", &self.operation)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts observing a call made upstream: `operation.parent` is the span it is made
    /// for (the gateway's SERVER span), `operation.session_id` the upstream's session.
    pub fn client(self: &Arc<Self>, operation: Operation, peer: Option<Peer>) -> ClientObservation {
        let own = self.spans().map(|sink| {
            let context = start_context(
                sink,
                operation.parent.as_ref(),
                &operation.span_name(),
                SpanKind::Client,
            );
            (context, SystemTime::now())
        });
        ClientObservation {
            telemetry: self.clone(),
            operation,
            peer,
            own,
            started: Instant::now(),
            finished: false,
            error_message: None,
        }
    }

    /// A session with an upstream began; its duration is recorded in
    /// `mcp.client.session.duration` when the guard drops.
    pub fn upstream_session(
        self: &Arc<Self>,
        protocol_version: Option<&'static str>,
        transport: Transport,
    ) -> UpstreamSession {
        UpstreamSession {
            telemetry: self.clone(),
            protocol_version,
            transport,
            started: Instant::now(),
        }
    }

    /// Starts a CLIENT span for an HTTP request; `None` when spans are not exported.
    pub fn http_request(&self, request: HttpRequest) -> Option<HttpObservation> {
        let sink = self.spans()?;
        let context = start_context(
            sink,
            request.parent.as_ref(),
            &request.method,
            SpanKind::Client,
        );
        Some(HttpObservation {
            request,
            context,
            start: SystemTime::now(),
        })
    }
}

impl ClientObservation {
    /// The span the peer gets as its parent (`traceparent`): this CLIENT span when spans
    /// are exported, else the span the call is made for.
    pub fn context(&self) -> Option<&SpanContext> {
        match &self.own {
            Some((c, _)) => Some(c),
            None => self.operation.parent.as_ref(),
        }
    }

    /// Sets `mcp.session.id` once the upstream's session is known.
    pub fn set_session_id(&mut self, id: Option<Arc<str>>) {
        self.operation.session_id = id;
    }

    /// Sets `mcp.protocol.version` once it is known.
    pub fn set_protocol_version(&mut self, version: Option<&'static str>) {
        self.operation.protocol_version = version;
    }

    /// Records the message of the JSON-RPC error the peer answered: the span status's
    /// description. Nothing unless spans are exported.
    pub fn set_error_message(&mut self, message: &str) {
        if self.own.is_some() {
            self.error_message = Some(message.to_owned());
        }
    }

    /// The call ended with `outcome`.
    pub fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let seconds = self.started.elapsed().as_secs_f64();
        self.telemetry.metrics.operation_of(
            Side::Client,
            &self.operation,
            self.peer.as_ref(),
            outcome,
            seconds,
        );
        let (Some(sink), Some((context, start))) = (self.telemetry.spans(), &self.own) else {
            return;
        };
        if context.flags & 1 == 0 {
            return;
        }
        let mut attributes = operation_attributes(&self.operation, outcome, Side::Client);
        push_peer(&mut attributes, self.peer.as_ref());
        sink.export(FinishedSpan {
            name: self.operation.span_name(),
            kind: SpanKind::Client,
            context: context.clone(),
            parent: self.operation.parent.clone(),
            parent_remote: false,
            links: Vec::new(),
            start: *start,
            end: SystemTime::now(),
            attributes,
            error: status(outcome, Side::Client, self.error_message.as_deref()),
        });
    }
}

impl Drop for ClientObservation {
    fn drop(&mut self) {
        self.record(Outcome::Cancelled);
    }
}

fn push_peer(attributes: &mut Attributes, peer: Option<&Peer>) {
    if let Some(p) = peer {
        attributes.push(("server.address", Value::from(p.address.as_str())));
        if let Some(port) = p.port {
            attributes.push(("server.port", Value::Int(i64::from(port))));
        }
    }
}

/// One session with an upstream, until dropped.
#[must_use = "the session ends when the guard drops"]
pub struct UpstreamSession {
    telemetry: Arc<Telemetry>,
    protocol_version: Option<&'static str>,
    transport: Transport,
    started: Instant,
}

impl std::fmt::Debug for UpstreamSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSession")
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Drop for UpstreamSession {
    fn drop(&mut self) {
        self.telemetry.metrics.session_of(
            Side::Client,
            self.protocol_version,
            self.transport,
            self.started.elapsed().as_secs_f64(),
        );
    }
}

/// An HTTP request about to be sent.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// `http.request.method` (and the span's name).
    pub method: String,
    /// `url.full`, without its query and credentials.
    pub url: String,
    /// `server.address` and `server.port`.
    pub peer: Peer,
    /// The span the request is made for.
    pub parent: Option<SpanContext>,
}

/// An HTTP request's CLIENT span, until [`HttpObservation::finish`].
#[derive(Debug)]
pub struct HttpObservation {
    request: HttpRequest,
    context: SpanContext,
    start: SystemTime,
}

impl HttpObservation {
    /// This span, the request's `traceparent`.
    pub fn context(&self) -> &SpanContext {
        &self.context
    }

    /// The request ended: with a response `status`, or with `error` (its `error.type`)
    /// when there was none.
    pub fn finish(self, telemetry: &Telemetry, status: Option<u16>, error: Option<&str>) {
        let Some(sink) = telemetry.spans() else {
            return;
        };
        if self.context.flags & 1 == 0 {
            return;
        }
        let r = self.request;
        let mut attributes: Attributes = vec![
            ("http.request.method", Value::from(r.method.as_str())),
            ("url.full", Value::from(r.url)),
        ];
        push_peer(&mut attributes, Some(&r.peer));
        if let Some(s) = status {
            attributes.push(("http.response.status_code", Value::Int(i64::from(s))));
        }
        // The HTTP conventions: a status of 400 and above is an error, named by its code.
        let error = match (error, status) {
            (Some(e), _) => Some(e.to_owned()),
            (None, Some(s)) if s >= 400 => Some(s.to_string()),
            _ => None,
        };
        if let Some(e) = &error {
            attributes.push(("error.type", Value::from(e.as_str())));
        }
        sink.export(FinishedSpan {
            name: r.method,
            kind: SpanKind::Client,
            context: self.context,
            parent: r.parent,
            parent_remote: false,
            links: Vec::new(),
            start: self.start,
            end: SystemTime::now(),
            attributes,
            error,
        });
    }
}
