//! An OAuth 2.1 [`Authorizer`]: MCP authorization as the 2025-11-25 spec describes it,
//! with the 2025-03-26 fallbacks.
//!
//! On a 401 it finds the protected resource metadata (RFC 9728: the challenge's
//! `resource_metadata`, else the path-based then the root well-known URL), checks that its
//! `resource` names this endpoint, and reads the first authorization server's metadata
//! (RFC 8414, then OpenID Connect Discovery, in the spec's order). A server with no
//! resource metadata is taken as a 2025-03-26 one: its own origin is the authorization
//! server, with `/authorize`, `/token` and `/register` when it has no metadata either.
//!
//! The client is pre-registered ([`OAuthOptions::client_id`]), or named by a client ID
//! metadata document URL when the server advertises `client_id_metadata_document_supported`,
//! or registered dynamically (RFC 7591). The code comes back through a loopback redirect
//! (the URL printed to stderr, opened with `$BROWSER` when set); PKCE S256 is required
//! (a server whose metadata does not list it is refused), `state` is checked, so is `iss`
//! (RFC 9207: the issuer's exact string when present, and present when advertised; the
//! metadata itself is used only when its `issuer` is the one it was found by), and
//! `resource` (RFC 8707) is sent with every authorization and token request. The token
//! endpoint is authenticated as the server advertises (`client_secret_basic`,
//! `client_secret_post` or `none`). A refused token is refreshed once when there is a
//! refresh token; a 403 `insufficient_scope` asks again for the union of the scopes, at
//! most [`MAX_STEP_UPS`] times.
//!
//! Instead of the browser, [`OAuthOptions::grant`] may name a grant for a pre-registered
//! client: client credentials, cross-app access (an enterprise IdP's ID token exchanged
//! for an ID-JAG, then a JWT bearer grant), or a JWT bearer grant of a workload's own
//! identity token. With [`OAuthOptions::client_key`] the client authenticates with a signed
//! JWT (`private_key_jwt`) rather than a secret.
//!
//! Where the authorization server offers DPoP with ES256 (or the resource requires bound
//! tokens), the session gets a key of its own and its tokens are sender-constrained
//! (RFC 9449, see `dpop.rs`): a proof on every token request and every MCP request, the
//! `DPoP` scheme, and the servers' nonces when they ask for them.
//!
//! The standard grants (the authorization URL with PKCE and state, the code exchange,
//! refresh, client credentials, basic and body client authentication) are the `oauth2`
//! crate's, over this crate's own HTTP requests; discovery, the challenge's parsing, the
//! token exchange and the JWT bearer grant, which it does not have, are written here.

mod assertion;
mod cache;
mod discovery;
mod dpop;
mod fetch;
mod grants;
mod http_client;
mod metadata;
mod redirect;
mod register;
mod token;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use url::Url;

use crate::ClientError;
use crate::auth::{Authorizer, Challenge};
use crate::peer::BoxFuture;

pub use assertion::ClientKey;
pub use grants::{Assertion, CrossApp, Grant};

use discovery::{bearer_challenge, canonical_resource, choose_scope, union_scopes};
use dpop::DpopKey;
use metadata::{discover_server, protected_resource_metadata};
use token::{Tokens, secret_method};

/// How many times a 403 `insufficient_scope` may send the user back to authorize.
pub const MAX_STEP_UPS: u32 = 2;

/// How many full authorizations a run of 401s may start.
const MAX_AUTHORIZATIONS: u32 = 3;

fn auth(reason: impl Into<String>) -> ClientError {
    ClientError::Auth {
        reason: reason.into(),
    }
}

/// How the client is identified and what it asks for.
#[derive(Debug, Clone, Default)]
pub struct OAuthOptions {
    /// A pre-registered client ID.
    pub client_id: Option<String>,
    /// Its secret, if it is a confidential client.
    pub client_secret: Option<String>,
    /// Its signing key: the token endpoint is then authenticated with a signed JWT
    /// (`private_key_jwt`, RFC 7523 §2.2) instead of a secret.
    pub client_key: Option<ClientKey>,
    /// How the token is had: the authorization code grant (the default), client
    /// credentials, cross-app access (these two need [`OAuthOptions::client_id`]), or a
    /// JWT bearer grant of a given assertion.
    pub grant: Grant,
    /// An HTTPS URL of a client ID metadata document, used as the client ID where the
    /// authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The scope to ask for, overriding the server's.
    pub scope: Option<String>,
    /// Whether to open the authorization URL with `$BROWSER`.
    pub browser: bool,
    /// How the authorization URL is put before the person who must open it (the binary
    /// writes it to stderr); `None`: a warning event of `tracing` carries it.
    pub prompt: Option<Prompt>,
    /// The token cache file (see [`default_cache_path`]); `None`: tokens live only as
    /// long as the process.
    pub cache: Option<std::path::PathBuf>,
}

