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

impl Server {
    pub(crate) fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
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
        }
        #[derive(serde::Deserialize, Default)]
        struct ListenParams {
            #[serde(default, rename = "_meta")]
            meta: Option<RequestMeta>,
            #[serde(default)]
            notifications: Filter,
        }
        let p: ListenParams = parse_required(params)?;
        let era = match p.meta.as_ref() {
            Some(m) if m.is_modern() => Era::resolve(Some(m), session)?,
            _ => return Err(ErrorObject::method_not_found("subscriptions/listen")),
        };
        let mut f = p.notifications;
        // Only what this server can report is honoured.
        let has_resources = self.inner.catalog.has_resources();
        f.prompts_list_changed &= self.inner.catalog.has_prompts();
        f.resources_list_changed &= has_resources;
        if !has_resources {
            f.resource_subscriptions.clear();
        }
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
        let mut honoured = Map::new();
        for (key, on) in [
            ("toolsListChanged", f.tools_list_changed),
            ("promptsListChanged", f.prompts_list_changed),
            ("resourcesListChanged", f.resources_list_changed),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !f.resource_subscriptions.is_empty() {
            honoured.insert(
                "resourceSubscriptions".into(),
                json!(f.resource_subscriptions),
            );
        }
        let mut ack = Vec::new();
        jsonrpc::write_notification(
            &mut ack,
            "notifications/subscriptions/acknowledged",
            &json!({"notifications": honoured, "_meta": sub_meta}),
        )
        .expect("serializes");
        sink.send(ack);
        let mut events = self.event_receiver();
        let sink = sink.clone();
        let session = session.clone();
        let server = self.clone();
        Ok(Handled::Later(Box::pin(async move {
            let closed = session.closed_token().clone();
            let end = |server: &Server| Some(server.result(&id, &era, json!({"_meta": sub_meta})));
            let reply = loop {
                let event = tokio::select! {
                    _ = cancel.cancelled() => break None,
                    _ = closed.cancelled() => break end(&server),
                    e = events.recv() => e,
                };
                let event = match event {
                    Ok(e) => e,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break end(&server),
                };
                let (method, params) = match &event {
                    Event::ToolsChanged if f.tools_list_changed => (
                        "notifications/tools/list_changed",
                        json!({"_meta": sub_meta}),
                    ),
                    Event::PromptsChanged if f.prompts_list_changed => (
                        "notifications/prompts/list_changed",
                        json!({"_meta": sub_meta}),
                    ),
                    Event::ResourcesChanged if f.resources_list_changed => (
                        "notifications/resources/list_changed",
                        json!({"_meta": sub_meta}),
                    ),
                    Event::ResourceUpdated(uri) if f.resource_subscriptions.contains(uri) => (
                        "notifications/resources/updated",
                        json!({"uri": uri, "_meta": sub_meta}),
                    ),
                    _ => continue,
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
