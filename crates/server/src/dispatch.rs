//! Dispatch: one incoming message in, at most one reply out.
//!
//! Every method is parsed once into [`Method`] and handled by one `match` arm. Each request
//! is placed in its era first: a request whose `params._meta` names a protocol version is
//! modern and stands alone; any other request belongs to the legacy session negotiated by
//! `initialize`. Both kinds can arrive on one connection.

use crate::config::InputErrorMode;
use crate::context::{Scope, ToolContext};
use crate::error::ToolError;
use crate::registry::Entry;
use crate::server::{Event, Server};
use crate::session::{Negotiated, Outbound, Session};
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio_util::sync::CancellationToken;
use toolwright_jsonrpc::{
    self as jsonrpc, ErrorObject, Incoming, Message, Parsed, RequestId, code,
};
use toolwright_protocol::lifecycle::{DiscoverResult, ToolsCapability};
use toolwright_protocol::params::{
    CallToolParams, CancelledParams, MetaOnlyParams, PaginatedParams, SetLevelParams,
};
use toolwright_protocol::{
    CallToolResult, ClientCapabilities, Content, InitializeParams, InitializeResult, LoggingLevel,
    Method, ProtocolVersion, RequestMeta, ServerCapabilities,
};

/// A reply that is not ready yet (a tool still running).
pub type ReplyFuture = Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send + 'static>>;

/// What handling a message produced.
pub enum Handled {
    /// Nothing to send (a notification, a response, a cancelled call).
    Nothing,
    /// A complete reply line.
    Reply(Vec<u8>),
    /// A complete reply line, and what the call that made it still holds. A transport
    /// drops the [`Spent`] only once the line is sent, so freeing the call's state is not
    /// part of what the client waits for.
    ReplyThen(Vec<u8>, Spent),
    /// A reply that comes when the future completes (`None`: nothing to send).
    Later(ReplyFuture),
}

impl Handled {
    /// The reply line, if there is one now (a [`Spent`] is dropped here).
    pub fn into_line(self) -> Result<Option<Vec<u8>>, ReplyFuture> {
        match self {
            Handled::Nothing => Ok(None),
            Handled::Reply(line) | Handled::ReplyThen(line, _) => Ok(Some(line)),
            Handled::Later(fut) => Err(fut),
        }
    }
}

/// What a finished `tools/call` still holds once its reply line exists: its context, the
/// tool's registry entry, its structured content, its cancellation token and its spent
/// future.
pub struct Spent {
    _held: (CallState, CancellationToken, Pin<Box<dyn Send>>),
}

/// The parts of a call that its future owns and hands back along with the reply.
struct CallState {
    _ctx: ToolContext,
    _entry: Arc<Entry>,
    _server: Server,
    _structured: Option<Value>,
}

/// The era a request belongs to.
#[derive(Debug, Clone)]
pub(crate) enum Era {
    Legacy(ProtocolVersion),
    Modern {
        version: ProtocolVersion,
        capabilities: Arc<ClientCapabilities>,
        log_level: Option<LoggingLevel>,
    },
}

impl Era {
    pub(crate) fn version(&self) -> ProtocolVersion {
        match self {
            Era::Legacy(v) => *v,
            Era::Modern { version, .. } => *version,
        }
    }
    pub(crate) fn is_modern(&self) -> bool {
        matches!(self, Era::Modern { .. })
    }
}

pub(crate) fn error_line(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    let mut buf = Vec::with_capacity(96);
    jsonrpc::write_error(&mut buf, id, error);
    buf
}

/// A result line around JSON this crate serialized itself (so it is known to be valid and
/// single-line), without parsing it again.
fn raw_result_line(id: &RequestId, result: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(result.len() + 48);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    id.write_json(&mut buf);
    buf.extend_from_slice(b",\"result\":");
    buf.extend_from_slice(result);
    buf.extend_from_slice(b"}\n");
    buf
}

/// Nothing is sent for a call that was cancelled meanwhile.
fn reply_or_cancelled(ctx: &ToolContext, reply: Vec<u8>) -> Option<Vec<u8>> {
    (!ctx.is_cancelled()).then_some(reply)
}

