//! The Streamable HTTP link: the headers of each era, the legacy session (kept, renewed
//! when it expires, deleted at the end), and the legacy GET stream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use tokio::sync::watch;
use toolwright_jsonrpc::{ErrorObject, Message, RequestId, Response};
use toolwright_protocol::headers::encode_value;

use super::connect::{self, Backoff};
use super::route::{Inner, Origin, RawOutcome, rpc_error};
use super::{Call, PeerHandler};
use crate::auth::Challenge;
use crate::http::{Answer, Endpoint, Exchange, Reply, exchange};
use crate::{ClientError, Era};

/// Where the server is, and how far the legacy GET stream has got.
pub(super) struct HttpLink {
    pub endpoint: Endpoint,
    get_stream: watch::Sender<GetStream>,
}

/// How far the legacy GET stream has got. A server may send its own requests and
/// notifications only on that stream, and drops them while it is not open (the
/// TypeScript SDK does), so the first requests after the handshake wait, briefly, for
/// its first answer: a request that is answered before the stream opens could otherwise
/// lose the server's question about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GetStream {
    /// No legacy session yet: nothing to wait for.
    NotStarted,
    /// The session is up and its stream is being opened.
    Opening,
    /// The stream's first attempt was answered (open, refused or failed).
    Settled,
}

/// The longest a request waits for the GET stream to open.
const GET_STREAM_WAIT: Duration = Duration::from_secs(2);

impl HttpLink {
    /// The link to `endpoint`.
    pub(super) fn new(endpoint: Endpoint) -> HttpLink {
        HttpLink {
            endpoint,
            get_stream: watch::Sender::new(GetStream::NotStarted),
        }
    }

    /// A legacy session began: its GET stream is about to be opened (the first time only;
    /// a renewed session keeps the stream's loop).
    fn session_began(&self) {
        self.get_stream.send_if_modified(|s| {
            let first = *s == GetStream::NotStarted;
            if first {
                *s = GetStream::Opening;
            }
            first
        });
    }

    /// The GET stream's first attempt was answered.
    fn stream_settled(&self) {
        self.get_stream.send_if_modified(|s| {
            let changed = *s != GetStream::Settled;
            *s = GetStream::Settled;
            changed
        });
    }

    /// Waits (at most [`GET_STREAM_WAIT`]) while the GET stream is being opened.
    async fn stream_opened(&self) {
        if *self.get_stream.borrow() != GetStream::Opening {
            return;
        }
        let mut rx = self.get_stream.subscribe();
        let opened = rx.wait_for(|s| *s != GetStream::Opening);
        let _ = tokio::time::timeout(GET_STREAM_WAIT, opened).await;
    }
}

impl Inner {
    /// The headers of a message: the era's (`MCP-Protocol-Version`, and `Mcp-Method` and
    /// `Mcp-Name` for modern requests, `Mcp-Session-Id` for legacy ones), then `extra`
    /// (`Authorization` is added by [`Inner::send`], per attempt). Also returns the session the headers name.
    fn http_headers(
        &self,
        method: Option<&str>,
        name: Option<&str>,
        extra: &[(String, String)],
    ) -> (Vec<(String, String)>, Option<String>) {
        let state = self.state.read();
        let mut headers = Vec::new();
        let version = (
            "MCP-Protocol-Version".to_owned(),
            state.version.as_str().to_owned(),
        );
        match state.era {
            Era::Modern => {
                headers.push(version);
                if let Some(m) = method {
                    headers.push(("Mcp-Method".to_owned(), m.to_owned()));
                }
                if let Some(n) = name {
                    headers.push(("Mcp-Name".to_owned(), encode_value(n).into_owned()));
                }
            }
            Era::Legacy => {
                if let Some(id) = &state.session_id {
                    headers.push(("Mcp-Session-Id".to_owned(), id.clone()));
                }
                if method != Some("initialize") {
                    headers.push(version);
                }
            }
        }
        headers.extend(extra.iter().cloned());
        (headers, state.session_id.clone())
    }

    /// POSTs one message; what else arrives on its stream is dispatched as coming from
    /// `handler`'s stream.
    async fn post(
        self: &Arc<Self>,
        h: &HttpLink,
        line: &[u8],
        id: Option<&RequestId>,
        call: (&str, Option<&str>, &[(String, String)]),
        handler: &Arc<dyn PeerHandler>,
    ) -> Result<(Reply, Option<String>), ClientError> {
        let (method, name, extra) = call;
        if !matches!(method, "initialize" | "notifications/initialized") {
            h.stream_opened().await;
        }
        let (headers, session) = self.http_headers(Some(method), name, extra);
        let origin = Origin::Http(Arc::clone(handler));
        let ex = Exchange {
            method: Method::POST,
            body: Some(line),
            id,
            headers: &headers,
            auth: &[],
            rpc_method: method,
            alone: false,
            on_head: None,
        };
        let reply = self
            .send(h, ex, &mut |m| self.on_message(m, &origin))
            .await?;
        Ok((reply, session))
    }

