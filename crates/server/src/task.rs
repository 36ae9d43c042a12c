//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a `tools/call` that
//! outlives its request.
//!
//! A tool says it may run as a task through its definition's `execution.taskSupport`
//! (`optional` or `required`; `forbidden`, the default, never). When a call to such a tool
//! comes from a client whose capabilities for that request (modern: `_meta`; legacy: its
//! `initialize`) list the extension, the server runs it as a task: the reply is a
//! `CreateTaskResult` (`resultType: "task"`, the task's id and status), sent once the task
//! is in this store, so a `tasks/get` right after it finds it. The tool then runs on the
//! server, tied to no request or connection: a client may hang up and poll from another.
//!
//! Questions the tool asks while it runs (elicitation, sampling, roots) park the task in
//! `input_required` with them in `inputRequests`; `tasks/update` answers them, and once
//! every question of the round has its answer the tool runs again from the start with all
//! answers so far (as a modern multi-round-trip retry would). A tool that asks before
//! anything asynchronous gets its question answered on `tools/call` itself first (the
//! ordinary `input_required` result): the task is made on the round that starts work.
//!
//! A task ends `completed` with the tool's result (a tool error is a completed task whose
//! result has `isError: true`), `failed` with a JSON-RPC error (the tool panicked, failed
//! inside, timed out), or `cancelled` (`tasks/cancel` fires the tool's cancellation token;
//! a tool that ignores it still ends as cancelled, and what it returns is dropped). A task
//! is kept for [`Config::task_ttl`](crate::Config::task_ttl) after its last change, then
//! forgotten; `tasks/get` for an unknown or forgotten id is -32602.

use crate::catalog::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

/// The extension's identifier, as capabilities name it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The tool is running.
    Working,
    /// The tool waits for answers (`inputRequests`, answered by `tasks/update`).
    InputRequired,
    /// The tool returned a result (maybe `isError: true`).
    Completed,
    /// The call ended in a JSON-RPC error.
    Failed,
    /// `tasks/cancel` stopped it.
    Cancelled,
}

impl Status {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// True once the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What changes in a task.
pub(crate) struct State {
    pub status: Status,
    pub message: Option<String>,
    pub updated: SystemTime,
    /// `("result", CallToolResult)` or `("error", ErrorObject)` once terminal.
    pub outcome: Option<(&'static str, Value)>,
    /// Questions of the current round still without an answer.
    pub asked: Map<String, Value>,
    /// Every answer so far (the tool's next run reads them).
    pub answers: Map<String, Value>,
}

/// Where tasks are copied so that other replicas of the server can read them (a shared
/// store such as Redis; `toolwright-sessions-redis` has one). The replica that runs a task
/// saves it at every change; another one loads it for `tasks/get` when it has no such task.
pub trait TaskMirror: std::fmt::Debug + Send + Sync + 'static {
    /// Saves `record` (opaque text) under `id`, unless the store holds a record of a later
    /// `seq` for it already; the store keeps it for `keep`.
    fn save(&self, id: &str, seq: u64, record: String, keep: Duration) -> BoxFuture<'static, ()>;

    /// The record saved under `id`, if the store has one.
    fn load(&self, id: &str) -> BoxFuture<'static, Option<String>>;
}

/// One task.
pub(crate) struct Task {
    pub id: String,
    /// Counts the task's saves to a [`TaskMirror`], so that a late one never overwrites a
    /// newer.
    pub seq: std::sync::atomic::AtomicU64,
    /// The verified subject of the caller that made it; only it may see the task.
    pub owner: Option<String>,
    pub created: SystemTime,
    pub state: Mutex<State>,
    /// Fired by `tasks/cancel`: the running tool's cancellation token.
    pub cancel: CancellationToken,
    /// Woken when `tasks/update` answered the last open question of a round.
    pub resume: Notify,
}

/// One change of a task: its owner (who may hear of it) and the task as `tasks/get` shows it.
pub(crate) type Change = (Option<String>, Value);

/// Every task of a server, and the stream of their changes for `subscriptions/listen`.
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, Arc<Task>>>,
    /// Each change of a task, as `notifications/tasks` params (made by the first listener
    /// that asks for tasks).
    changes: std::sync::OnceLock<broadcast::Sender<Change>>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            map: Mutex::new(HashMap::new()),
            changes: std::sync::OnceLock::new(),
        }
    }
}

