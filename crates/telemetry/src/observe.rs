//! One observed request or notification, and one observed session.

use crate::Telemetry;
use crate::context::{SpanContext, truncate};
use crate::spans::{Attributes, FinishedSpan, SpanKind, Value, push_opt, start_context};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// How the message reached the server, as the convention's `network.transport` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// stdio: `pipe`.
    #[default]
    Pipe,
    /// Streamable HTTP: `tcp` (with `network.protocol.name` = `http`).
    Tcp,
}

impl Transport {
    /// The `network.transport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }

    /// The `network.protocol.name` value, when there is one.
    pub fn protocol_name(self) -> Option<&'static str> {
        match self {
            Transport::Pipe => None,
            Transport::Tcp => Some("http"),
        }
    }
}

/// What an operation is about, when it names a tool or a prompt (the span name's target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `gen_ai.tool.name`.
    Tool(String),
    /// `gen_ai.prompt.name`.
    Prompt(String),
}

impl Target {
    /// The name.
    pub fn name(&self) -> &str {
        match self {
            Target::Tool(n) | Target::Prompt(n) => n,
        }
    }
}

/// What is known of a request or notification when it arrives.
#[derive(Debug, Clone, Default)]
pub struct Operation {
    /// The method as metric labels name it (see [`method_name`](crate::method_name)):
    /// `_OTHER` for a method that is not MCP's, so that made-up names cannot grow
    /// `/metrics`.
    pub method: &'static str,
    /// The method as sent, when [`method`](Self::method) is `_OTHER`: spans carry it as
    /// `mcp.method.name` (the conventions allow custom values there).
    pub unknown_method: Option<Box<str>>,
    /// The tool or prompt it names.
    pub target: Option<Target>,
    /// Whether [`target`](Self::target) names a tool or prompt that exists (the server has
    /// it, or the upstream listed it). Metrics label only such names, cut to
    /// [`MAX_LABEL_NAME`](crate::MAX_LABEL_NAME) bytes; every other name is the one label
    /// value `_OTHER`, so that a client's made-up names cannot grow `/metrics`. Spans keep
    /// the name as sent. `false` unless set.
    pub target_known: bool,
    /// `jsonrpc.request.id`, the id's string form (`7`, `request-7`: a string id without
    /// its JSON quotes); `None` for a notification.
    pub request_id: Option<String>,
    /// `mcp.resource.uri`: the `uri` of a `resources/read`, `resources/subscribe` or
    /// `resources/unsubscribe` (spans only: on metrics the attribute is opt-in).
    pub resource_uri: Option<String>,
    /// `mcp.session.id`, for a message of a session that has one.
    pub session_id: Option<Arc<str>>,
    /// `mcp.protocol.version`, when known.
    pub protocol_version: Option<&'static str>,
    /// `network.transport`.
    pub transport: Transport,
    /// `network.protocol.version`: the HTTP version the message came or went over
    /// (`1.1`, `2`); `None` on stdio.
    pub network_protocol_version: Option<&'static str>,
    /// `client.address` and `client.port` of a SERVER span: the peer an HTTP request came
    /// from.
    pub client: Option<std::net::SocketAddr>,
    /// The caller's span, from the request's `traceparent`.
    pub parent: Option<SpanContext>,
    /// The ambient trace context (an HTTP request's `traceparent` header) when the
    /// message's `_meta` named the parent: the span links it, as the conventions ask.
    pub link: Option<SpanContext>,
    /// A `tools/call`'s arguments as sent, when [`Telemetry::capture_bytes`] asks for them
    /// (cut to that size when the observation starts).
    pub arguments: Option<String>,
}

impl Operation {
    /// `mcp.method.name` as spans carry it: the method as sent.
    pub fn method_sent(&self) -> &str {
        self.unknown_method.as_deref().unwrap_or(self.method)
    }