/// The line for a successful `tools/call` result whose only content is its structured
/// content, which the text block repeats: the JSON is serialized once and written twice.
/// Byte for byte what serializing `result` with that text block added gives (the test
/// `structured_line_matches_the_general_one` holds it to that).
fn structured_result_line(
    id: &RequestId,
    era: &Era,
    structured: &Value,
    result: &CallToolResult,
) -> Vec<u8> {
    let json = serde_json::to_string(structured).expect("a JSON value serializes");
    let mut buf = Vec::with_capacity(2 * json.len() + 128);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    id.write_json(&mut buf);
    buf.extend_from_slice(b",\"result\":{");
    if era.is_modern() {
        buf.extend_from_slice(b"\"resultType\":\"complete\",");
    }
    buf.extend_from_slice(b"\"content\":[{\"type\":\"text\",\"text\":");
    push_json_as_string(&mut buf, &json);
    buf.extend_from_slice(b"}],\"structuredContent\":");
    buf.extend_from_slice(json.as_bytes());
    if let Some(is_error) = result.is_error {
        buf.extend_from_slice(if is_error {
            b",\"isError\":true"
        } else {
            b",\"isError\":false"
        });
    }
    if let Some(meta) = &result.meta {
        buf.extend_from_slice(b",\"_meta\":");
        serde_json::to_writer(&mut buf, meta).expect("a JSON object serializes");
    }
    buf.extend_from_slice(b"}}\n");
    buf
}

/// Appends `json`, compact JSON text from serde_json, as a JSON string. Such text holds no
/// control characters (serde_json escapes them inside strings), so only the quote and the
/// backslash need a backslash: the bytes serde_json's string escaping gives, in one scan.
fn push_json_as_string(buf: &mut Vec<u8>, json: &str) {
    let bytes = json.as_bytes();
    buf.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'"' || b == b'\\' {
            buf.extend_from_slice(&bytes[start..i]);
            buf.push(b'\\');
            start = i;
        }
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

pub(crate) fn error_reply(id: &RequestId, error: ErrorObject) -> Handled {
    Handled::Reply(error_line(Some(id), &error))
}

pub(crate) fn parse_params<T: DeserializeOwned + Default>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}"))),
    }
}

pub(crate) fn parse_required<T: DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    match params {
        None => Err(ErrorObject::invalid_params("params are required")),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}"))),
    }
}

