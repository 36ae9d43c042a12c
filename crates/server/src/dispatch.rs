//! Dispatch: one incoming message in, at most one reply out.
//!
//! A transport reads bytes with [`Server::read`] (a `tools/call`, the message that comes by
//! the thousand, is read in one pass with its params) and hands what it read to
//! [`Server::handle`], the one entry point. Every method is parsed once into [`Method`] and
//! handled by one `match` arm; handlers return `Result<_, ErrorObject>`, and an error
//! becomes the JSON-RPC error reply to the request's id here, in one place.

use crate::observe;
use crate::reply::{Handled, Reply, join_batch, parse_required};
use crate::server::Server;
use crate::session::{Discard, Outbound, Session};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use toolwright_jsonrpc::RequestId;
use toolwright_jsonrpc::{self as jsonrpc, ErrorObject, ErrorResponse, Incoming, Message, Parsed};
use toolwright_protocol::Method;
use toolwright_protocol::params::CallToolParams;
use toolwright_telemetry::Target;

/// A message as read from the wire, ready for [`Server::handle`].
#[derive(Debug)]
pub enum Inbound {
    /// A `tools/call` request, read in one pass with its params.
    Call(RequestId, CallToolParams),
    /// Any other single message.
    Message(Message),
    /// A JSON-RPC batch (allowed under 2025-03-26 only).
    Batch(Vec<Message>),
    /// Input that is no message at all; the error to send back.
    Invalid(ErrorResponse),
}

/// What a transport knows of a message from outside it, for telemetry (see
/// [`Server::handle_in`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ambient<'a> {
    /// The carrying request's `traceparent` (an HTTP header).
    pub traceparent: Option<&'a str>,
    /// Its `tracestate`.
    pub tracestate: Option<&'a str>,
    /// The peer it came from (`client.address`, `client.port`).
    pub peer: Option<std::net::SocketAddr>,
    /// The version of the protocol under MCP (`network.protocol.version`: HTTP's `1.1`,
    /// `2`).
    pub protocol_version: Option<&'static str>,
}

impl Inbound {
    /// The id of the request it carries, if it is one and the id could be read.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Inbound::Call(id, _) => Some(id),
            Inbound::Message(m) => m.id(),
            Inbound::Batch(_) => None,
            Inbound::Invalid(e) => e.id.as_ref(),
        }
    }

    /// The method it names, parsed (`None` for batches, responses and invalid input).
    pub fn method(&self) -> Option<Method<'_>> {
        match self {
            Inbound::Call(..) => Some(Method::ToolsCall),
            Inbound::Message(Message::Request(r)) => Some(Method::parse(&r.method)),
            Inbound::Message(Message::Notification(n)) => Some(Method::parse(&n.method)),
            _ => None,
        }
    }
}

impl Server {
    /// Reads one line (a message or a batch) within the configured limits.
    pub fn read(&self, bytes: &[u8]) -> Inbound {
        let limits = &self.inner.config.limits;
        match jsonrpc::parse_call(bytes, limits, "tools/call") {
            Incoming::Call(id, params) => Inbound::Call(id, params),
            Incoming::Other(Parsed::Single(msg)) => Inbound::Message(msg),
            Incoming::Other(Parsed::Batch(items)) => Inbound::Batch(items),
            Incoming::Other(Parsed::Invalid(e)) => Inbound::Invalid(e),
        }
    }

    /// [`Server::handle`] for a message that came with more outside it (an HTTP request):
    /// telemetry records the peer and the protocol version under MCP, and the request's
    /// W3C Trace Context is the parent of the message's span when its own `params._meta`
    /// names none, else a link of it.
    pub fn handle_in(
        &self,
        session: &Arc<Session>,
        inbound: Inbound,
        sink: &Arc<dyn Outbound>,
        ambient: Ambient<'_>,
    ) -> Handled {
        if self.inner.config.telemetry.is_none() {
            return self.handle(session, inbound, sink);
        }
        let outer = observe::Outer {
            parent: ambient
                .traceparent
                .and_then(|tp| toolwright_telemetry::SpanContext::parse(tp, ambient.tracestate)),
            peer: ambient.peer,
            protocol_version: ambient.protocol_version,
        };
        observe::with_outer(outer, || self.handle(session, inbound, sink))
    }

