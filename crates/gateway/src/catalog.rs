//! Upstream resources, resource templates and prompts, served by the gateway.
//!
//! Each server's catalog is listed when a connection to it comes up (the first, and each
//! after a restart) and again when it says `notifications/resources/list_changed` or
//! `notifications/prompts/list_changed`; every server's last listing is merged in config
//! order and swapped into the server in one step
//! ([`Server::replace_catalog`](toolwright_server::Server::replace_catalog)), which tells
//! clients once per list that changed. Prompts are namespaced like tools; resource URIs are
//! kept as the upstream wrote them (a URI is an address, and a client may have it from
//! elsewhere), and a URI or template two servers both offer goes to the first in the
//! config. Reading one is forwarded to its upstream, as the client asked.
//!
//! The capabilities sent at `initialize` come before any lazy server is started, so:
//! `eager` servers are listed before serving (at most 20 s) and announce what they have;
//! when any server is lazy, `resources` and `prompts` are announced, and a client's first
//! catalog request (a `prompts/list`, `resources/list`, read, get or completion) starts
//! every lazy server not listed yet, as a first `tools/list` does, and waits for their
//! catalogs (at most 20 s in all). A server that cannot be reached then is not waited for
//! again: its catalog joins when it comes up.

use crate::gateway::{FIRST_LIST_WAIT, Gateway};
use crate::naming;
use crate::upstream::Upstream;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use toolwright_client::Call;
use toolwright_protocol::ResourceContents;
use toolwright_protocol::resources::{GetPromptResult, Prompt, Resource, ResourceTemplate};
use toolwright_server::catalog::{CatalogItems, CatalogSource};
use toolwright_server::{
    BoxFuture, PromptHandler, ResourceHandler, Server, TemplateHandler, ToolContext, ToolError,
};
use toolwright_toolfile::servers::StartSpec;

/// Sends one request upstream and reads the part of the result that matters; an upstream
/// with `exchange:` gets the caller's exchanged token on it, as its tool calls do. `name` is
/// what the request names (a resource's URI, a prompt's name): its `Mcp-Name` on modern HTTP.
async fn forward<T: serde::de::DeserializeOwned>(
    upstream: &Arc<Upstream>,
    (method, name): (&'static str, &str),
    params: Value,
    key: Option<&str>,
    ctx: &ToolContext,
) -> Result<T, ToolError> {
    let peer = upstream
        .peer()
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let mut params = params;
    crate::observe::propagate(&mut params, ctx);
    let mut call = Call::new(method, params);
    call.name = Some(name.to_owned());
    // An upstream with `exchange:` reads and gets with the caller's identity, as it calls.
    if let Some(x) = upstream.exchange() {
        call.headers = x.authorize(ctx, peer.era(), Vec::new()).await?;
    }
    call.cancel = Some(ctx.cancellation().child_token());
    call.observer = crate::observe::Watcher::call(ctx, upstream);
    let outcome = peer.request(call).await;
    let result = outcome.map_err(|e| {
        ToolError::Failed(format!(
            "upstream {}: {method} failed: {e}",
            upstream.name()
        ))
    })?;
    let part = match key {
        Some(k) => result.get(k).cloned().unwrap_or(Value::Null),
        None => result,
    };
    serde_json::from_value(part).map_err(|e| {
        ToolError::Failed(format!(
            "upstream {} sent an invalid {method} result: {e}",
            upstream.name()
        ))
    })
}

/// An upstream resource with a fixed URI.
pub struct UpstreamResource {
    upstream: Arc<Upstream>,
    definition: Resource,
}

impl ResourceHandler for UpstreamResource {
    fn definition(&self) -> Resource {
        self.definition.clone()
    }

    fn read(&self, ctx: ToolContext) -> BoxFuture<'_, Result<Vec<ResourceContents>, ToolError>> {
        Box::pin(async move {
            let params = json!({"uri": self.definition.uri});
            let uri = &self.definition.uri;
            let target = ("resources/read", uri.as_str());
            forward(&self.upstream, target, params, Some("contents"), &ctx).await
        })
    }
}

/// An upstream resource template.
pub struct UpstreamTemplate {
    upstream: Arc<Upstream>,
    definition: ResourceTemplate,
}

impl TemplateHandler for UpstreamTemplate {
    fn definition(&self) -> ResourceTemplate {
        self.definition.clone()
    }

    fn read<'a>(
        &'a self,
        uri: &'a str,
        _vars: HashMap<String, String>,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>> {
        Box::pin(async move {
            let params = json!({"uri": uri});
            let target = ("resources/read", uri);
            forward(&self.upstream, target, params, Some("contents"), &ctx).await
        })
    }
}

