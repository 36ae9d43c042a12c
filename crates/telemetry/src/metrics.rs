//! The metric instruments and their OpenMetrics text.

use crate::client::Peer;
use crate::observe::{Operation, Outcome, Side, Target, Transport};
use crate::{DURATION_BUCKETS, MAX_LABEL_NAME, OTHER, process::Process};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::borrow::Cow;

/// Attribute name and value pairs, in a fixed order; absent attributes are left out.
/// A label set: the names are the convention's, most values are static strings (borrowed,
/// so that a call's labels allocate only the tool name and the error's).
type Labels = Vec<(&'static str, Cow<'static, str>)>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

pub(crate) struct Metrics {
    registry: Registry,
    operations: Family<Labels, Histogram, fn() -> Histogram>,
    sessions: Family<Labels, Histogram, fn() -> Histogram>,
    client_operations: Family<Labels, Histogram, fn() -> Histogram>,
    client_sessions: Family<Labels, Histogram, fn() -> Histogram>,
    pub(crate) live_sessions: Gauge,
    decisions: Family<Labels, Counter>,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::default();
        let operations: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let sessions: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let client_operations: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let client_sessions: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let live_sessions = Gauge::default();
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent (OpenTelemetry mcp.server.operation.duration)",
            Unit::Seconds,
            operations.clone(),
        );
        registry.register_with_unit(
            "mcp_server_session_duration",
            "The duration of the MCP session as observed on the MCP server (OpenTelemetry mcp.server.session.duration)",
            Unit::Seconds,
            sessions.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received (OpenTelemetry mcp.client.operation.duration)",
            Unit::Seconds,
            client_operations.clone(),
        );
        registry.register_with_unit(
            "mcp_client_session_duration",
            "The duration of the MCP session as observed on the MCP client (OpenTelemetry mcp.client.session.duration)",
            Unit::Seconds,
            client_sessions.clone(),
        );
        registry.register(
            "mcp_server_sessions_live",
            "MCP sessions open now (legacy sessions past initialize)",
            live_sessions.clone(),
        );
        let decisions: Family<Labels, Counter> = Family::default();
        registry.register(
            "toolwright_tool_decisions",
            "tools/call requests by what the gate decided: allowed, denied_view (outside the caller's view or unknown), denied_policy, denied_limit",
            decisions.clone(),
        );
        registry.register_collector(Box::new(Process::new()));
        Metrics {
            decisions,
            registry,
            operations,
            sessions,
            client_operations,
            client_sessions,
            live_sessions,
        }
    }

    pub(crate) fn operation(&self, op: &Operation, outcome: Outcome, seconds: f64) {
        self.operation_of(Side::Server, op, None, outcome, seconds);
    }

    /// One operation's duration on `side`; `peer` is a client's `server.address` and
    /// `server.port`.
    pub(crate) fn operation_of(
        &self,
        side: Side,
        op: &Operation,
        peer: Option<&Peer>,
        outcome: Outcome,
        seconds: f64,
    ) {
        let mut labels: Labels = Vec::with_capacity(11);
        labels.push(("mcp_method_name", Cow::Borrowed(op.method)));
        match &op.target {
            Some(Target::Tool(name)) => {
                labels.push(("gen_ai_tool_name", name_label(name, op.target_known)));
                labels.push(("gen_ai_operation_name", Cow::Borrowed("execute_tool")));
            }
            Some(Target::Prompt(name)) => {
                labels.push(("gen_ai_prompt_name", name_label(name, op.target_known)))
            }
            None => {}
        }
        if let Some(e) = outcome.error_type_on(side) {
            labels.push(("error_type", Cow::Owned(e)));
        }
        if let Outcome::RpcError(code) = outcome {
            labels.push(("rpc_response_status_code", Cow::Owned(code.to_string())));
        }
        transport_labels(&mut labels, op.protocol_version, op.transport);
        if let Some(v) = op.network_protocol_version {
            labels.push(("network_protocol_version", Cow::Borrowed(v)));
        }
        if let Some(p) = peer {
            labels.push(("server_address", Cow::Owned(p.address.clone())));
            if let Some(port) = p.port {
                labels.push(("server_port", Cow::Owned(port.to_string())));
            }
        }
        let family = match side {
            Side::Server => &self.operations,
            Side::Client => &self.client_operations,
        };
        family.get_or_create(&labels).observe(seconds);
    }

    pub(crate) fn decision(
        &self,
        tool: &str,
        known: bool,
        view: Option<&str>,
        decision: &'static str,
    ) {
        let labels: Labels = vec![
            ("tool", name_label(tool, known)),
            ("view", Cow::Owned(view.unwrap_or("").to_owned())),
            ("decision", Cow::Borrowed(decision)),
        ];
        self.decisions.get_or_create(&labels).inc();
    }

    pub(crate) fn session(&self, version: Option<&'static str>, transport: Transport, s: f64) {
        self.session_of(Side::Server, version, transport, s);
    }

    pub(crate) fn session_of(
        &self,
        side: Side,
        version: Option<&'static str>,
        transport: Transport,
        s: f64,
    ) {
        let mut labels: Labels = Vec::with_capacity(3);
        transport_labels(&mut labels, version, transport);
        let family = match side {
            Side::Server => &self.sessions,
            Side::Client => &self.client_sessions,
        };
        family.get_or_create(&labels).observe(s);
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// The label value of a tool or prompt name: a name that exists (`known`), cut to
/// [`MAX_LABEL_NAME`] bytes; `_OTHER` for every other name, as the convention does for
/// unknown methods. The label values are so bounded by what the server has, whatever
/// clients send.
fn name_label(name: &str, known: bool) -> Cow<'static, str> {
    if !known {
        return Cow::Borrowed(OTHER);
    }
    let mut end = name.len().min(MAX_LABEL_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(name[..end].to_owned())
}

fn transport_labels(labels: &mut Labels, version: Option<&'static str>, transport: Transport) {
    if let Some(v) = version {
        labels.push(("mcp_protocol_version", Cow::Borrowed(v)));
    }
    labels.push(("network_transport", Cow::Borrowed(transport.as_str())));
    if let Some(p) = transport.protocol_name() {
        labels.push(("network_protocol_name", Cow::Borrowed(p)));
    }
}
