//! What a running tool can reach: cancellation, progress, logging, the sandbox roots and
//! (legacy clients) requests to the client.

use crate::error::ClientRequestError;
use crate::session::{Outbound, Session};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::RequestId;
use toolwright_protocol::{ClientCapabilities, LoggingLevel, ProtocolVersion};

/// Everything a tool call can use besides its arguments. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Scope>,
}

pub(crate) struct Scope {
    pub request_id: RequestId,
    pub version: ProtocolVersion,
    pub cancel: CancellationToken,
    pub progress_token: Option<RequestId>,
    pub last_progress: Mutex<f64>,
    /// Modern: the request's own log level (None = no logs). Legacy: ignored.
    pub modern_log_level: Option<LoggingLevel>,
    pub sink: Arc<dyn Outbound>,
    pub session: Arc<Session>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub roots: Arc<Vec<PathBuf>>,
    /// The server's flag: set once an empty `roots/list` answer was logged.
    pub empty_client_roots_logged: Arc<AtomicBool>,
    pub client_timeout: Duration,
    pub inputs: Inputs,
    /// The call's arguments as the client wrote them (none for in-process calls).
    pub arguments_text: Option<Box<serde_json::value::RawValue>>,
    /// The span of the request being handled, when telemetry observes it.
    pub trace: Option<toolwright_telemetry::SpanContext>,
    /// The telemetry observing the request, when there is one (with `trace`).
    pub telemetry: Option<std::sync::Arc<toolwright_telemetry::Telemetry>>,
}

/// Modern-era multi-round-trip state of one request.
#[derive(Default)]
pub(crate) struct Inputs {
    /// Answers from earlier rounds and this request's `inputResponses`.
    pub answers: Map<String, Value>,
    /// Questions asked in this round, by key.
    pub asked: Mutex<Map<String, Value>>,
    /// Counts requests per round so each gets a stable key.
    pub counter: AtomicUsize,
    /// A capability a request needed that the client did not declare.
    pub missing_capability: Mutex<Option<&'static str>>,
    /// The tool's own value for the next round ([`ToolContext::carry`]).
    pub carry: Mutex<Option<Value>>,
    /// Questions to the client are collected, never sent, whatever the era: the call runs
    /// as a task, whose questions the client reads with `tasks/get`.
    pub deferred: AtomicBool,
}

impl ToolContext {
    pub(crate) fn new(scope: Scope) -> Self {
        ToolContext {
            inner: Arc::new(scope),
        }
    }

    /// A context for running a tool outside any connection (the CLI's in-process
    /// `toolwright call`, tests): no client, so progress and logs go to `sink` if given.
    pub fn detached(roots: Vec<PathBuf>, sink: Option<Arc<dyn Outbound>>) -> Self {
        let sink: Arc<dyn Outbound> = sink.unwrap_or_else(|| Arc::new(crate::session::Discard));
        ToolContext::new(Scope {
            request_id: RequestId::Number(0),
            version: ProtocolVersion::LATEST,
            cancel: CancellationToken::new(),
            progress_token: None,
            last_progress: Mutex::new(f64::NEG_INFINITY),
            modern_log_level: None,
            session: Session::new(sink.clone()),
            sink,
            client_capabilities: Arc::default(),
            roots: Arc::new(roots),
            empty_client_roots_logged: Arc::default(),
            client_timeout: Duration::from_secs(30),
            inputs: Inputs::default(),
            arguments_text: None,
            trace: None,
            telemetry: None,
        })
    }

    /// The span of the request being handled, when telemetry observes it: what a tool
    /// passes on as the parent of what it calls (a `traceparent` header, `_meta` or
    /// environment variable).
    pub fn trace_context(&self) -> Option<&toolwright_telemetry::SpanContext> {
        self.inner.trace.as_ref()
    }

