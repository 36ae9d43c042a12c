//! Dispatch of resources, prompts and completion requests.

use crate::era::Era;
use crate::error::ToolError;
use crate::reply::{Handled, Reply, ReplyFuture, panic_text, parse_params, parse_required};
use crate::server::Server;
use crate::session::{Outbound, Session};
use futures_util::FutureExt;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{ErrorObject, RequestId, code};
use toolwright_protocol::params::PaginatedParams;
use toolwright_protocol::resources::{CompleteParams, CompletionRef, GetPromptParams, UriParams};
use toolwright_protocol::{ClientCapabilities, RequestMeta};

/// Most completion values a reply carries (the spec's limit).
const MAX_COMPLETIONS: usize = 100;

impl Server {
    pub(crate) fn capabilities_catalog(&self, caps: &mut toolwright_protocol::ServerCapabilities) {
        let c = &self.inner.catalog;
        if c.has_resources() {
            caps.resources = Some(json!({"subscribe": true, "listChanged": true}));
        }
        if c.has_prompts() {
            caps.prompts = Some(json!({"listChanged": true}));
        }
        if c.has_resources() || c.has_prompts() {
            caps.completions = Some(Map::new());
        }
        self.capabilities_skills(caps);
    }

    /// What the client declared: in this modern request, or at the legacy handshake.
    pub(crate) fn client_caps(&self, session: &Session, era: &Era) -> Arc<ClientCapabilities> {
        match era {
            Era::Modern { capabilities, .. } => capabilities.clone(),
            Era::Legacy(_) => session
                .negotiated()
                .map(|n| n.client_capabilities.clone())
                .unwrap_or_default(),
        }
    }

    /// A new cancellation token and the context of a resources or prompts request.
    fn catalog_context(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: &Era,
        meta: Option<RequestMeta>,
        sink: &Arc<dyn Outbound>,
        answers: Map<String, Value>,
    ) -> (CancellationToken, crate::context::ToolContext) {
        let cancel = CancellationToken::new();
        let caps = self.client_caps(session, era);
        let meta = meta.unwrap_or_default();
        let ctx = self.context(session, id, era, meta, sink, &cancel, caps, answers, None);
        (cancel, ctx)
    }

    /// `ttlMs` and `cacheScope`, which modern list and read results must carry.
    pub(crate) fn add_cache_fields(&self, era: &Era, value: &mut Value) {
        if era.is_modern() {
            value["ttlMs"] = json!(self.inner.config.ttl_ms);
            value["cacheScope"] = json!(self.inner.config.cache_scope);
        }
    }

    fn not_found(&self, era: &Era, uri: &str) -> ErrorObject {
        let msg = format!("Resource not found: {uri}");
        if era.is_modern() {
            ErrorObject::invalid_params(msg).with_data(json!({"uri": uri}))
        } else {
            ErrorObject::new(code::RESOURCE_NOT_FOUND, msg).with_data(json!({"uri": uri}))
        }
    }

    /// `resources/list`, `resources/templates/list`, `prompts/list`: one page, since these
    /// lists are small; a cursor is never issued, so any cursor is refused.
    pub(crate) fn catalog_list(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
        which: &str,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        if let Some(c) = p.cursor {
            return Err(ErrorObject::invalid_params(format!(
                "invalid cursor {c:?}: it was not issued by this server"
            )));
        }
        let c = &self.inner.catalog;
        // In a view, only what its globs select: resources by URI, templates by URI
        // template, prompts by name.
        let shows = |name: &str| session.view().is_none_or(|v| v.shows(name));
        let mut value = match which {
            "resources" => {
                let list = c.resources.read().unwrap_or_else(|p| p.into_inner());
                let skills = self.skill_resources();
                let shown = list.iter().map(|(r, _)| r).chain(&skills);
                json!({"resources": shown.filter(|r| shows(&r.uri)).collect::<Vec<_>>()})
            }
            "resourceTemplates" => {
                let list = c.templates.read().unwrap_or_else(|p| p.into_inner());
                let shown = (list.iter().map(|t| &t.definition)).filter(|d| shows(&d.uri_template));
                json!({"resourceTemplates": shown.collect::<Vec<_>>()})
            }
            _ => {
                let list = c.prompts.read().unwrap_or_else(|p| p.into_inner());
                let shown = list.iter().map(|(p, _)| p).filter(|p| shows(&p.name));
                json!({"prompts": shown.collect::<Vec<_>>()})
            }
        };
        self.add_cache_fields(&era, &mut value);
        Ok(self.result(id, &era, value))
    }

