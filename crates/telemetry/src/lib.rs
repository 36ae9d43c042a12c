//! Telemetry for toolwright's MCP server and gateway.
//!
//! The instruments follow the OpenTelemetry semantic conventions for MCP, version
//! [`SEMCONV_VERSION`]: every request and notification a server handles is one
//! [`Observation`], recorded in the `mcp.server.operation.duration` histogram (seconds,
//! the convention's bucket boundaries [`DURATION_BUCKETS`]) with the convention's attributes
//! (`mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `gen_ai.operation.name`,
//! `error.type` when the operation fails, `rpc.response.status_code`,
//! `mcp.protocol.version`, `network.transport`, `network.protocol.name` and `.version`; a
//! tool or prompt name only when it exists, cut to [`MAX_LABEL_NAME`] bytes, and [`OTHER`]
//! for every other name and every method that is not MCP's: spans keep the names as
//! sent); every legacy session is
//! one [`SessionGuard`], recorded in `mcp.server.session.duration` when it ends and counted by a live-session gauge meanwhile.
//! [`Telemetry::render`] writes all of it, with process gauges, as OpenMetrics text (what
//! Prometheus scrapes), the dots of OpenTelemetry names turned into underscores and the unit
//! appended (`mcp_server_operation_duration_seconds`).
//!
//! The calls this process makes are observed too: [`Telemetry::client`] for an MCP
//! request or notification sent upstream (`mcp.client.operation.duration`, and a CLIENT span),
//! [`Telemetry::upstream_session`] for `mcp.client.session.duration`, and
//! [`Telemetry::http_request`] for a declared tool's HTTP request.
//!
//! Spans: when [`Settings::spans`] names a [`SpanSink`] (toolwright-otlp's exporter), every
//! observation ends as a SERVER [`FinishedSpan`] and every call upstream as a CLIENT one,
//! with the ids [`SpanContext`] propagates and the sink's sampling decision in their flags.
//! Without a sink no span is built.
//!
//! A server without telemetry holds no [`Telemetry`] and never builds an [`Operation`]: the
//! cost of telemetry being off is one `Option` check per message.

mod client;
pub mod context;
mod metrics;
mod observe;
pub(crate) mod process;
pub mod spans;

pub use client::{ClientObservation, HttpObservation, HttpRequest, Peer, UpstreamSession};
pub use context::SpanContext;
pub use observe::{
    CALLER_ERRORS, Observation, Operation, Outcome, SessionGuard, Side, Target, Transport,
};
pub use spans::{FinishedSpan, SpanKind, SpanSink};

use metrics::Metrics;
use std::fmt;
use std::sync::Arc;

/// The version of the OpenTelemetry semantic conventions for MCP implemented here: the
/// `docs/gen-ai/mcp.md` and `model/mcp/*.yaml` conventions of the
/// semantic-conventions-genai repository at commit 4172e394 (linking semantic-conventions
/// 1.44.0), where they moved from the main semantic-conventions repository. Since the
/// v0.1.0 text followed before: a server does not count the [`CALLER_ERRORS`] as failures,
/// a failed span's status description is the JSON-RPC error's message, `mcp.resource.uri`
/// is conditionally required, and a server span links the ambient (transport) context when
/// `_meta` names its parent.
pub const SEMCONV_VERSION: &str = "semantic-conventions-genai 4172e394";

/// The explicit bucket boundaries, in seconds, the convention gives for
/// `mcp.server.operation.duration` and `mcp.server.session.duration`.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The most bytes of a tool or prompt name a metric label holds (the spec's longest tool
/// name); longer names are cut. Only names that exist are labels at all (see
/// [`Operation::target_known`]).
pub const MAX_LABEL_NAME: usize = 128;

/// The label value that stands for every unknown method, tool or prompt name.
pub const OTHER: &str = "_OTHER";

/// The content type of [`Telemetry::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The instruments of one process. Cheap to share: hold it in an [`Arc`].
pub struct Telemetry {
    metrics: Metrics,
    settings: Settings,
}

/// What telemetry records beyond the instruments.
#[derive(Clone, Default)]
pub struct Settings {
    /// Record each `tools/call`'s arguments and result (in its log line, and as the
    /// convention's opt-in `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`),
    /// each cut to this many bytes. `None`, the default: neither is recorded.
    pub capture_bytes: Option<usize>,
    /// Where spans go: every observation becomes a SERVER span, every call made upstream
    /// a CLIENT span. `None`, the default: no spans are built.
    pub spans: Option<Arc<dyn SpanSink>>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("capture_bytes", &self.capture_bytes)
            .field("spans", &self.spans.is_some())
            .finish()
    }
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Fresh instruments, with the process gauges.
    pub fn new() -> Arc<Self> {
        Self::with(Settings::default())
    }

    /// Fresh instruments, recording what `settings` asks.
    pub fn with(settings: Settings) -> Arc<Self> {
        Arc::new(Telemetry {
            metrics: Metrics::new(),
            settings,
        })
    }

    /// How many bytes of a call's arguments and result are recorded (`None`: none).
    pub fn capture_bytes(&self) -> Option<usize> {
        self.settings.capture_bytes
    }

    /// Where spans go, when they are exported.
    pub fn spans(&self) -> Option<&dyn SpanSink> {
        self.settings.spans.as_deref()
    }

    /// Starts observing one request or notification; finish it with
    /// [`Observation::finish`] (dropped unfinished, it is recorded as cancelled).
    pub fn start(self: &Arc<Self>, operation: Operation) -> Observation {
        Observation::new(self.clone(), operation)
    }

    /// A legacy session began (its `initialize` was answered); it ends when the guard drops.
    pub fn session(
        self: &Arc<Self>,
        protocol_version: Option<&'static str>,
        transport: Transport,
    ) -> SessionGuard {
        SessionGuard::new(self.clone(), protocol_version, transport)
    }

    /// Counts one `tools/call` decision (`allowed`, `denied_view`, `denied_policy`,
    /// `denied_limit`) in `toolwright_tool_decisions_total`, labelled by tool (`_OTHER` for a
    /// tool the server does not have: `known` false) and view (`""` for none). Callers are
    /// never labels, so the series stay bounded by the config.
    pub fn decision(&self, tool: &str, known: bool, view: Option<&str>, decision: &'static str) {
        self.metrics.decision(tool, known, view, decision);
    }

    /// Sessions open now.
    pub fn live_sessions(&self) -> i64 {
        self.metrics.live_sessions.get()
    }

    /// Everything, as OpenMetrics text (ends with `# EOF`).
    pub fn render(&self) -> String {
        self.metrics.render()
    }
}

/// The value the convention wants in `mcp.method.name` for `name`: the name itself when it
/// is a method of MCP, `_OTHER` otherwise (a client's made-up method names would otherwise
/// be unbounded label values).
pub fn method_name(name: &str) -> &'static str {
    const KNOWN: [&str; 28] = [
        "completion/complete",
        "elicitation/create",
        "initialize",
        "logging/setLevel",
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/message",
        "notifications/progress",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/roots/list_changed",
        "notifications/tools/list_changed",
        "ping",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/templates/list",
        "resources/unsubscribe",
        "roots/list",
        "sampling/createMessage",
        "tools/call",
        "tools/list",
        // The 2026-07-28 era's own methods.
        "server/discover",
        "subscriptions/listen",
        "notifications/elicitation/complete",
    ];
    KNOWN.iter().find(|k| **k == name).copied().unwrap_or(OTHER)
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
