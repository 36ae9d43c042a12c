//! An upstream call the upstream runs as a task (the `io.modelcontextprotocol/tasks`
//! extension, SEP-2663), driven to its end inside the gateway tool.
//!
//! The gateway takes up the extension with every upstream ([`crate::upstream`]), so an
//! upstream that supports it may answer a `tools/call` with a `CreateTaskResult`
//! (`resultType: "task"` and a `taskId`) instead of the tool's result. The gateway tool then
//! polls the upstream's `tasks/get` (every `pollIntervalMs`, kept between
//! [`MIN_POLL`] and [`MAX_POLL`]) until the task ends, and returns what it ended with:
//! `completed` gives the tool's result, passed on as a plain call's would be; `failed` its
//! JSON-RPC error, as an internal error of this call; `cancelled` an error that says so.
//!
//! The gateway's own client never sees the upstream's task: a client that took up the
//! extension with the gateway gets a task of the gateway's (the server runs the gateway
//! tool as one), and any other client a plain call that lasts until the upstream's task
//! ends.
//!
//! Questions the task parks on (`input_required`, with `inputRequests`) are asked of this
//! call's client ([`ToolContext::request_client_as`], under keys that name the round, so
//! answers of one round are never taken for another's) and answered upstream with
//! `tasks/update`. A client that answers only on a later run of this call (a modern client's
//! retry, or `tasks/update` on the gateway's own task) gets the upstream task's id kept for
//! that run ([`ToolContext::carry`]): the run goes back to polling the same upstream task,
//! which does not start over.
//!
//! When this call is cancelled or given up (the client's `notifications/cancelled`,
//! `tasks/cancel` on the gateway's task, a timeout), `tasks/cancel` is sent upstream.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use toolwright_client::{Call, ClientError, Observer, Peer};
use toolwright_jsonrpc::ErrorObject;
use toolwright_server::{ClientRequestError, ToolContext, ToolError};

/// The shortest wait between two polls of an upstream task.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(50);
/// The longest wait between two polls of an upstream task.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(5);
/// The wait between polls when the upstream names none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// How long `tasks/cancel` upstream may take once this call is cancelled.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);
/// The member of the carried value ([`ToolContext::carry`]) naming the upstream task.
const CARRIED_TASK: &str = "upstreamTask";
/// The member of the carried value counting the rounds of questions answered.
const CARRIED_ROUND: &str = "round";

/// The upstream task a run of this call goes on with, as an earlier run kept it.
pub(crate) struct Resumed {
    /// The upstream's task id.
    pub(crate) task_id: String,
    /// The round of questions the task is at.
    pub(crate) round: u64,
}

impl Resumed {
    /// What an earlier run of this call kept, if it kept an upstream task.
    pub(crate) fn from_context(ctx: &ToolContext) -> Option<Resumed> {
        let carried = ctx.carried()?;
        Some(Resumed {
            task_id: carried.get(CARRIED_TASK)?.as_str()?.to_owned(),
            round: carried
                .get(CARRIED_ROUND)
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    }
}

/// What the gateway reads of an upstream's `tasks/get` answer.
#[derive(Deserialize)]
struct Polled {
    status: String,
    #[serde(rename = "statusMessage", default)]
    status_message: Option<String>,
    #[serde(rename = "pollIntervalMs", default)]
    poll_interval_ms: Option<u64>,
    #[serde(rename = "inputRequests", default)]
    input_requests: Option<Map<String, Value>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// One upstream task, as this call drives it.
pub(crate) struct UpstreamTask<'a> {
    /// The connection the task was made on.
    pub(crate) peer: &'a Peer,
    /// The upstream's task id.
    pub(crate) task_id: String,
    /// The upstream server's name (for messages).
    pub(crate) server: &'a str,
    /// The tool's name upstream (for messages).
    pub(crate) tool: &'a str,
    /// The round of questions the task is at.
    pub(crate) round: u64,
    /// What watches the requests made for the task.
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// The most this call waits for the task (the server's call timeout), if anything.
    pub(crate) timeout: Option<Duration>,
}

/// Cancels the upstream task when the call is given up before the task ended: dropped
/// (the gateway's task cancelled, the client gone) or cancelled while it waited.
struct CancelGuard {
    peer: Peer,
    task_id: String,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (peer, id) = (self.peer.clone(), self.task_id.clone());
        rt.spawn(async move {
            let call = Call {
                timeout: Some(CANCEL_TIMEOUT),
                name: Some(id.clone()),
                ..Call::new("tasks/cancel", json!({"taskId": id}))
            };
            if let Err(e) = peer.request(call).await {
                tracing::debug!(task = %id, "tasks/cancel upstream failed: {e}");
            }
        });
    }
}

impl UpstreamTask<'_> {
    /// A request about the task.
    fn call(&self, method: &'static str, params: Value) -> Call {
        Call {
            name: Some(self.task_id.clone()),
            observer: self.observer.clone(),
            ..Call::new(method, params)
        }
    }

