//! A `tools/call` run as a task, and the methods of the Tasks extension: `tasks/get`,
//! `tasks/update`, `tasks/cancel` (what a task is and how it is kept: [`crate::task`]).

use crate::context::ToolContext;
use crate::era::Era;
use crate::error::ToolError;
use crate::registry::Entry;
use crate::reply::{Handled, Outcome, Reply, parse_required};
use crate::server::Server;
use crate::session::{Discard, Outbound, Session};
use crate::task::{EXTENSION, Status, Task};
use futures_util::FutureExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use toolwright_jsonrpc::{ErrorObject, RequestId, code};
use toolwright_protocol::{CallToolResult, ClientCapabilities, RequestMeta, TaskSupport};

/// How a tool may run, from its definition's `execution.taskSupport`.
pub(crate) fn support(entry: &Entry) -> TaskSupport {
    entry
        .definition
        .execution
        .as_ref()
        .and_then(|e| e.task_support)
        .unwrap_or_default()
}

/// Whether these capabilities list the Tasks extension.
pub(crate) fn declares_tasks(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(EXTENSION))
}

/// -32021 naming the extension `what` needs.
pub(crate) fn tasks_needed(what: &str) -> ErrorObject {
    ErrorObject::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "{what} needs the client capability extensions[\"{EXTENSION}\"], which this request \
             did not declare"
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
}

type Run =
    Pin<Box<dyn Future<Output = std::thread::Result<Result<CallToolResult, ToolError>>> + Send>>;

/// What a task's runs share: the call as it came.
pub(crate) struct TaskCall {
    pub session: Arc<Session>,
    pub id: RequestId,
    pub era: Era,
    pub entry: Arc<Entry>,
    pub args: Value,
    pub meta: RequestMeta,
    pub capabilities: Arc<ClientCapabilities>,
    pub arguments_text: Option<Box<RawValue>>,
}

impl TaskCall {
    /// One run of the tool, with the answers gathered so far.
    fn run(&self, server: &Server, task: &Task, answers: Map<String, Value>) -> (ToolContext, Run) {
        let sink: Arc<dyn Outbound> = Arc::new(Discard);
        let ctx = server.context(
            &self.session,
            &self.id,
            &self.era,
            self.meta.clone(),
            &sink,
            &task.cancel,
            self.capabilities.clone(),
            answers,
            self.arguments_text.clone(),
        );
        ctx.defer_questions();
        let entry = self.entry.clone();
        let (args, c) = (self.args.clone(), ctx.clone());
        let fut = async move {
            AssertUnwindSafe(entry.handler.call(args, c))
                .catch_unwind()
                .await
        };
        (ctx, Box::pin(fut))
    }
}

/// Why a `tasks/*` request reaches no task of this process.
enum Refusal {
    /// Refused with this error.
    Error(ErrorObject),
    /// This process has no such task for this caller.
    Missing { era: Era, task_id: String },
}

impl From<ErrorObject> for Refusal {
    fn from(e: ErrorObject) -> Self {
        Refusal::Error(e)
    }
}

impl From<Refusal> for ErrorObject {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Error(e) => e,
            Refusal::Missing { task_id, .. } => {
                ErrorObject::invalid_params(format!("Unknown task: {task_id}"))
            }
        }
    }
}

#[derive(Deserialize)]
struct TaskParams {
    #[serde(rename = "taskId")]
    task_id: String,
    #[serde(default, rename = "inputResponses")]
    input_responses: Option<Map<String, Value>>,
    #[serde(default, rename = "_meta")]
    meta: Option<RequestMeta>,
}

impl Server {
    fn task_settings(&self) -> (std::time::Duration, std::time::Duration) {
        let c = &self.inner.config;
        (c.task_ttl, c.task_poll_interval)
    }

    fn announce(&self, task: &Task) {
        let (ttl, poll) = self.task_settings();
        self.inner.tasks.announce(task, ttl, poll);
        self.mirror(task);
    }

