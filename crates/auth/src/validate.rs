//! [`Validator`]: an access token checked against one issuer, in this order: its header
//! (a signed JWT, an accepted `alg`, no key of its own), its key (by `kid`, from the
//! issuer's JWKS, for that same algorithm), its signature, then its claims (`exp`
//! required, `nbf` honoured, both with the leeway; `iss` the issuer; `aud` one of ours).

use crate::cache::{KeyCache, Refresh};
use crate::discovery;
use crate::error::Error;
use crate::fetch::Fetcher;
use crate::identity::Identity;
use crate::introspect::{Introspection, Introspector};
use crate::jwks::{Alg, Key, Lookup};
use crate::verified::Verified;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolwright_net::Connector;

/// What a [`Validator`] checks tokens against.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The authorization server's issuer identifier: its metadata's `issuer` and every
    /// token's `iss` must equal it exactly.
    pub issuer: String,
    /// The audiences accepted: a token's `aud` must name one of them (RFC 8707: the
    /// resource's URL, or an audience the operator configured instead).
    pub audiences: Vec<String>,
    /// How far `exp` and `nbf` may be off (clocks differ). Default 60 s.
    pub leeway: Duration,
    /// When the keys are fetched again.
    pub refresh: Refresh,
    /// Longest wait for one fetch (metadata, JWKS). Default 10 s.
    pub timeout: Duration,
    /// How connections are opened. `None`: any address (the operator named the issuer)
    /// and the webpki roots.
    pub connector: Option<Connector>,
    /// Opaque tokens too, by RFC 7662 introspection: a token that is not a JWT (or every
    /// token, when the issuer publishes no keys) is asked about.
    pub introspection: Option<Introspection>,
}

impl Settings {
    /// Settings for `issuer`, accepting tokens for `audience`, with the defaults.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Settings {
        Settings {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            leeway: Duration::from_secs(60),
            refresh: Refresh::default(),
            timeout: Duration::from_secs(10),
            connector: None,
            introspection: None,
        }
    }
}

/// Checks access tokens of one issuer. Cheap to clone: clones share the key cache.
#[derive(Debug, Clone)]
pub struct Validator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    issuer: String,
    audiences: Vec<String>,
    leeway: u64,
    jwks_uri: Option<String>,
    cache: Option<Arc<KeyCache>>,
    introspector: Option<Introspector>,
    /// Tokens already verified with the current keys.
    verified: Verified,
}

impl Validator {
    /// Finds the issuer's metadata and fetches its keys (RFC 8414, then OpenID Connect Discovery).
    ///
    /// # Errors
    ///
    /// [`Error::BadUrl`] for an issuer or `jwks_uri` that is not an `https` URL (or
    /// `http` to this machine), [`Error::Discovery`] when no metadata fits,
    /// [`Error::IssuerUnreachable`] or [`Error::Jwks`] when the keys cannot be had.
    pub async fn discover(settings: Settings) -> Result<Validator, Error> {
        let fetcher = Fetcher::new(settings.connector.clone(), settings.timeout);
        let Some(introspection) = settings.introspection.clone() else {
            let jwks_uri = discovery::jwks_uri(&fetcher, &settings.issuer).await?;
            let cache = KeyCache::load(jwks_uri.clone(), fetcher, settings.refresh).await?;
            return Ok(Validator::with_cache(settings, jwks_uri, cache));
        };
        // With introspection the keys are optional: an issuer of opaque tokens has none.
        let found = discovery::endpoints(&fetcher, &settings.issuer).await?;
        let endpoint = introspection
            .endpoint
            .clone()
            .or(found.introspection)
            .ok_or_else(|| Error::Discovery {
                issuer: settings.issuer.clone(),
                reason: "its metadata names no introspection_endpoint (name one instead)".into(),
            })?;
        crate::url::check("introspection endpoint", &endpoint, false)?;
        let cache = match &found.jwks_uri {
            Some(uri) => Some(Arc::new(
                KeyCache::load(uri.clone(), fetcher.clone(), settings.refresh).await?,
            )),
            None => None,
        };
        let introspector = Introspector::new(endpoint, introspection.client.as_ref(), fetcher);
        Ok(Validator::with_parts(
            settings,
            found.jwks_uri,
            cache,
            Some(introspector),
        ))
    }