    /// One HTTP request with the authorizer's `Authorization` header. When the server
    /// refuses it (see [`refused`]), the authorizer sees the challenge and, when it says
    /// the credentials changed, the request goes again: at most [`MAX_CHALLENGES`] times.
    pub(super) async fn send(
        &self,
        h: &HttpLink,
        ex: Exchange<'_>,
        on_message: &mut (dyn FnMut(Message) + Send),
    ) -> Result<Reply, ClientError> {
        // A call that brings its own `Authorization` (a gateway's exchanged token) is sent
        // with it alone: the connection's authorizer neither adds to it nor renews it.
        let own = ex
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        let auth = self.options.connect.auth.as_ref().filter(|_| !own);
        let mut challenges = 0;
        loop {
            let credentials = auth
                .map(|a| a.credentials(ex.method.as_str(), &h.endpoint.url))
                .unwrap_or_default();
            let attempt = Exchange {
                method: ex.method.clone(),
                body: ex.body,
                id: ex.id,
                headers: ex.headers,
                auth: &credentials,
                rpc_method: ex.rpc_method,
                alone: ex.alone,
                on_head: ex.on_head,
            };
            let reply = exchange(&h.endpoint, attempt, on_message).await?;
            let Some(auth) = auth.filter(|_| refused(&reply)) else {
                return Ok(reply);
            };
            if challenges == MAX_CHALLENGES {
                let mut err = unauthorized(ex.rpc_method, &reply);
                if let ClientError::Unauthorized { detail, .. } = &mut err {
                    let note = format!("still refused after {MAX_CHALLENGES} renewed credentials");
                    *detail = if detail.is_empty() {
                        note
                    } else {
                        format!("{note}; {detail}")
                    };
                }
                return Err(err);
            }
            challenges += 1;
            let challenge = Challenge {
                status: reply.status,
                www_authenticate: reply.www_authenticate.clone(),
                dpop_nonce: reply.dpop_nonce.clone(),
                url: h.endpoint.url.clone(),
            };
            // The authorizer's own requests trust what this endpoint's connection does.
            let changed = self
                .during_login(crate::connect::with_roots(
                    h.endpoint.roots.clone(),
                    auth.challenge(challenge),
                ))
                .await?;
            if !changed {
                return Ok(reply);
            }
        }
    }

