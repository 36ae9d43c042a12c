//! The shared state of a [`Peer`](super::Peer): sending a request (ids, `_meta`,
//! progress tokens, timeouts, cancellation) and dispatching what the server sends (`inbound.rs`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{ErrorObject, RequestId};
use toolwright_protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION};
use toolwright_protocol::{Implementation, ProtocolVersion, ServerCapabilities};

use super::http::HttpLink;
use super::stdio::StdioLink;
use super::{Call, Observer, Outgoing, PeerHandler, PeerOptions, ProgressFn, Watch};
use crate::{ClientError, Era, Target, envelope};

mod inbound;

/// A JSON-RPC outcome as it arrived: the raw `result`, or the `error` object.
pub(super) type RawOutcome = Result<Box<RawValue>, ErrorObject>;

/// `_meta` members shared by many requests.
type SharedMeta = Arc<envelope::FixedMeta>;

/// How one request is sent (beyond its [`Call`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Send {
    /// How long to wait; `None`: as long as the peer lives (a listen stream).
    pub timeout: Option<Duration>,
    /// Tell the server when we stop waiting (false for the era probe, which a legacy
    /// server must not see cancelled before `initialize`).
    pub cancel_upstream: bool,
}

impl Send {
    /// Wait at most `timeout`, and cancel upstream on expiry.
    pub(super) fn timeout(timeout: Duration) -> Send {
        Send {
            timeout: Some(timeout),
            cancel_upstream: true,
        }
    }
}

/// What the connection has learned about the server.
#[derive(Debug, Clone)]
pub(super) struct State {
    pub era: Era,
    pub version: ProtocolVersion,
    pub server_info: Option<Implementation>,
    pub capabilities: Option<ServerCapabilities>,
    /// Legacy HTTP: the session.
    pub session_id: Option<String>,
}

/// The transport.
pub(super) enum Link {
    Stdio(Box<StdioLink>),
    Http(HttpLink),
}

/// A request waiting for its response (stdio; over HTTP the response comes on the
/// request's own stream).
struct Pending {
    method: Cow<'static, str>,
    tx: oneshot::Sender<Result<RawOutcome, ClientError>>,
    on_request: Option<Arc<dyn PeerHandler>>,
}

#[derive(Default)]
struct Table {
    /// Keyed by the ids this client numbered (never a server's), so a fast hasher will do.
    map: HashMap<RequestId, Pending, foldhash::fast::RandomState>,
    /// Set when the connection died: nothing more is accepted.
    dead: bool,
}

/// Where a message arrived, which decides who answers a request in it.
#[derive(Clone)]
pub(super) enum Origin {
    /// The stdio channel, shared by every call.
    Stdio,
    /// An HTTP stream: this handler answers the requests on it.
    Http(Arc<dyn PeerHandler>),
}

/// The connection itself, shared by the peer's clones and its background tasks.
pub(super) struct Inner {
    pub target: Target,
    pub options: PeerOptions,
    pub handler: Arc<dyn PeerHandler>,
    pub link: Link,
    pub state: RwLock<State>,
    next_id: AtomicI64,
    table: Mutex<Table>,
    progress: Mutex<HashMap<String, ProgressFn>>,
    /// The server's requests being handled now, by the server's id: what its
    /// `notifications/cancelled` withdraws.
    inbound: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Fired when the connection died or was closed.
    pub dead: CancellationToken,
    /// Fired when the background tasks must stop (death, close, last clone dropped).
    pub shutdown: CancellationToken,
    /// Set once `connect` succeeded: only then is a death reported to the handler.
    connected: AtomicBool,
    /// Set once the handler heard of the death (or must never: a `close()`).
    reported: AtomicBool,
    /// Serializes re-initialization after a legacy HTTP session expired.
    pub reinit: tokio::sync::Mutex<()>,
    /// Authorizer challenges in progress: an OAuth login in a browser can take minutes,
    /// and a request's clock does not run during one ([`Inner::sleep_outside_logins`]).
    logins: AtomicUsize,
    /// Woken when a challenge ends.
    login_ended: tokio::sync::Notify,
    /// The `_meta` members of modern requests, for the version they were made for.
    modern_meta: Mutex<Option<(ProtocolVersion, SharedMeta)>>,
}

impl Inner {
    pub(super) fn new(
        target: Target,
        options: PeerOptions,
        handler: Arc<dyn PeerHandler>,
        link: Link,
    ) -> Inner {
        Inner {
            target,
            options,
            handler,
            link,
            state: RwLock::new(State {
                era: Era::Modern,
                version: ProtocolVersion::LATEST,
                server_info: None,
                capabilities: None,
                session_id: None,
            }),
            next_id: AtomicI64::new(0),
            table: Mutex::new(Table::default()),
            progress: Mutex::new(HashMap::new()),
            inbound: Mutex::new(HashMap::new()),
            dead: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            connected: AtomicBool::new(false),
            reported: AtomicBool::new(false),
            reinit: tokio::sync::Mutex::new(()),
            logins: AtomicUsize::new(0),
            login_ended: tokio::sync::Notify::new(),
            modern_meta: Mutex::new(None),
        }
    }