/// How the authorization URL of the code grant reaches the person who must open it: the
/// library shows nothing itself, its caller does.
#[derive(Clone)]
pub struct Prompt(Arc<dyn Fn(&Url) + Send + Sync>);

impl Prompt {
    /// A prompt that calls `show` with the URL to open.
    pub fn new(show: impl Fn(&Url) + Send + Sync + 'static) -> Prompt {
        Prompt(Arc::new(show))
    }

    /// Puts `url` before the person.
    pub fn show(&self, url: &Url) {
        (self.0)(url);
    }
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prompt(..)")
    }
}

/// Where tokens are cached by default: `$XDG_STATE_HOME/toolwright/oauth-tokens.json`,
/// else `~/.local/state/toolwright/oauth-tokens.json` (a JSON object, mode 0600, one entry
/// per MCP endpoint and authorization server, holding the client's registration, the access
/// and refresh tokens and the expiry).
pub fn default_cache_path() -> Option<std::path::PathBuf> {
    cache::default_path()
}

/// The OAuth 2.1 authorizer (see the module docs).
pub struct OAuth {
    options: OAuthOptions,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    access: Option<String>,
    refresh: Option<String>,
    expires: Option<Instant>,
    scope: Option<String>,
    session: Option<Session>,
    /// Whether `access` is bound to the session's DPoP key.
    dpop_bound: bool,
    step_ups: u32,
    authorizations: u32,
    cache_read: bool,
}

#[derive(Clone)]
struct Session {
    endpoint: String,
    issuer: String,
    token_endpoint: Url,
    client: Registered,
    resource: String,
    /// The DPoP key of the session's tokens (RFC 9449), when the server offers DPoP.
    dpop: Option<Arc<DpopKey>>,
}

#[derive(Clone, Debug)]
struct Registered {
    id: String,
    secret: Option<String>,
    method: String,
}

impl OAuth {
    /// An authorizer with no token yet: the first 401 starts the flow.
    pub fn new(options: OAuthOptions) -> std::sync::Arc<OAuth> {
        std::sync::Arc::new(OAuth {
            options,
            state: Mutex::new(State::default()),
        })
    }

    async fn handle(&self, ch: Challenge) -> Result<bool, ClientError> {
        let bearer = bearer_challenge(&ch.www_authenticate);
        let param = |k: &str| bearer.as_ref().and_then(|b| b.get(k)).map(str::to_owned);
        let endpoint = Url::parse(&ch.url).map_err(|e| auth(format!("{}: {e}", ch.url)))?;
        let (had_scope, refresh, session) = {
            let s = self.state.lock();
            (s.scope.clone(), s.refresh.clone(), s.session.clone())
        };
        // RFC 9449 §9: the resource server wants its nonce in the proof; once per nonce.
        if ch.status == 401
            && let Some(key) = session.as_ref().and_then(|s| s.dpop.as_ref())
            && let Some(n) = dpop::nonce_wanted(param("error").as_deref(), ch.dpop_nonce.as_deref())
        {
            let mut had = key.rs_nonce.lock();
            if had.as_deref() != Some(n.as_str()) {
                *had = Some(n);
                return Ok(true);
            }
        }
        let scope = if ch.status == 403 {
            if param("error").as_deref() != Some("insufficient_scope") {
                return Ok(false);
            }
            let mut s = self.state.lock();
            s.step_ups += 1;
            if s.step_ups > MAX_STEP_UPS {
                return Ok(false);
            }
            drop(s);
            Some(union_scopes(
                had_scope.as_deref(),
                &param("scope").unwrap_or_default(),
            ))
        } else {
            let (mut refresh, mut session) = (refresh, session);
            if session.is_none()
                && let Some(e) = self.cached(&endpoint)
            {
                let live = e.expires_at.is_none_or(|t| cache::now() < t);
                let sess = Session {
                    endpoint: e.resource.clone(),
                    issuer: e.issuer.clone(),
                    token_endpoint: Url::parse(&e.token_endpoint)
                        .map_err(|err| auth(format!("cached token endpoint: {err}")))?,
                    client: Registered {
                        id: e.client_id.clone(),
                        secret: e.client_secret.clone(),
                        method: e.method.clone(),
                    },
                    resource: e.indicator.clone(),
                    dpop: match &e.dpop_key {
                        Some(k) => Some(Arc::new(DpopKey::from_cache(k)?)),
                        None => None,
                    },
                };
                let mut s = self.state.lock();
                s.session = Some(sess.clone());
                s.dpop_bound = e.dpop_bound;
                s.refresh = e.refresh.clone();
                s.scope = e.scope.clone();
                if live {
                    s.access = Some(e.access);
                    s.expires = e.expires_at.map(|t| {
                        Instant::now() + Duration::from_secs(t.saturating_sub(cache::now()))
                    });
                    return Ok(true);
                }
                refresh = e.refresh;
                session = Some(sess);
            }
            if let (Some(rt), Some(sess)) = (refresh, session.as_ref()) {
                self.state.lock().refresh = None;
                if let Ok(t) = token::refresh(sess, &rt, self.options.client_key.as_ref()).await {
                    self.store(t, session);
                    return Ok(true);
                }
            }
            let mut s = self.state.lock();
            s.authorizations += 1;
            if s.authorizations > MAX_AUTHORIZATIONS {
                return Ok(false);
            }
            drop(s);
            param("scope")
        };
        self.authorize(&endpoint, param("resource_metadata"), scope)
            .await?;
        Ok(true)
    }