    /// A request over HTTP; a legacy session that expired (404) is renewed once.
    pub(super) async fn http_request(
        self: &Arc<Self>,
        h: &HttpLink,
        id: &RequestId,
        line: &[u8],
        call: &Call,
    ) -> Result<RawOutcome, ClientError> {
        let method = &*call.method;
        let handler = call
            .on_request
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.handler));
        let what = (method, call.name.as_deref(), call.headers.as_slice());
        let (mut reply, session) = self.post(h, line, Some(id), what, &handler).await?;
        if reply.status == 404
            && self.era() == Era::Legacy
            && method != "initialize"
            && let Some(stale) = session
        {
            self.renew_session(&stale).await?;
            reply = self.post(h, line, Some(id), what, &handler).await?.0;
        }
        reply = self.resume(h, id, reply, method, &handler).await?;
        if method == "initialize"
            && let Some(sid) = &reply.session_id
        {
            self.state.write().session_id = Some(sid.clone());
            h.session_began();
        }
        if reply.status == 401 || refused(&reply) {
            return Err(unauthorized(method, &reply));
        }
        match reply.answer {
            Some(Answer::Response(r)) => Ok(r.outcome),
            Some(Answer::Error(e)) => Ok(Err(e)),
            None => Err(http_error(method, &reply)),
        }
    }

    /// A request's SSE stream closed before its response: reconnect with GET (after the
    /// stream's `retry` delay, naming its last event id in `Last-Event-ID`) and keep
    /// reading, at most [`MAX_RESUMES`] times.
    async fn resume(
        self: &Arc<Self>,
        h: &HttpLink,
        id: &RequestId,
        mut reply: Reply,
        method: &str,
        handler: &Arc<dyn PeerHandler>,
    ) -> Result<Reply, ClientError> {
        let origin = Origin::Http(Arc::clone(handler));
        let mut retry = reply.retry;
        let mut last = reply.last_event_id.clone();
        for _ in 0..MAX_RESUMES {
            if reply.answer.is_some() || !reply.sse || reply.status >= 300 {
                break;
            }
            tokio::time::sleep(retry.unwrap_or(Duration::from_secs(1))).await;
            let extra: Vec<(String, String)> = last
                .iter()
                .map(|l| ("Last-Event-ID".to_owned(), l.clone()))
                .collect();
            let (headers, _) = self.http_headers(None, None, &extra);
            let ex = Exchange {
                method: Method::GET,
                body: None,
                id: Some(id),
                headers: &headers,
                auth: &[],
                rpc_method: method,
                alone: false,
                on_head: None,
            };
            let next = self
                .send(h, ex, &mut |m| self.on_message(m, &origin))
                .await?;
            if next.status >= 300 {
                return Ok(next);
            }
            retry = next.retry.or(retry);
            last = next.last_event_id.clone().or(last);
            reply = next;
        }
        Ok(reply)
    }

    /// The legacy session `stale` expired: initialize again (once, however many requests
    /// found out at the same time).
    async fn renew_session(self: &Arc<Self>, stale: &str) -> Result<(), ClientError> {
        let _one = self.reinit.lock().await;
        if self.state.read().session_id.as_deref() != Some(stale) {
            return Ok(()); // another request renewed it
        }
        self.state.write().session_id = None;
        Box::pin(connect::initialize(self)).await
    }

    /// POSTs a notification.
    pub(super) async fn http_notify(
        self: &Arc<Self>,
        h: &HttpLink,
        method: &str,
        line: &[u8],
    ) -> Result<(), ClientError> {
        let handler = Arc::clone(&self.handler);
        let (reply, _) = self
            .post(h, line, None, (method, None, &[]), &handler)
            .await?;
        if reply.status >= 400 {
            return Err(http_error(method, &reply));
        }
        Ok(())
    }

    /// POSTs our answer to a server request.
    pub(super) async fn http_answer(self: &Arc<Self>, h: &HttpLink, line: &[u8]) {
        let (headers, _) = self.http_headers(None, None, &[]);
        let ex = Exchange {
            method: Method::POST,
            body: Some(line),
            id: None,
            headers: &headers,
            auth: &[],
            rpc_method: "a response",
            alone: false,
            on_head: None,
        };
        let origin = Origin::Http(Arc::clone(&self.handler));
        let _ = self.send(h, ex, &mut |m| self.on_message(m, &origin)).await;
    }

    /// Deletes the legacy session, if there is one.
    pub(super) async fn delete_session(&self, h: &HttpLink) {
        if self.state.read().session_id.is_none() {
            return;
        }
        let (headers, _) = self.http_headers(None, None, &[]);
        let ex = Exchange::bodiless(Method::DELETE, &headers, "DELETE");
        let mut ignore = |_| {};
        let send = self.send(h, ex, &mut ignore);
        let _ = tokio::time::timeout(Duration::from_secs(2), send).await;
    }
}