    /// Copies the task to the [`TaskMirror`](crate::task::TaskMirror), if there is one.
    fn mirror(&self, task: &Task) {
        let cfg = &self.inner.config;
        let (Some(mirror), Ok(rt)) = (&cfg.task_mirror, tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let detailed = task.detailed(cfg.task_ttl, cfg.task_poll_interval);
        let keep = match detailed["status"].as_str() {
            Some("completed" | "failed" | "cancelled") => cfg.task_ttl,
            _ => cfg.task_ttl + cfg.task_timeout,
        };
        let record = json!({"owner": task.owner, "task": detailed}).to_string();
        let seq = task.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        rt.spawn(mirror.save(&task.id, seq, record, keep));
    }

    /// `tasks/get` for a task this process does not have: the mirror's copy, read as its
    /// owner may (-32602 when there is none).
    fn mirrored_get(
        &self,
        id: &RequestId,
        era: Era,
        task_id: String,
        owner: Option<String>,
    ) -> Result<Handled, ErrorObject> {
        let unknown = move |t: &str| ErrorObject::invalid_params(format!("Unknown task: {t}"));
        let Some(mirror) = self.inner.config.task_mirror.clone() else {
            return Err(unknown(&task_id));
        };
        let (server, id) = (self.clone(), id.clone());
        Ok(Handled::Later(Box::pin(async move {
            let record = mirror.load(&task_id).await;
            let found = record
                .and_then(|r| serde_json::from_str::<Value>(&r).ok())
                .filter(|r| r["owner"].as_str() == owner.as_deref())
                .map(|mut r| r["task"].take());
            Some(match found {
                Some(task) => server.task_reply(&id, &era, task),
                None => Reply::error(Some(&id), &unknown(&task_id)),
            })
        })))
    }

    /// A new task for a call, unless there is no runtime to run it on or the store is
    /// full: then `None` for a tool that may run either way (it runs as a plain call), and
    /// an error for one that runs only as a task.
    pub(crate) fn new_task(
        &self,
        session: &Session,
        tool: &str,
        support: TaskSupport,
    ) -> Result<Option<Arc<Task>>, ErrorObject> {
        let cfg = &self.inner.config;
        let owner = session.caller().and_then(|c| c.subject.clone());
        let task = tokio::runtime::Handle::try_current()
            .ok()
            .and_then(|_| self.inner.tasks.create(owner, cfg.task_ttl, cfg.max_tasks));
        match task {
            None if support == TaskSupport::Required => Err(ErrorObject::internal(format!(
                "tool {tool} runs only as a task, and this server cannot take another one now \
                 (it keeps at most {} tasks)",
                cfg.max_tasks
            ))),
            task => Ok(task),
        }
    }

    /// Runs a call as `task`. The tool is polled once here: a question it asks before
    /// anything asynchronous is answered on `tools/call` itself (a modern `input_required`
    /// result, and the task is dropped unseen); otherwise the reply is the
    /// `CreateTaskResult` of a task already in the store, and the tool goes on running on
    /// the runtime, tied to no request or connection.
    pub(crate) fn task_call(
        &self,
        call: TaskCall,
        task: Arc<Task>,
        answers: Map<String, Value>,
    ) -> Handled {
        let (ctx, mut fut) = call.run(self, &task, answers);
        let first = match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(o) => Some(o),
            Poll::Pending => None,
        };
        if first.is_some()
            && call.era.is_modern()
            && let Some(reply) = self.input_reply(
                &call.id,
                &call.era,
                &ctx,
                "tools/call",
                &call.entry.definition.name,
                Some(&call.args),
            )
        {
            // Questions first, on the call itself; the task is made on a later round.
            self.inner.tasks.remove(&task.id);
            return Handled::Reply(reply);
        }
        self.mirror(&task);
        let (ttl, poll) = self.task_settings();
        let reply = self.result(&call.id, &call.era, task.created(ttl, poll));
        let server = self.clone();
        tokio::spawn(server.drive_task(call, task, ctx, fut, first));
        Handled::Reply(reply)
    }

    /// Drives a task to its end: runs of the tool, questions parked until `tasks/update`
    /// answers them, then the outcome.
    async fn drive_task(
        self,
        call: TaskCall,
        task: Arc<Task>,
        mut ctx: ToolContext,
        mut fut: Run,
        mut first: Option<std::thread::Result<Result<CallToolResult, ToolError>>>,
    ) {
        let cfg = &self.inner.config;
        let deadline = tokio::time::Instant::now() + cfg.task_timeout;
        let timed_out = |what: &str| {
            let e = ErrorObject::new(
                code::REQUEST_TIMEOUT,
                format!(
                    "{what} did not finish within {:?} and was cancelled",
                    cfg.task_timeout
                ),
            );
            (
                Status::Failed,
                Some(("error", serde_json::to_value(&e).expect("serializes"))),
            )
        };
        let name = call.entry.definition.name.clone();
        let (status, outcome) = loop {
            let outcome = match first.take() {
                Some(o) => o,
                None => tokio::select! {
                    o = &mut fut => o,
                    _ = task.cancel.cancelled() => break (Status::Cancelled, None),
                    _ = tokio::time::sleep_until(deadline) => {
                        task.cancel.cancel();
                        break timed_out(&format!("tool {name}"));
                    }
                },
            };
            if task.cancel.is_cancelled() {
                break (Status::Cancelled, None);
            }
            if let Some(cap) = ctx.missing_capability() {
                let e = ErrorObject::new(
                    code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("tool {name} needs the client capability {cap}, which the request that made this task did not declare"),
                )
                .with_data(json!({"requiredCapabilities": {cap: {}}}));
                break (
                    Status::Failed,
                    Some(("error", serde_json::to_value(&e).expect("serializes"))),
                );
            }
            let asked = ctx.pending_inputs();
            if asked.is_empty() {
                break self.task_outcome(&call, &ctx, outcome);
            }
            {
                let mut s = task.state.lock();
                s.asked = asked;
                // What the tool keeps for its next run (a gateway's upstream task).
                if let Some(v) = ctx.take_carried() {
                    s.answers.insert(crate::mrtr::CARRIED.to_owned(), v);
                }
            }
            if task.set(Status::InputRequired, None, None) {
                self.announce(&task);
            }
            let answered = loop {
                tokio::select! {
                    _ = task.resume.notified() => {
                        if task.state.lock().asked.is_empty() { break true; }
                    }
                    _ = task.cancel.cancelled() => break false,
                    _ = tokio::time::sleep(cfg.task_ttl) => {
                        task.cancel.cancel();
                        break false;
                    }
                }
            };
            if !answered {
                if task.state.lock().status == Status::Cancelled {
                    break (Status::Cancelled, None);
                }
                break timed_out(&format!("an answer to tool {name}'s questions"));
            }
            if task.set(Status::Working, None, None) {
                self.announce(&task);
            }
            let answers = task.state.lock().answers.clone();
            (ctx, fut) = call.run(&self, &task, answers);
        };
        if task.set(status, None, outcome) {
            self.announce(&task);
        }
    }