    /// The cached entry for this endpoint, looked at once per process.
    fn cached(&self, endpoint: &Url) -> Option<cache::Entry> {
        let path = self.options.cache.as_ref()?;
        {
            let mut s = self.state.lock();
            if s.cache_read {
                return None;
            }
            s.cache_read = true;
        }
        let e = cache::load(path, canonical_resource(endpoint).as_str())?;
        // A cached registration is only good for the same client.
        (self.options.client_id.is_none() || self.options.client_id.as_ref() == Some(&e.client_id))
            .then_some(e)
    }

    fn store(&self, t: Tokens, session: Option<Session>) {
        let mut s = self.state.lock();
        s.cache_read = true;
        s.access = Some(t.access);
        if t.refresh.is_some() {
            s.refresh = t.refresh;
        }
        s.expires = t.expires;
        s.dpop_bound = t.dpop;
        if t.scope.is_some() {
            s.scope = t.scope;
        }
        if session.is_some() {
            s.session = session;
        }
        if let (Some(path), Some(sess), Some(access)) = (&self.options.cache, &s.session, &s.access)
        {
            let entry = cache::Entry {
                resource: sess.endpoint.clone(),
                indicator: sess.resource.clone(),
                issuer: sess.issuer.clone(),
                token_endpoint: sess.token_endpoint.to_string(),
                client_id: sess.client.id.clone(),
                client_secret: sess.client.secret.clone(),
                method: sess.client.method.clone(),
                access: access.clone(),
                refresh: s.refresh.clone(),
                expires_at: s
                    .expires
                    .map(|e| cache::now() + e.saturating_duration_since(Instant::now()).as_secs()),
                scope: s.scope.clone(),
                dpop_key: sess.dpop.as_ref().map(|k| k.to_cache()),
                dpop_bound: s.dpop_bound,
            };
            if let Err(e) = cache::save(path, &entry) {
                tracing::warn!(
                    target: "toolwright_client::oauth",
                    "cannot cache the token in {}: {e}",
                    path.display()
                );
            }
        }
    }