/// An upstream prompt under its exposed name.
pub struct UpstreamPrompt {
    upstream: Arc<Upstream>,
    upstream_name: String,
    definition: Prompt,
}

impl PromptHandler for UpstreamPrompt {
    fn definition(&self) -> Prompt {
        self.definition.clone()
    }

    fn get(
        &self,
        args: Map<String, Value>,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<GetPromptResult, ToolError>> {
        Box::pin(async move {
            let params = json!({"name": self.upstream_name, "arguments": args});
            let target = ("prompts/get", self.upstream_name.as_str());
            forward(&self.upstream, target, params, None, &ctx).await
        })
    }
}

/// What one upstream offers besides tools, ready to register.
#[derive(Default, Clone)]
pub struct Offer {
    /// Fixed-URI resources.
    pub resources: Vec<Arc<UpstreamResource>>,
    /// Resource templates.
    pub templates: Vec<Arc<UpstreamTemplate>>,
    /// Prompts, named for this gateway.
    pub prompts: Vec<Arc<UpstreamPrompt>>,
}

/// Lists what `upstream` offers of resources, templates and prompts, as its capabilities
/// say it has them; `name_of` gives a prompt's exposed name. A list that fails, and an
/// item that cannot be read, are logged and left out. `None` when it cannot be reached.
pub async fn offer(
    upstream: &Arc<Upstream>,
    name_of: &(dyn Fn(&str) -> String + Send + Sync),
) -> Option<Offer> {
    let mut out = Offer::default();
    let peer = upstream.peer().await.ok()?;
    let caps = peer.capabilities().unwrap_or_default();
    let server = upstream.name();
    if caps.resources.is_some() {
        let resources = listed::<Resource>(&peer, server, "resources/list", "resources").await;
        out.resources = resources
            .into_iter()
            // Skill files are served verified and pinned (`skills.rs`), never forwarded.
            .filter(|r| !r.uri.starts_with(toolwright_protocol::skills::SCHEME))
            .map(|definition| {
                Arc::new(UpstreamResource {
                    upstream: upstream.clone(),
                    definition,
                })
            })
            .collect();
        let templates = listed::<ResourceTemplate>(
            &peer,
            server,
            "resources/templates/list",
            "resourceTemplates",
        )
        .await;
        out.templates = templates
            .into_iter()
            .map(|definition| {
                Arc::new(UpstreamTemplate {
                    upstream: upstream.clone(),
                    definition,
                })
            })
            .collect();
    }
    if caps.prompts.is_some() {
        let prompts = listed::<Prompt>(&peer, server, "prompts/list", "prompts").await;
        out.prompts = prompts
            .into_iter()
            .map(|mut definition| {
                let upstream_name = std::mem::take(&mut definition.name);
                definition.name = name_of(&upstream_name);
                Arc::new(UpstreamPrompt {
                    upstream: upstream.clone(),
                    upstream_name,
                    definition,
                })
            })
            .collect();
    }
    Some(out)
}

/// Every item of `method`'s list that reads as a `T`; what fails is logged and left out.
async fn listed<T: serde::de::DeserializeOwned>(
    peer: &toolwright_client::Peer,
    server: &str,
    method: &str,
    key: &str,
) -> Vec<T> {
    let items = match peer.list_all(method, key).await {
        Ok(items) => items,
        Err(e) => {
            tracing::warn!(server, "upstream {server}: {method} failed: {e}");
            return Vec::new();
        }
    };
    items
        .into_iter()
        .filter_map(|v| {
            serde_json::from_value(v)
                .map_err(|e| {
                    tracing::warn!(
                        server,
                        "upstream {server}: an item of {method} is unreadable: {e}"
                    );
                })
                .ok()
        })
        .collect()
}

/// The gateway as its server's [`CatalogSource`]: a client's catalog request first starts
/// the lazy servers whose catalog is not listed yet.
struct Source(Weak<Gateway>);

impl CatalogSource for Source {
    fn prepare(&self) {
        if let Some(gw) = self.0.upgrade() {
            gw.prepare_catalog();
        }
    }
}

/// [`Gateway::register_catalog`]: `server` gets the upstream catalogs, the gateway is its
/// catalog's source when any server is lazy, and the `eager` servers are listed now.
pub(crate) fn register(gw: &Arc<Gateway>, server: &Server) {
    let _ = gw.catalog_target.set(server.clone());
    let upstreams = gw.upstreams_now();
    if upstreams.iter().any(|u| u.spec().start == StartSpec::Lazy) {
        server.set_catalog_source(Arc::new(Source(Arc::downgrade(gw))), true, true);
    }
    let eager: Vec<Arc<Upstream>> = upstreams
        .iter()
        .filter(|u| u.spec().start == StartSpec::Eager)
        .cloned()
        .collect();
    if !eager.is_empty() {
        gw.list_catalogs(eager);
    }
}

impl Gateway {
    /// Lists `up`'s catalog over its connection (started if need be) and swaps every
    /// server's catalog into the server; nothing when it cannot be reached, or a reload
    /// replaced it meanwhile.
    pub(crate) async fn refresh_catalog(self: &Arc<Self>, up: &Arc<Upstream>) {
        let prefix = up.prefix().to_owned();
        let separator = self.separator.clone();
        let name_of = move |n: &str| naming::exposed_name(&prefix, &separator, n);
        let Some(listed) = offer(up, &name_of).await else {
            return;
        };
        if !self.is_current(up) {
            return;
        }
        self.state
            .lock()
            .offers
            .insert(up.name().to_owned(), listed);
        self.install_catalog();
    }