    pub(super) fn era(&self) -> Era {
        self.state.read().era
    }

    /// `connect` is done: a death from now on is the handler's business (and one that
    /// already happened is reported now).
    pub(super) fn mark_connected(&self) {
        self.connected.store(true, Ordering::SeqCst);
        if self.dead.is_cancelled() {
            self.report(&self.why_dead());
        }
    }

    fn report(&self, why: &str) {
        if self.connected.load(Ordering::SeqCst) && !self.reported.swap(true, Ordering::SeqCst) {
            self.handler.closed(why);
        }
    }

    fn why_dead(&self) -> String {
        match &self.link {
            Link::Stdio(s) => s.why_dead(),
            Link::Http(_) => "the connection was closed".to_owned(),
        }
    }

    /// The error for a request on a dead connection.
    pub(super) fn closed_error(&self, method: &str) -> ClientError {
        ClientError::Closed {
            method: method.to_owned(),
            stderr: match &self.link {
                Link::Stdio(s) => s.stderr_tail(),
                Link::Http(_) => String::new(),
            },
        }
    }

    /// The connection died: every pending request fails now, the background tasks stop,
    /// the handler hears of it (once).
    pub(super) fn die(&self) {
        let drained = {
            let mut t = self.table.lock();
            t.dead = true;
            std::mem::take(&mut t.map)
        };
        for (_, p) in drained {
            let _ = p.tx.send(Err(self.closed_error(&p.method)));
        }
        self.shutdown.cancel();
        // The handler hears of it before `closed()` resolves, so a caller that waited for
        // the death sees the handler told.
        self.report(&self.why_dead());
        self.dead.cancel();
        // Once more (it reports at most once): `connect` may have finished between the two.
        self.report(&self.why_dead());
    }

