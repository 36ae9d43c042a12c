//! An upstream's calls authorized with the caller's identity: the caller's access token
//! exchanged for one meant for the upstream (RFC 8693 token exchange, `exchange:` in the
//! server's entry), sent as `Authorization: Bearer` on the call's requests. The caller's
//! own token is never sent upstream.
//!
//! An exchanged token is kept per subject, audience and scope until [`MARGIN`] before it
//! expires (a minute when the answer does not say), at most [`MAX_KEPT`] of them in the
//! process; with a shared [`TokenStore`] (`--session-store redis://…`) it is kept there
//! too, under a digest of that key, so the replicas behind one load balancer exchange a
//! subject's token once. A call without a caller's token (stdio, an API key, no
//! `--auth-issuer`) is refused with a tool error, as is a legacy upstream, whose one
//! session would carry every subject's calls.

use crate::error::GatewayError;
use parking_lot::Mutex;
use sha2::Digest as _;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolwright_auth::exchange::ClientAuth;
use toolwright_auth::{ExchangeSettings, TokenExchange};
use toolwright_client::{BoxFuture, Era};
use toolwright_server::{ToolContext, ToolError};
use toolwright_toolfile::Server;
use toolwright_toolfile::exchange::ClientAuth as ClientAuthSpec;

/// An exchanged token is used until this long before it expires.
pub const MARGIN: Duration = Duration::from_secs(30);
/// How long a token is kept when the answer gave no `expires_in`.
const UNSAID: Duration = Duration::from_secs(60);
/// Most tokens kept in the process, for one upstream.
pub const MAX_KEPT: usize = 4096;
/// How long one exchange may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Exchanged tokens shared by the replicas of one gateway (a Redis): values under a key,
/// each gone after its time to live. A store that fails answers `None` and forgets the
/// put: the exchange is then made again, never refused for it.
pub trait TokenStore: Send + Sync + std::fmt::Debug + 'static {
    /// The token kept under `key`, if any.
    fn get(&self, key: &str) -> BoxFuture<'_, Option<String>>;
    /// Keeps `token` under `key` for `ttl`.
    fn put(&self, key: &str, token: &str, ttl: Duration) -> BoxFuture<'_, ()>;
}

/// One upstream's exchange: the request, and the tokens it issued.
pub struct Exchanger {
    server: String,
    exchange: TokenExchange,
    /// Tokens by the digest of (subject, audience, scope), until when they are used.
    kept: Mutex<HashMap<[u8; 32], (String, Instant)>>,
    store: Option<Arc<dyn TokenStore>>,
}

impl std::fmt::Debug for Exchanger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanger")
            .field("server", &self.server)
            .field("exchange", &self.exchange)
            .finish_non_exhaustive()
    }
}

impl Exchanger {
    /// The exchange of `server`'s entry, if it has one; its secret's `${VAR}` filled from
    /// the gateway's environment now.
    ///
    /// # Errors
    ///
    /// [`GatewayError::UnsetVariable`] for a secret whose variable is not set;
    /// [`GatewayError::Config`] for a token endpoint the exchange cannot use.
    pub fn of(
        server: &Server,
        store: Option<Arc<dyn TokenStore>>,
    ) -> Result<Option<Exchanger>, GatewayError> {
        let Some(x) = &server.exchange else {
            return Ok(None);
        };
        let secret = x
            .client_secret
            .as_ref()
            .map(|t| crate::upstream::expand(t, &server.name, "exchange.client_secret"))
            .transpose()?;
        let client_auth = match (secret, x.client_auth) {
            (None, _) => ClientAuth::None,
            (Some(s), ClientAuthSpec::Basic) => ClientAuth::Basic(s),
            (Some(s), ClientAuthSpec::Post) => ClientAuth::Post(s),
        };
        let settings = ExchangeSettings {
            token_endpoint: x.token_endpoint.clone(),
            audience: x.audience.clone(),
            scope: x.scope.clone(),
            client_id: x.client_id.clone(),
            client_auth,
        };
        let exchange = TokenExchange::new(settings, TIMEOUT).map_err(|e| GatewayError::Config {
            server: server.name.clone(),
            reason: format!("exchange: {e}"),
        })?;
        Ok(Some(Exchanger {
            server: server.name.clone(),
            exchange,
            kept: Mutex::new(HashMap::new()),
            store,
        }))
    }

    /// The key of a caller's token: its subject's (else the token's own digest, for a
    /// token without `sub`), with the audience and scope asked for.
    fn key(&self, subject: Option<&str>, token: &str) -> [u8; 32] {
        let s = self.exchange.settings();
        let mut h = sha2::Sha256::new();
        match subject {
            Some(sub) => {
                h.update(b"sub\0");
                h.update(sub.as_bytes());
            }
            None => {
                h.update(b"token\0");
                h.update(sha2::Sha256::digest(token.as_bytes()));
            }
        }
        h.update(b"\0");
        h.update(s.audience.as_bytes());
        h.update(b"\0");
        h.update(s.scope.as_deref().unwrap_or_default().as_bytes());
        h.finalize().into()
    }

    /// The token kept for `key`, when it is still good.
    fn kept(&self, key: &[u8; 32]) -> Option<String> {
        let kept = self.kept.lock();
        let (token, until) = kept.get(key)?;
        (Instant::now() < *until).then(|| token.clone())
    }

