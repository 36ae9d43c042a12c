//! The lifecycle and listing methods: `initialize`, `ping`, `server/discover`,
//! `tools/list`, `logging/setLevel`, and the notifications a client sends.

use crate::era::Era;
use crate::reply::{Reply, parse_params, parse_required, plain_result};
use crate::server::Server;
use crate::session::{Negotiated, Session};
use serde_json::value::RawValue;
use serde_json::{Map, json};
use std::sync::Arc;
use toolwright_jsonrpc::{ErrorObject, RequestId};
use toolwright_protocol::lifecycle::{DiscoverResult, ToolsCapability};
use toolwright_protocol::params::{
    CancelledParams, MetaOnlyParams, PaginatedParams, SetLevelParams,
};
use toolwright_protocol::{
    InitializeParams, InitializeResult, Method, ProtocolVersion, RequestMeta, ServerCapabilities,
    meta,
};

impl Server {
    /// The capabilities this server announces now (at `initialize`, in `server/discover`,
    /// on the Server Card): tools and logging always, resources and prompts when its
    /// catalog has or may have some.
    pub fn capabilities(&self) -> ServerCapabilities {
        let mut caps = ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            logging: Some(Map::new()),
            // Tasks (SEP-2663) for both eras: a legacy client takes them up at `initialize`,
            // a modern one per request.
            extensions: Some(Map::from_iter([(
                crate::task::EXTENSION.to_owned(),
                serde_json::Value::Object(Map::new()),
            )])),
            ..Default::default()
        };
        self.capabilities_catalog(&mut caps);
        caps
    }

    pub(crate) fn initialize(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
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
        Ok(plain_result(id, &result))
    }

    /// Methods of the legacy era only ([`Method::is_legacy_only`]: `ping`,
    /// `logging/setLevel`, resource subscriptions) do not exist for a modern request: -32601
    /// (or -32022 for an unknown version).
    pub(crate) fn refuse_if_modern(
        &self,
        session: &Session,
        params: Option<&RawValue>,
        method: &str,
    ) -> Result<(), ErrorObject> {
        let probe: MetaOnlyParams = parse_params(params)?;
        if probe.meta.as_ref().is_some_and(RequestMeta::is_modern) {
            Era::resolve(probe.meta.as_ref(), session)?;
            return Err(ErrorObject::method_not_found(method));
        }
        Ok(())
    }

    pub(crate) fn ping(&self, id: &RequestId) -> Result<Reply, ErrorObject> {
        Ok(plain_result(id, &json!({})))
    }

    pub(crate) fn discover(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: MetaOnlyParams = parse_required(params)?;
        let era = match p.meta.as_ref() {
            Some(m) if m.is_modern() => Era::resolve(Some(m), session)?,
            _ => {
                return Err(ErrorObject::invalid_params(format!(
                    "server/discover needs params._meta with \"{}\"",
                    meta::PROTOCOL_VERSION
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
        Ok(self.result(id, &era, serde_json::to_value(result).expect("serializes")))
    }

    pub(crate) fn tools_list(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        self.wait_ready();
        let snapshot = self.inner.registry.snapshot();
        let page = match session.view() {
            Some(view) => snapshot.page_in(view, p.cursor.as_deref(), era.version()),
            None => snapshot.page(p.cursor.as_deref(), era.version()),
        }
        .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
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
        Ok(Reply::result(buf))
    }

    pub(crate) fn set_level(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        Era::resolve(None, session)?;
        let p: SetLevelParams = parse_required(params)?;
        session.set_log_level(p.level);
        Ok(plain_result(id, &json!({})))
    }

    pub(crate) fn notification(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Option<&RawValue>,
    ) {
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
}