    /// Makes sure `up`'s catalog was listed: a new connection lists it as it comes up;
    /// one made before (for a call) without a listing is listed now.
    async fn ensure_catalog(self: &Arc<Self>, up: Arc<Upstream>) {
        if up.peer().await.is_err() {
            return;
        }
        let listed = self.state.lock().offers.contains_key(up.name());
        if !listed {
            self.refresh_catalog(&up).await;
        }
    }

    /// Lists the catalogs of `upstreams` (starting them), waiting at most 20 s in all,
    /// from a thread that may block: a client's request on a worker of the gateway's own
    /// runtime hands the worker on while it waits.
    fn list_catalogs(self: &Arc<Self>, upstreams: Vec<Arc<Upstream>>) {
        let gw = self.clone();
        let all = async move {
            let tasks: Vec<_> = upstreams
                .into_iter()
                .map(|up| {
                    let gw = gw.clone();
                    tokio::spawn(async move { gw.ensure_catalog(up).await })
                })
                .collect();
            for t in tasks {
                let _ = t.await;
            }
            true
        };
        // On a worker, the wait gives the worker's place up itself.
        if !self.wait_off_runtime(all, FIRST_LIST_WAIT) {
            tracing::warn!(
                "some upstreams' resources and prompts were not listed within {FIRST_LIST_WAIT:?}; they join when they answer"
            );
        }
    }

    /// Before a client's catalog request: starts each server whose catalog is not listed
    /// and that no such request started before, and waits for their catalogs.
    pub(crate) fn prepare_catalog(self: &Arc<Self>) {
        let todo: Vec<Arc<Upstream>> = {
            let mut st = self.state.lock();
            let st = &mut *st;
            self.upstreams_now()
                .iter()
                .filter(|u| {
                    !st.offers.contains_key(u.name()) && st.catalog_tried.insert(u.name().into())
                })
                .cloned()
                .collect()
        };
        if !todo.is_empty() {
            self.list_catalogs(todo);
        }
    }

    /// Merges every server's last catalog listing in config order (a key an earlier server
    /// has is left out, said once) and swaps it into the server in one step.
    pub(crate) fn install_catalog(&self) {
        let Some(server) = self.catalog_target.get() else {
            return;
        };
        let mut st = self.state.lock();
        if st.reloading {
            return; // the reload installs once it is done
        }
        let mut items = CatalogItems::default();
        let mut taken: [BTreeSet<String>; 3] = Default::default();
        let mut dropped = Vec::new();
        for up in self.upstreams_now().iter() {
            let Some(listed) = st.offers.get(up.name()) else {
                continue;
            };
            let name = up.name();
            let mut first = |kind: usize, key: &str, what: &str| {
                let free = taken[kind].insert(key.to_owned());
                if !free {
                    dropped.push(format!(
                        "upstream {name}'s {what} {key} is not served: an earlier server in the config offers it"
                    ));
                }
                free
            };
            for r in &listed.resources {
                if first(0, &r.definition.uri, "resource") {
                    items.resources.push(r.clone());
                }
            }
            for t in &listed.templates {
                if first(1, &t.definition.uri_template, "resource template") {
                    items.templates.push(t.clone());
                }
            }
            for p in &listed.prompts {
                if first(2, &p.definition.name, "prompt") {
                    items.prompts.push(p.clone());
                }
            }
        }
        let replaced = server.replace_catalog(&st.catalog_registered, items);
        st.catalog_registered = replaced.registered;
        let refused = replaced.refused.iter().map(|e| format!("{e}; not served"));
        for text in dropped.into_iter().chain(refused) {
            if st.reported.insert(text.clone()) {
                tracing::warn!("{text}");
            }
        }
    }
}