    /// Keeps `token` for `key` for `life`, within [`MAX_KEPT`]: the expired go first, then
    /// the soonest to expire.
    fn keep(&self, key: [u8; 32], token: &str, life: Duration) {
        let now = Instant::now();
        let mut kept = self.kept.lock();
        if kept.len() >= MAX_KEPT && !kept.contains_key(&key) {
            kept.retain(|_, (_, until)| *until > now);
            while kept.len() >= MAX_KEPT {
                let Some(first) = kept.iter().min_by_key(|(_, (_, u))| *u).map(|(k, _)| *k) else {
                    break;
                };
                kept.remove(&first);
            }
        }
        kept.insert(key, (token.to_owned(), now + life));
    }

    /// The token the upstream gets for this call's caller: kept, or exchanged now.
    ///
    /// # Errors
    ///
    /// A tool error saying why: no caller's token, or the exchange failed.
    pub async fn token_for(&self, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(token) = ctx.subject_token() else {
            return Err(ToolError::Failed(format!(
                "upstream {} is called with the caller's identity (its `exchange:`), and this call carries no access token of an authorization server (stdio, an API key, or a server without --auth-issuer)",
                self.server
            )));
        };
        let subject = ctx.identity().and_then(|c| c.subject.clone());
        let key = self.key(subject.as_deref(), token.secret());
        if let Some(t) = self.kept(&key) {
            return Ok(t);
        }
        let shared_key = format!("tw:x:{}", data_encoding::HEXLOWER.encode(&key));
        if let Some(store) = &self.store
            && let Some(t) = store.get(&shared_key).await
        {
            // The store keeps it until a margin before it expires, so it lives at least
            // that long yet; here it is kept for half of that, and so used no later than
            // half a margin before it expires.
            self.keep(key, &t, MARGIN / 2);
            return Ok(t);
        }
        let issued = self
            .exchange
            .exchange(token.secret())
            .await
            .map_err(|e| {
                tracing::warn!(server = %self.server, subject = ?subject, "token exchange failed: {e}");
                ToolError::Failed(format!(
                    "upstream {} was not called: the caller's token could not be exchanged for one of its own ({e})",
                    self.server
                ))
            })?;
        let life = issued
            .expires_in
            .map_or(UNSAID, |e| e.saturating_sub(MARGIN));
        tracing::debug!(server = %self.server, subject = ?subject, ?life, "caller's token exchanged");
        if !life.is_zero() {
            self.keep(key, &issued.access_token, life);
            if let Some(store) = &self.store {
                store.put(&shared_key, &issued.access_token, life).await;
            }
        }
        Ok(issued.access_token)
    }

    /// The headers of a call to the upstream in `era`, with the exchanged token's
    /// `Authorization` added.
    ///
    /// # Errors
    ///
    /// A tool error: a legacy upstream, no caller's token, or a failed exchange.
    pub async fn authorize(
        &self,
        ctx: &ToolContext,
        era: Era,
        mut headers: Vec<(String, String)>,
    ) -> Result<Vec<(String, String)>, ToolError> {
        if era == Era::Legacy {
            return Err(ToolError::Failed(format!(
                "upstream {} speaks the legacy protocol, whose one session would carry every caller's calls; its `exchange:` needs a modern (2026-07-28) upstream",
                self.server
            )));
        }
        let token = self.token_for(ctx).await?;
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        Ok(headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchanger() -> Exchanger {
        let docs = [toolwright_toolfile::Document::parse(
            std::path::Path::new("gw.yaml"),
            toolwright_toolfile::Format::Yaml,
            "servers:\n  up:\n    url: http://127.0.0.1:1/mcp\n    exchange: {token_endpoint: 'http://127.0.0.1:1/token', audience: aud, client_id: gw}\n".into(),
        )
        .unwrap()];
        let config = toolwright_toolfile::read_config(&docs).unwrap();
        Exchanger::of(config.server("up").unwrap(), None)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn kept_per_subject_until_it_expires() {
        let x = exchanger();
        let alice = x.key(Some("alice"), "t1");
        assert_eq!(alice, x.key(Some("alice"), "t2"), "by subject, not token");
        assert_ne!(alice, x.key(Some("bob"), "t1"));
        assert_ne!(x.key(None, "t1"), x.key(None, "t2"));
        x.keep(alice, "xa", Duration::from_secs(60));
        assert_eq!(x.kept(&alice).as_deref(), Some("xa"));
        assert_eq!(x.kept(&x.key(Some("bob"), "t")), None);
        x.keep(alice, "old", Duration::ZERO);
        assert_eq!(x.kept(&alice), None);
    }

    #[test]
    fn bounded() {
        let x = exchanger();
        for i in 0..MAX_KEPT + 10 {
            let life = Duration::from_secs(60 + i as u64);
            x.keep(x.key(Some(&i.to_string()), ""), "t", life);
        }
        assert_eq!(x.kept.lock().len(), MAX_KEPT);
        // The soonest to expire went first.
        assert_eq!(x.kept(&x.key(Some("0"), "")), None);
        assert!(
            x.kept(&x.key(Some(&(MAX_KEPT + 9).to_string()), ""))
                .is_some()
        );
    }
}