    /// The span name the convention gives: `{mcp.method.name} {target}`, or the method alone.
    pub fn span_name(&self) -> String {
        match &self.target {
            Some(t) => format!("{} {}", self.method_sent(), t.name()),
            None => self.method_sent().to_owned(),
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result (or, for a notification, handled).
    Ok,
    /// A `tools/call` result with `isError: true`: `error.type` = `tool_error`.
    ToolError,
    /// A JSON-RPC error with this code: `rpc.response.status_code` is the code as a
    /// string, and so is `error.type` when the code is a failure of the side that records
    /// it (see [`Outcome::fails`]).
    RpcError(i64),
    /// No answer was sent (the client cancelled, or hung up): `error.type` = `cancelled`.
    Cancelled,
    /// A call made upstream got no answer: `error.type` is this (`timeout`,
    /// `transport_error`).
    Failed(&'static str),
}

/// The JSON-RPC error codes that say the caller sent a request the server could not serve
/// (parse error, invalid request, method not found, invalid params or unknown tool,
/// resource not found): the conventions' server side SHOULD NOT count them as errors.
pub const CALLER_ERRORS: [i64; 5] = [-32700, -32600, -32601, -32602, -32002];

/// Which side of an MCP exchange records an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The receiver of the request (SERVER spans, `mcp.server.operation.duration`).
    Server,
    /// Its sender (CLIENT spans, `mcp.client.operation.duration`).
    Client,
}

impl Outcome {
    /// Whether the operation failed, as `side` counts it: a server does not count the
    /// [`CALLER_ERRORS`] as its failures; a client counts every JSON-RPC error.
    pub fn fails(self, side: Side) -> bool {
        match self {
            Outcome::Ok => false,
            Outcome::RpcError(code) => side == Side::Client || !CALLER_ERRORS.contains(&code),
            _ => true,
        }
    }

    /// The `error.type` value as `side` records it: `None` unless the operation
    /// [`fails`](Self::fails).
    pub fn error_type_on(self, side: Side) -> Option<String> {
        if self.fails(side) {
            self.error_type()
        } else {
            None
        }
    }

    /// The class of error, whichever side records it (`None` on success).
    pub fn error_type(self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::ToolError => Some("tool_error".into()),
            Outcome::RpcError(code) => Some(code.to_string()),
            Outcome::Cancelled => Some("cancelled".into()),
            Outcome::Failed(why) => Some(why.into()),
        }
    }
}

/// One request or notification being handled. Finish it with [`Observation::finish`];
/// dropped unfinished, it is recorded as [`Outcome::Cancelled`].
#[must_use = "an observation records when it is finished or dropped"]
pub struct Observation {
    telemetry: Arc<Telemetry>,
    operation: Operation,
    context: SpanContext,
    span: tracing::Span,
    started: Instant,
    /// When it began, as a span says it (only kept when spans are exported).
    began: Option<SystemTime>,
    finished: bool,
    result: Option<String>,
    /// The JSON-RPC error's message, the span status's description (kept only when spans
    /// are exported).
    error_message: Option<String>,
}

impl std::fmt::Debug for Observation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observation")
            .field("operation", &self.operation)
            .finish_non_exhaustive()
    }
}

impl Observation {
    pub(crate) fn new(telemetry: Arc<Telemetry>, mut operation: Operation) -> Self {
        let (context, began) = match telemetry.spans() {
            Some(sink) => (
                start_context(
                    sink,
                    operation.parent.as_ref(),
                    &operation.span_name(),
                    SpanKind::Server,
                ),
                Some(SystemTime::now()),
            ),
            None => (SpanContext::child_of(operation.parent.as_ref()), None),
        };
        if let (Some(max), Some(args)) = (telemetry.capture_bytes(), &operation.arguments) {
            operation.arguments = Some(truncate(args, max));
        }
        // What the log lines written while it is handled carry (`--log-format json`).
        let span = tracing::info_span!(
            "mcp",
            trace_id = %context.trace_id_hex(),
            span_id = %context.span_id_hex(),
        );
        Observation {
            telemetry,
            operation,
            context,
            span,
            started: Instant::now(),
            began,
            finished: false,
            result: None,
            error_message: None,
        }
    }

    /// This operation's span: its trace, and its id as the parent of what it calls.
    pub fn context(&self) -> &SpanContext {
        &self.context
    }

    /// The `tracing` span that log lines written while it is handled belong to.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records the result (the reply line), cut to [`Telemetry::capture_bytes`]; nothing
    /// when capture is off.
    pub fn capture_result(&mut self, result: &[u8]) {
        if let Some(max) = self.telemetry.capture_bytes() {
            let text = String::from_utf8_lossy(result);
            self.result = Some(truncate(text.trim_end(), max));
        }
    }

    /// Records the message of the JSON-RPC error the reply carries: a failed span's status
    /// description (`JSONRPCError.message`). Nothing unless spans are exported.
    pub fn set_error_message(&mut self, message: &str) {
        if self.began.is_some() {
            self.error_message = Some(message.to_owned());
        }
    }

    /// What is being observed.
    pub fn operation(&self) -> &Operation {
        &self.operation
    }

    /// Sets `mcp.protocol.version` once it is known (an `initialize` settles it).
    pub fn set_protocol_version(&mut self, version: &'static str) {
        self.operation.protocol_version = Some(version);
    }

