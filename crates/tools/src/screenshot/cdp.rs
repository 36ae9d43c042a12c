//! A minimal Chrome DevTools Protocol client over one WebSocket, in "flat" session mode:
//! commands carry an optional `sessionId`, responses are matched by `id`, and events are
//! routed to whoever subscribed to their session.
//!
//! A session attached automatically under a subscribed one (`Target.attachedToTarget`, for
//! frames in other processes and workers) is routed to the same subscriber, registered
//! before the event is delivered so none of its events can be lost.

use super::error::ScreenshotError;
use futures_util::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Screenshots of tall pages are large; allow messages far beyond the library's default.
const MAX_MESSAGE: usize = 512 << 20;

/// An event from the browser.
#[derive(Debug)]
pub(crate) struct Event {
    /// The session it belongs to.
    pub session: String,
    /// Such as `Fetch.requestPaused`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

type Reply = Result<Value, ScreenshotError>;

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>,
    closed: AtomicBool,
}

impl Shared {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.pending.lock().clear();
        self.routes.lock().clear();
    }
}

/// One DevTools connection.
pub(crate) struct Cdp {
    next_id: AtomicU64,
    out: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Cdp {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Removes a pending command when its caller stops waiting.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.pending.lock().remove(&self.id);
    }
}

impl Cdp {
    /// Connects to a browser's DevTools WebSocket.
    pub async fn connect(ws_url: &str) -> Result<Cdp, ScreenshotError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (ws, _) = tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true)
            .await
            .map_err(|e| ScreenshotError::Protocol {
                method: "connect".into(),
                message: format!("{ws_url}: {e}"),
            })?;
        let (mut sink, mut stream) = ws.split();
        let shared = Arc::new(Shared::default());
        let (out, mut out_rx) = mpsc::unbounded_channel::<String>();

        let writer_shared = shared.clone();
        let writer = tokio::spawn(async move {
            while let Some(text) = out_rx.recv().await {
                if sink.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            writer_shared.close();
        });
        let reader_shared = shared.clone();
        let reader = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                match msg {
                    Ok(Message::Text(t)) => dispatch(&reader_shared, t.as_str()),
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            reader_shared.close();
        });
        Ok(Cdp {
            next_id: AtomicU64::new(1),
            out,
            shared,
            tasks: [writer, reader],
        })
    }

    /// True once the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends a command and waits for its result.
    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Reply {
        if self.is_closed() {
            return Err(ScreenshotError::BrowserGone);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().insert(id, tx);
        let _guard = PendingGuard {
            shared: &self.shared,
            id,
        };
        // Closed between the first check and the insertion: nobody would ever answer.
        if self.is_closed() || self.out.send(msg.to_string()).is_err() {
            return Err(ScreenshotError::BrowserGone);
        }
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(ScreenshotError::Protocol { message, .. })) => Err(ScreenshotError::Protocol {
                method: method.to_owned(),
                message,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ScreenshotError::BrowserGone),
        }
    }

    /// Routes the events of `session` (and of sessions attached under it) to the receiver.
    pub fn subscribe(&self, session: &str) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.routes.lock().insert(session.to_owned(), tx);
        if self.is_closed() {
            // The receiver must see the end, not wait for events that cannot come.
            self.unsubscribe(session);
        }
        rx
    }

    /// Stops routing the events of `session` and of the sessions attached under it.
    pub fn unsubscribe(&self, session: &str) {
        let mut routes = self.shared.routes.lock();
        if let Some(tx) = routes.remove(session) {
            routes.retain(|_, other| !other.same_channel(&tx));
        }
    }
}

/// Handles one message from the browser.
fn dispatch(shared: &Shared, text: &str) {
    let Ok(mut msg) = serde_json::from_str::<Value>(text) else {
        tracing::debug!("unreadable DevTools message: {text:.200}");
        return;
    };
    if let Some(id) = msg.get("id").and_then(Value::as_u64) {
        let waiter = shared.pending.lock().remove(&id);
        if let Some(tx) = waiter {
            let reply = match msg.get_mut("error") {
                Some(err) => Err(ScreenshotError::Protocol {
                    method: String::new(),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| err.to_string(), str::to_owned),
                }),
                None => Ok(msg
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = tx.send(reply);
        }
        return;
    }
    let (Some(method), Some(session)) = (
        msg.get("method").and_then(Value::as_str).map(str::to_owned),
        msg.get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned),
    ) else {
        return; // Browser-level events: nobody subscribes to them.
    };
    let params = msg
        .get_mut("params")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let mut routes = shared.routes.lock();
    let Some(tx) = routes.get(&session).cloned() else {
        return;
    };
    match method.as_str() {
        "Target.attachedToTarget" => {
            if let Some(child) = params.get("sessionId").and_then(Value::as_str) {
                routes.insert(child.to_owned(), tx.clone());
            }
        }
        "Target.detachedFromTarget" => {
            if let Some(child) = params.get("sessionId").and_then(Value::as_str) {
                routes.remove(child);
            }
        }
        _ => {}
    }
    drop(routes);
    let _ = tx.send(Event {
        session,
        method,
        params,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_with_route(session: &str) -> (Shared, mpsc::UnboundedReceiver<Event>) {
        let shared = Shared::default();
        let (tx, rx) = mpsc::unbounded_channel();
        shared.routes.lock().insert(session.into(), tx);
        (shared, rx)
    }

    #[test]
    fn responses_reach_their_waiter() {
        let shared = Shared::default();
        let (tx, mut rx) = oneshot::channel();
        shared.pending.lock().insert(7, tx);
        dispatch(&shared, r#"{"id":7,"result":{"ok":1}}"#);
        assert_eq!(rx.try_recv().unwrap().unwrap(), json!({"ok": 1}));
        let (tx, mut rx) = oneshot::channel();
        shared.pending.lock().insert(8, tx);
        dispatch(
            &shared,
            r#"{"id":8,"error":{"code":-32000,"message":"No target"}}"#,
        );
        let err = rx.try_recv().unwrap().unwrap_err();
        assert!(matches!(err, ScreenshotError::Protocol { message, .. } if message == "No target"));
    }

    #[test]
    fn child_sessions_inherit_the_route() {
        let (shared, mut rx) = shared_with_route("S");
        dispatch(
            &shared,
            r#"{"method":"Target.attachedToTarget","sessionId":"S","params":{"sessionId":"C"}}"#,
        );
        dispatch(
            &shared,
            r#"{"method":"Fetch.requestPaused","sessionId":"C","params":{"requestId":"1"}}"#,
        );
        dispatch(
            &shared,
            r#"{"method":"Page.loadEventFired","sessionId":"other","params":{}}"#,
        );
        assert_eq!(rx.try_recv().unwrap().method, "Target.attachedToTarget");
        let e = rx.try_recv().unwrap();
        assert_eq!(
            (e.session.as_str(), e.method.as_str()),
            ("C", "Fetch.requestPaused")
        );
        assert!(rx.try_recv().is_err());
        dispatch(
            &shared,
            r#"{"method":"Target.detachedFromTarget","sessionId":"S","params":{"sessionId":"C"}}"#,
        );
        assert!(!shared.routes.lock().contains_key("C"));
    }

    #[test]
    fn close_fails_waiters_and_drops_routes() {
        let (shared, mut rx) = shared_with_route("S");
        let (tx, mut waiter) = oneshot::channel();
        shared.pending.lock().insert(1, tx);
        shared.close();
        assert!(waiter.try_recv().is_err());
        assert!(matches!(
            rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }
}