    pub(crate) fn resources_read(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let p: UriParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let uri = p.uri.clone();
        let fixed = self.inner.catalog.resource(&uri);
        let template = if fixed.is_none() {
            self.inner.catalog.template_for(&uri)
        } else {
            None
        };
        // A URI outside the session's view is not found, as one that does not exist.
        let in_view = session.view().is_none_or(|v| v.shows(&uri));
        if in_view
            && fixed.is_none()
            && template.is_none()
            && let Some(file) = self.skill_file(&uri)
        {
            let mut value = json!({"contents": [file]});
            self.add_cache_fields(&era, &mut value);
            return Ok(Handled::Reply(self.result(id, &era, value)));
        }
        if !in_view || (fixed.is_none() && template.is_none()) {
            return Err(self.not_found(&era, &uri));
        }
        let target = Value::String(uri.clone());
        let answers = self.open_state(
            &era,
            p.request_state.as_deref(),
            "resources/read",
            &uri,
            &target,
            p.input_responses,
        )?;
        let (cancel, ctx) = self.catalog_context(session, id, &era, p.meta, sink, answers);
        let server = self.clone();
        let rid = id.clone();
        let fut: ReplyFuture = Box::pin(async move {
            let c2 = ctx.clone();
            let outcome = match (fixed, template) {
                (Some(h), _) => {
                    AssertUnwindSafe(async move { h.read(c2).await })
                        .catch_unwind()
                        .await
                }
                (None, Some((t, vars))) => {
                    let u = uri.clone();
                    AssertUnwindSafe(async move { t.handler.read(&u, vars, c2).await })
                        .catch_unwind()
                        .await
                }
                (None, None) => unreachable!("checked above"),
            };
            if let Some(reply) =
                server.input_reply(&rid, &era, &ctx, "resources/read", &uri, Some(&target))
            {
                return (!ctx.is_cancelled()).then_some(reply);
            }
            match outcome {
                Ok(Ok(contents)) => {
                    let mut value = json!({"contents": contents});
                    server.add_cache_fields(&era, &mut value);
                    Some(server.result(&rid, &era, value))
                }
                Ok(Err(ToolError::Cancelled)) => None,
                Ok(Err(ToolError::NotFound(_))) => {
                    Some(Reply::error(Some(&rid), &server.not_found(&era, &uri)))
                }
                Ok(Err(e)) => Some(Reply::internal(&rid, format!("reading {uri} failed: {e}"))),
                Err(p) => Some(Reply::internal(
                    &rid,
                    format!("reading {uri} panicked: {}", panic_text(&*p)),
                )),
            }
        });
        Ok(self.drive(
            session,
            id.clone(),
            cancel,
            || format!("resources/read {}", p.uri),
            fut,
        ))
    }

    fn open_state(
        &self,
        era: &Era,
        state: Option<&str>,
        method: &str,
        target: &str,
        args: &Value,
        responses: Option<Map<String, Value>>,
    ) -> Result<Map<String, Value>, ErrorObject> {
        if !era.is_modern() {
            return Ok(Map::new());
        }
        let mut answers = match state {
            Some(s) => {
                self.inner
                    .state_key
                    .open(s, method, target, args)
                    .map_err(|why| ErrorObject::invalid_params(why.to_string()))?
                    .a
            }
            None => Map::new(),
        };
        answers.extend(crate::mrtr::client_answers(responses));
        Ok(answers)
    }