    fn with_cache(settings: Settings, jwks_uri: String, cache: KeyCache) -> Validator {
        Validator::with_parts(settings, Some(jwks_uri), Some(Arc::new(cache)), None)
    }

    fn with_parts(
        settings: Settings,
        jwks_uri: Option<String>,
        cache: Option<Arc<KeyCache>>,
        introspector: Option<Introspector>,
    ) -> Validator {
        Validator {
            inner: Arc::new(Inner {
                issuer: settings.issuer,
                audiences: settings.audiences,
                leeway: settings.leeway.as_secs(),
                jwks_uri,
                cache,
                introspector,
                verified: Verified::default(),
            }),
        }
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The JWKS URL the issuer's metadata named (none: opaque tokens only, introspected).
    pub fn jwks_uri(&self) -> Option<&str> {
        self.inner.jwks_uri.as_deref()
    }

    /// The introspection endpoint, when opaque tokens are introspected.
    pub fn introspection_endpoint(&self) -> Option<&str> {
        self.inner.introspector.as_ref().map(Introspector::endpoint)
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_fetches(&self) -> u64 {
        self.inner.cache.as_ref().map_or(0, |c| c.fetches())
    }

    /// Checks `token` (the bearer token as presented). With its key cached this completes
    /// without waiting on anything; a `kid` not in the cache waits for one bounded refresh
    /// (see [`Refresh`]).
    ///
    /// # Errors
    ///
    /// Why the token was refused ([`Error::is_token_fault`]), or
    /// [`Error::IssuerUnreachable`] (and [`Error::Jwks`]) when a refresh it needed failed.
    pub async fn validate(&self, token: &str) -> Result<Arc<Identity>, Error> {
        let inner = &self.inner;
        if let Some(introspector) = &inner.introspector
            && (inner.cache.is_none() || token.split('.').count() != 3)
        {
            return introspector
                .check(token, &inner.issuer, &inner.audiences, inner.leeway, now())
                .await;
        }
        let Some(cache) = &inner.cache else {
            return Err(Error::Malformed {
                reason: "the issuer publishes no keys",
            });
        };
        cache.refresh_if_stale();
        let (generation, keys) = cache.current();
        // A token this key set already verified is not verified again (its times are).
        if let Some(identity) = inner.verified.get(token, generation, now(), inner.leeway) {
            return Ok(identity);
        }
        let (alg, kid) = header(token)?;
        match keys.lookup(kid.as_deref(), alg) {
            Lookup::Found(key) => return self.verify(token, key, generation, now()),
            Lookup::Mismatch(key_alg) => return Err(mismatch(kid, alg, key_alg)),
            Lookup::Missing => {}
        }
        drop(keys);
        if !cache.refresh_for_miss(generation).await? {
            return Err(Error::UnknownKey { kid });
        }
        let (generation, keys) = cache.current();
        match keys.lookup(kid.as_deref(), alg) {
            Lookup::Found(key) => self.verify(token, key, generation, now()),
            Lookup::Mismatch(key_alg) => Err(mismatch(kid, alg, key_alg)),
            Lookup::Missing => Err(Error::UnknownKey { kid }),
        }
    }

    /// The signature with `key` (of key-set `generation`), then the claims at `now` (unix
    /// seconds); a token that passes is remembered.
    fn verify(
        &self,
        token: &str,
        key: &Key,
        generation: u64,
        now: u64,
    ) -> Result<Arc<Identity>, Error> {
        // jsonwebtoken checks the signature (and that the header's alg is the key's);
        // the claims are checked below, where each failure keeps what the token said.
        let mut only_signature = jsonwebtoken::Validation::new(key.alg.jwt());
        only_signature.required_spec_claims.clear();
        only_signature.validate_exp = false;
        only_signature.validate_nbf = false;
        only_signature.validate_aud = false;
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &only_signature)
                .map_err(|e| match e.kind() {
                    ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                        Error::Malformed {
                            reason: "the payload is not a base64url JSON object",
                        }
                    }
                    _ => Error::BadSignature {
                        kid: key.kid.clone(),
                    },
                })?;
        let exp = self.check_claims(&data.claims, now)?;
        let nbf = seconds(data.claims.get("nbf"));
        let identity = Arc::new(Identity::from_claims(data.claims));
        self.inner
            .verified
            .put(token, generation, exp, nbf, identity.clone(), now);
        Ok(identity)
    }

