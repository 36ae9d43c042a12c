//! Connection state: the legacy handshake, requests in flight, and requests the server
//! sends to the client.
//!
//! A [`Session`] is one stdio process or one Streamable HTTP session. Legacy clients
//! negotiate a version on it with `initialize`; modern requests use it only for
//! cancellation (each modern request describes itself).

use crate::caller::Caller;
use crate::error::ClientRequestError;
use crate::view::View;
use parking_lot::Mutex;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{ErrorObject, RequestId};
use toolwright_protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};
use toolwright_telemetry::{SessionGuard, Transport};

/// Where a server writes messages for a client: one complete, `\n`-terminated JSON-RPC
/// message per call. Implementations must not block for long.
pub trait Outbound: Send + Sync + 'static {
    /// Sends one message.
    fn send(&self, line: Vec<u8>);

    /// Ends the stream this sink feeds before the reply comes, telling the client to
    /// reconnect after `retry` to receive the rest (SSE polling, 2025-11-25); later messages
    /// wait for that reconnection. Returns false when the transport cannot do that, which is
    /// the default (stdio, a modern request, a stream that cannot be resumed).
    fn close_stream(&self, _retry: std::time::Duration) -> bool {
        false
    }

    /// False when requests to the client cannot travel on this sink (an HTTP POST whose
    /// client accepts only `application/json`, so its reply is the only message it can
    /// get): a tool's request to the client then fails at once with
    /// [`ClientRequestError::NoChannel`] instead of
    /// waiting for an answer that cannot come. True by default.
    fn carries_requests(&self) -> bool {
        true
    }
}

/// An [`Outbound`] that drops every message: for requests handled outside any connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl Outbound for Discard {
    fn send(&self, _: Vec<u8>) {}
}

/// What the legacy handshake settled.
#[derive(Debug, Clone)]
pub struct Negotiated {
    /// The version both sides speak.
    pub version: ProtocolVersion,
    /// What the client said it can do.
    pub client_capabilities: Arc<ClientCapabilities>,
    /// Who the client said it is.
    pub client_info: Implementation,
}

type Pending = oneshot::Sender<Result<Box<RawValue>, ErrorObject>>;

/// One client connection's state.
pub struct Session {
    negotiated: OnceLock<Negotiated>,
    initialized: AtomicBool,
    log_level: AtomicU8,
    inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    pending: Mutex<HashMap<i64, Pending>>,
    next_id: AtomicI64,
    outbound: Arc<dyn Outbound>,
    closed: CancellationToken,
    roots_cache: Mutex<Option<Arc<Vec<String>>>>,
    subscriptions: Mutex<std::collections::HashSet<String>>,
    /// `subscriptions/listen` streams open now.
    listens: std::sync::atomic::AtomicUsize,
    /// How the session's messages travel and the id its transport gave it, for telemetry.
    label: OnceLock<(Transport, Option<Arc<str>>)>,
    /// Telemetry's record of the session, from its `initialize` to its end.
    observed: Mutex<Option<SessionGuard>>,
    /// Who the session speaks for, as its transport verified it (none over stdio).
    caller: OnceLock<Arc<Caller>>,
    /// The access token of the session's latest request (see [`Session::set_token`]).
    token: Mutex<Option<crate::SubjectToken>>,
    /// The view the session was given (none: every tool).
    view: OnceLock<Arc<View>>,
    /// The address of the client that opened it (none over stdio).
    address: OnceLock<std::net::IpAddr>,
}

impl Session {
    /// A new session whose unsolicited messages (list changes, requests to the client) go
    /// to `outbound`.
    pub fn new(outbound: Arc<dyn Outbound>) -> Arc<Self> {
        Arc::new(Session {
            negotiated: OnceLock::new(),
            initialized: AtomicBool::new(false),
            log_level: AtomicU8::new(LoggingLevel::Debug.to_u8()),
            inflight: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            outbound,
            closed: CancellationToken::new(),
            roots_cache: Mutex::new(None),
            subscriptions: Mutex::new(Default::default()),
            listens: Default::default(),
            label: OnceLock::new(),
            observed: Mutex::new(None),
            caller: OnceLock::new(),
            token: Mutex::new(None),
            view: OnceLock::new(),
            address: OnceLock::new(),
        })
    }

    /// Binds the session to `caller`, the identity its transport verified (an HTTP
    /// request's access token). Only the first call counts: a legacy session stays bound to
    /// the identity of its `initialize`. False if the session had one already.
    pub fn set_caller(&self, caller: Arc<Caller>) -> bool {
        self.caller.set(caller).is_ok()
    }

    /// Records the access token the session's current request presented, for tools that
    /// exchange it (the gateway's `exchange:` upstreams). Each request of a session sets
    /// it again (a client renews its token), and all of them speak for the subject the
    /// session is bound to. A token that speaks for no authorization server's user (an API
    /// key) is never set.
    pub fn set_token(&self, token: crate::SubjectToken) {
        *self.token.lock() = Some(token);
    }