    pub(crate) fn resource_subscription(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
        subscribe: bool,
    ) -> Result<Reply, ErrorObject> {
        let p: UriParams = parse_required(params)?;
        let era = Era::resolve(None, session)?;
        if !self.inner.catalog.has_resources() {
            return Err(ErrorObject::method_not_found("resources/subscribe"));
        }
        if subscribe {
            // Outside the session's view a URI is not found, as one that does not exist.
            let in_view = session.view().is_none_or(|v| v.shows(&p.uri));
            if !in_view
                || (self.inner.catalog.resource(&p.uri).is_none()
                    && self.inner.catalog.template_for(&p.uri).is_none())
            {
                return Err(self.not_found(&era, &p.uri));
            }
            session.subscribe(&p.uri);
        } else {
            session.unsubscribe(&p.uri);
        }
        Ok(self.result(id, &era, json!({})))
    }

    pub(crate) fn prompts_get(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let p: GetPromptParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let in_view = session.view().is_none_or(|v| v.shows(&p.name));
        let Some((def, handler)) = self.inner.catalog.prompt(&p.name).filter(|_| in_view) else {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown prompt: {}",
                p.name
            )));
        };
        let args = p.arguments.clone().unwrap_or_default();
        for a in def.arguments.iter().flatten() {
            if a.required == Some(true) && !args.contains_key(&a.name) {
                let e = ErrorObject::invalid_params(format!(
                    "prompt {} needs the argument {:?}",
                    p.name, a.name
                ));
                return Err(e);
            }
        }
        if let Some((k, _)) = args.iter().find(|(_, v)| !v.is_string()) {
            return Err(ErrorObject::invalid_params(format!(
                "prompt argument {k:?} must be a string"
            )));
        }
        let args_value = Value::Object(args.clone());
        let answers = self.open_state(
            &era,
            p.request_state.as_deref(),
            "prompts/get",
            &p.name,
            &args_value,
            p.input_responses,
        )?;
        let (cancel, ctx) = self.catalog_context(session, id, &era, p.meta, sink, answers);
        let server = self.clone();
        let rid = id.clone();
        let name = p.name.clone();
        let fut: ReplyFuture = Box::pin(async move {
            let c2 = ctx.clone();
            let outcome = AssertUnwindSafe(async move { handler.get(args, c2).await })
                .catch_unwind()
                .await;
            if let Some(reply) =
                server.input_reply(&rid, &era, &ctx, "prompts/get", &name, Some(&args_value))
            {
                return (!ctx.is_cancelled()).then_some(reply);
            }
            match outcome {
                Ok(Ok(r)) => {
                    Some(server.result(&rid, &era, serde_json::to_value(r).expect("serializes")))
                }
                Ok(Err(ToolError::Cancelled)) => None,
                Ok(Err(ToolError::InvalidArguments(m))) => {
                    Some(Reply::error(Some(&rid), &ErrorObject::invalid_params(m)))
                }
                Ok(Err(e)) => Some(Reply::internal(&rid, format!("prompt {name} failed: {e}"))),
                Err(p) => Some(Reply::internal(
                    &rid,
                    format!("prompt {name} panicked: {}", panic_text(&*p)),
                )),
            }
        });
        Ok(self.drive(
            session,
            id.clone(),
            cancel,
            || format!("prompt {}", p.name),
            fut,
        ))
    }

    pub(crate) fn complete(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: CompleteParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let resolved: Map<String, Value> = p
            .context
            .as_ref()
            .and_then(|c| c.get("arguments"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Outside the session's view a prompt or template is unknown, as one that does not
        // exist.
        let shows = |name: &str| session.view().is_none_or(|v| v.shows(name));
        let mut values = match &p.reference {
            CompletionRef::Prompt { name } => {
                let found = self.inner.catalog.prompt(name).filter(|_| shows(name));
                let (_, h) = found.ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Unknown prompt: {name}"))
                })?;
                h.complete(&p.argument.name, &p.argument.value, &resolved)
            }
            CompletionRef::Resource { uri } => {
                let found = self
                    .inner
                    .catalog
                    .template_by_uri(uri)
                    .filter(|_| shows(uri));
                let t = found.ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Unknown resource template: {uri}"))
                })?;
                t.handler.complete(&p.argument.name, &p.argument.value)
            }
        };
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        let completion =
            json!({"values": values, "total": total, "hasMore": total > MAX_COMPLETIONS});
        Ok(self.result(id, &era, json!({"completion": completion})))
    }
}