    /// The operation ended with `outcome`: its duration goes into the histogram.
    pub fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let seconds = self.started.elapsed().as_secs_f64();
        self.telemetry
            .metrics
            .operation(&self.operation, outcome, seconds);
        let op = &self.operation;
        let _in = self.span.enter();
        tracing::info!(
            target: "toolwright::mcp",
            duration_ms = seconds * 1e3,
            "mcp.method.name" = op.method_sent(),
            "gen_ai.tool.name" = op.target.as_ref().map(|t| t.name()),
            "jsonrpc.request.id" = op.request_id.as_deref(),
            "mcp.session.id" = op.session_id.as_deref(),
            "mcp.protocol.version" = op.protocol_version,
            "network.transport" = op.transport.as_str(),
            "error.type" = outcome.error_type_on(Side::Server).as_deref(),
            "gen_ai.tool.call.arguments" = op.arguments.as_deref(),
            "gen_ai.tool.call.result" = self.result.as_deref(),
            "{}",
            op.span_name()
        );
        drop(_in);
        self.export(outcome);
    }

    /// The SERVER span, when spans are exported and this one is sampled.
    fn export(&self, outcome: Outcome) {
        let (Some(sink), Some(start)) = (self.telemetry.spans(), self.began) else {
            return;
        };
        if self.context.flags & 1 == 0 {
            return;
        }
        let op = &self.operation;
        let mut attributes = operation_attributes(op, outcome, Side::Server);
        if let Some(peer) = op.client {
            attributes.push(("client.address", Value::from(peer.ip().to_string())));
            attributes.push(("client.port", Value::Int(i64::from(peer.port()))));
        }
        push_opt(
            &mut attributes,
            "gen_ai.tool.call.arguments",
            op.arguments.as_deref(),
        );
        push_opt(
            &mut attributes,
            "gen_ai.tool.call.result",
            self.result.as_deref(),
        );
        sink.export(FinishedSpan {
            name: op.span_name(),
            kind: SpanKind::Server,
            context: self.context.clone(),
            parent: op.parent.clone(),
            parent_remote: true,
            links: op.link.iter().cloned().collect(),
            start,
            end: SystemTime::now(),
            attributes,
            error: status(outcome, Side::Server, self.error_message.as_deref()),
        });
    }
}

/// The span status of `outcome` recorded on `side`: `Some(description)` (ERROR) when it
/// fails, described by the JSON-RPC error's `message` when there is one, else by its
/// `error.type`.
pub(crate) fn status(outcome: Outcome, side: Side, message: Option<&str>) -> Option<String> {
    let kind = outcome.error_type_on(side)?;
    Some(match (outcome, message) {
        (Outcome::RpcError(_), Some(m)) => m.to_owned(),
        _ => kind,
    })
}

/// The conventions' attributes of an MCP operation (both sides: the server's span, and the
/// gateway's client span of the same call upstream).
pub(crate) fn operation_attributes(op: &Operation, outcome: Outcome, side: Side) -> Attributes {
    let mut a: Attributes = Vec::with_capacity(14);
    a.push(("mcp.method.name", Value::from(op.method_sent())));
    match &op.target {
        Some(Target::Tool(name)) => {
            a.push(("gen_ai.tool.name", Value::from(name.as_str())));
            a.push(("gen_ai.operation.name", Value::from("execute_tool")));
        }
        Some(Target::Prompt(name)) => a.push(("gen_ai.prompt.name", Value::from(name.as_str()))),
        None => {}
    }
    push_opt(&mut a, "jsonrpc.request.id", op.request_id.as_deref());
    push_opt(&mut a, "mcp.resource.uri", op.resource_uri.as_deref());
    push_opt(&mut a, "mcp.session.id", op.session_id.as_deref());
    push_opt(&mut a, "mcp.protocol.version", op.protocol_version);
    a.push(("network.transport", Value::from(op.transport.as_str())));
    push_opt(
        &mut a,
        "network.protocol.name",
        op.transport.protocol_name(),
    );
    push_opt(
        &mut a,
        "network.protocol.version",
        op.network_protocol_version,
    );
    if let Some(e) = outcome.error_type_on(side) {
        a.push(("error.type", Value::from(e)));
    }
    if let Outcome::RpcError(code) = outcome {
        a.push(("rpc.response.status_code", Value::from(code.to_string())));
    }
    a
}

impl Drop for Observation {
    fn drop(&mut self) {
        self.record(Outcome::Cancelled);
    }
}

/// One legacy session, open until dropped: counted by the live-session gauge meanwhile, its
/// duration recorded in `mcp.server.session.duration` at the end.
#[must_use = "the session ends when the guard drops"]
pub struct SessionGuard {
    telemetry: Arc<Telemetry>,
    protocol_version: Option<&'static str>,
    transport: Transport,
    started: Instant,
}

impl std::fmt::Debug for SessionGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGuard")
            .field("protocol_version", &self.protocol_version)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl SessionGuard {
    pub(crate) fn new(
        telemetry: Arc<Telemetry>,
        protocol_version: Option<&'static str>,
        transport: Transport,
    ) -> Self {
        telemetry.metrics.live_sessions.inc();
        SessionGuard {
            telemetry,
            protocol_version,
            transport,
            started: Instant::now(),
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let m = &self.telemetry.metrics;
        m.live_sessions.dec();
        m.session(
            self.protocol_version,
            self.transport,
            self.started.elapsed().as_secs_f64(),
        );
    }
}