    /// The telemetry observing the request, when it is observed: what a tool records the
    /// calls it makes in (CLIENT spans, `mcp.client.operation.duration`), under
    /// [`ToolContext::trace_context`].
    pub fn telemetry(&self) -> Option<&std::sync::Arc<toolwright_telemetry::Telemetry>> {
        self.inner.telemetry.as_ref()
    }

    /// [`ToolContext::trace_context`] as a W3C `traceparent` value.
    pub fn traceparent(&self) -> Option<String> {
        self.inner.trace.as_ref().map(|t| t.traceparent())
    }

    /// The arguments as the client wrote them, when the call came over a transport: the
    /// JSON text of the object whose value the tool received. A tool that must read a
    /// number exactly as written (more digits than an `f64` holds) reads it here; `None`
    /// for calls made in-process.
    pub fn arguments_text(&self) -> Option<&str> {
        self.inner
            .arguments_text
            .as_deref()
            .map(serde_json::value::RawValue::get)
    }

    /// Who the call speaks for, as the transport verified it (an HTTP request's access
    /// token); `None` over stdio, in-process and without authentication.
    pub fn identity(&self) -> Option<&crate::Caller> {
        self.inner.session.caller().map(|c| &**c)
    }

    /// The access token the caller presented (an authorization server's, verified), for a
    /// tool that exchanges it for one of its own (RFC 8693); `None` over stdio, for an API
    /// key and without authentication. Never log it or pass it on as it is.
    pub fn subject_token(&self) -> Option<crate::SubjectToken> {
        self.inner.session.token()
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The protocol version of the request.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// What the client declared it can do (at `initialize`, or in this modern request).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The token that fires when the client cancels the call, it times out, or the
    /// connection closes. Blocking work should check [`CancellationToken::is_cancelled`]
    /// now and then; a very hot loop is better served by an `AtomicBool` set from
    /// `cancelled().await`, since `is_cancelled` takes a lock.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// True once the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// The directories file tools may touch (the server's `--root`s), canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.inner.roots
    }