/// Which of `required`'s capabilities `have` lacks, in the ClientCapabilities shape.
fn missing_capabilities(required: &ClientCapabilities, have: &ClientCapabilities) -> Option<Value> {
    let mut missing = Map::new();
    let pairs = [
        ("roots", &required.roots, &have.roots),
        ("sampling", &required.sampling, &have.sampling),
        ("elicitation", &required.elicitation, &have.elicitation),
        ("tasks", &required.tasks, &have.tasks),
    ];
    for (name, need, got) in pairs {
        if let (Some(n), None) = (need, got) {
            missing.insert(name.to_owned(), n.clone());
        }
    }
    if let Some(ext) = &required.extensions {
        let have_ext = have.extensions.as_ref();
        let lacking: Map<String, Value> = ext
            .iter()
            .filter(|(k, _)| !have_ext.is_some_and(|h| h.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !lacking.is_empty() {
            missing.insert("extensions".into(), Value::Object(lacking));
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

impl Server {
    /// Parses one line (a message or, under 2025-03-26, a batch) and handles it.
    pub fn handle_bytes(
        &self,
        session: &Arc<Session>,
        bytes: &[u8],
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        // `tools/call`, the message that comes by the thousand, is read in one pass with
        // its params; everything else as a plain envelope first.
        let parsed = match jsonrpc::parse_call(bytes, &self.inner.config.limits, "tools/call") {
            Incoming::Call(id, params) => return self.handle_call(session, id, params, sink),
            Incoming::Other(parsed) => parsed,
        };
        match parsed {
            Parsed::Single(msg) => self.handle(session, msg, sink),
            Parsed::Invalid(e) => Handled::Reply(error_line(e.id.as_ref(), &e.error)),
            Parsed::Batch(items) => self.handle_batch(session, items, sink),
        }
    }

    fn handle_batch(
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
            return Handled::Reply(error_line(None, &e));
        }
        let parts: Vec<Handled> = items
            .into_iter()
            .map(|m| self.handle(session, m, sink))
            .collect();
        let join = |lines: Vec<Vec<u8>>| -> Option<Vec<u8>> {
            if lines.is_empty() {
                return None;
            }
            let mut out = Vec::with_capacity(lines.iter().map(Vec::len).sum::<usize>() + 2);
            out.push(b'[');
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(l.strip_suffix(b"\n").unwrap_or(l));
            }
            out.extend_from_slice(b"]\n");
            Some(out)
        };
        if parts.iter().all(|p| !matches!(p, Handled::Later(_))) {
            let lines = parts
                .into_iter()
                .filter_map(|p| p.into_line().ok().flatten())
                .collect();
            return join(lines).map_or(Handled::Nothing, Handled::Reply);
        }
        Handled::Later(Box::pin(async move {
            let mut lines = Vec::new();
            for p in parts {
                match p.into_line() {
                    Ok(line) => lines.extend(line),
                    Err(later) => lines.extend(later.await),
                }
            }
            join(lines)
        }))
    }

    /// Handles one parsed message. `sink` receives the notifications tied to this request
    /// (progress, logs, requests to the client); the reply itself is returned.
    pub fn handle(
        &self,
        session: &Arc<Session>,
        msg: Message,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        match msg {
            Message::Request(req) => {
                self.request(session, req.id, &req.method, req.params.as_deref(), sink)
            }
            Message::Notification(n) => {
                self.notification(session, &n.method, n.params.as_deref());
                Handled::Nothing
            }
            Message::Response(r) => {
                if !session.resolve(&r.id, r.outcome) {
                    tracing::debug!(id = %r.id, "response to no pending request; ignored");
                }
                Handled::Nothing
            }
            Message::Invalid { id, error } => Handled::Reply(error_line(id.as_ref(), &error)),
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

    pub(crate) fn era(
        &self,
        session: &Session,
        meta: Option<&RequestMeta>,
    ) -> Result<Era, ErrorObject> {
        if let Some(meta) = meta
            && let Some(v) = meta.protocol_version.as_deref()
        {
            return match ProtocolVersion::parse(v) {
                Some(version) if version.is_modern() => {
                    let capabilities = meta.client_capabilities.clone().ok_or_else(|| {
                        ErrorObject::invalid_params(format!(
                            "params._meta must include \"{}\"",
                            toolwright_protocol::meta::CLIENT_CAPABILITIES
                        ))
                    })?;
                    Ok(Era::Modern {
                        version,
                        capabilities: Arc::new(capabilities),
                        log_level: meta.log_level,
                    })
                }
                _ => Err(ErrorObject::new(
                    code::UNSUPPORTED_PROTOCOL_VERSION,
                    format!("Unsupported protocol version: {v}"),
                )
                .with_data(json!({"supported": Server::supported_versions(), "requested": v}))),
            };
        }
        match session.negotiated() {
            Some(n) => Ok(Era::Legacy(n.version)),
            None => Err(ErrorObject::invalid_params(format!(
                "params._meta with \"{}\" is required (2026-07-28); legacy clients must send \
                 initialize first",
                toolwright_protocol::meta::PROTOCOL_VERSION
            ))),
        }
    }

    fn capabilities(&self) -> ServerCapabilities {
        let mut caps = ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            logging: Some(Map::new()),
            ..Default::default()
        };
        self.capabilities_catalog(&mut caps);
        caps
    }

    /// Serializes a result, adding what the modern era requires (`resultType`, serverInfo).
    pub(crate) fn result_line(&self, id: &RequestId, era: &Era, mut value: Value) -> Vec<u8> {
        if era.is_modern()
            && let Some(obj) = value.as_object_mut()
        {
            obj.entry("resultType").or_insert_with(|| json!("complete"));
            if !obj.contains_key("_meta") {
                obj.insert("_meta".into(), self.inner.info_meta.clone());
            }
        }
        let mut buf = Vec::with_capacity(128);
        jsonrpc::write_result(&mut buf, id, &value).expect("a JSON value always serializes");
        buf
    }

    fn request(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        let raw_method = method;
        let method = Method::parse(method);
        let outcome = match method {
            Method::ToolsCall => return self.tools_call(session, id, params, sink),
            Method::Initialize => self.initialize(session, &id, params),
            Method::Ping => self.ping(session, &id, params),
            Method::ServerDiscover => self.discover(session, &id, params),
            Method::ToolsList => self.tools_list(session, &id, params),
            Method::LoggingSetLevel => self.set_level(session, &id, params),
            Method::SubscriptionsListen => return self.listen(session, id, params, sink),
            Method::ResourcesList | Method::ResourceTemplatesList | Method::PromptsList
                if self.catalog_serves(method) =>
            {
                let which = match method {
                    Method::ResourcesList => "resources",
                    Method::ResourceTemplatesList => "resourceTemplates",
                    _ => "prompts",
                };
                self.catalog_list(session, &id, params, which)
            }
            Method::ResourcesRead if self.catalog_serves(method) => {
                return self.resources_read(session, id, params, sink);
            }
            Method::ResourcesSubscribe | Method::ResourcesUnsubscribe
                if self.catalog_serves(method) =>
            {
                self.resource_subscription(
                    session,
                    &id,
                    params,
                    method == Method::ResourcesSubscribe,
                )
            }
            Method::PromptsGet if self.catalog_serves(method) => {
                return self.prompts_get(session, id, params, sink);
            }
            Method::Complete if self.catalog_serves(method) => self.complete(session, &id, params),
            // Unknown methods, methods of capabilities this server does not advertise, and
            // notification names sent as requests.
            _ => Err(ErrorObject::method_not_found(raw_method)),
        };
        match outcome {
            Ok(line) => Handled::Reply(line),
            Err(e) => error_reply(&id, e),
        }
    }

    /// True when the capability behind a resources/prompts/completion method is advertised.
    fn catalog_serves(&self, method: Method<'_>) -> bool {
        let c = &self.inner.catalog;
        match method {
            Method::PromptsList | Method::PromptsGet => c.has_prompts(),
            Method::Complete => c.has_prompts() || c.has_resources(),
            _ => c.has_resources(),
        }
    }

    fn initialize(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Vec<u8>, ErrorObject> {
        let p: InitializeParams = parse_required(params)?;
        let version = match ProtocolVersion::parse(&p.protocol_version) {
            Some(v) if !v.is_modern() => v,
            // Unknown (or modern, which has no handshake): counter-offer our latest legacy.
            _ => ProtocolVersion::LATEST_LEGACY,
        };
        let fresh = session.set_negotiated(Negotiated {
            version,
            client_capabilities: Arc::new(p.capabilities),
            client_info: p.client_info,
        });
        if !fresh {
            return Err(ErrorObject::invalid_request(
                "initialize was already called on this connection",
            ));
        }
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.capabilities(),
            server_info: self.inner.info.clone(),
            instructions: self.inner.config.instructions.clone(),
        };
        let mut buf = Vec::with_capacity(256);
        jsonrpc::write_result(&mut buf, id, &result).expect("InitializeResult serializes");
        Ok(buf)
    }

    /// Methods of the legacy era only (`ping`, `logging/setLevel`, resource subscriptions)
    /// do not exist for a modern request: -32601 (or -32022 for an unknown version).
    pub(crate) fn refuse_if_modern(
        &self,
        session: &Session,
        params: Option<&RawValue>,
        method: &str,
    ) -> Result<(), ErrorObject> {
        let probe: MetaOnlyParams = parse_params(params)?;
        if probe.meta.as_ref().is_some_and(RequestMeta::is_modern) {
            self.era(session, probe.meta.as_ref())?;
            return Err(ErrorObject::method_not_found(method));
        }
        Ok(())
    }

    fn ping(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Vec<u8>, ErrorObject> {
        self.refuse_if_modern(session, params, "ping")?;
        let mut buf = Vec::with_capacity(48);
        jsonrpc::write_result(&mut buf, id, &json!({})).expect("serializes");
        Ok(buf)
    }

    fn discover(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Vec<u8>, ErrorObject> {
        let p: MetaOnlyParams = parse_required(params)?;
        let era = match p.meta.as_ref() {
            Some(m) if m.is_modern() => self.era(session, Some(m))?,
            _ => {
                return Err(ErrorObject::invalid_params(format!(
                    "server/discover needs params._meta with \"{}\"",
                    toolwright_protocol::meta::PROTOCOL_VERSION
                )));
            }
        };
        let result = DiscoverResult {
            result_type: "complete".into(),
            supported_versions: Server::supported_versions()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            capabilities: self.capabilities(),
            instructions: self.inner.config.instructions.clone(),
            ttl_ms: self.inner.config.ttl_ms,
            cache_scope: self.inner.config.cache_scope,
            meta: self.inner.info_meta.as_object().cloned(),
        };
        Ok(self.result_line(id, &era, serde_json::to_value(result).expect("serializes")))
    }

    fn tools_list(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Vec<u8>, ErrorObject> {
        let p: PaginatedParams = parse_params(params)?;
        let era = self.era(session, p.meta.as_ref())?;
        self.wait_ready();
        let snapshot = self.inner.registry.snapshot();
        let page = snapshot
            .page(p.cursor.as_deref(), era.version())
            .map_err(ErrorObject::invalid_params)?;
        // Written by hand around the cached, pre-serialized tools array: the only copy of
        // the definitions is the one into the reply line.
        let mut tail = String::with_capacity(256);
        if let Some(c) = &page.next_cursor {
            tail.push_str(",\"nextCursor\":");
            tail.push_str(&serde_json::to_string(c).expect("strings serialize"));
        }
        if era.is_modern() {
            let c = &self.inner.config;
            tail.push_str(&format!(
                ",\"resultType\":\"complete\",\"ttlMs\":{},\"cacheScope\":{},\"_meta\":{}",
                c.ttl_ms,
                serde_json::to_string(&c.cache_scope).expect("serializes"),
                self.inner.info_meta
            ));
        }
        let mut buf = Vec::with_capacity(page.tools_json.len() + tail.len() + 64);
        buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        id.write_json(&mut buf);
        buf.extend_from_slice(b",\"result\":{\"tools\":");
        buf.extend_from_slice(page.tools_json.as_bytes());
        buf.extend_from_slice(tail.as_bytes());
        buf.extend_from_slice(b"}}\n");
        Ok(buf)
    }

    fn set_level(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Vec<u8>, ErrorObject> {
        self.refuse_if_modern(session, params, "logging/setLevel")?;
        self.era(session, None)?;
        let p: SetLevelParams = parse_required(params)?;
        session.set_log_level(p.level);
        let mut buf = Vec::with_capacity(48);
        jsonrpc::write_result(&mut buf, id, &json!({})).expect("serializes");
        Ok(buf)
    }

    fn notification(&self, session: &Arc<Session>, method: &str, params: Option<&RawValue>) {
        match Method::parse(method) {
            Method::Initialized => session.mark_initialized(),
            Method::Cancelled => match parse_required::<CancelledParams>(params) {
                Ok(p) => {
                    let found = session.cancel(&p.request_id);
                    tracing::debug!(id = %p.request_id, found, reason = ?p.reason, "cancel");
                }
                Err(e) => tracing::warn!("malformed notifications/cancelled: {}", e.message),
            },
            Method::RootsListChanged => session.set_cached_roots(None),
            _ => tracing::debug!(method, "notification ignored"),
        }
    }

    fn tools_call(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        match parse_required(params) {
            Ok(p) => self.handle_call(session, id, p, sink),
            Err(e) => error_reply(&id, e),
        }
    }

    /// `tools/call` whose params are already read (see [`jsonrpc::parse_call`]): exactly what
    /// [`handle`](Self::handle) does with the same request.
    pub fn handle_call(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        p: CallToolParams,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
        let era = match self.era(session, p.meta.as_deref()) {
            Ok(e) => e,
            Err(e) => return error_reply(&id, e),
        };
        self.wait_ready();
        let snapshot = self.inner.registry.snapshot();
        let Some(entry) = snapshot.get(&p.name).cloned() else {
            return error_reply(
                &id,
                ErrorObject::invalid_params(format!("Unknown tool: {}", p.name)),
            );
        };
        drop(snapshot);
        let capabilities = self.client_caps(session, &era);
        if let Some(required) = &entry.required_capabilities
            && let Some(missing) = missing_capabilities(required, &capabilities)
        {
            if era.is_modern() {
                let e = ErrorObject::new(
                    code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!(
                        "tool {} needs client capabilities this request did not declare",
                        p.name
                    ),
                )
                .with_data(json!({"requiredCapabilities": missing}));
                return error_reply(&id, e);
            }
            let r = CallToolResult::error(format!(
                "tool {} needs the client capabilities {missing}, which this client did not declare at initialize",
                p.name
            ));
            return Handled::Reply(self.call_result_line(&id, &era, r));
        }
        let args = p.arguments.unwrap_or_else(|| Value::Object(Map::new()));
        if !args.is_object() {
            return error_reply(
                &id,
                ErrorObject::invalid_params("tools/call arguments must be a JSON object"),
            );
        }
        if let Err(violations) = entry.input.validate(&args) {
            let text = toolwright_schema::format_violations(&violations);
            return match self.inner.config.input_errors {
                InputErrorMode::ToolError => {
                    let r = CallToolResult::error(format!(
                        "Invalid arguments for tool {}:\n{text}",
                        p.name
                    ));
                    Handled::Reply(self.call_result_line(&id, &era, r))
                }
                InputErrorMode::ProtocolError => {
                    let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                    let e = ErrorObject::invalid_params(format!(
                        "Invalid arguments for tool {}: {text}",
                        p.name
                    ))
                    .with_data(json!({"violations": list}));
                    error_reply(&id, e)
                }
            };
        }

        let meta = p.meta.map(|m| *m).unwrap_or_default();
        // Modern multi-round-trip: answers from the sealed state plus this round's.
        let mut answers = Map::new();
        let args_copy = era.is_modern().then(|| args.clone());
        if let (Some(state), Some(args)) = (&p.request_state, &args_copy) {
            match self
                .inner
                .state_key
                .open(state, "tools/call", &p.name, args)
            {
                Ok(payload) => answers = payload.a,
                Err(why) => return error_reply(&id, ErrorObject::invalid_params(why)),
            }
        }
        if era.is_modern() {
            answers.extend(p.input_responses.unwrap_or_default());
        }
        let cancel = CancellationToken::new();
        let ctx = self.context(
            session,
            &id,
            &era,
            meta,
            sink,
            &cancel,
            capabilities,
            answers,
        );
        let server = self.clone();
        let reply_id = id.clone();
        let mut fut = Box::pin(async move {
            let outcome = AssertUnwindSafe(entry.handler.call(args, ctx.clone()))
                .catch_unwind()
                .await;
            let mut spent = None;
            let line = server.finish(
                &reply_id,
                &era,
                &entry,
                &ctx,
                args_copy.as_ref(),
                outcome,
                &mut spent,
            );
            // Handed back rather than dropped here, where the reply would wait for it.
            let state = CallState {
                _ctx: ctx,
                _entry: entry,
                _server: server,
                _structured: spent,
            };
            (line, state)
        });
        // Most tools finish on this first poll.
        if let Poll::Ready((line, state)) =
            fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        {
            return match line {
                Some(line) => Handled::ReplyThen(
                    line,
                    Spent {
                        _held: (state, cancel, fut),
                    },
                ),
                None => Handled::Nothing,
            };
        }
        self.drive(
            session,
            id,
            cancel,
            || format!("tool {}", p.name),
            Box::pin(async move { fut.await.0 }),
        )
    }

    /// Builds the context of one request.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn context(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: &Era,
        meta: RequestMeta,
        sink: &Arc<dyn Outbound>,
        cancel: &CancellationToken,
        client_capabilities: Arc<ClientCapabilities>,
        answers: Map<String, Value>,
    ) -> ToolContext {
        ToolContext::new(Scope {
            request_id: id.clone(),
            version: era.version(),
            cancel: cancel.clone(),
            progress_token: meta.progress_token,
            last_progress: std::sync::Mutex::new(f64::NEG_INFINITY),
            modern_log_level: match era {
                Era::Modern { log_level, .. } => *log_level,
                Era::Legacy(_) => None,
            },
            sink: sink.clone(),
            session: session.clone(),
            client_capabilities,
            roots: self.inner.roots.clone(),
            client_timeout: self.inner.config.client_request_timeout,
            inputs: crate::context::Inputs {
                answers,
                ..Default::default()
            },
        })
    }

    /// Runs the future that produces a request's reply. Most finish without waiting on
    /// anything, so it is polled once right here and answered at once, with no task, timer
    /// or cancellation entry. One that must wait is tracked (so `notifications/cancelled`
    /// reaches it), bounded by the call timeout, and cancelled if it is dropped.
    pub(crate) fn drive(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        cancel: CancellationToken,
        what: impl FnOnce() -> String,
        fut: ReplyFuture,
    ) -> Handled {
        let mut fut = fut;
        let mut cx = Context::from_waker(Waker::noop());
        if let Poll::Ready(reply) = fut.as_mut().poll(&mut cx) {
            return reply.map_or(Handled::Nothing, Handled::Reply);
        }
        // Named only now: most calls never need to say what they were.
        let what = what();
        session.track(id.clone(), cancel.clone());
        let session = session.clone();
        let timeout = self.inner.config.call_timeout;
        Handled::Later(Box::pin(async move {
            // Dropping this future (an HTTP client closed its stream) cancels the call too.
            let cancel_on_drop = cancel.clone().drop_guard();
            let reply = tokio::select! {
                reply = &mut fut => reply,
                _ = cancel.cancelled() => None,
                _ = tokio::time::sleep(timeout) => {
                    cancel.cancel();
                    let e = ErrorObject::new(
                        code::REQUEST_TIMEOUT,
                        format!("{what} did not finish within {timeout:?} and was cancelled"),
                    );
                    Some(error_line(Some(&id), &e))
                }
            };
            drop(fut);
            session.untrack(&id);
            cancel_on_drop.disarm();
            reply
        }))
    }

    /// The reply for a modern call that asked the client something it has no answer for
    /// (`input_required`), or that needs a capability the request did not declare.
    pub(crate) fn input_reply(
        &self,
        id: &RequestId,
        era: &Era,
        ctx: &ToolContext,
        method: &str,
        target: &str,
        args: Option<&Value>,
    ) -> Option<Vec<u8>> {
        if !era.is_modern() {
            return None;
        }
        if let Some(cap) = ctx.missing_capability() {
            let e = ErrorObject::new(
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "{target} needs the client capability {cap}, which this request did not declare"
                ),
            )
            .with_data(json!({"requiredCapabilities": {cap: {}}}));
            return Some(error_line(Some(id), &e));
        }
        let asked = ctx.pending_inputs();
        if asked.is_empty() {
            return None;
        }
        let null = Value::Null;
        let payload = crate::mrtr::StateKey::payload(
            method,
            target,
            args.unwrap_or(&null),
            self.inner.config.request_state_ttl,
            ctx.answers().clone(),
        );
        let state = self.inner.state_key.seal(&payload);
        let value =
            json!({"resultType": "input_required", "inputRequests": asked, "requestState": state});
        Some(self.result_line(id, era, value))
    }

    fn call_result_line(&self, id: &RequestId, era: &Era, r: CallToolResult) -> Vec<u8> {
        let mut buf = Vec::with_capacity(160);
        if era.is_modern() {
            // `{` + `"resultType":"complete",` + the rest of the object.
            let body = serde_json::to_vec(&r).expect("a CallToolResult serializes");
            let mut with_type = Vec::with_capacity(body.len() + 26);
            with_type.extend_from_slice(b"{\"resultType\":\"complete\",");
            with_type.extend_from_slice(&body[1..]);
            return raw_result_line(id, &with_type);
        } else {
            jsonrpc::write_result(&mut buf, id, &r).expect("a CallToolResult serializes");
        }
        buf
    }

    /// The reply line of a finished call. Structured content that `spent` receives is
    /// dropped by the caller, once the line is sent.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        id: &RequestId,
        era: &Era,
        entry: &Entry,
        ctx: &ToolContext,
        args: Option<&Value>,
        outcome: std::thread::Result<Result<CallToolResult, ToolError>>,
        spent: &mut Option<Value>,
    ) -> Option<Vec<u8>> {
        let name = &entry.definition.name;
        if let Some(reply) = self.input_reply(id, era, ctx, "tools/call", name, args) {
            return reply_or_cancelled(ctx, reply);
        }
        let result = match outcome {
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                tracing::error!(tool = %name, "tool panicked: {why}");
                let e = ErrorObject::internal(format!("tool {name} panicked: {why}"));
                return Some(error_line(Some(id), &e));
            }
            Ok(Err(ToolError::Cancelled)) => return None,
            Ok(Err(ToolError::Internal(m))) => {
                let e = ErrorObject::internal(format!("tool {name} failed: {m}"));
                return Some(error_line(Some(id), &e));
            }
            Ok(Err(e @ (ToolError::Failed(_) | ToolError::InvalidArguments(_)))) => {
                CallToolResult::error(e.to_string())
            }
            Ok(Ok(r)) => r,
        };
        let mut result = result;
        if !result.is_error() {
            if let Some(validator) = &entry.output {
                let Some(sc) = &result.structured_content else {
                    let e = ErrorObject::internal(format!(
                        "tool {name} declares an outputSchema but returned no structuredContent"
                    ));
                    return Some(error_line(Some(id), &e));
                };
                if let Err(v) = validator.validate(sc) {
                    let e = ErrorObject::internal(format!(
                        "tool {name} returned structuredContent that violates its outputSchema:\n{}",
                        toolwright_schema::format_violations(&v)
                    ))
                    .with_data(json!({"violations": v.iter().map(ToString::to_string).collect::<Vec<_>>()}));
                    return Some(error_line(Some(id), &e));
                }
            }
            if let Some(sc) = &result.structured_content
                && result.content.is_empty()
            {
                if era.version().has_structured_content() {
                    let line = structured_result_line(id, era, sc, &result);
                    *spent = result.structured_content;
                    return Some(line);
                }
                let text = serde_json::to_string(sc).expect("a JSON value serializes");
                result.content = vec![Content::text(text)];
            }
        }
        if !era.version().has_structured_content() {
            result.structured_content = None;
        }
        Some(self.call_result_line(id, era, result))
    }

    fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Option<&RawValue>,
        sink: &Arc<dyn Outbound>,
    ) -> Handled {
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
        let p: ListenParams = match parse_required(params) {
            Ok(p) => p,
            Err(e) => return error_reply(&id, e),
        };
        let era = match p.meta.as_ref() {
            Some(m) if m.is_modern() => match self.era(session, Some(m)) {
                Ok(e) => e,
                Err(e) => return error_reply(&id, e),
            },
            _ => return error_reply(&id, ErrorObject::method_not_found("subscriptions/listen")),
        };
        let mut f = p.notifications;
        // Only what this server can report is honoured.
        let has_resources = self.inner.catalog.has_resources();
        f.prompts_list_changed &= self.inner.catalog.has_prompts();
        f.resources_list_changed &= has_resources;
        if !has_resources {
            f.resource_subscriptions.clear();
        }
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
        Handled::Later(Box::pin(async move {
            let closed = session.closed_token().clone();
            let end =
                |server: &Server| Some(server.result_line(&id, &era, json!({"_meta": sub_meta})));
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
            reply
        }))
    }
}

/// Handles one request outside any transport (the CLI's in-process `call`) and returns the
/// reply line; notifications the call sends are dropped.
pub async fn call_in_process(server: &Server, request: &Value) -> Result<Vec<u8>, ErrorObject> {
    struct Discard;
    impl Outbound for Discard {
        fn send(&self, _: Vec<u8>) {}
    }
    let sink: Arc<dyn Outbound> = Arc::new(Discard);
    let session = server.new_session(sink.clone());
    let bytes = serde_json::to_vec(request).map_err(|e| ErrorObject::internal(e.to_string()))?;
    let reply = match server.handle_bytes(&session, &bytes, &sink).into_line() {
        Ok(line) => line,
        Err(later) => later.await,
    };
    reply.ok_or_else(|| ErrorObject::internal("the request produced no reply"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_jsonrpc::RequestId;
    use toolwright_protocol::Implementation;

    /// The one-pass line of a structured result is byte for byte the general serialization
    /// of the same result with the text block added, in both eras.
    #[test]
    fn structured_line_matches_the_general_one() {
        let server = Server::new(Implementation::new("t", "0"), Default::default());
        let eras = [
            Era::Legacy(ProtocolVersion::LATEST_LEGACY),
            Era::Modern {
                version: ProtocolVersion::LATEST,
                capabilities: Arc::new(ClientCapabilities::default()),
                log_level: None,
            },
        ];
        let values = [
            json!({"result": 3}),
            json!({"result": -0.5, "note": "say \"hi\"\\n\tand\u{1}\u{7f} é ✓ / \\\"\\"}),
            json!({"list": [1, {"a": null, "b": [true, false]}], "empty": {}}),
            json!("plain"),
            json!([]),
        ];
        let mut meta = Map::new();
        meta.insert("k".into(), json!({"x": [1, "two"]}));
        let ids = [RequestId::Number(7), RequestId::from("id \"q\"")];
        for era in &eras {
            for value in &values {
                for id in &ids {
                    for (is_error, meta) in [(None, None), (Some(false), Some(meta.clone()))] {
                        let mut result = CallToolResult::structured(value.clone());
                        result.is_error = is_error;
                        result.meta = meta;
                        let fast = structured_result_line(id, era, value, &result);
                        result.content = vec![Content::text(serde_json::to_string(value).unwrap())];
                        let general = server.call_result_line(id, era, result);
                        assert_eq!(
                            String::from_utf8(fast).unwrap(),
                            String::from_utf8(general).unwrap()
                        );
                    }
                }
            }
        }
    }
}
