//! Upstream resources, resource templates and prompts, served by the gateway.
//!
//! The server announces `resources` and `prompts` in the capabilities it sends at
//! `initialize`, before any upstream is listed, so these are taken from the servers that
//! start with the gateway (`start: eager`), at start-up, once. Prompts are namespaced like
//! tools; resource URIs are kept as the upstream wrote them (a URI is an address, and a
//! client may have it from elsewhere), and a URI or template two servers both offer goes to
//! the first in the config. Reading one is forwarded to its upstream, as the client asked.

use crate::upstream::Upstream;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use toolwright_client::Call;
use toolwright_protocol::ResourceContents;
use toolwright_protocol::resources::{GetPromptResult, Prompt, Resource, ResourceTemplate};
use toolwright_server::{
    BoxFuture, PromptHandler, ResourceHandler, TemplateHandler, ToolContext, ToolError,
};

/// Sends one request upstream and reads the part of the result that matters.
async fn forward<T: serde::de::DeserializeOwned>(
    upstream: &Arc<Upstream>,
    method: &str,
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
            forward(
                &self.upstream,
                "resources/read",
                params,
                Some("contents"),
                &ctx,
            )
            .await
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
            forward(
                &self.upstream,
                "resources/read",
                params,
                Some("contents"),
                &ctx,
            )
            .await
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
            forward(&self.upstream, "prompts/get", params, None, &ctx).await
        })
    }
}

/// What one upstream offers besides tools, ready to register.
#[derive(Default)]
pub struct Offer {
    /// Fixed-URI resources.
    pub resources: Vec<UpstreamResource>,
    /// Resource templates.
    pub templates: Vec<UpstreamTemplate>,
    /// Prompts, named for this gateway.
    pub prompts: Vec<UpstreamPrompt>,
}

/// Lists what `upstream` offers of resources, templates and prompts, as its capabilities
/// say it has them; `name_of` gives a prompt's exposed name. A list that fails, and an
/// item that cannot be read, are logged and left out.
pub async fn offer(
    upstream: &Arc<Upstream>,
    name_of: &(dyn Fn(&str) -> String + Send + Sync),
) -> Offer {
    let mut out = Offer::default();
    let Ok(peer) = upstream.peer().await else {
        return out;
    };
    let caps = peer.capabilities().unwrap_or_default();
    let server = upstream.name();
    if caps.resources.is_some() {
        let resources = listed::<Resource>(&peer, server, "resources/list", "resources").await;
        out.resources = resources
            .into_iter()
            .map(|definition| UpstreamResource {
                upstream: upstream.clone(),
                definition,
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
            .map(|definition| UpstreamTemplate {
                upstream: upstream.clone(),
                definition,
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
                UpstreamPrompt {
                    upstream: upstream.clone(),
                    upstream_name,
                    definition,
                }
            })
            .collect();
    }
    out
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
