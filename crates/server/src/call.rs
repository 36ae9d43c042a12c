//! The `tools/call` pipeline: era, lookup, capabilities, argument validation, the tool,
//! output validation, the reply line.
//!
//! A call that finishes on its first poll (most do) is answered at once, with no task,
//! timer or cancellation entry; one that must wait is [`driven`](Server::drive): tracked
//! for `notifications/cancelled` and bounded by the call timeout.

use crate::config::InputErrorMode;
use crate::context::{Scope, ToolContext};
use crate::era::Era;
use crate::error::ToolError;
use crate::registry::Entry;
use crate::reply::{
    self, Handled, Reply, ReplyFuture, Spent, call_result, panic_text, structured_result_line,
};
use crate::server::Server;
use crate::session::{Outbound, Session};
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{ErrorObject, RequestId, code};
use toolwright_protocol::params::CallToolParams;
use toolwright_protocol::{CallToolResult, ClientCapabilities, Content, RequestMeta, TaskSupport};

/// The parts of a call that its future owns and hands back along with the reply.
struct CallState {
    _ctx: ToolContext,
    _entry: Arc<Entry>,
    _server: Server,
    _structured: Option<Value>,
}

/// Which of `required`'s capabilities `have` lacks, in the ClientCapabilities shape.
fn missing_capabilities(required: &ClientCapabilities, have: &ClientCapabilities) -> Option<Value> {
    let mut missing = Map::new();
    let pairs = [
        ("roots", &required.roots, &have.roots),
        ("sampling", &required.sampling, &have.sampling),
        ("elicitation", &required.elicitation, &have.elicitation),
        ("tasks", &required.tasks, &have.tasks),
    ];
    for (name, need, got) in pairs {
        if let (Some(n), None) = (need, got) {
            missing.insert(name.to_owned(), n.clone());
        }
    }
    if let Some(ext) = &required.extensions {
        let have_ext = have.extensions.as_ref();
        let lacking: Map<String, Value> = ext
            .iter()
            .filter(|(k, _)| !have_ext.is_some_and(|h| h.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !lacking.is_empty() {
            missing.insert("extensions".into(), Value::Object(lacking));
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// Nothing is sent for a call that was cancelled meanwhile.
fn unless_cancelled(ctx: &ToolContext, reply: Reply) -> Option<Reply> {
    (!ctx.is_cancelled()).then_some(reply)
}

/// The tool's required client capabilities against the request's: `Ok(None)` when none is
/// missing; else a modern request gets the missing-capability error and a legacy one a tool
/// error result naming what its `initialize` did not declare.
fn capability_refusal(
    id: &RequestId,
    era: &Era,
    entry: &Entry,
    name: &str,
    capabilities: &ClientCapabilities,
) -> Result<Option<Handled>, ErrorObject> {
    let Some(missing) = entry
        .required_capabilities
        .as_ref()
        .and_then(|required| missing_capabilities(required, capabilities))
    else {
        return Ok(None);
    };
    if era.is_modern() {
        return Err(ErrorObject::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("tool {name} needs client capabilities this request did not declare"),
        )
        .with_data(json!({"requiredCapabilities": missing})));
    }
    let r = CallToolResult::error(format!(
        "tool {name} needs the client capabilities {missing}, which this client did not declare at initialize"
    ));
    Ok(Some(Handled::Reply(call_result(id, era, &r))))
}

impl Server {
    /// `tools/call` with its params read.
    pub(crate) fn tools_call(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        p: CallToolParams,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let era = Era::resolve(p.meta.as_deref(), session)?;
        self.wait_ready();
        let snapshot = self.inner.registry.snapshot();
        // A tool outside the session's view is answered exactly as an unknown one.
        let in_view = session.view().is_none_or(|v| v.shows(&p.name));
        let Some(entry) = snapshot.get(&p.name).filter(|_| in_view).cloned() else {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown tool: {}",
                p.name
            )));
        };
        drop(snapshot);
        let capabilities = self.client_caps(session, &era);
        if let Some(refused) = capability_refusal(id, &era, &entry, &p.name, &capabilities)? {
            return Ok(refused);
        }
        // The Tasks extension: the server runs a call as a task when the tool may run as
        // one and this request's client took up the extension.
        let support = crate::task_call::support(&entry);
        let as_task = match support {
            TaskSupport::Forbidden => false,
            _ if crate::task_call::declares_tasks(&capabilities) => true,
            TaskSupport::Required => {
                return Err(crate::task_call::tasks_needed(&format!("tool {}", p.name)));
            }
            TaskSupport::Optional => false,
        };
        let (args, arguments_text) = match p.arguments {
            Some(a) => (a.value, Some(a.text)),
            None => (Value::Object(Map::new()), None),
        };
        if let Some(refused) = self.argument_refusal(id, &era, &entry, &p.name, &args)? {
            return Ok(refused);
        }

        let meta = p.meta.map(|m| *m).unwrap_or_default();
        let args_copy = era.is_modern().then(|| args.clone());
        let answers = self.round_answers(
            &p.name,
            &era,
            p.request_state,
            p.input_responses,
            args_copy.as_ref(),
        )?;
        if as_task && let Some(task) = self.new_task(session, &p.name, support)? {
            let call = crate::task_call::TaskCall {
                session: session.clone(),
                id: id.clone(),
                era,
                entry,
                args,
                meta,
                capabilities,
                arguments_text,
            };
            return Ok(self.task_call(call, task, answers));
        }
        let cancel = CancellationToken::new();
        let ctx = self.context(
            session,
            id,
            &era,
            meta,
            sink,
            &cancel,
            capabilities,
            answers,
            arguments_text,
        );
        let server = self.clone();
        let reply_id = id.clone();
        let fut = Box::pin(async move {
            let outcome = AssertUnwindSafe(entry.handler.call(args, ctx.clone()))
                .catch_unwind()
                .await;
            let mut spent = None;
            let reply = server.finish(
                &reply_id,
                &era,
                &entry,
                &ctx,
                args_copy.as_ref(),
                outcome,
                &mut spent,
            );
            // Handed back rather than dropped here, where the reply would wait for it.
            let state = CallState {
                _ctx: ctx,
                _entry: entry,
                _server: server,
                _structured: spent,
            };
            (reply, state)
        });
        Ok(self.poll_once_or_drive(session, id, cancel, p.name, fut))
    }

    /// Polls a call's future once (most tools finish there: the reply is then written with
    /// no task, timer or cancellation entry, and what the call held is freed after the
    /// write), else [drives](Server::drive) it.
    fn poll_once_or_drive<F>(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        cancel: CancellationToken,
        name: String,
        mut fut: std::pin::Pin<Box<F>>,
    ) -> Handled
    where
        F: Future<Output = (Option<Reply>, CallState)> + Send + 'static,
    {
        if let Poll::Ready((reply, state)) =
            fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        {
            return match reply {
                Some(reply) => Handled::Reply(reply.with_spent(Spent {
                    _held: Box::new((state, cancel, fut)),
                })),
                None => Handled::Nothing,
            };
        }
        let what = move || format!("tool {name}");
        self.drive_pending(
            session,
            id.clone(),
            cancel,
            what,
            async move { fut.await.0 },
        )
    }

    /// The arguments against the tool's `inputSchema` (and the rule that they are an
    /// object): `Ok(None)` when they pass, else the refusal in the configured form (a tool
    /// error result the model can read, or an invalid-params error).
    fn argument_refusal(
        &self,
        id: &RequestId,
        era: &Era,
        entry: &Entry,
        name: &str,
        args: &Value,
    ) -> Result<Option<Handled>, ErrorObject> {
        if !args.is_object() {
            return Err(ErrorObject::invalid_params(
                "tools/call arguments must be a JSON object",
            ));
        }
        let Err(violations) = entry.input.validate(args) else {
            return Ok(None);
        };
        let text = toolwright_schema::format_violations(&violations);
        match self.inner.config.input_errors {
            InputErrorMode::ToolError => {
                let r =
                    CallToolResult::error(format!("Invalid arguments for tool {name}:\n{text}"));
                Ok(Some(Handled::Reply(call_result(id, era, &r))))
            }
            InputErrorMode::ProtocolError => {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                Err(ErrorObject::invalid_params(format!(
                    "Invalid arguments for tool {name}: {text}"
                ))
                .with_data(json!({"violations": list})))
            }
        }
    }

    /// Modern multi-round-trip: the answers sealed in `state` by an earlier round (checked
    /// against this call's tool and arguments) plus this round's `responses`. A legacy call
    /// has none (`modern_args` is the modern call's arguments, `None` for legacy).
    fn round_answers(
        &self,
        name: &str,
        era: &Era,
        state: Option<String>,
        responses: Option<Map<String, Value>>,
        modern_args: Option<&Value>,
    ) -> Result<Map<String, Value>, ErrorObject> {
        let mut answers = Map::new();
        if let (Some(state), Some(args)) = (&state, modern_args) {
            answers = self
                .inner
                .state_key
                .open(state, "tools/call", name, args)
                .map_err(|why| ErrorObject::invalid_params(why.to_string()))?
                .a;
        }
        if era.is_modern() {
            answers.extend(crate::mrtr::client_answers(responses));
        }
        Ok(answers)
    }

    /// Builds the context of one request.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn context(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: &Era,
        meta: RequestMeta,
        sink: &Arc<dyn Outbound>,
        cancel: &CancellationToken,
        client_capabilities: Arc<ClientCapabilities>,
        answers: Map<String, Value>,
        arguments_text: Option<Box<serde_json::value::RawValue>>,
    ) -> ToolContext {
        ToolContext::new(Scope {
            request_id: id.clone(),
            version: era.version(),
            cancel: cancel.clone(),
            progress_token: meta.progress_token,
            last_progress: parking_lot::Mutex::new(f64::NEG_INFINITY),
            modern_log_level: match era {
                Era::Modern { log_level, .. } => *log_level,
                Era::Legacy(_) => None,
            },
            sink: sink.clone(),
            session: session.clone(),
            client_capabilities,
            roots: self.inner.roots.clone(),
            empty_client_roots_logged: self.inner.empty_client_roots_logged.clone(),
            client_timeout: self.inner.config.client_request_timeout,
            inputs: crate::context::Inputs {
                answers,
                ..Default::default()
            },
            arguments_text,
            trace: self
                .inner
                .config
                .telemetry
                .as_ref()
                .and_then(|_| crate::observe::current()),
            telemetry: self.inner.config.telemetry.clone(),
        })
    }

    /// Runs the future that produces a request's reply. Most finish without waiting on
    /// anything, so it is polled once right here and answered at once, with no task, timer
    /// or cancellation entry. One that must wait is tracked (so `notifications/cancelled`
    /// reaches it), bounded by the call timeout, and cancelled if it is dropped.
    pub(crate) fn drive(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        cancel: CancellationToken,
        what: impl FnOnce() -> String,
        fut: ReplyFuture,
    ) -> Handled {
        let mut fut = fut;
        let mut cx = Context::from_waker(Waker::noop());
        if let Poll::Ready(reply) = fut.as_mut().poll(&mut cx) {
            return reply.map_or(Handled::Nothing, Handled::Reply);
        }
        // Named only now: most calls never need to say what they were.
        let what = what();
        self.drive_pending(session, id, cancel, move || what, fut)
    }

    /// [`drive`](Server::drive) for a future already polled once and pending: it is held
    /// in the task's own future, not boxed again, and `what` names it only if it times out.
    fn drive_pending(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        cancel: CancellationToken,
        what: impl FnOnce() -> String + Send + 'static,
        fut: impl Future<Output = Option<Reply>> + Send + 'static,
    ) -> Handled {
        session.track(id.clone(), cancel.clone());
        let session = session.clone();
        let timeout = self.inner.config.call_timeout;
        Handled::Later(Box::pin(async move {
            // Dropping this future (an HTTP client closed its stream) cancels the call too.
            let cancel_on_drop = cancel.clone().drop_guard();
            // The call's future is gone once this block ends, before the call is untracked.
            let reply = async {
                tokio::pin!(fut);
                tokio::select! {
                    reply = &mut fut => reply,
                    _ = cancel.cancelled() => None,
                    _ = tokio::time::sleep(timeout) => {
                        cancel.cancel();
                        let e = ErrorObject::new(
                            code::REQUEST_TIMEOUT,
                            format!("{} did not finish within {timeout:?} and was cancelled", what()),
                        );
                        Some(Reply::error(Some(&id), &e))
                    }
                }
            }
            .await;
            session.untrack(&id);
            cancel_on_drop.disarm();
            reply
        }))
    }

    /// The reply for a modern call that asked the client something it has no answer for
    /// (`input_required`), or that needs a capability the request did not declare.
    pub(crate) fn input_reply(
        &self,
        id: &RequestId,
        era: &Era,
        ctx: &ToolContext,
        method: &str,
        target: &str,
        args: Option<&Value>,
    ) -> Option<Reply> {
        if !era.is_modern() {
            return None;
        }
        if let Some(cap) = ctx.missing_capability() {
            let e = ErrorObject::new(
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "{target} needs the client capability {cap}, which this request did not declare"
                ),
            )
            .with_data(json!({"requiredCapabilities": {cap: {}}}));
            return Some(Reply::error(Some(id), &e));
        }
        let asked = ctx.pending_inputs();
        if asked.is_empty() {
            return None;
        }
        let null = Value::Null;
        let payload = crate::mrtr::StateKey::payload(
            method,
            target,
            args.unwrap_or(&null),
            self.inner.config.request_state_ttl,
            ctx.answers(),
        );
        let state = self.inner.state_key.seal(&payload);
        let value =
            json!({"resultType": "input_required", "inputRequests": asked, "requestState": state});
        Some(self.result(id, era, value))
    }

    /// The reply of a finished call. Structured content that `spent` receives is dropped by
    /// the caller, once the line is sent.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish(
        &self,
        id: &RequestId,
        era: &Era,
        entry: &Entry,
        ctx: &ToolContext,
        args: Option<&Value>,
        outcome: std::thread::Result<Result<CallToolResult, ToolError>>,
        spent: &mut Option<Value>,
    ) -> Option<Reply> {
        let name = &entry.definition.name;
        if let Some(reply) = self.input_reply(id, era, ctx, "tools/call", name, args) {
            return unless_cancelled(ctx, reply);
        }
        let internal = |m: String| Some(Reply::internal(id, m));
        let mut result = match outcome {
            Err(panic) => {
                let why = panic_text(&*panic);
                tracing::error!(tool = %name, "tool panicked: {why}");
                return internal(format!("tool {name} panicked: {why}"));
            }
            Ok(Err(ToolError::Cancelled)) => return None,
            Ok(Err(ToolError::InputRequired)) => {
                // Asked nothing this server could carry (a legacy request, or no question).
                return internal(format!(
                    "tool {name} needs input from the client that this request cannot carry"
                ));
            }
            Ok(Err(ToolError::Internal(m))) => return internal(format!("tool {name} failed: {m}")),
            Ok(Err(ToolError::Denied(why))) => {
                let r = CallToolResult::error(why);
                return Some(reply::call_result(id, era, &r).refused(reply::Refused::Policy));
            }
            Ok(Err(
                e
                @ (ToolError::Failed(_) | ToolError::InvalidArguments(_) | ToolError::NotFound(_)),
            )) => CallToolResult::error(e.to_string()),
            Ok(Ok(r)) => r,
        };
        if let Some(text) = result.forwarded.take() {
            // Passed on as it came (the tool checked it); only the id is this request's, and
            // a legacy client's result loses the modern `resultType` its tool asked to drop.
            let text = text.get();
            let dropped = result
                .forwarded_without_result_type
                .then(|| text.strip_prefix(toolwright_protocol::COMPLETE_FIRST))
                .flatten();
            let line = match dropped {
                Some(rest) => reply::forwarded_result_line(id, &["{", rest]),
                None => reply::forwarded_result_line(id, &[text]),
            };
            return Some(Reply::call(line, result.is_error()));
        }
        if !result.is_error() {
            if let Some(validator) = &entry.output {
                let Some(sc) = &result.structured_content else {
                    return internal(format!(
                        "tool {name} declares an outputSchema but returned no structuredContent"
                    ));
                };
                if let Err(v) = validator.validate(sc) {
                    let e = ErrorObject::internal(format!(
                        "tool {name} returned structuredContent that violates its outputSchema:\n{}",
                        toolwright_schema::format_violations(&v)
                    ))
                    .with_data(json!({"violations": v.iter().map(ToString::to_string).collect::<Vec<_>>()}));
                    return Some(Reply::error(Some(id), &e));
                }
            }
            if let Some(sc) = &result.structured_content
                && result.content.is_empty()
            {
                // The JSON as the tool wrote it when it kept numbers exact, else serialized.
                let text = match result.structured_text.take() {
                    Some(t) => Box::<str>::from(t.0).into_string(),
                    None => serde_json::to_string(sc).expect("a JSON value serializes"),
                };
                if era.version().has_structured_content() {
                    let line = structured_result_line(id, era, &text, &result);
                    *spent = result.structured_content;
                    return Some(Reply::result(line));
                }
                result.content = vec![Content::text(text)];
            }
        }
        if !era.version().has_structured_content() {
            result.structured_content = None;
        }
        Some(reply::call_result(id, era, &result))
    }
}