    /// True when the client asked for progress on this call.
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Reports progress. Sent only when the request carried a `progressToken`; values that
    /// do not increase are dropped, as the spec requires progress to go up.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        // Checked and sent under one lock, so concurrent reporters never send a value
        // that goes down.
        let mut last = self.inner.last_progress.lock();
        if progress.is_nan() || progress <= *last {
            return;
        }
        *last = progress;
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        self.notify("notifications/progress", &params);
    }

    /// Sends a log message to the client when it asked for this level: legacy clients via
    /// `logging/setLevel`, modern ones through this request's `_meta` (never otherwise).
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let threshold = if self.inner.version.is_modern() {
            match self.inner.modern_log_level {
                Some(l) => l,
                None => return,
            }
        } else {
            self.inner.session.log_level()
        };
        if level < threshold {
            return;
        }
        let mut params = json!({"level": level, "data": data});
        if let Some(l) = logger {
            params["logger"] = json!(l);
        }
        self.notify("notifications/message", &params);
    }

    /// Asks the transport to close the stream carrying this call's messages now, while the
    /// call goes on (SSE polling, 2025-11-25): the client reconnects after `retry` and gets
    /// the later messages and the reply there. Returns false, and changes nothing, when the
    /// transport cannot: stdio, modern requests (closing their stream cancels them), streams
    /// that cannot be resumed.
    pub fn close_stream(&self, retry: Duration) -> bool {
        !self.inner.version.is_modern() && self.inner.sink.close_stream(retry)
    }

    fn notify(&self, method: &str, params: &Value) {
        let mut line = Vec::with_capacity(128);
        if toolwright_jsonrpc::write_notification(&mut line, method, params).is_ok() {
            self.inner.sink.send(line);
        }
    }

    /// The capability a request to the client needs (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) and whether this client declared it; `None` for a
    /// method that is none of those.
    pub fn capability_for(&self, method: &str) -> Option<(&'static str, bool)> {
        let caps = &self.inner.client_capabilities;
        match method {
            "sampling/createMessage" => Some(("sampling", caps.sampling.is_some())),
            "elicitation/create" => Some(("elicitation", caps.elicitation.is_some())),
            "roots/list" => Some(("roots", caps.roots.is_some())),
            _ => None,
        }
    }

    /// Asks the client: `sampling/createMessage`, `elicitation/create` or `roots/list`.
    ///
    /// Legacy clients get a real request and this waits for the answer (within the client
    /// timeout). Modern clients cannot be sent requests: the first time, this returns
    /// [`ClientRequestError::InputRequired`] and the call ends with an `input_required`
    /// result carrying the question; when the client retries with its answer, the same call
    /// made in the same order returns it. Either way a client that did not declare the
    /// capability gets [`ClientRequestError::NotSupported`] (modern: -32021).
    pub async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        self.ask(None, method, params).await
    }

    /// [`ToolContext::request_client`] under a key the tool chooses: a modern client finds
    /// the question under `key` in `inputRequests` and answers it under the same key in
    /// `inputResponses`, whatever the order of the tool's requests. Keys are the tool's to
    /// keep apart: one spelled like those [`ToolContext::request_client`] numbers
    /// (`elicitation-0`, `sampling-1`) would share their answers. Legacy clients are asked
    /// as usual; the key is not sent.
    pub async fn request_client_as(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        self.ask(Some(key), method, params).await
    }

    /// Both kinds of request to the client. A modern answer that is not a JSON object is
    /// none (every answer a client gives, an elicitation's, a sampling's or the roots, is
    /// one): the question is asked again.
    async fn ask(
        &self,
        key: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        let (cap, declared) = self.capability_for(method).unwrap_or(("", true));
        if !declared {
            *self.inner.inputs.missing_capability.lock() = Some(cap);
            return Err(ClientRequestError::NotSupported(cap));
        }
        if self.inner.version.is_modern() || self.inner.inputs.deferred.load(Ordering::Relaxed) {
            let inputs = &self.inner.inputs;
            let key = match key {
                Some(k) => k.to_owned(),
                None => {
                    let n = inputs.counter.fetch_add(1, Ordering::Relaxed);
                    let short = method.rsplit('/').next().unwrap_or(method);
                    format!("{}-{n}", if cap.is_empty() { short } else { cap })
                }
            };
            if let Some(answer) = inputs.answers.get(&key).filter(|a| a.is_object()) {
                return Ok(answer.clone());
            }
            inputs
                .asked
                .lock()
                .insert(key, json!({"method": method, "params": params}));
            return Err(ClientRequestError::InputRequired);
        }
        let raw = self
            .inner
            .session
            .request(
                &self.inner.sink,
                method,
                &params,
                self.inner.client_timeout,
                &self.inner.cancel,
            )
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientRequestError::BadResponse(e.to_string()))
    }

    /// Counts one request to the client as made, without making it. A modern client's
    /// answers are found by the order of the requests ([`ToolContext::request_client`]
    /// numbers them): a tool that made a request in an earlier round and no longer needs its
    /// answer (whoever wanted it withdrew it) skips it here, so that the requests after it
    /// keep their keys and the client is not asked it again.
    pub fn skip_client_request(&self) {
        self.inner.inputs.counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Collects the questions this call asks the client instead of sending them, as for a
    /// modern client (a call run as a task).
    pub(crate) fn defer_questions(&self) {
        self.inner.inputs.deferred.store(true, Ordering::Relaxed);
    }

    /// Questions this call asked a modern client and has no answer for yet.
    pub(crate) fn pending_inputs(&self) -> Map<String, Value> {
        self.inner.inputs.asked.lock().clone()
    }

    /// A capability a request needed that the client did not declare.
    pub(crate) fn missing_capability(&self) -> Option<&'static str> {
        *self.inner.inputs.missing_capability.lock()
    }

    /// Answers gathered so far, with the tool's carried value (for sealing into the next
    /// `requestState`).
    pub(crate) fn answers(&self) -> Map<String, Value> {
        let mut answers = self.inner.inputs.answers.clone();
        if let Some(v) = self.inner.inputs.carry.lock().take() {
            answers.insert(crate::mrtr::CARRIED.to_owned(), v);
        }
        answers
    }

    /// Keeps `value` for the client's retry of this call (modern era): it is sealed into
    /// the `requestState` of the `input_required` result the call ends with, and
    /// [`ToolContext::carried`] gives it back on the retry, and on later rounds until a
    /// round carries another. It is for a tool's own bookkeeping across the round trip (a
    /// gateway's upstream call kept waiting), not for answers: the client can read it (the
    /// state is signed, not encrypted) but cannot change it or set it. A legacy or
    /// in-process call is never retried, and keeps nothing. A call run as a task (either
    /// era) keeps it with the task, for the run that follows the client's answers.
    pub fn carry(&self, value: Value) {
        if self.inner.version.is_modern() || self.inner.inputs.deferred.load(Ordering::Relaxed) {
            *self.inner.inputs.carry.lock() = Some(value);
        }
    }

    /// The value [`ToolContext::carry`] kept in this run, taken (a task keeps it for its
    /// next run).
    pub(crate) fn take_carried(&self) -> Option<Value> {
        self.inner.inputs.carry.lock().take()
    }

    /// What an earlier round of this call kept with [`ToolContext::carry`], if anything.
    pub fn carried(&self) -> Option<&Value> {
        self.inner.inputs.answers.get(crate::mrtr::CARRIED)
    }

    /// The client's roots as `file://` URIs, for a client that declared `roots` and listed
    /// at least one; `None` when the client has none to offer. An empty list is no roots to
    /// offer, not a wish that nothing be touched (the spec calls roots guidance, and the
    /// reference filesystem server keeps its own directories then): the server's roots stay,
    /// and the first such answer is logged. Legacy: cached until the client says they
    /// changed. Modern: asked through an `input_required` round trip.
    pub async fn client_roots(&self) -> Result<Option<Arc<Vec<String>>>, ClientRequestError> {
        if !self.inner.client_capabilities.has_roots() {
            return Ok(None);
        }
        let cached = match self.inner.version.is_modern() {
            true => None,
            false => self.inner.session.cached_roots(),
        };
        let uris = match cached {
            Some(uris) => uris,
            None => {
                let v = self.request_client("roots/list", json!({})).await?;
                let uris: Vec<String> = v
                    .get("roots")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|r| r.get("uri")?.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let uris = Arc::new(uris);
                if !self.inner.version.is_modern() {
                    self.inner.session.set_cached_roots(Some(uris.clone()));
                }
                if uris.is_empty()
                    && !self
                        .inner
                        .empty_client_roots_logged
                        .swap(true, Ordering::Relaxed)
                {
                    tracing::info!(
                        "the client declared roots but listed none; the server's own roots stay: {}",
                        self.inner
                            .roots
                            .iter()
                            .map(|r| r.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                uris
            }
        };
        Ok((!uris.is_empty()).then_some(uris))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carried_value_is_sealed_with_the_answers_and_read_back_from_them() {
        let ctx = ToolContext::detached(Vec::new(), None);
        assert_eq!(ctx.carried(), None, "nothing came from an earlier round");
        ctx.carry(json!("token"));
        let sealed = ctx.answers();
        assert_eq!(sealed.get(crate::mrtr::CARRIED), Some(&json!("token")));

        // The next round's context is made from what was sealed.
        let mut next = ToolContext::detached(Vec::new(), None);
        Arc::get_mut(&mut next.inner).unwrap().inputs.answers = sealed;
        assert_eq!(next.carried(), Some(&json!("token")));
    }
}