    /// Handles one message of `session`. `sink` receives the notifications tied to this
    /// request (progress, logs, requests to the client); the reply itself is returned.
    pub fn handle(
        &self,
        session: &Arc<Session>,
        inbound: Inbound,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        match inbound {
            Inbound::Call(id, params) => {
                // Telemetry's hook (here and in `message`): one check when it is off.
                let observation = (self.inner.config.telemetry.as_ref()).map(|t| {
                    let known = self.has_tool(&params.name);
                    t.start(observe::call_operation(t, session, &id, &params, known))
                });
                let handle = || {
                    self.gated_call(session, &id, params, sink)
                        .unwrap_or_else(|e| Handled::error(&id, e))
                };
                match observation {
                    Some(o) => observe::observed(o, handle),
                    None => handle(),
                }
            }
            Inbound::Message(msg) => self.message(session, msg, sink),
            Inbound::Batch(items) => self.batch(session, items, sink),
            Inbound::Invalid(e) => Handled::Reply(Reply::error(e.id.as_ref(), &e.error)),
        }
    }

    /// Whether the server has the tool `name` (now: a reload may change it), once the
    /// start-up tools are registered (before, a built-in tool's call would be labelled as
    /// an unknown one).
    fn has_tool(&self, name: &str) -> bool {
        self.wait_ready();
        self.inner.registry.snapshot().get(name).is_some()
    }

    /// Whether the server has the tool or prompt `target` names: only such names are
    /// telemetry's metric labels.
    fn knows(&self, target: &Target) -> bool {
        match target {
            Target::Tool(name) => self.has_tool(name),
            Target::Prompt(name) => self.inner.catalog.prompt(name).is_some(),
        }
    }

    fn message(&self, session: &Arc<Session>, msg: Message, sink: &Arc<dyn Outbound>) -> Handled {
        let telemetry = self.inner.config.telemetry.as_ref();
        match msg {
            Message::Request(req) => {
                let id = req.id;
                let params = req.params.as_deref();
                let observation = telemetry.map(|t| {
                    let op = observe::operation(session, Some(&id), &req.method, params, |t| {
                        self.knows(t)
                    });
                    t.start(op)
                });
                let handle = || {
                    self.request(session, &id, &req.method, params, sink)
                        .unwrap_or_else(|e| Handled::error(&id, e))
                };
                match (observation, telemetry) {
                    (Some(mut o), Some(t)) if req.method == "initialize" => {
                        let handled = observe::run(&o, handle);
                        observe::session_opened(t, session, &mut o);
                        observe::observed(o, || handled)
                    }
                    (Some(o), _) => observe::observed(o, handle),
                    _ => handle(),
                }
            }
            Message::Notification(n) => {
                let params = n.params.as_deref();
                let observation = telemetry.map(|t| {
                    let op =
                        observe::operation(session, None, &n.method, params, |t| self.knows(t));
                    t.start(op)
                });
                let handle = || {
                    self.notification(session, &n.method, params);
                    Handled::Nothing
                };
                match observation {
                    Some(o) => observe::observed(o, handle),
                    None => handle(),
                }
            }
            Message::Response(r) => {
                if !session.resolve(&r.id, r.outcome) {
                    tracing::debug!(id = %r.id, "response to no pending request; ignored");
                }
                Handled::Nothing
            }
            Message::Invalid { id, error } => Handled::Reply(Reply::error(id.as_ref(), &error)),
            Message::ErrorWithoutId(e) => {
                tracing::warn!(
                    code = e.code,
                    "the client could not read a message: {}",
                    e.message
                );
                Handled::Nothing
            }
        }
    }

    fn batch(
        &self,
        session: &Arc<Session>,
        items: Vec<Message>,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        let allowed = session
            .negotiated()
            .is_some_and(|n| n.version.allows_batches());
        if !allowed {
            let e = ErrorObject::invalid_request(
                "JSON-RPC batches are allowed only under protocol version 2025-03-26",
            );
            return Handled::Reply(Reply::error(None, &e));
        }
        let parts: Vec<Handled> = items
            .into_iter()
            .map(|m| self.message(session, m, sink))
            .collect();
        if parts.iter().all(|p| !matches!(p, Handled::Later(_))) {
            let replies = parts
                .into_iter()
                .filter_map(|p| p.now().ok().flatten())
                .collect();
            return join_batch(replies).map_or(Handled::Nothing, Handled::Reply);
        }
        Handled::Later(Box::pin(async move {
            let mut replies = Vec::new();
            for p in parts {
                match p.now() {
                    Ok(reply) => replies.extend(reply),
                    Err(later) => replies.extend(later.await),
                }
            }
            join_batch(replies)
        }))
    }

