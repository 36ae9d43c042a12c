//! Finished spans, handed to a [`SpanSink`] (an OTLP exporter, in toolwright's CLI) when
//! spans are exported. This crate builds them; it does not know how they travel.

use crate::context::SpanContext;
use std::time::SystemTime;

/// The span kinds the conventions use here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// The server side of an MCP request or notification.
    Server,
    /// A call this process makes: to an upstream MCP server, or an HTTP request.
    Client,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

/// Attribute names and values, in the order they were added.
pub type Attributes = Vec<(&'static str, Value)>;

/// One ended span, with everything an exporter sends.
#[derive(Debug, Clone)]
pub struct FinishedSpan {
    /// `{mcp.method.name} {target}` (or, for an HTTP client span, the method).
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Its trace and its own id (the id propagated to what it called).
    pub context: SpanContext,
    /// The parent span, when there is one.
    pub parent: Option<SpanContext>,
    /// Whether the parent is in another process (read from `traceparent`).
    pub parent_remote: bool,
    /// The spans it links (remote: the ambient trace context of the transport, when the
    /// message named another parent).
    pub links: Vec<SpanContext>,
    /// When it began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// The conventions' attributes.
    pub attributes: Attributes,
    /// `Some(description)`: the span's status is ERROR; `None`: unset.
    pub error: Option<String>,
}

/// Where finished spans go. Implemented by the exporter; called on the hot path, so
/// [`SpanSink::export`] must only queue.
pub trait SpanSink: Send + Sync + 'static {
    /// Whether a new span named `name` of `kind`, in trace `trace_id` under `parent`, is
    /// sampled (recorded and exported): the configured sampler's decision.
    fn sampled(
        &self,
        parent: Option<&SpanContext>,
        trace_id: &[u8; 16],
        name: &str,
        kind: SpanKind,
    ) -> bool;

    /// Queues `span` for export.
    fn export(&self, span: FinishedSpan);
}

/// A new span under `parent` (a new trace without one), its sampled flag set as `sink`
/// decides.
pub(crate) fn start_context(
    sink: &dyn SpanSink,
    parent: Option<&SpanContext>,
    name: &str,
    kind: SpanKind,
) -> SpanContext {
    let mut context = SpanContext::child_of(parent);
    let sampled = sink.sampled(parent, &context.trace_id, name, kind);
    context.flags = (context.flags & !1) | u8::from(sampled);
    context
}

/// Pushes `name` = `value` when there is a value.
pub(crate) fn push_opt(attrs: &mut Attributes, name: &'static str, value: Option<&str>) {
    if let Some(v) = value {
        attrs.push((name, Value::from(v)));
    }
}