    fn failure(&self, what: &str, e: &ClientError) -> ToolError {
        ToolError::Failed(format!(
            "upstream {} ran {} as task {}, and {what} failed: {e}",
            self.server, self.tool, self.task_id
        ))
    }

    /// Polls the task until it ends, answering its questions on the way; its result as
    /// the upstream wrote it.
    pub(crate) async fn finish(mut self, ctx: &ToolContext) -> Result<Box<RawValue>, ToolError> {
        let mut guard = CancelGuard {
            peer: self.peer.clone(),
            task_id: self.task_id.clone(),
            armed: true,
        };
        let deadline = self.timeout.map(|t| tokio::time::Instant::now() + t);
        let cancel = ctx.cancellation().clone();
        // The keys answered in the last round: a poll that still shows them (the upstream
        // has not taken the answers in yet) waits for the next.
        let mut answered: BTreeSet<String> = BTreeSet::new();
        loop {
            let get = self.call("tasks/get", json!({"taskId": self.task_id}));
            let polled = tokio::select! {
                r = self.peer.request_raw(&get) => r,
                () = cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            let raw = polled.map_err(|e| self.failure("tasks/get", &e))?;
            let p: Polled = serde_json::from_str(raw.get()).map_err(|e| {
                ToolError::Failed(format!(
                    "upstream {} answered tasks/get for task {} with something that is not a task: {e}",
                    self.server, self.task_id
                ))
            })?;
            match p.status.as_str() {
                "completed" => {
                    guard.armed = false;
                    return p.result.ok_or_else(|| {
                        ToolError::Failed(format!(
                            "upstream {} says task {} completed, without a result",
                            self.server, self.task_id
                        ))
                    });
                }
                "failed" => {
                    guard.armed = false;
                    return Err(ToolError::Internal(match p.error {
                        Some(e) => format!(
                            "the task running {} on upstream {} failed: {} ({})",
                            self.tool, self.server, e.message, e.code
                        ),
                        None => format!(
                            "the task running {} on upstream {} failed{}",
                            self.tool,
                            self.server,
                            p.status_message
                                .map(|m| format!(": {m}"))
                                .unwrap_or_default()
                        ),
                    }));
                }
                "cancelled" => {
                    guard.armed = false;
                    return Err(ToolError::Failed(format!(
                        "upstream {} cancelled the task running {}{}",
                        self.server,
                        self.tool,
                        p.status_message
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    )));
                }
                "input_required" => {
                    let asked = p.input_requests.clone().unwrap_or_default();
                    let fresh = !asked.is_empty() && asked.keys().any(|k| !answered.contains(k));
                    if fresh {
                        let answers = self.ask(&asked, ctx).await.inspect_err(|e| {
                            if matches!(e, ToolError::InputRequired) {
                                // The answers come on a later run, which goes on with
                                // this task.
                                guard.armed = false;
                            }
                        })?;
                        let update = self.call(
                            "tasks/update",
                            json!({"taskId": self.task_id, "inputResponses": answers}),
                        );
                        self.peer
                            .request(update)
                            .await
                            .map_err(|e| self.failure("tasks/update", &e))?;
                        answered = asked.keys().cloned().collect();
                        self.round += 1;
                        continue;
                    }
                }
                _ => {}
            }
            let wait = p
                .poll_interval_ms
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            let timer = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancel.cancelled() => return Err(ToolError::Cancelled),
                () = timer => return Err(ToolError::Failed(format!(
                    "the task running {} on upstream {} did not end within {:?}, so it was cancelled",
                    self.tool, self.server, self.timeout.unwrap_or_default()
                ))),
            }
        }
    }

    /// Asks this call's client the task's questions of this round, every one before giving
    /// up, so that a client answering on a later run gets them all at once.
    async fn ask(
        &self,
        asked: &Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<Map<String, Value>, ToolError> {
        let mut answers = Map::new();
        let mut deferred = false;
        for (key, request) in asked {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            let own_key = format!("upstream-task-{}-{key}", self.round);
            match ctx.request_client_as(&own_key, method, params).await {
                Ok(answer) => {
                    answers.insert(key.clone(), answer);
                }
                Err(ClientRequestError::InputRequired) => deferred = true,
                Err(e) => {
                    return Err(ToolError::Failed(format!(
                        "the task running {} on upstream {} asked the client ({method}), which failed: {e}",
                        self.tool, self.server
                    )));
                }
            }
        }
        if deferred {
            ctx.carry(json!({CARRIED_TASK: self.task_id, CARRIED_ROUND: self.round}));
            return Err(ToolError::InputRequired);
        }
        Ok(answers)
    }
}
