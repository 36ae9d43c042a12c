//! A legacy upstream's questions to a modern client: the upstream call kept waiting
//! across the client's round trip.
//!
//! A legacy upstream asks its questions (`elicitation/create`, `sampling/createMessage`,
//! `roots/list` under `roots: client`) in the middle of a call, as requests, and waits for
//! the answers. A modern client cannot be sent a request: it is asked by ending its call
//! with `input_required` and reads the answers from its retry. So a call forwarded for a
//! modern client to a legacy upstream is [`Bridged`]: the upstream's questions come to the
//! call through a channel instead of being answered where they arrive, and when the client
//! must answer one, the upstream call is *parked* (its request in flight moved into a task
//! of its own, the question's answer still owed) under a random token, the token is sealed
//! into the `requestState` ([`ToolContext::carry`]), and the call ends with
//! `input_required`. The retry brings the token back: the parked call is taken out, the
//! upstream's question gets the client's answer, and the same upstream call goes on, to
//! its result or to its next question (another round).
//!
//! The table of parked calls is bounded ([`MAX_PARKED`]) and each call waits at most
//! [`PARK_TTL`]: a client that never retries costs nothing after that (its question is
//! answered with an error and the upstream call cancelled). The upstream call's own timeout
//! (`timeout:` of its server, else the call timeout) keeps running while it waits. A retry
//! that finds nothing (another replica, an expired call, a table that was full) or finds
//! the call ended (timed out meanwhile) runs the upstream call again, which asks again and
//! this time is answered at once from the retry's answers.

use crate::upstream::{Offered, Upstream};
use parking_lot::Mutex;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolwright_client::{BoxFuture, Call, ClientError, Peer, PeerHandler, ProgressFn};
use toolwright_jsonrpc::{ErrorObject, code};
use toolwright_server::{ClientRequestError, ToolContext, ToolError};

/// How many upstream calls may wait for their clients' retries at once; past it a call is
/// ended upstream and its retry runs it again.
pub(crate) const MAX_PARKED: usize = 256;

/// How long a parked call waits for its client's retry (the sealed `requestState` lives
/// 10 minutes by default; a retry after that is refused anyway).
pub(crate) const PARK_TTL: Duration = Duration::from_secs(600);

/// Questions an upstream may have queued for one call before it waits to queue more.
const QUEUED_QUESTIONS: usize = 16;

/// The upstream calls waiting for their clients' retries, by token.
static PARKED: LazyLock<Parked<Bridged>> = LazyLock::new(|| Parked::new(MAX_PARKED));

/// What an upstream's question is answered with.
type Answer = Result<Value, ErrorObject>;

/// The upstream's answer to the forwarded call.
type CallFuture = Pin<Box<dyn Future<Output = Result<Box<RawValue>, ClientError>> + Send>>;

/// A question the upstream asked during the call, and where its answer goes.
struct Question {
    method: String,
    params: Value,
    reply: oneshot::Sender<Answer>,
}

/// One call forwarded for a modern client to a legacy upstream.
pub(crate) struct Bridged {
    /// The upstream's answer: the request itself until the call is first parked, then the
    /// task that runs it.
    call: CallFuture,
    spawned: bool,
    /// Set by the task once the upstream call ended (it is only ever set while parked).
    ended: Arc<AtomicBool>,
    /// The upstream's questions, as they come.
    questions: mpsc::Receiver<Question>,
    /// How many questions were put to the client in this call. Each round counts them
    /// again first, so that [`ToolContext::request_client`] numbers the waiting ones as it
    /// did when they were first asked and finds the client's answers under those keys.
    asked: usize,
    /// The last of the questions asked, whose answers the upstream still waits for.
    waiting: Vec<Question>,
    /// Cancels the upstream call; fired when this is dropped.
    cancel: CancellationToken,
    /// This round's context, which the upstream's progress is relayed to (none while
    /// parked).
    relay: Arc<Mutex<Option<ToolContext>>>,
    /// The exposed tool and its server: a parked call resumes only for the same.
    owner: String,
}