    /// The token [`Session::set_token`] recorded last.
    pub fn token(&self) -> Option<crate::SubjectToken> {
        self.token.lock().clone()
    }

    /// Gives the session `view`: its `tools/list` shows only the view's tools, and a call
    /// to any other is answered as a call to an unknown tool. Only the first call counts.
    pub fn set_view(&self, view: Arc<View>) -> bool {
        self.view.set(view).is_ok()
    }

    /// Records the address of the client that opened the session (limits key an anonymous
    /// caller by it). Only the first call counts.
    pub fn set_address(&self, address: std::net::IpAddr) {
        let _ = self.address.set(address);
    }

    /// The address [`Session::set_address`] recorded.
    pub fn address(&self) -> Option<std::net::IpAddr> {
        self.address.get().copied()
    }

    /// The view [`Session::set_view`] gave.
    pub fn view(&self) -> Option<&Arc<View>> {
        self.view.get()
    }

    /// The identity [`Session::set_caller`] bound the session to.
    pub fn caller(&self) -> Option<&Arc<Caller>> {
        self.caller.get()
    }

    /// Says how the session's messages travel (stdio, the default, or HTTP) and which id
    /// the transport gave it (`Mcp-Session-Id`), for telemetry's `network.transport` and
    /// `mcp.session.id`. Only the first call counts.
    pub fn set_label(&self, transport: Transport, id: Option<&str>) {
        let _ = self.label.set((transport, id.map(Arc::from)));
    }

    /// The transport [`Session::set_label`] named.
    pub fn transport(&self) -> Transport {
        self.label.get().map_or(Transport::Pipe, |l| l.0)
    }

    /// The id [`Session::set_label`] gave.
    pub fn label_id(&self) -> Option<&Arc<str>> {
        self.label.get().and_then(|l| l.1.as_ref())
    }

    /// Telemetry's record of the session, kept until it closes.
    pub(crate) fn set_observed(&self, guard: SessionGuard) {
        self.observed.lock().get_or_insert(guard);
    }

    /// True once telemetry records the session.
    pub(crate) fn is_observed(&self) -> bool {
        self.observed.lock().is_some()
    }

