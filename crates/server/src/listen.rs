//! `subscriptions/listen` (2026-07-28): one long-lived request whose stream carries the
//! list-change and resource-update notifications the client asked for.

use crate::era::Era;
use crate::reply::{Handled, parse_required};
use crate::server::{Event, Server};
use crate::session::{Outbound, Session};
use serde_json::value::RawValue;
use serde_json::{Map, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{self as jsonrpc, ErrorObject, RequestId};
use toolwright_protocol::RequestMeta;

/// One open stream in its session's count, given back however the stream ends.
struct ListenSlot(Arc<Session>);

impl Drop for ListenSlot {
    fn drop(&mut self) {
        self.0.close_listen();
    }
}

/// What a listener asked to hear (`params.notifications`).
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Vec<String>,
    /// The Tasks extension: the tasks whose changes to report (`notifications/tasks`).
    #[serde(default)]
    task_ids: Vec<String>,
}

#[derive(serde::Deserialize, Default)]
struct ListenParams {
    #[serde(default, rename = "_meta")]
    meta: Option<RequestMeta>,
    #[serde(default)]
    notifications: Filter,
}

impl Filter {
    /// Keeps only what this server can report.
    fn narrow(&mut self, has_prompts: bool, has_resources: bool, has_tasks: bool) {
        if !has_tasks {
            self.task_ids.clear();
        }
        self.prompts_list_changed &= has_prompts;
        self.resources_list_changed &= has_resources;
        if !has_resources {
            self.resource_subscriptions.clear();
        }
    }

    /// The acknowledgement's `notifications`: what is honoured, in the request's shape.
    fn honoured(&self) -> Map<String, serde_json::Value> {
        let mut honoured = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            honoured.insert(
                "resourceSubscriptions".into(),
                json!(self.resource_subscriptions),
            );
        }
        if !self.task_ids.is_empty() {
            honoured.insert("taskIds".into(), json!(self.task_ids));
        }
        honoured
    }

    /// The `notifications/tasks` a task's change becomes, if the listener asked for that
    /// task and may see it.
    fn task_notification(
        &self,
        (owner, task): crate::task::Change,
        caller: Option<&str>,
        sub_meta: &serde_json::Value,
    ) -> Option<serde_json::Value> {
        let id = task.get("taskId")?.as_str()?;
        if owner.as_deref() != caller || !self.task_ids.iter().any(|t| t == id) {
            return None;
        }
        let mut params = task;
        params["_meta"] = sub_meta.clone();
        Some(params)
    }

    /// The notification `event` becomes on this stream, if the listener asked for it.
    fn notification(
        &self,
        event: &Event,
        sub_meta: &serde_json::Value,
    ) -> Option<(&'static str, serde_json::Value)> {
        Some(match event {
            Event::ToolsChanged if self.tools_list_changed => (
                "notifications/tools/list_changed",
                json!({"_meta": sub_meta}),
            ),
            Event::PromptsChanged if self.prompts_list_changed => (
                "notifications/prompts/list_changed",
                json!({"_meta": sub_meta}),
            ),
            Event::ResourcesChanged if self.resources_list_changed => (
                "notifications/resources/list_changed",
                json!({"_meta": sub_meta}),
            ),
            Event::ResourceUpdated(uri) if self.resource_subscriptions.contains(uri) => (
                "notifications/resources/updated",
                json!({"uri": uri, "_meta": sub_meta}),
            ),
            _ => return None,
        })
    }
}

impl Server {
    /// Opens a listen stream: acknowledges what is honoured at once, then forwards the
    /// events asked for until the request is cancelled (nothing more is sent) or the
    /// session closes (the request's result ends the stream).
    pub(crate) fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let p: ListenParams = parse_required(params)?;
        let era = match p.meta.as_ref() {
            Some(m) if m.is_modern() => Era::resolve(Some(m), session)?,
            _ => return Err(ErrorObject::method_not_found("subscriptions/listen")),
        };
        let mut f = p.notifications;
        // A resource outside the session's view is not subscribed to (the acknowledgement
        // says what is honoured); the glob is matched on the URI, so this tells nothing of
        // what exists.
        if let Some(view) = session.view() {
            f.resource_subscriptions.retain(|uri| view.shows(uri));
        }
        f.narrow(
            self.inner.catalog.has_prompts(),
            self.inner.catalog.has_resources(),
            crate::task_call::declares_tasks(&self.client_caps(session, &era)),
        );
        let max = self.inner.config.max_listens_per_session;
        if !session.open_listen(max) {
            return Err(ErrorObject::new(
                jsonrpc::code::INVALID_REQUEST,
                format!(
                    "this session already has {max} subscriptions/listen streams open, the most \
                     it may; cancel one before opening another"
                ),
            )
            .with_data(json!({"maxListens": max})));
        }
        let slot = ListenSlot(session.clone());
        let cancel = CancellationToken::new();
        session.track(id.clone(), cancel.clone());
        let sub_meta = json!({ toolwright_protocol::meta::SUBSCRIPTION_ID: id });
        let mut ack = Vec::new();
        jsonrpc::write_notification(
            &mut ack,
            "notifications/subscriptions/acknowledged",
            &json!({"notifications": f.honoured(), "_meta": sub_meta}),
        )
        .expect("serializes");
        sink.send(ack);
        let mut events = self.event_receiver();
        let mut task_changes = (!f.task_ids.is_empty()).then(|| self.inner.tasks.subscribe());
        let caller = session.caller().and_then(|c| c.subject.clone());
        let sink = sink.clone();
        let session = session.clone();
        let server = self.clone();
        Ok(Handled::Later(Box::pin(async move {
            let closed = session.closed_token().clone();
            let end = |server: &Server| Some(server.result(&id, &era, json!({"_meta": sub_meta})));
            let reply = loop {
                let task_change = async {
                    match task_changes.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                };
                let event = tokio::select! {
                    _ = cancel.cancelled() => break None,
                    _ = closed.cancelled() => break end(&server),
                    e = events.recv() => e,
                    change = task_change => {
                        if let Ok(change) = change
                            && let Some(params) = f.task_notification(change, caller.as_deref(), &sub_meta)
                        {
                            let mut line = Vec::new();
                            jsonrpc::write_notification(&mut line, "notifications/tasks", &params)
                                .expect("serializes");
                            sink.send(line);
                        }
                        continue;
                    }
                };
                let event = match event {
                    Ok(e) => e,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break end(&server),
                };
                let Some((method, params)) = f.notification(&event, &sub_meta) else {
                    continue;
                };
                let mut line = Vec::new();
                jsonrpc::write_notification(&mut line, method, &params).expect("serializes");
                sink.send(line);
            };
            session.untrack(&id);
            drop(slot);
            reply
        })))
    }
}
