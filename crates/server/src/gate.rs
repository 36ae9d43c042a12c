//! The gate every `tools/call` passes first, from [`dispatch`](crate::dispatch), for
//! declared, built-in and forwarded (gateway) tools alike: the caller's view, then the
//! limits ([`crate::limit`]), then the call. Each call ends with one audit line (`tracing`
//! target [`AUDIT_TARGET`], at INFO) and one count of its [`Decision`] on the telemetry's
//! metrics.
//!
//! With no limits, no telemetry and the audit target off, a call goes straight on and costs
//! one check.

use crate::era::Era;
use crate::limit::{Admission, CountersError, Slot, refusal_text};
use crate::reply::{self, Handled, Outcome, Refused, Reply};
use crate::server::Server;
use crate::session::{Outbound, Session};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use toolwright_jsonrpc::{ErrorObject, RequestId};
use toolwright_protocol::CallToolResult;
use toolwright_protocol::params::CallToolParams;

/// The `tracing` target of the audit lines: `TOOLWRIGHT_LOG=toolwright::audit=info` shows
/// them in text logs; `--log-format json` logs them by default.
pub const AUDIT_TARGET: &str = "toolwright::audit";

/// Longest tool name an audit line repeats (a client may send any).
const MAX_LOGGED_NAME: usize = 128;

/// What the gate decided of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// It ran.
    Allowed,
    /// The tool is outside the caller's view, or does not exist (the two are answered
    /// alike).
    DeniedView,
    /// The operator's policy refused it (the gateway's `deny`, a quarantined tool).
    DeniedPolicy,
    /// A limit refused it.
    DeniedLimit,
}

impl Decision {
    /// Its name in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::DeniedView => "denied_view",
            Decision::DeniedPolicy => "denied_policy",
            Decision::DeniedLimit => "denied_limit",
        }
    }
}