impl Drop for Bridged {
    fn drop(&mut self) {
        // Finished, cancelled, expired or not parkable: nothing waits for the upstream any
        // more. The questions still owed an answer get an error as their senders drop.
        self.cancel.cancel();
    }
}

/// What asking the client the waiting questions came to.
enum Asked {
    /// Every question was answered (or refused) and the answer sent upstream.
    Answered,
    /// At least one is for the client to answer on its retry.
    Later,
}

impl Bridged {
    /// Starts `call` on `peer` for the modern client of `ctx`: the upstream's questions
    /// come to this call ([`Bridged::outcome`] asks them), and its progress goes to the
    /// client of the round in progress. `owner` names the exposed tool and its server.
    pub(crate) fn start(
        peer: &Peer,
        mut call: Call,
        ctx: &ToolContext,
        upstream: &Arc<Upstream>,
        owner: String,
    ) -> Bridged {
        let (tx, questions) = mpsc::channel(QUEUED_QUESTIONS);
        let relay = Arc::new(Mutex::new(Some(ctx.clone())));
        let cancel = CancellationToken::new();
        call.on_request = Some(Arc::new(Relay {
            questions: tx,
            upstream: upstream.clone(),
        }));
        call.cancel = Some(cancel.clone());
        if call.progress.is_some() {
            call.progress = Some(progress_to(relay.clone()));
        }
        let peer = peer.clone();
        Bridged {
            call: Box::pin(async move { peer.request_raw(&call).await }),
            spawned: false,
            ended: Arc::default(),
            questions,
            asked: 0,
            waiting: Vec::new(),
            cancel,
            relay,
            owner,
        }
    }

    /// The call an earlier round of this one parked, when `ctx` carries its token and this
    /// gateway still holds it for `owner`. One that ended while it waited (the upstream's
    /// own timeout ran out, it gave up on its question, it died) is dropped: the retry runs
    /// the call again, as it would have before the call was kept.
    pub(crate) fn resume(ctx: &ToolContext, owner: &str) -> Option<Bridged> {
        let token = ctx.carried()?.as_str()?;
        let parked = PARKED.take(token, owner)?;
        (!parked.ended.load(Ordering::Acquire)).then_some(parked)
    }

    /// Waits for the upstream's answer to the call, answering its questions on the way
    /// with what this round's client said. `Err(ToolError::InputRequired)` when the client
    /// must answer one first: the call is parked for the retry (or, when it cannot be,
    /// ended upstream, and the retry runs it again).
    pub(crate) async fn outcome(
        mut self,
        ctx: &ToolContext,
    ) -> Result<Result<Box<RawValue>, ClientError>, ToolError> {
        *self.relay.lock() = Some(ctx.clone());
        if !self.waiting.is_empty() {
            self.replay_answered(ctx);
            if let Asked::Later = self.ask_waiting(ctx).await {
                return Err(self.park(ctx));
            }
        }
        let cancelled = ctx.cancellation().clone();
        loop {
            tokio::select! {
                biased;
                () = cancelled.cancelled() => return Err(ToolError::Cancelled),
                outcome = &mut self.call => return Ok(outcome),
                Some(q) = self.questions.recv() => {
                    self.push(ctx, q);
                    // Questions asked together go to the client together.
                    while let Ok(q) = self.questions.try_recv() {
                        self.push(ctx, q);
                    }
                    if let Asked::Later = self.ask_waiting(ctx).await {
                        return Err(self.park(ctx));
                    }
                }
            }
        }
    }