    /// Runs an authorizer's challenge (which may be a login in a browser) with the
    /// requests' clocks stopped.
    pub(super) async fn during_login<T>(&self, login: impl Future<Output = T>) -> T {
        struct Ended<'a>(&'a Inner);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                self.0.logins.fetch_sub(1, Ordering::SeqCst);
                self.0.login_ended.notify_waiters();
            }
        }
        self.logins.fetch_add(1, Ordering::SeqCst);
        let _ended = Ended(self);
        login.await
    }

    /// Sleeps for `t` not counting logins: when `t` ends during one, waits for the logins
    /// to end and then for `t` again, so a request that needed a login gets its whole
    /// timeout after it. A login bounds itself (the redirect listener waits 5 minutes).
    async fn sleep_outside_logins(&self, t: Duration) {
        loop {
            tokio::time::sleep(t).await;
            if self.logins.load(Ordering::SeqCst) == 0 {
                return;
            }
            loop {
                let ended = self.login_ended.notified();
                if self.logins.load(Ordering::SeqCst) == 0 {
                    break;
                }
                ended.await;
            }
        }
    }

    /// Ends the connection on purpose (the handler is not told).
    pub(super) async fn close(&self) {
        self.reported.store(true, Ordering::SeqCst);
        self.shutdown.cancel();
        match &self.link {
            Link::Stdio(s) => s.close(Duration::from_secs(2)).await,
            Link::Http(h) => self.delete_session(h).await,
        }
        self.die();
    }

    /// Sends `call` and returns its `result` object.
    pub(super) async fn request(
        self: &Arc<Self>,
        call: &Call,
        how: Send,
    ) -> Result<Value, ClientError> {
        let raw = self.request_raw(call, how).await?;
        parse_result(&call.method, &raw)
    }

    /// Sends `call` and returns its `result` as the server wrote it (a JSON object; in the
    /// modern era its `resultType` is one this client knows). `call` is only read: its
    /// params are written into the request line with the peer's `_meta` merged in, never
    /// copied, so a caller that sends it again (another round) keeps them as they were.
    pub(super) async fn request_raw(
        self: &Arc<Self>,
        call: &Call,
        how: Send,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let era = self.era();
        let empty = Value::Object(Map::new());
        let params = match &call.params {
            Value::Null => &empty,
            p => p,
        };
        // The modern members are the same for every request of a connection: made once.
        let modern = (era == Era::Modern).then(|| self.modern_meta());
        let mut meta = Map::new();
        let watch = self.watch(call.observer.as_ref(), &call.method, Some(&id), params);
        if let Some(w) = &watch {
            meta.extend(
                w.meta()
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), Value::String(v))),
            );
        }
        let progress = call.progress.clone().map(|f| {
            let token = format!("toolwright-{id}");
            self.progress.lock().insert(token.clone(), f);
            meta.insert("progressToken".to_owned(), Value::String(token.clone()));
            ProgressGuard { inner: self, token }
        });
        let line = envelope::request_with_meta(&id, &call.method, params, modern.as_deref(), &meta);
        let outcome = self.exchange(call, (&id, era), &line, how, progress).await;
        if let Some(w) = watch {
            w.finish(
                outcome.as_ref().map(|raw| Some(&**raw)),
                self.session_id().as_deref(),
            );
        }
        outcome
    }

    /// Sends the request `line` (`id`, for `call`, in `era`) and waits for its answer as
    /// `how` says.
    async fn exchange(
        self: &Arc<Self>,
        call: &Call,
        (id, era): (&RequestId, Era),
        line: &[u8],
        how: Send,
        progress: Option<ProgressGuard<'_>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let answer = async {
            match &self.link {
                Link::Stdio(s) => self.stdio_request(s, id, line, call).await,
                // Boxed: the HTTP exchange's future is large, and a stdio request should not
                // carry its size.
                Link::Http(h) => Box::pin(self.http_request(h, id, line, call)).await,
            }
        };
        let timer = async {
            match how.timeout {
                Some(t) => self.sleep_outside_logins(t).await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            match &call.cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // A caller that stops waiting (its future dropped: a client that went away, a
        // gateway call its own client cancelled) cancels upstream as an explicit cancel does.
        let mut on_drop = CancelOnDrop {
            inner: self,
            id,
            method: &call.method,
            armed: how.cancel_upstream,
        };
        let outcome = tokio::select! {
            outcome = answer => outcome,
            () = timer => {
                on_drop.armed = false;
                if how.cancel_upstream {
                    self.cancel_upstream(id, &call.method, "timed out");
                }
                return Err(ClientError::Timeout {
                    method: call.method.to_string(),
                    after: how.timeout.unwrap_or_default(),
                });
            }
            () = cancelled => {
                on_drop.armed = false;
                if how.cancel_upstream {
                    self.cancel_upstream(id, &call.method, "cancelled by the client");
                }
                return Err(ClientError::Cancelled { method: call.method.to_string() });
            }
        };
        on_drop.armed = false;
        drop(progress);
        let raw = outcome?.map_err(|e| rpc_error(&call.method, e))?;
        if !call.result_checked_by_caller {
            check_result(&call.method, era, &raw)?;
        }
        Ok(raw)
    }

    /// The `_meta` entries of every modern request, made once per protocol version.
    fn modern_meta(&self) -> SharedMeta {
        let version = self.state.read().version;
        let mut cached = self.modern_meta.lock();
        if let Some((v, m)) = &*cached
            && *v == version
        {
            return m.clone();
        }
        let m = Arc::new(envelope::FixedMeta::new(self.make_modern_meta(version)));
        *cached = Some((version, m.clone()));
        m
    }

    fn make_modern_meta(&self, version: ProtocolVersion) -> Map<String, Value> {
        let m = json!({
            PROTOCOL_VERSION: version.as_str(),
            CLIENT_CAPABILITIES: self.options.capabilities,
            CLIENT_INFO: self.options.connect.client_info,
        });
        match m {
            Value::Object(m) => m,
            _ => unreachable!("json! of an object"),
        }
    }

    async fn stdio_request(
        self: &Arc<Self>,
        link: &StdioLink,
        id: &RequestId,
        line: &[u8],
        call: &Call,
    ) -> Result<RawOutcome, ClientError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut t = self.table.lock();
            if t.dead {
                return Err(self.closed_error(&call.method));
            }
            t.map.insert(
                id.clone(),
                Pending {
                    method: call.method.clone(),
                    tx,
                    on_request: call.on_request.clone(),
                },
            );
        }
        let _guard = PendingGuard { inner: self, id };
        if !link.send(line) {
            // The server is gone. The reader sees its stdout close, keeps the last of its
            // stderr and fails every pending request, this one included, saying why: wait
            // for that rather than answer before the stderr is in.
            return match tokio::time::timeout(Duration::from_secs(1), rx).await {
                Ok(Ok(outcome)) => outcome,
                _ => Err(self.closed_error(&call.method)),
            };
        }
        rx.await
            .unwrap_or_else(|_| Err(self.closed_error(&call.method)))
    }

    /// Tells the server we stopped waiting for `id`: `notifications/cancelled`, except
    /// over modern HTTP, where dropping the stream (done by the caller) is the cancel.
    fn cancel_upstream(self: &Arc<Self>, id: &RequestId, method: &str, reason: &str) {
        if method == "initialize" {
            return; // never cancelled
        }
        if matches!(self.link, Link::Http(_)) && self.era() == Era::Modern {
            return;
        }
        let params = json!({"requestId": id, "reason": reason});
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let send = inner.notify("notifications/cancelled", params);
            let _ = tokio::time::timeout(Duration::from_secs(10), send).await;
        });
    }

    /// Sends a notification.
    pub(super) async fn notify(
        self: &Arc<Self>,
        method: &str,
        params: Value,
    ) -> Result<(), ClientError> {
        let mut params = params;
        let watch = self.watch(None, method, None, &params);
        if let (Some(w), Some(obj)) = (&watch, params.as_object_mut()) {
            let members = w.meta();
            if !members.is_empty() {
                let meta = obj
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(m) = meta.as_object_mut() {
                    m.extend(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), Value::String(v))),
                    );
                }
            }
        }
        let line = envelope::notification(method, &params);
        let sent = match &self.link {
            Link::Stdio(s) => {
                if s.send(&line) {
                    Ok(())
                } else {
                    Err(self.closed_error(method))
                }
            }
            Link::Http(h) => self.http_notify(h, method, &line).await,
        };
        if let Some(w) = watch {
            w.finish(sent.as_ref().map(|()| None), self.session_id().as_deref());
        }
        sent
    }

    /// The server's session, as known now.
    fn session_id(&self) -> Option<String> {
        self.state.read().session_id.clone()
    }

    /// Starts watching a message with `observer`, else the peer's observer.
    fn watch(
        &self,
        observer: Option<&Arc<dyn Observer>>,
        method: &str,
        id: Option<&RequestId>,
        params: &Value,
    ) -> Option<Box<dyn Watch>> {
        let observer = observer.or(self.options.observer.as_ref())?;
        let state = self.state.read();
        observer.start(&Outgoing {
            method,
            id,
            params,
            era: state.era,
            protocol_version: state.version,
            session_id: state.session_id.as_deref(),
        })
    }
}