    async fn authorize(
        &self,
        endpoint: &Url,
        resource_metadata: Option<String>,
        challenge_scope: Option<String>,
    ) -> Result<(), ClientError> {
        let prm = protected_resource_metadata(endpoint, resource_metadata.as_deref()).await?;
        let (resource, issuer_name, meta) = discover_server(endpoint, prm.as_ref()).await?;
        let scope = self
            .options
            .scope
            .clone()
            .or_else(|| choose_scope(challenge_scope.as_deref(), prm.as_ref()));
        let mut session = Session {
            endpoint: canonical_resource(endpoint).to_string(),
            issuer: issuer_name,
            token_endpoint: endpoint_of(&meta, "token_endpoint")?,
            client: Registered {
                id: String::new(),
                secret: None,
                method: String::new(),
            },
            resource,
            // DPoP where the authorization server offers ES256 or the resource wants
            // bound tokens: a new key for the new session.
            dpop: if dpop::offered(&meta)
                || prm
                    .as_ref()
                    .and_then(|p| p.get("dpop_bound_access_tokens_required"))
                    == Some(&Value::Bool(true))
            {
                Some(Arc::new(DpopKey::generate()?))
            } else {
                None
            },
        };
        let key = self.options.client_key.as_ref();
        let mut tokens = match &self.options.grant {
            Grant::AuthorizationCode => {
                return self.authorization_code(&meta, session, scope).await;
            }
            Grant::ClientCredentials => {
                session.client = self.preregistered(&meta)?;
                token::client_credentials(&session, scope.as_deref(), key).await?
            }
            Grant::CrossApp(x) => {
                session.client = self.preregistered(&meta)?;
                let jag = grants::exchange_id_token(
                    x,
                    &session.issuer,
                    &session.resource,
                    scope.as_deref(),
                )
                .await?;
                token::jwt_bearer(&session, &jag, scope.as_deref(), key).await?
            }
            Grant::JwtBearer(assertion) => {
                session.client = match self.options.client_id {
                    Some(_) => self.preregistered(&meta)?,
                    None => Registered {
                        id: String::new(),
                        secret: None,
                        method: "none".into(),
                    },
                };
                token::jwt_bearer(&session, &assertion.0, scope.as_deref(), key).await?
            }
        };
        if tokens.scope.is_none() {
            tokens.scope = scope;
        }
        self.store(tokens, Some(session));
        Ok(())
    }

    /// The authorization code grant: the user authorizes in the browser, the code comes
    /// back to the loopback listener and is exchanged with the PKCE verifier.
    async fn authorization_code(
        &self,
        meta: &Value,
        mut session: Session,
        scope: Option<String>,
    ) -> Result<(), ClientError> {
        let methods = meta
            .get("code_challenge_methods_supported")
            .and_then(Value::as_array);
        if !methods.is_some_and(|m| m.iter().any(|v| v == "S256")) {
            return Err(auth(
                "the authorization server does not advertise PKCE S256 (code_challenge_methods_supported); refusing to go on",
            ));
        }
        let authorization_endpoint = endpoint_of(meta, "authorization_endpoint")?;
        let loopback = redirect::Loopback::bind().await?;
        session.client = self
            .client(meta, &loopback.redirect_uri, scope.as_deref())
            .await?;
        let (url, state, verifier) = token::authorization_url(
            &session,
            &authorization_endpoint,
            &loopback.redirect_uri,
            scope.as_deref(),
        )?;
        let redirect_uri = loopback.redirect_uri.clone();
        let expect = redirect::Expect {
            state: state.secret(),
            issuer: &session.issuer,
            iss_required: meta.get("authorization_response_iss_parameter_supported")
                == Some(&Value::Bool(true)),
        };
        let code = loopback
            .authorize(
                &url,
                &expect,
                self.options.browser,
                self.options.prompt.as_ref(),
            )
            .await?;
        let key = self.options.client_key.as_ref();
        let mut tokens = token::exchange_code(&session, &redirect_uri, code, verifier, key).await?;
        if tokens.scope.is_none() {
            tokens.scope = scope;
        }
        self.store(tokens, Some(session));
        Ok(())
    }

    /// The pre-registered client the grants without a browser need.
    fn preregistered(&self, meta: &Value) -> Result<Registered, ClientError> {
        let id =
            self.options.client_id.clone().ok_or_else(|| {
                auth("this grant needs a pre-registered client: give its client ID")
            })?;
        let secret = self.options.client_secret.clone();
        let method = if self.options.client_key.is_some() {
            "private_key_jwt".to_owned()
        } else {
            secret_method(secret.is_some(), &auth_methods(meta))
        };
        Ok(Registered { id, secret, method })
    }
}

/// The token endpoint authentication methods the server takes (RFC 8414's default when
/// it does not say).
fn auth_methods(meta: &Value) -> Vec<&str> {
    meta.get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_else(|| vec!["client_secret_basic"])
}

/// A URL-valued member of the authorization server metadata.
fn endpoint_of(meta: &Value, k: &str) -> Result<Url, ClientError> {
    let v = meta
        .get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| auth(format!("the authorization server metadata has no {k}")))?;
    let url = Url::parse(v).map_err(|e| auth(format!("{k} {v:?}: {e}")))?;
    fetch::require_https(k, &url).map(|()| url)
}