    /// A finished run's outcome, through the pipeline of a plain call (output validated
    /// against `outputSchema`, errors shaped), as the task's `result` or `error`.
    fn task_outcome(
        &self,
        call: &TaskCall,
        ctx: &ToolContext,
        outcome: std::thread::Result<Result<CallToolResult, ToolError>>,
    ) -> (Status, Option<(&'static str, Value)>) {
        let mut spent = None;
        let modern_args = call.era.is_modern().then_some(&call.args);
        let reply = self.finish(
            &call.id,
            &call.era,
            &call.entry,
            ctx,
            modern_args,
            outcome,
            &mut spent,
        );
        let Some(reply) = reply else {
            return (Status::Cancelled, None);
        };
        let outcome = reply.outcome();
        let mut line: Value = match serde_json::from_slice(reply.line()) {
            Ok(v) => v,
            Err(e) => {
                let e = ErrorObject::internal(format!("the tool's reply does not read back: {e}"));
                return (
                    Status::Failed,
                    Some(("error", serde_json::to_value(&e).expect("serializes"))),
                );
            }
        };
        match outcome {
            Outcome::Result => (Status::Completed, Some(("result", line["result"].take()))),
            Outcome::Error(_) => (Status::Failed, Some(("error", line["error"].take()))),
        }
    }

    /// The era and the task a `tasks/*` request names, after its gate: the extension
    /// declared (else -32021), the task known to this process and this caller (else
    /// [`Refusal::Missing`]).
    fn task_request(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(Era, Arc<Task>, TaskParams), Refusal> {
        let p: TaskParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        if !declares_tasks(&self.client_caps(session, &era)) {
            return Err(tasks_needed(method).into());
        }
        let owner = session.caller().and_then(|c| c.subject.as_deref());
        match (self.inner.tasks).get(&p.task_id, owner, self.inner.config.task_ttl) {
            Some(task) => Ok((era, task, p)),
            None => Err(Refusal::Missing {
                era,
                task_id: p.task_id,
            }),
        }
    }

    fn task_reply(&self, id: &RequestId, era: &Era, mut value: Value) -> Reply {
        // `resultType` for a legacy client that took up the extension too.
        value["resultType"] = json!("complete");
        self.result(id, era, value)
    }

    /// `tasks/get`: the task, with its questions, result or error; a task another replica
    /// runs is read from the [`TaskMirror`](crate::task::TaskMirror), when there is one.
    pub(crate) fn tasks_get(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Handled, ErrorObject> {
        let (era, task, _) = match self.task_request(session, "tasks/get", params) {
            Err(Refusal::Missing { era, task_id }) => {
                let owner = session.caller().and_then(|c| c.subject.clone());
                return self.mirrored_get(id, era, task_id, owner);
            }
            other => other?,
        };
        let (ttl, poll) = self.task_settings();
        Ok(Handled::Reply(self.task_reply(
            id,
            &era,
            task.detailed(ttl, poll),
        )))
    }

    /// `tasks/update`: answers to the task's questions. Answers to questions it is not
    /// waiting for are ignored; once the round's last is answered, the tool runs again.
    pub(crate) fn tasks_update(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let (era, task, p) = self.task_request(session, "tasks/update", params)?;
        let responses = crate::mrtr::client_answers(p.input_responses);
        let resume = {
            let mut s = task.state.lock();
            if s.status == Status::InputRequired {
                let mut took = false;
                for (key, answer) in responses {
                    if s.asked.remove(&key).is_some() {
                        s.answers.insert(key, answer);
                        took = true;
                    }
                }
                if took {
                    s.updated = std::time::SystemTime::now();
                }
                took && s.asked.is_empty()
            } else {
                false
            }
        };
        if resume {
            task.resume.notify_one();
        }
        Ok(self.task_reply(id, &era, json!({})))
    }

    /// `tasks/cancel`: fires the tool's cancellation token and marks the task cancelled
    /// (nothing for a task that already ended).
    pub(crate) fn tasks_cancel(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let (era, task, _) = self.task_request(session, "tasks/cancel", params)?;
        if task.set(Status::Cancelled, None, None) {
            task.cancel.cancel();
            self.announce(&task);
        }
        Ok(self.task_reply(id, &era, json!({})))
    }
}