    /// `exp`, `nbf`, `iss` and `aud` of verified claims, at `now` (unix seconds); `exp`.
    fn check_claims(&self, claims: &Map<String, Value>, now: u64) -> Result<u64, Error> {
        let inner = &self.inner;
        let exp = seconds(claims.get("exp")).ok_or(Error::NoExpiry)?;
        if now > exp.saturating_add(inner.leeway) {
            return Err(Error::Expired { exp });
        }
        if let Some(nbf) = seconds(claims.get("nbf"))
            && nbf > now.saturating_add(inner.leeway)
        {
            return Err(Error::NotYetValid { nbf });
        }
        let iss = claims.get("iss").and_then(Value::as_str);
        if iss != Some(inner.issuer.as_str()) {
            return Err(Error::WrongIssuer {
                found: iss.map(str::to_owned),
                expected: inner.issuer.clone(),
            });
        }
        check_audience(claims, &inner.audiences)?;
        Ok(exp)
    }
}

fn mismatch(kid: Option<String>, alg: Alg, key_alg: Alg) -> Error {
    Error::AlgorithmMismatch {
        kid,
        token_alg: alg.name().to_owned(),
        key_alg: key_alg.name(),
    }
}

/// Unix seconds now.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A NumericDate claim as whole seconds (a fraction is cut off; a negative one is 0).
fn seconds(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite())
            .map(|f| if f < 0.0 { 0 } else { f as u64 })
    })
}

/// The header's algorithm and `kid`, once it is a signed JWT's with an accepted `alg` and
/// no key of its own.
fn header(token: &str) -> Result<(Alg, Option<String>), Error> {
    if token.is_empty() {
        return Err(Error::MissingToken);
    }
    let malformed = |reason| Error::Malformed { reason };
    let parts = token.split('.').count();
    if parts == 5 {
        return Err(malformed("an encrypted token (JWE) is not accepted"));
    }
    if parts != 3 {
        return Err(malformed("not three dot-separated parts"));
    }
    let encoded = token.split('.').next().unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| malformed("the header is not base64url"))?;
    let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(malformed("the header is not a JSON object"));
    };
    for param in ["jwk", "jku", "x5u"] {
        if header.contains_key(param) {
            return Err(Error::KeyInHeader { param });
        }
    }
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .ok_or(malformed("the header has no alg"))?;
    let alg = Alg::from_name(alg).ok_or_else(|| Error::DisallowedAlgorithm {
        alg: alg.to_owned(),
    })?;
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(k)) => Some(k.clone()),
        Some(_) => return Err(malformed("the header's kid is not a string")),
    };
    Ok((alg, kid))
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;

/// `aud` of verified claims (a string or an array of them) must name one of `accepted`.
pub(crate) fn check_audience(
    claims: &Map<String, Value>,
    accepted: &[String],
) -> Result<(), Error> {
    let found: Vec<String> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if found.iter().any(|a| accepted.contains(a)) {
        Ok(())
    } else {
        Err(Error::WrongAudience {
            found,
            expected: accepted.to_vec(),
        })
    }
}
