//! `serve --http`'s arguments as the HTTP server's settings ([`toolwright_http::HttpConfig`])
//! and the Redis behind `--session-store`, shared by the sessions and the limits.

use crate::args::HttpArgs;
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Duration;

/// The HTTP server's settings from `serve --http`'s arguments: the token or issuer (and
/// introspection), origins, budgets and the session store.
pub(crate) fn http_config(a: &HttpArgs, addr: &str) -> Result<toolwright_http::HttpConfig> {
    let auth_token = match &a.auth_token_env {
        Some(var) => {
            let token =
                std::env::var(var).with_context(|| format!("--auth-token-env: reading ${var}"))?;
            // A token no client can present would start a server nobody can use.
            toolwright_http::check_auth_token(&token).with_context(|| format!("${var}"))?;
            Some(token)
        }
        None => None,
    };
    let client = match (&a.auth_client_id, &a.auth_client_secret_env) {
        (Some(id), Some(var)) => {
            let secret = std::env::var(var)
                .with_context(|| format!("--auth-client-secret-env: reading ${var}"))?;
            Some((id.clone(), secret))
        }
        _ => None,
    };
    if client.is_some() && !(a.auth_introspect || a.auth_introspect_url.is_some()) {
        anyhow::bail!(
            "--auth-client-id: the client credentials are for introspection (--auth-introspect)"
        );
    }
    let introspection = (a.auth_introspect || a.auth_introspect_url.is_some()).then(|| {
        toolwright_http::Introspection {
            endpoint: a.auth_introspect_url.clone(),
            client,
        }
    });
    Ok(toolwright_http::HttpConfig {
        addr: addr.to_owned(),
        stateless: a.stateless,
        session_idle_timeout: Duration::from_secs(a.session_idle_timeout),
        allowed_origins: a.allowed_origins.clone(),
        allowed_hosts: a.allowed_hosts.clone(),
        trusted_proxies: a.trusted_proxies.clone(),
        auth_token,
        jwt: a
            .auth_issuer
            .as_ref()
            .map(|issuer| toolwright_http::JwtAuth {
                audience: a.auth_audience.clone(),
                scopes: a.auth_scopes.clone(),
                leeway: Duration::from_secs(a.auth_leeway),
                introspection: introspection.clone(),
                ..toolwright_http::JwtAuth::new(issuer.clone())
            }),
        authorization_servers: a.authorization_servers.clone(),
        resource_url: a.resource_url.clone(),
        max_sessions: a.max_sessions,
        max_sse_streams: a.max_sse_streams,
        max_sse_streams_per_client: a.max_sse_streams_per_client,
        max_get_streams: a.max_get_streams,
        max_get_streams_per_client: a.max_get_streams_per_client,
        max_body_bytes: a.max_body_bytes,
        threads: a.http_threads,
        session_store: session_store(a)?,
        session_store_timeout: Duration::from_millis(a.session_store_timeout.max(1)),
        ..toolwright_http::HttpConfig::default()
    })
}

/// Where `limits:` are counted when `--session-store` names a Redis: there too, on a
/// connection of their own.
pub(crate) fn shared_limits(
    a: &HttpArgs,
) -> Result<Option<Arc<dyn toolwright_server::limit::Counters>>> {
    Ok(redis_store(a)?.map(|store| {
        let limits: Arc<dyn toolwright_server::limit::Counters> =
            Arc::new(toolwright_sessions_redis::RedisLimits::new(store));
        limits
    }))
}

/// Where tasks are copied when `--session-store` names a Redis: there too, on a connection
/// of their own, so `tasks/get` on any replica finds them.
pub(crate) fn task_mirror(
    a: &HttpArgs,
) -> Result<Option<Arc<dyn toolwright_server::task::TaskMirror>>> {
    Ok(redis_store(a)?.map(|store| {
        let tasks: Arc<dyn toolwright_server::task::TaskMirror> =
            Arc::new(toolwright_sessions_redis::RedisTasks::new(store));
        tasks
    }))
}

/// Where the gateway shares the tokens it exchanged for upstreams when `--session-store`
/// names a Redis: there too, on a connection of their own.
pub(crate) fn shared_tokens(
    a: &HttpArgs,
) -> Result<Option<Arc<dyn toolwright_gateway::exchange::TokenStore>>> {
    Ok(redis_store(a)?.map(|store| {
        let tokens: Arc<dyn toolwright_gateway::exchange::TokenStore> = Arc::new(RedisTokens(
            toolwright_sessions_redis::RedisValues::new(store),
        ));
        tokens
    }))
}

/// Exchanged tokens in Redis. A Redis that does not answer costs an exchange, never a call.
#[derive(Debug)]
struct RedisTokens(toolwright_sessions_redis::RedisValues);

impl toolwright_gateway::exchange::TokenStore for RedisTokens {
    fn get(&self, key: &str) -> toolwright_client::BoxFuture<'_, Option<String>> {
        let key = key.to_owned();
        Box::pin(async move {
            self.0.get(&key).await.unwrap_or_else(|e| {
                tracing::warn!("an exchanged token could not be read from the session store: {e}");
                None
            })
        })
    }

    fn put(&self, key: &str, token: &str, ttl: Duration) -> toolwright_client::BoxFuture<'_, ()> {
        let (key, token) = (key.to_owned(), token.to_owned());
        Box::pin(async move {
            if let Err(e) = self.0.put(&key, &token, ttl).await {
                tracing::warn!("an exchanged token could not be kept in the session store: {e}");
            }
        })
    }
}

/// The shared session store `--session-store` names.
fn session_store(
    a: &HttpArgs,
) -> Result<Option<std::sync::Arc<dyn toolwright_http::SessionStore>>> {
    Ok(redis_store(a)?.map(|store| {
        let store: Arc<dyn toolwright_http::SessionStore> = Arc::new(store);
        store
    }))
}

/// A client of the Redis `--session-store` names (nothing connects yet).
fn redis_store(a: &HttpArgs) -> Result<Option<toolwright_sessions_redis::RedisStore>> {
    let Some(url) = &a.session_store else {
        return Ok(None);
    };
    if !(url.starts_with("redis://") || url.starts_with("redis+unix://")) {
        anyhow::bail!("--session-store: {url:?} is not a redis:// or redis+unix:// URL");
    }
    let store = toolwright_sessions_redis::RedisStore::open(url)
        .map_err(|e| anyhow::anyhow!("--session-store: {e}"))?
        .with_timeout(Duration::from_millis(a.session_store_timeout.max(1)));
    Ok(Some(store))
}