/// Who a call counts against: the verified token's subject, else the client's address,
/// else (stdio) the one local client.
fn caller_key(session: &Session) -> String {
    if let Some(sub) = session.caller().and_then(|c| c.subject.as_deref()) {
        return format!("sub:{sub}");
    }
    match session.address() {
        Some(a) => format!("addr:{a}"),
        None => "local".to_owned(),
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One call as the audit trail records it.
struct Record {
    server: Server,
    caller: String,
    view: Option<String>,
    tool: String,
    /// Whether the server has the tool (only such names are metric labels).
    known: bool,
    arguments: Option<String>,
    started: Instant,
}

impl Record {
    /// Writes the line and counts the decision; `reply` is `None` for a call that ended
    /// without one (cancelled).
    fn finish(self, decision: Decision, reply: Option<&Reply>) {
        let decision = match reply.and_then(Reply::refusal) {
            Some(Refused::Policy) if decision == Decision::Allowed => Decision::DeniedPolicy,
            _ => decision,
        };
        let outcome = match reply.map(Reply::outcome) {
            None => "cancelled",
            Some(Outcome::Error(_)) => "protocol_error",
            Some(Outcome::Result) if reply.is_some_and(Reply::is_tool_error) => "tool_error",
            Some(Outcome::Result) => "ok",
        };
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            target: AUDIT_TARGET,
            caller = %self.caller,
            view = self.view.as_deref().unwrap_or(""),
            tool = cut(&self.tool, MAX_LOGGED_NAME),
            decision = decision.as_str(),
            outcome,
            duration_ms = (ms * 1000.0).round() / 1000.0,
            error_code = reply.and_then(Reply::error_code),
            arguments = self.arguments.as_deref(),
            "audit"
        );
        if let Some(t) = &self.server.inner.config.telemetry {
            t.decision(
                &self.tool,
                self.known,
                self.view.as_deref(),
                decision.as_str(),
            );
        }
    }
}

/// A call under way: its record, finished once with the reply, or as cancelled if the call
/// is dropped first (a client that went away); its slot is given back either way.
struct Pending {
    record: Option<Record>,
    decision: Decision,
    _slot: Option<Slot>,
}

impl Pending {
    fn finish(mut self, reply: Option<&Reply>) {
        if let Some(r) = self.record.take() {
            r.finish(self.decision, reply);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            r.finish(self.decision, None);
        }
    }
}

/// `handled` with `record` finished once its reply exists, and `slot` held until then.
fn watched(handled: Handled, record: Record, decision: Decision, slot: Option<Slot>) -> Handled {
    let pending = Pending {
        record: Some(record),
        decision,
        _slot: slot,
    };
    match handled {
        Handled::Nothing => {
            pending.finish(None);
            Handled::Nothing
        }
        Handled::Reply(reply) => {
            pending.finish(Some(&reply));
            Handled::Reply(reply)
        }
        Handled::Later(fut) => Handled::Later(Box::pin(async move {
            let reply = fut.await;
            pending.finish(reply.as_ref());
            reply
        })),
    }
}

impl Server {
    /// `tools/call` through the gate: the one entry of both `dispatch` arms.
    pub(crate) fn gated_call(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        p: CallToolParams,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let config = &self.inner.config;
        let audit = tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO);
        if config.call_limits.is_none() && config.telemetry.is_none() && !audit {
            return self.tools_call(session, id, p, sink);
        }
        let started = Instant::now();
        self.wait_ready();
        let known = self.inner.registry.snapshot().get(&p.name).is_some();
        let view = session.view();
        let arguments = config
            .telemetry
            .as_ref()
            .and_then(|t| t.capture_bytes())
            .map(|n| {
                let text = p.arguments.as_ref().map_or("{}", |a| a.text.get());
                cut(text, n).to_owned()
            });
        let record = Record {
            server: self.clone(),
            caller: caller_key(session),
            view: view.map(|v| v.name().to_owned()),
            tool: p.name.clone(),
            known,
            arguments,
            started,
        };
        if !known || view.is_some_and(|v| !v.shows(&p.name)) {
            // Answered by the call path itself, exactly as an unknown tool.
            let handled = self.tools_call(session, id, p, sink);
            let reply = match &handled {
                Ok(Handled::Reply(r)) => Some(r),
                _ => None,
            };
            let error = handled.as_ref().err().map(|e| Reply::error(Some(id), e));
            record.finish(Decision::DeniedView, reply.or(error.as_ref()));
            return handled;
        }
        let bounds = config
            .call_limits
            .as_ref()
            .and_then(|l| l.bounds(record.view.as_deref(), &p.name).map(|b| (l, b)));
        let Some((limits, bounds)) = bounds else {
            let handled = self.tools_call(session, id, p, sink);
            return Ok(match handled {
                Ok(h) => watched(h, record, Decision::Allowed, None),
                Err(e) => watched(Handled::error(id, e), record, Decision::Allowed, None),
            });
        };
        let era = Era::resolve(p.meta.as_deref(), session)?;
        let key = format!("{}\u{1f}{}", record.caller, p.name);
        let mut admit = limits.counters().admit(&key, &bounds);
        if let Poll::Ready(admitted) = admit.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        {
            return Ok(self.admitted(admitted, (session, id, &era), p, sink, record));
        }
        // A shared store: the call waits for its answer (bounded by the store's timeout).
        let (server, session, id, sink) = (self.clone(), session.clone(), id.clone(), sink.clone());
        Ok(Handled::Later(Box::pin(async move {
            let admitted = admit.await;
            let handled = server.admitted(admitted, (&session, &id, &era), p, &sink, record);
            match handled.now() {
                Ok(reply) => reply,
                Err(later) => later.await,
            }
        })))
    }

    /// The call once the limits answered: run (holding its slot), or refused with a tool
    /// error saying when to retry.
    fn admitted(
        &self,
        admitted: Result<Admission, CountersError>,
        (session, id, era): (&Arc<Session>, &RequestId, &Era),
        p: CallToolParams,
        sink: &Arc<dyn Outbound>,
        record: Record,
    ) -> Handled {
        let slot = match admitted {
            Ok(Admission::Allowed(slot)) => Some(slot),
            Ok(refused) => {
                let (text, retry_after) = refusal_text(&refused).expect("a refusal");
                let reply = reply::call_result(id, era, &CallToolResult::error(text))
                    .refused(Refused::Limit { retry_after });
                record.finish(Decision::DeniedLimit, Some(&reply));
                return Handled::Reply(reply);
            }
            Err(e) => {
                // Limits protect the tools; a store that is down does not stop the calls.
                tracing::warn!(tool = %p.name, "the limits were not checked: {e}");
                None
            }
        };
        let handled = self
            .tools_call(session, id, p, sink)
            .unwrap_or_else(|e| Handled::error(id, e));
        watched(handled, record, Decision::Allowed, slot)
    }
}