/// A fresh task id: 128 random bits, hex; knowing it is what lets a client reach the task
/// (with the caller's identity when there is one).
fn fresh_id() -> String {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    data_encoding::HEXLOWER.encode(&bytes)
}

impl Tasks {
    /// Makes a task in `working`, unless `max` tasks are kept already (after forgetting the
    /// expired ones).
    pub fn create(&self, owner: Option<String>, ttl: Duration, max: usize) -> Option<Arc<Task>> {
        let now = SystemTime::now();
        let mut map = self.map.lock();
        map.retain(|_, t| !t.expired(now, ttl));
        if map.len() >= max {
            return None;
        }
        let task = Arc::new(Task {
            id: fresh_id(),
            seq: Default::default(),
            owner,
            created: now,
            state: Mutex::new(State {
                status: Status::Working,
                message: None,
                updated: now,
                outcome: None,
                asked: Map::new(),
                answers: Map::new(),
            }),
            cancel: CancellationToken::new(),
            resume: Notify::new(),
        });
        map.insert(task.id.clone(), task.clone());
        Some(task)
    }

    /// Forgets a task no client was told of.
    pub fn remove(&self, id: &str) {
        self.map.lock().remove(id);
    }

    /// The task `id`, if it is kept and `owner` may see it.
    pub fn get(&self, id: &str, owner: Option<&str>, ttl: Duration) -> Option<Arc<Task>> {
        let now = SystemTime::now();
        let mut map = self.map.lock();
        let task = map.get(id)?.clone();
        if task.expired(now, ttl) {
            map.remove(id);
            return None;
        }
        (task.owner.as_deref() == owner).then_some(task)
    }

    /// The receiver of task changes for one listen stream.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes
            .get_or_init(|| broadcast::channel(256).0)
            .subscribe()
    }

    /// Tells listeners that `task` changed.
    pub fn announce(&self, task: &Task, ttl: Duration, poll: Duration) {
        if let Some(tx) = self.changes.get()
            && tx.receiver_count() > 0
        {
            let _ = tx.send((task.owner.clone(), task.detailed(ttl, poll)));
        }
    }
}

impl Task {
    fn expired(&self, now: SystemTime, ttl: Duration) -> bool {
        let s = self.state.lock();
        s.status.is_terminal() && s.updated + ttl < now
    }

    /// Moves the task on (nothing once it is terminal). Returns whether it changed.
    pub fn set(
        &self,
        status: Status,
        message: Option<String>,
        outcome: Option<(&'static str, Value)>,
    ) -> bool {
        let mut s = self.state.lock();
        if s.status.is_terminal() {
            return false;
        }
        s.status = status;
        s.message = message;
        s.outcome = outcome;
        if status != Status::InputRequired {
            s.asked.clear();
        }
        s.updated = SystemTime::now();
        true
    }

    /// The fields every task message has: `taskId`, `status`, `statusMessage`,
    /// `createdAt`, `lastUpdatedAt`, `ttlMs`, `pollIntervalMs`.
    fn base(&self, s: &State, ttl: Duration, poll: Duration) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("taskId".into(), json!(self.id));
        m.insert("status".into(), json!(s.status.as_str()));
        if let Some(msg) = &s.message {
            m.insert("statusMessage".into(), json!(msg));
        }
        m.insert("createdAt".into(), json!(iso8601(self.created)));
        m.insert("lastUpdatedAt".into(), json!(iso8601(s.updated)));
        m.insert("ttlMs".into(), json!(ttl.as_millis() as u64));
        if !s.status.is_terminal() {
            m.insert(
                "pollIntervalMs".into(),
                json!(poll.as_millis().max(1) as u64),
            );
        }
        m
    }

