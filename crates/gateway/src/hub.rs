//! [`Hub`]: what an upstream's connection tells the gateway (a list changed, it came up,
//! it closed, it asked something outside a call), acted on without keeping the gateway
//! alive.

use crate::gateway::Gateway;
use crate::upstream::Events;
use serde_json::Value;
use std::sync::Weak;
use toolwright_client::BoxFuture;
use toolwright_jsonrpc::ErrorObject;

/// Forwards upstream events to the gateway without keeping it alive.
pub(crate) struct Hub(pub(crate) Weak<Gateway>);

impl Events for Hub {
    fn notification(&self, server: &str, method: &str, _params: &Value) {
        let Some(g) = self.0.upgrade() else { return };
        let server = server.to_owned();
        let gw = g.clone();
        match method {
            "notifications/tools/list_changed" => {
                g.handle()
                    .spawn(async move { gw.refresh_named(&server).await });
            }
            "notifications/resources/list_changed" | "notifications/prompts/list_changed" => {
                g.handle().spawn(async move {
                    if let Some(up) = gw.upstream(&server) {
                        gw.refresh_catalog(&up).await;
                        gw.refresh_skills(&up).await;
                    }
                });
            }
            _ => {}
        }
    }

    fn connected(&self, server: &str) -> BoxFuture<'static, ()> {
        // A server first served from its pins is listed once it is up, and after each
        // restart, before any call goes to it: what it lists now is what counts, and a
        // definition that changed meanwhile is quarantined before it can be called.
        let gw = self.0.upgrade();
        let server = server.to_owned();
        // Its resources and prompts too, so a restart re-lists them.
        Box::pin(async move {
            let Some(gw) = gw else { return };
            if let Some(up) = gw.upstream(&server) {
                gw.refresh(&up).await;
                gw.refresh_catalog(&up).await;
                gw.refresh_skills(&up).await;
            }
        })
    }

    fn closed(&self, server: &str, _why: &str) {
        let Some(g) = self.0.upgrade() else { return };
        // Logged where the failure is counted (Upstream::failed), once. Started again after
        // its backoff; its tools stay listed meanwhile, and a call gets the reason it
        // cannot be reached.
        if let Some(up) = g.upstream(server) {
            let wait = up.retry_in().unwrap_or_default();
            g.retry_after(up, wait);
        }
    }

    fn request(
        &self,
        server: &str,
        method: String,
        _params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        // `roots/list` is answered by the upstream itself (its entry's `roots:`).
        let server = server.to_owned();
        Box::pin(async move {
            Err(ErrorObject::internal(format!(
                "toolwright's gateway relays {method} from upstream {server} only during one of its tool calls, with one call in flight"
            )))
        })
    }
}