    /// Counts one more open `subscriptions/listen` stream, unless `max` are open already.
    pub(crate) fn open_listen(&self, max: usize) -> bool {
        use std::sync::atomic::Ordering::AcqRel;
        self.listens
            .fetch_update(AcqRel, std::sync::atomic::Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// A `subscriptions/listen` stream ended.
    pub(crate) fn close_listen(&self) {
        self.listens
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// A session that is already at legacy `version`, with no handshake: for a stateless
    /// transport, where each request stands alone and the client's capabilities are unknown.
    pub fn stateless(outbound: Arc<dyn Outbound>, version: ProtocolVersion) -> Arc<Self> {
        let session = Session::new(outbound);
        session.set_negotiated(Negotiated {
            version,
            client_capabilities: Arc::default(),
            client_info: Implementation::new("stateless-http", "0"),
        });
        session
    }

    /// Takes over a session whose handshake happened elsewhere (another replica sharing a
    /// session store): the negotiated outcome, whether the client sent
    /// `notifications/initialized`, and its log level. False if this session already had a
    /// handshake.
    pub fn restore(&self, n: Negotiated, initialized: bool, level: LoggingLevel) -> bool {
        let fresh = self.set_negotiated(n);
        self.sync(initialized, level);
        fresh
    }

    /// Brings the state a client may change after the handshake up to date with what
    /// another replica recorded.
    pub fn sync(&self, initialized: bool, level: LoggingLevel) {
        if initialized {
            self.mark_initialized();
        }
        self.set_log_level(level);
    }

    /// Forgets the client's roots, as `notifications/roots/list_changed` does: the next
    /// tool that needs them asks the client again.
    pub fn forget_roots(&self) {
        self.set_cached_roots(None);
    }

    /// Numbers the requests this session sends to the client from `base + 1` on, so that
    /// replicas sharing a session give out ids that do not collide (and that name the
    /// replica that waits for the answer).
    pub fn number_requests_from(&self, base: i64) {
        self.next_id.store(base + 1, Ordering::Relaxed);
    }

    /// The legacy handshake's outcome, once `initialize` was answered.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.get()
    }

    /// Records the handshake; false if one already happened.
    pub(crate) fn set_negotiated(&self, n: Negotiated) -> bool {
        self.negotiated.set(n).is_ok()
    }

    /// Marks `notifications/initialized` as received.
    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// True once the client sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// The lowest level of log message the legacy client wants.
    pub fn log_level(&self) -> LoggingLevel {
        LoggingLevel::from_u8(self.log_level.load(Ordering::Relaxed)).unwrap_or(LoggingLevel::Debug)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.store(level.to_u8(), Ordering::Relaxed);
    }

    /// The sink for messages not tied to a request.
    pub fn outbound(&self) -> &Arc<dyn Outbound> {
        &self.outbound
    }

    /// Ends the session: every call in flight is cancelled, every request to the client
    /// fails.
    pub fn close(&self) {
        self.observed.lock().take();
        self.closed.cancel();
        for (_, token) in self.inflight.lock().drain() {
            token.cancel();
        }
        self.pending.lock().clear();
    }

    /// Starts an orderly end: long-lived streams (`subscriptions/listen`) finish and
    /// requests to the client fail, but tool calls in flight keep running.
    pub fn shutdown(&self) {
        self.observed.lock().take();
        self.closed.cancel();
        self.pending.lock().clear();
    }

    /// True once [`Session::shutdown`] or [`Session::close`] ran.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    pub(crate) fn closed_token(&self) -> &CancellationToken {
        &self.closed
    }

    pub(crate) fn track(&self, id: RequestId, token: CancellationToken) {
        self.inflight.lock().insert(id, token);
    }

    pub(crate) fn untrack(&self, id: &RequestId) {
        self.inflight.lock().remove(id);
    }

    /// Cancels a request in flight; unknown or finished ids are ignored.
    pub fn cancel(&self, id: &RequestId) -> bool {
        let token = self.inflight.lock().remove(id);
        match token {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }

    /// Number of requests in flight (for tests and shutdown).
    pub fn inflight_len(&self) -> usize {
        self.inflight.lock().len()
    }

    /// Sends a request to the client on `sink` and waits for its answer.
    ///
    /// A request the server stops waiting for before its answer (it timed out, `cancel`
    /// fired, or this future was dropped: the tool that asked was cancelled, or what it
    /// relayed was withdrawn) is cancelled on the client's side too, with
    /// `notifications/cancelled` on `sink`, and a late answer to it is ignored.
    pub(crate) async fn request(
        &self,
        sink: &Arc<dyn Outbound>,
        method: &str,
        params: &serde_json::Value,
        timeout: std::time::Duration,
        cancel: &CancellationToken,
    ) -> Result<Box<RawValue>, ClientRequestError> {
        if !sink.carries_requests() {
            return Err(ClientRequestError::NoChannel);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut line = Vec::new();
        toolwright_jsonrpc::write_request(&mut line, &RequestId::Number(id), method, params)
            .map_err(|e| ClientRequestError::BadResponse(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        let mut unanswered = Unanswered {
            session: self,
            sink,
            id,
            reason: "the server stopped waiting",
        };
        sink.send(line);
        let outcome = tokio::select! {
            r = rx => r.map_err(|_| ClientRequestError::Closed),
            _ = tokio::time::sleep(timeout) => Err(ClientRequestError::Timeout(timeout)),
            _ = cancel.cancelled() => Err(ClientRequestError::Closed),
        };
        if matches!(outcome, Err(ClientRequestError::Timeout(_))) {
            unanswered.reason = "timed out";
        } else if cancel.is_cancelled() {
            unanswered.reason = "the request that asked was cancelled";
        }
        drop(unanswered);
        outcome?.map_err(ClientRequestError::Rejected)
    }

    /// Routes the client's answer to a request the server sent; false if nobody waits.
    pub fn resolve(&self, id: &RequestId, outcome: Result<Box<RawValue>, ErrorObject>) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        let tx = self.pending.lock().remove(n);
        match tx {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Subscribes the session to updates of a resource (legacy `resources/subscribe`).
    pub fn subscribe(&self, uri: &str) {
        self.subscriptions.lock().insert(uri.to_owned());
    }

    /// Ends a subscription; false if there was none.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        self.subscriptions.lock().remove(uri)
    }

    /// True when the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().contains(uri)
    }

    pub(crate) fn cached_roots(&self) -> Option<Arc<Vec<String>>> {
        self.roots_cache.lock().clone()
    }

    pub(crate) fn set_cached_roots(&self, roots: Option<Arc<Vec<String>>>) {
        *self.roots_cache.lock() = roots;
    }
}

/// A request to the client in flight: forgotten when its waiter ends, and cancelled on the
/// client's side unless it was answered (its answer took it out of `pending`) or the
/// session is closed.
struct Unanswered<'a> {
    session: &'a Session,
    sink: &'a Arc<dyn Outbound>,
    id: i64,
    reason: &'static str,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let waiting = self.session.pending.lock().remove(&self.id).is_some();
        if !waiting || self.session.is_closed() {
            return;
        }
        let params = serde_json::json!({"requestId": self.id, "reason": self.reason});
        let mut line = Vec::with_capacity(96);
        if toolwright_jsonrpc::write_notification(&mut line, "notifications/cancelled", &params)
            .is_ok()
        {
            self.sink.send(line);
        }
    }
}