/// Removes a pending request when its caller stops waiting.
struct PendingGuard<'a> {
    inner: &'a Inner,
    id: &'a RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.inner.table.lock().map.remove(self.id);
    }
}

/// Cancels a request upstream when its caller drops the future before the answer.
struct CancelOnDrop<'a> {
    inner: &'a Arc<Inner>,
    id: &'a RequestId,
    method: &'a str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        // Sending needs a runtime; a future dropped outside one (at shutdown) cancels nothing.
        if self.armed && tokio::runtime::Handle::try_current().is_ok() {
            self.inner
                .cancel_upstream(self.id, self.method, "the caller stopped waiting");
        }
    }
}

/// Forgets a progress token when its request ends.
struct ProgressGuard<'a> {
    inner: &'a Inner,
    token: String,
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        self.inner.progress.lock().remove(&self.token);
    }
}

/// The error a JSON-RPC `error` object reports for `method`.
pub(super) fn rpc_error(method: &str, err: ErrorObject) -> ClientError {
    ClientError::Rpc {
        method: method.to_owned(),
        code: err.code,
        message: err.message,
        data: err.data.map(Box::new),
    }
}

/// A `result` as a JSON object; in the modern era its `resultType` must be one we know
/// (`complete`, absent, `input_required` or the Tasks extension's `task`, the last two
/// returned as they are).
fn malformed(method: &str, detail: String) -> ClientError {
    ClientError::Malformed {
        what: format!("{method} result"),
        detail,
    }
}

/// The result, parsed (it was checked to be an object by [`check_result`]).
fn parse_result(method: &str, raw: &RawValue) -> Result<Value, ClientError> {
    serde_json::from_str(raw.get()).map_err(|e| malformed(method, e.to_string()))
}

/// The members of a result this client looks at before passing it on.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<std::borrow::Cow<'a, str>>,
}

/// A result must be an object, and a modern one's `resultType` one this client knows;
/// read without building the result.
fn check_result(method: &str, era: Era, raw: &RawValue) -> Result<(), ClientError> {
    let text = raw.get();
    if !text.trim_start().starts_with('{') {
        return Err(malformed(method, format!("it is {text}, not an object")));
    }
    let head: Head<'_> =
        serde_json::from_str(text).map_err(|e| malformed(method, e.to_string()))?;
    if era == Era::Modern
        && let Some(t) = head.result_type
        && !known_result_type(&t)
    {
        return Err(malformed(method, format!("unknown resultType \"{t}\"")));
    }
    Ok(())
}

/// A modern result's `resultType` this client knows: what a caller that reads results
/// itself ([`Call::result_checked_by_caller`](super::Call::result_checked_by_caller)) checks.
pub fn known_result_type(result_type: &str) -> bool {
    matches!(result_type, "complete" | "input_required" | "task")
}