    /// Takes a new question: refused at once when this round's client did not declare
    /// what it needs (which must not fail the call on the client's side), else waiting.
    fn push(&mut self, ctx: &ToolContext, q: Question) {
        if let Some((cap, false)) = ctx.capability_for(&q.method) {
            let _ = q.reply.send(Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("the gateway's client did not declare the {cap} capability"),
            )));
            return;
        }
        self.asked += 1;
        self.waiting.push(q);
    }

    /// Counts, in order, the questions of earlier rounds that were answered then, so that
    /// the waiting ones get the keys they were first asked under.
    fn replay_answered(&self, ctx: &ToolContext) {
        // Answered and sent upstream already: only their places in the order count.
        for _ in 0..self.asked - self.waiting.len() {
            ctx.skip_client_request();
        }
    }

    /// Asks this round's client the waiting questions; sends upstream every answer it has.
    async fn ask_waiting(&mut self, ctx: &ToolContext) -> Asked {
        let mut later = Vec::new();
        for q in std::mem::take(&mut self.waiting) {
            if q.reply.is_closed() {
                // Withdrawn by the upstream meanwhile: nobody waits for the answer, and the
                // client is not asked (again).
                ctx.skip_client_request();
                continue;
            }
            let answer = match ctx.request_client(&q.method, q.params.clone()).await {
                Ok(v) => Ok(v),
                Err(ClientRequestError::InputRequired) => {
                    later.push(q);
                    continue;
                }
                Err(ClientRequestError::NotSupported(cap)) => Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    format!("the gateway's client did not declare the {cap} capability"),
                )),
                Err(e) => Err(ErrorObject::internal(format!(
                    "the gateway's client could not answer {}: {e}",
                    q.method
                ))),
            };
            let _ = q.reply.send(answer);
        }
        self.waiting = later;
        match self.waiting.is_empty() {
            true => Asked::Answered,
            false => Asked::Later,
        }
    }

    /// Parks the call for the client's retry and says so with `InputRequired` (the
    /// questions are in `ctx`). A call that cannot be parked (no runtime to run it on, the
    /// table full) is dropped, which ends it upstream: the retry runs it again.
    fn park(mut self, ctx: &ToolContext) -> ToolError {
        *self.relay.lock() = None;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return ToolError::InputRequired;
        };
        if PARKED.is_full() {
            tracing::warn!(
                parked = MAX_PARKED,
                "too many upstream calls wait for their clients; this one is ended and its retry runs it again"
            );
            return ToolError::InputRequired;
        }
        if !self.spawned {
            let request = std::mem::replace(&mut self.call, Box::pin(std::future::pending()));
            let ended = self.ended.clone();
            let task = runtime.spawn(async move {
                let outcome = request.await;
                ended.store(true, Ordering::Release);
                outcome
            });
            self.call = Box::pin(async move {
                task.await.unwrap_or_else(|_| {
                    Err(ClientError::Cancelled {
                        method: "tools/call".into(),
                    })
                })
            });
            self.spawned = true;
        }
        let token = new_token();
        ctx.carry(Value::String(token.clone()));
        let owner = self.owner.clone();
        if PARKED.put(token.clone(), owner, self) {
            runtime.spawn(async move {
                tokio::time::sleep(PARK_TTL).await;
                if let Some(parked) = PARKED.take_any(&token) {
                    parked.expire();
                }
            });
        }
        ToolError::InputRequired
    }

    /// The client never retried: the upstream's questions are answered with an error, and
    /// dropping the call cancels it upstream.
    fn expire(mut self) {
        for q in self.waiting.drain(..) {
            let _ = q.reply.send(Err(ErrorObject::internal(format!(
                "the gateway's client did not answer {} within {} s",
                q.method,
                PARK_TTL.as_secs()
            ))));
        }
    }
}

/// A fresh token: 128 random bits, hex.
fn new_token() -> String {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    data_encoding::HEXLOWER.encode(&bytes)
}