    /// The `CreateTaskResult` of the `tools/call` that made it (`resultType` added by the
    /// writer).
    pub fn created(&self, ttl: Duration, poll: Duration) -> Value {
        let s = self.state.lock();
        let mut m = self.base(&s, ttl, poll);
        m.insert("resultType".into(), json!("task"));
        Value::Object(m)
    }

    /// What `tasks/get` answers: the task, with its open questions (`inputRequests`), its
    /// `result` or its `error`.
    pub fn detailed(&self, ttl: Duration, poll: Duration) -> Value {
        let s = self.state.lock();
        let mut m = self.base(&s, ttl, poll);
        if s.status == Status::InputRequired {
            m.insert("inputRequests".into(), Value::Object(s.asked.clone()));
        }
        if let Some((key, v)) = &s.outcome {
            m.insert((*key).into(), v.clone());
        }
        Value::Object(m)
    }
}

/// `t` as an ISO 8601 UTC timestamp with milliseconds (`2026-07-28T12:00:00.000Z`).
pub(crate) fn iso8601(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn timestamps() {
        let at = |ms: u64| iso8601(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(at(1_785_240_000_000), "2026-07-28T12:00:00.000Z");
    }

    #[test]
    fn a_task_is_found_by_its_owner_only_and_forgotten_after_its_ttl() {
        let tasks = Tasks::default();
        let ttl = Duration::from_millis(50);
        let t = tasks.create(Some("alice".into()), ttl, 10).unwrap();
        assert!(tasks.get(&t.id, Some("alice"), ttl).is_some());
        assert!(tasks.get(&t.id, Some("bob"), ttl).is_none());
        assert!(tasks.get(&t.id, None, ttl).is_none());
        // A running task never expires; a finished one does, after its ttl.
        std::thread::sleep(Duration::from_millis(60));
        assert!(tasks.get(&t.id, Some("alice"), ttl).is_some());
        assert!(t.set(Status::Completed, None, Some(("result", json!({})))));
        assert!(!t.set(Status::Cancelled, None, None), "terminal is final");
        std::thread::sleep(Duration::from_millis(60));
        assert!(tasks.get(&t.id, Some("alice"), ttl).is_none());
    }

    #[test]
    fn no_more_than_max_tasks_are_kept() {
        let tasks = Tasks::default();
        let ttl = Duration::from_secs(60);
        assert!(tasks.create(None, ttl, 1).is_some());
        assert!(tasks.create(None, ttl, 1).is_none());
    }

    #[test]
    fn wire_shapes() {
        let tasks = Tasks::default();
        let (ttl, poll) = (Duration::from_secs(60), Duration::from_millis(500));
        let t = tasks.create(None, ttl, 10).unwrap();
        let c = t.created(ttl, poll);
        assert_eq!(c["resultType"], "task");
        assert_eq!(c["status"], "working");
        assert_eq!(c["ttlMs"], 60_000);
        assert_eq!(c["pollIntervalMs"], 500);
        assert!(c.get("result").is_none() && c.get("inputRequests").is_none());
        t.state.lock().asked.insert(
            "elicitation-0".into(),
            json!({"method": "elicitation/create"}),
        );
        t.set(Status::InputRequired, None, None);
        let d = t.detailed(ttl, poll);
        assert_eq!(
            d["inputRequests"]["elicitation-0"]["method"],
            "elicitation/create"
        );
        t.set(
            Status::Failed,
            None,
            Some(("error", json!({"code": -32603}))),
        );
        let d = t.detailed(ttl, poll);
        assert_eq!(d["error"]["code"], -32603);
        assert!(d.get("inputRequests").is_none() && d.get("pollIntervalMs").is_none());
    }
}