impl Authorizer for OAuth {
    fn authorization(&self) -> Option<String> {
        let s = self.state.lock();
        let live = s.expires.is_none_or(|e| Instant::now() < e);
        let scheme = if s.dpop_bound { "DPoP" } else { "Bearer" };
        s.access
            .as_ref()
            .filter(|_| live)
            .map(|t| format!("{scheme} {t}"))
    }

    /// A DPoP-bound token goes with a proof made for this request (RFC 9449 §7.1: `ath`
    /// its hash, the resource server's latest nonce); any other with the header alone.
    fn credentials(&self, method: &str, url: &str) -> Vec<(String, String)> {
        let Some(value) = self.authorization() else {
            return Vec::new();
        };
        let mut out = vec![("Authorization".to_owned(), value)];
        let s = self.state.lock();
        if let (true, Some(access), Some(key)) = (
            s.dpop_bound,
            s.access.as_deref(),
            s.session.as_ref().and_then(|x| x.dpop.as_ref()),
        ) {
            let nonce = key.rs_nonce.lock().clone();
            match key.proof(method, url, Some(access), nonce.as_deref()) {
                Ok(p) => out.push(("DPoP".to_owned(), p)),
                Err(e) => tracing::warn!(target: "toolwright_client::oauth", "{e}"),
            }
        }
        out
    }

    fn challenge(&self, challenge: Challenge) -> BoxFuture<'_, Result<bool, ClientError>> {
        Box::pin(self.handle(challenge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn claims(proof: &str) -> Value {
        let part = proof.split('.').nth(1).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// An authorizer holding a token, DPoP-bound or not.
    fn holding(token: &str, dpop: bool) -> Arc<OAuth> {
        let oauth = OAuth::new(OAuthOptions::default());
        {
            let mut s = oauth.state.lock();
            s.access = Some(token.into());
            s.dpop_bound = dpop;
            s.session = Some(Session {
                endpoint: "http://127.0.0.1:9/mcp".into(),
                issuer: "http://127.0.0.1:9".into(),
                token_endpoint: Url::parse("http://127.0.0.1:9/token").unwrap(),
                client: Registered {
                    id: "c".into(),
                    secret: None,
                    method: "none".into(),
                },
                resource: "http://127.0.0.1:9/mcp".into(),
                dpop: Some(Arc::new(DpopKey::generate().unwrap())),
            });
        }
        oauth
    }

    #[tokio::test]
    async fn a_dpop_token_goes_with_a_proof_and_the_servers_nonce_once_asked() {
        let url = "http://127.0.0.1:9/mcp?x=1";
        let oauth = holding("tok", true);
        let creds = oauth.credentials("POST", url);
        assert_eq!(creds[0], ("Authorization".into(), "DPoP tok".into()));
        assert_eq!(creds[1].0, "DPoP");
        let c = claims(&creds[1].1);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "http://127.0.0.1:9/mcp");
        assert!(c["ath"].is_string() && c.get("nonce").is_none(), "{c}");
        let challenge = |nonce: Option<&str>| Challenge {
            status: 401,
            www_authenticate: vec![r#"DPoP error="use_dpop_nonce", algs="ES256""#.into()],
            url: url.into(),
            dpop_nonce: nonce.map(str::to_owned),
        };
        // The nonce is taken, and the request may go again.
        assert!(oauth.handle(challenge(Some("rs-1"))).await.unwrap());
        let again = oauth.credentials("POST", url);
        assert_eq!(claims(&again[1].1)["nonce"], "rs-1");
        assert_ne!(claims(&again[1].1)["jti"], c["jti"]);
    }

    #[test]
    fn a_bearer_token_goes_alone() {
        let oauth = holding("tok", false);
        assert_eq!(
            oauth.credentials("GET", "http://127.0.0.1:9/mcp"),
            vec![("Authorization".to_owned(), "Bearer tok".to_owned())]
        );
    }

    #[test]
    fn token_endpoint_auth_follows_the_server() {
        assert_eq!(
            secret_method(true, &["client_secret_basic", "none"]),
            "client_secret_basic"
        );
        assert_eq!(
            secret_method(true, &["client_secret_post"]),
            "client_secret_post"
        );
        assert_eq!(secret_method(true, &["none"]), "none");
        assert_eq!(secret_method(false, &["client_secret_basic"]), "none");
    }
}