/// The upstream's progress, relayed to the client of the round in progress.
fn progress_to(relay: Arc<Mutex<Option<ToolContext>>>) -> ProgressFn {
    Arc::new(move |p: f64, total: Option<f64>, message: Option<String>| {
        if let Some(ctx) = relay.lock().as_ref() {
            ctx.progress(p, total, message.as_deref());
        }
    })
}

/// The answer to an upstream's `roots/list` that does not involve the client: its own
/// directories or nothing; `None` when its entry says `roots: client`.
pub(crate) fn roots_of_its_own(method: &str, upstream: &Upstream) -> Option<Answer> {
    if method != "roots/list" {
        return None;
    }
    match upstream.roots() {
        Offered::Client => None,
        Offered::Dirs(_) | Offered::None => Some(upstream.roots_outside_call()),
    }
}

/// The handler of a bridged call's upstream requests: each becomes a [`Question`] for the
/// call, and its answer the response.
struct Relay {
    questions: mpsc::Sender<Question>,
    upstream: Arc<Upstream>,
}

impl PeerHandler for Relay {
    fn request(&self, method: String, params: Value) -> BoxFuture<'static, Answer> {
        if let Some(answer) = roots_of_its_own(&method, &self.upstream) {
            return Box::pin(async move { answer });
        }
        let questions = self.questions.clone();
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let question = Question {
                method,
                params,
                reply,
            };
            if questions.send(question).await.is_err() {
                return Err(ErrorObject::internal(
                    "the gateway's call this was asked in has ended",
                ));
            }
            answer.await.unwrap_or_else(|_| {
                Err(ErrorObject::internal(
                    "the gateway's call ended before its client answered",
                ))
            })
        })
    }
}

/// Parked calls by token, each with the owner it resumes for, at most `max`.
struct Parked<T> {
    max: usize,
    calls: Mutex<HashMap<String, (String, T)>>,
}

impl<T> Parked<T> {
    fn new(max: usize) -> Parked<T> {
        Parked {
            max,
            calls: Mutex::new(HashMap::new()),
        }
    }

    fn is_full(&self) -> bool {
        self.calls.lock().len() >= self.max
    }

    /// Parks `call` for `owner`; false (and `call` dropped, which ends it) when the table
    /// is full.
    fn put(&self, token: String, owner: String, call: T) -> bool {
        let mut calls = self.calls.lock();
        if calls.len() >= self.max {
            return false;
        }
        calls.insert(token, (owner, call));
        true
    }

    /// The call parked under `token` for `owner`.
    fn take(&self, token: &str, owner: &str) -> Option<T> {
        let mut calls = self.calls.lock();
        if calls.get(token)?.0 != owner {
            return None;
        }
        calls.remove(token).map(|(_, call)| call)
    }

    /// The call parked under `token`, whoever it is for.
    fn take_any(&self, token: &str) -> Option<T> {
        self.calls.lock().remove(token).map(|(_, call)| call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_call_is_taken_once_by_its_owner() {
        let parked = Parked::new(2);
        assert!(parked.put("t1".into(), "a".into(), 1));
        assert_eq!(parked.take("t1", "b"), None, "another tool's retry");
        assert_eq!(parked.take("t1", "a"), Some(1));
        assert_eq!(parked.take("t1", "a"), None, "taken already");
        assert_eq!(parked.take("nope", "a"), None);
    }

    #[test]
    fn the_table_is_bounded_and_expiry_takes_any() {
        let parked = Parked::new(2);
        assert!(parked.put("t1".into(), "a".into(), 1));
        assert!(!parked.is_full());
        assert!(parked.put("t2".into(), "b".into(), 2));
        assert!(parked.is_full());
        assert!(!parked.put("t3".into(), "a".into(), 3), "full");
        assert_eq!(parked.take_any("t2"), Some(2));
        assert!(parked.put("t3".into(), "a".into(), 3));
        assert_eq!(parked.take("t3", "a"), Some(3));
    }

    #[test]
    fn tokens_are_128_bits_of_hex_and_differ() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