/// The legacy GET stream: the server's messages that belong to no request (list changes,
/// requests of its own), on a connection of its own, re-opened while the peer lives. When
/// it drops (the server ended it or the connection broke), it is opened again after the
/// stream's `retry` or a backoff ([`Resumption::wait`]), naming the last event id it
/// received in `Last-Event-ID`, so that a server that keeps its events replays those sent
/// while it was down. A 405 means the server offers none. A 404 for the session we have
/// means the session is gone: one the stream had been open on is renewed (as a request's
/// 404 renews it) and the stream opened on the new one; otherwise the stream stops.
pub(super) async fn get_stream(inner: Arc<Inner>) {
    let super::route::Link::Http(h) = &inner.link else {
        return;
    };
    let origin = Origin::Http(Arc::clone(&inner.handler));
    let mut backoff = Backoff::default();
    let mut resumption = Resumption::default();
    loop {
        let current = inner.state.read().session_id.clone();
        let extra = resumption.headers(current.as_deref());
        let (headers, session) = inner.http_headers(None, None, &extra);
        let settled = |_status: u16| h.stream_settled();
        let ex = Exchange {
            on_head: Some(&settled),
            ..Exchange::bodiless(Method::GET, &headers, "the GET stream").alone()
        };
        let started = Instant::now();
        let mut messages = 0usize;
        let reply = {
            let mut on_message = |m: Message| {
                messages += 1;
                inner.on_message(m, &origin);
            };
            tokio::select! {
                r = inner.send(h, ex, &mut on_message) => r,
                () = inner.shutdown.cancelled() => return,
            }
        };
        h.stream_settled(); // also when no answer came
        let wait = match reply {
            Ok(r) if r.status == 405 => return,
            Ok(r) if r.status == 404 && inner.state.read().session_id == session => {
                let Some(stale) = session.filter(|_| resumption.opened) else {
                    return;
                };
                if inner.renew_session(&stale).await.is_err() {
                    return;
                }
                continue;
            }
            Ok(r) if r.status < 300 => {
                backoff.lasted(started.elapsed());
                resumption.saw(&r);
                resumption.wait(messages > 0, &mut backoff)
            }
            _ => backoff.next(),
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// What the GET stream of one session carries over when it is opened again: the last
/// event id it received and the last `retry` it was given.
#[derive(Debug, Default)]
struct Resumption {
    /// The session these belong to.
    session: Option<String>,
    /// Whether a GET stream has been open (2xx) on it.
    opened: bool,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl Resumption {
    /// The `Last-Event-ID` header of a GET stream on `session`. A different session
    /// (renewed) starts afresh: another session's event ids mean nothing to the server.
    fn headers(&mut self, session: Option<&str>) -> Vec<(String, String)> {
        if self.session.as_deref() != session {
            *self = Resumption {
                session: session.map(str::to_owned),
                ..Resumption::default()
            };
        }
        self.last_event_id
            .iter()
            .map(|l| ("Last-Event-ID".to_owned(), l.clone()))
            .collect()
    }

    /// A stream on the session ended: keep its last event id and `retry`, when it set
    /// them (SSE keeps both across reconnections).
    fn saw(&mut self, reply: &Reply) {
        self.opened = true;
        if let Some(id) = &reply.last_event_id {
            self.last_event_id = Some(id.clone());
        }
        if let Some(retry) = reply.retry {
            self.retry = Some(retry);
        }
    }

    /// How long to wait before opening the stream again. A stream that carried messages
    /// worked: after the server's `retry` (at most [`MAX_RETRY`], at least
    /// [`MIN_RETRY`]), else at once after [`MIN_RETRY`], the backoff starting over. One
    /// that carried nothing waits out the backoff too, so that a server that ends every
    /// stream at once is not asked again and again.
    fn wait(&self, carried: bool, backoff: &mut Backoff) -> Duration {
        let retry = self.retry.map(|r| r.clamp(MIN_RETRY, MAX_RETRY));
        if carried {
            *backoff = Backoff::default();
            retry.unwrap_or(MIN_RETRY)
        } else {
            retry.unwrap_or_default().max(backoff.next())
        }
    }
}

/// The longest `retry` a server's stream is obeyed for.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The shortest wait before the GET stream is opened again.
const MIN_RETRY: Duration = Duration::from_millis(50);

/// How many times a request's closed SSE stream is resumed with GET.
const MAX_RESUMES: usize = 5;

/// How many times one request is sent again after the authorizer renewed its credentials.
const MAX_CHALLENGES: usize = 3;

/// Whether the server refused the request's credentials: a 401, or a 403 whose
/// `WWW-Authenticate` names `insufficient_scope` (a scope step-up).
pub(super) fn refused(reply: &Reply) -> bool {
    reply.status == 401
        || (reply.status == 403
            && reply
                .www_authenticate
                .iter()
                .any(|v| v.contains("insufficient_scope")))
}

/// A refusal as an error someone can read: the OAuth error of the body (RFC 6750
/// `error`, `error_description`) if it has one, and the `WWW-Authenticate` values.
pub(super) fn unauthorized(method: &str, reply: &Reply) -> ClientError {
    let mut parts = Vec::new();
    if let Ok(serde_json::Value::Object(body)) = serde_json::from_str(&reply.text) {
        let field = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        match (field("error"), field("error_description")) {
            ("", "") => {}
            (e, "") | ("", e) => parts.push(e.to_owned()),
            (e, d) => parts.push(format!("{e}: {d}")),
        }
    }
    if parts.is_empty() && reply.answer.is_none() && !reply.text.trim().is_empty() {
        parts.push(reply.text.trim().to_owned());
    }
    parts.extend(
        reply
            .www_authenticate
            .iter()
            .map(|v| format!("WWW-Authenticate: {v}")),
    );
    if parts.is_empty() {
        parts.push(
            "the server sent no WWW-Authenticate; pass a token with --bearer-env VAR".to_owned(),
        );
    }
    ClientError::Unauthorized {
        method: method.to_owned(),
        status: reply.status,
        detail: parts.join("; "),
    }
}

/// An HTTP answer without a JSON-RPC response: its JSON-RPC error if there is one (e.g. a
/// 400 with an id-less error), else the status and the start of the body.
fn http_error(method: &str, reply: &Reply) -> ClientError {
    if reply.status == 401 || reply.status == 403 {
        return unauthorized(method, reply);
    }
    match &reply.answer {
        Some(
            Answer::Error(e)
            | Answer::Response(Response {
                outcome: Err(e), ..
            }),
        ) => rpc_error(method, ErrorObject::clone(e)),
        _ => ClientError::Http {
            method: method.to_owned(),
            status: reply.status,
            body: reply.text.clone(),
        },
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