    /// One request, by method.
    fn request(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        name: &str,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Result<Handled, ErrorObject> {
        let method = Method::parse(name);
        // A request in the modern era (its `_meta` names a modern version) for a method that
        // era removed is not found (-32601; 404 over HTTP). That includes `initialize`: only
        // a legacy `initialize`, even one proposing a modern version in its body, gets the
        // counter-offer of the latest legacy version.
        if method.is_legacy_only() {
            self.refuse_if_modern(session, params, name)?;
        }
        let reply = match method {
            Method::ToolsCall => {
                let p: CallToolParams = parse_required(params)?;
                return self.gated_call(session, id, p, sink);
            }
            Method::Initialize => self.initialize(session, id, params)?,
            Method::Ping => self.ping(id)?,
            Method::ServerDiscover => self.discover(session, id, params)?,
            Method::ToolsList => self.tools_list(session, id, params)?,
            Method::LoggingSetLevel => self.set_level(session, id, params)?,
            Method::SubscriptionsListen => return self.listen(session, id.clone(), params, sink),
            Method::TasksGet => return self.tasks_get(session, id, params),
            Method::TasksUpdate => self.tasks_update(session, id, params)?,
            Method::TasksCancel => self.tasks_cancel(session, id, params)?,
            Method::ResourcesList | Method::ResourceTemplatesList | Method::PromptsList
                if self.catalog_serves(method) =>
            {
                let which = match method {
                    Method::ResourcesList => "resources",
                    Method::ResourceTemplatesList => "resourceTemplates",
                    _ => "prompts",
                };
                self.catalog_list(session, id, params, which)?
            }
            Method::ResourcesRead if self.catalog_serves(method) => {
                return self.resources_read(session, id, params, sink);
            }
            Method::ResourcesSubscribe | Method::ResourcesUnsubscribe
                if self.catalog_serves(method) =>
            {
                let subscribe = method == Method::ResourcesSubscribe;
                self.resource_subscription(session, id, params, subscribe)?
            }
            Method::PromptsGet if self.catalog_serves(method) => {
                return self.prompts_get(session, id, params, sink);
            }
            Method::Complete if self.catalog_serves(method) => {
                self.complete(session, id, params)?
            }
            Method::SkillsList if self.inner.catalog.has_skills() => {
                self.skills_list(session, id, params)?
            }
            Method::SkillsGet if self.inner.catalog.has_skills() => {
                self.skills_get(session, id, params)?
            }
            Method::ResourcesDirectoryRead if self.inner.catalog.has_skills() => {
                self.directory_read(session, id, params)?
            }
            // Unknown methods, methods of capabilities this server does not advertise, and
            // notification names sent as requests.
            _ => return Err(ErrorObject::method_not_found(name)),
        };
        Ok(Handled::Reply(reply))
    }

    /// True when the capability behind a resources/prompts/completion method is advertised;
    /// the catalog's source (if any) fills it first.
    fn catalog_serves(&self, method: Method<'_>) -> bool {
        let c = &self.inner.catalog;
        c.prepare();
        match method {
            Method::PromptsList | Method::PromptsGet => c.has_prompts(),
            Method::Complete => c.has_prompts() || c.has_resources(),
            _ => c.has_resources(),
        }
    }
}

/// Handles one request outside any transport (the CLI's in-process `call`) and returns the
/// reply line; notifications the call sends are dropped.
pub async fn call_in_process(server: &Server, request: &Value) -> Result<Vec<u8>, ErrorObject> {
    let sink: Arc<dyn Outbound> = Arc::new(Discard);
    let session = server.new_session(sink.clone());
    let bytes = serde_json::to_vec(request).map_err(|e| ErrorObject::internal(e.to_string()))?;
    let reply = match server.handle(&session, server.read(&bytes), &sink).now() {
        Ok(reply) => reply,
        Err(later) => later.await,
    };
    reply
        .map(Reply::into_line)
        .ok_or_else(|| ErrorObject::internal("the request produced no reply"))
}
