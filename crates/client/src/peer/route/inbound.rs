//! What the server sends on its own: its requests to us (answered by the peer's handler,
//! or withdrawn by `notifications/cancelled`), its notifications, and the responses a
//! stdio link reads.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{ErrorObject, Message, RequestId};

use super::super::PeerHandler;
use super::{Inner, Link, Origin};
use crate::envelope;

impl Inner {
    /// Handles one message the server sent on its own.
    pub(in crate::peer) fn on_message(self: &Arc<Self>, msg: Message, origin: &Origin) {
        match msg {
            Message::Response(r) => {
                if matches!(origin, Origin::Stdio) {
                    let pending = self.table.lock().map.remove(&r.id);
                    if let Some(p) = pending {
                        let _ = p.tx.send(Ok(r.outcome));
                    }
                }
            }
            Message::Request(req) => {
                let params = parse_params(req.params.as_deref());
                if req.method == "ping" {
                    self.answer(req.id, Ok(json!({})));
                    return;
                }
                let handler = match origin {
                    Origin::Http(h) => Arc::clone(h),
                    Origin::Stdio => self.stdio_handler(),
                };
                self.handle_inbound(handler, req.id, req.method, params);
            }
            Message::Notification(n) => {
                let params = parse_params(n.params.as_deref());
                self.on_notification(&n.method, &params);
            }
            _ => {}
        }
    }

    /// Runs `handler` on the server's request `id` and answers with what it returns,
    /// unless the server withdraws the request first (`notifications/cancelled`): then the
    /// handler's future is dropped where it stands (which withdraws whatever it was waiting
    /// for in turn) and, as the spec says of a cancelled request, no response is sent.
    fn handle_inbound(
        self: &Arc<Self>,
        handler: Arc<dyn PeerHandler>,
        id: RequestId,
        method: String,
        params: Value,
    ) {
        let withdrawn = CancellationToken::new();
        self.inbound.lock().insert(id.clone(), withdrawn.clone());
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                () = withdrawn.cancelled() => return,
                outcome = handler.request(method, params) => outcome,
            };
            let still_wanted = {
                let mut inbound = inner.inbound.lock();
                // A withdrawal that came after the handler finished, but before this, took
                // the entry: it still wins.
                !withdrawn.is_cancelled() && inbound.remove(&id).is_some()
            };
            if still_wanted {
                inner.answer(id, outcome);
            }
        });
    }

    /// The server withdrew a request it sent us (`notifications/cancelled`): its handler
    /// stops. Unknown or finished ids are ignored.
    fn withdraw_inbound(&self, params: &Value) {
        let Some(id) = params
            .get("requestId")
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
        else {
            return;
        };
        if let Some(withdrawn) = self.inbound.lock().remove(&id) {
            withdrawn.cancel();
        }
    }

    /// Over stdio, the handler of a server request: the one in-flight call with an
    /// `on_request`, else the connection's.
    fn stdio_handler(&self) -> Arc<dyn PeerHandler> {
        let t = self.table.lock();
        let mut with = t.map.values().filter_map(|p| p.on_request.as_ref());
        match (with.next(), with.next()) {
            (Some(h), None) => Arc::clone(h),
            _ => Arc::clone(&self.handler),
        }
    }

    fn on_notification(&self, method: &str, params: &Value) {
        match method {
            "notifications/progress" => {
                let token = match params.get("progressToken") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => return,
                };
                let f = self.progress.lock().get(&token).cloned();
                match f {
                    Some(f) => {
                        let num = |k: &str| params.get(k).and_then(Value::as_f64);
                        let message = params
                            .get("message")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        f(num("progress").unwrap_or(0.0), num("total"), message);
                    }
                    None => self.handler.notification(method, params),
                }
            }
            "notifications/cancelled" => self.withdraw_inbound(params),
            "notifications/subscriptions/acknowledged" => {}
            _ => self.handler.notification(method, params),
        }
    }

    /// Sends the answer to a server request (over HTTP, in a POST of its own).
    fn answer(self: &Arc<Self>, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let line = envelope::answer(&id, &outcome);
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let send = async {
                match &inner.link {
                    Link::Stdio(s) => {
                        s.send(&line);
                    }
                    Link::Http(h) => inner.http_answer(h, &line).await,
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(30), send).await;
        });
    }
}

/// A message's `params` as a value (`null` when absent or unreadable).
fn parse_params(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}
