//! An authorization server stand-in for the access-token section (issue 39): on loopback,
//! it serves its RFC 8414 metadata (`/.well-known/oauth-authorization-server`: `issuer` is
//! its own `http://127.0.0.1:PORT`, `jwks_uri` that plus `/jwks`) and a JWKS of one ES256
//! key (P-256, generated at start with ring: ring signs RSA but cannot generate an RSA key,
//! and the bench keeps no key on disk). At start it mints one token for the audience it is
//! given, valid for its whole lifetime plus a margin, and hands it to the harness in a file.
//! It counts the JWKS fetches (`GET /stats`), so that the harness can see the keys were
//! fetched once, not per call.

use std::cell::{Cell, OnceCell};
use std::convert::Infallible;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use crate::jsonsrv;

/// The key id of the one key.
pub const KID: &str = "bench-es256";
/// The scopes granted by the token.
pub const SCOPE: &str = "tools:read tools:call";
/// How long the token outlives the issuer.
const MARGIN_SECS: u64 = 600;

/// A signing key and its public JWK.
pub struct Key {
    signing: jsonwebtoken::EncodingKey,
    jwk: Value,
}

impl Key {
    /// A fresh P-256 key.
    pub fn generate() -> Result<Key> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| anyhow!("generating a P-256 key"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| anyhow!("reading the P-256 key just generated"))?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        Ok(Key {
            signing: jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk: json!({
                "kty": "EC", "crv": "P-256", "kid": KID, "use": "sig", "alg": "ES256",
                "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
            }),
        })
    }

    /// The JWKS document publishing the key.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }

    /// A token of `issuer` for `audience`, expiring at `exp` (seconds since the epoch).
    pub fn mint(&self, issuer: &str, audience: &str, exp: u64) -> Result<String> {
        let now = unix_now();
        let claims = json!({
            "iss": issuer, "aud": audience, "sub": "bench", "client_id": "toolwright-bench",
            "iat": now, "nbf": now.saturating_sub(60), "exp": exp, "scope": SCOPE,
        });
        let header = jsonwebtoken::Header {
            kid: Some(KID.into()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256)
        };
        jsonwebtoken::encode(&header, &claims, &self.signing).context("signing the token")
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The issuer's metadata for the base URL `base`.
pub fn metadata(base: &str) -> Value {
    json!({
        "issuer": base,
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "client_credentials"],
    })
}

struct State {
    base: OnceCell<String>,
    jwks: String,
    metadata_fetches: Cell<u64>,
    jwks_fetches: Cell<u64>,
}

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from(body)));
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    res
}

async fn answer(
    state: Rc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET {
        return Ok(reply(StatusCode::METHOD_NOT_ALLOWED, "{}".into()));
    }
    let base = state.base.get().map_or("", String::as_str);
    Ok(match req.uri().path() {
        "/.well-known/oauth-authorization-server" => {
            state.metadata_fetches.set(state.metadata_fetches.get() + 1);
            reply(StatusCode::OK, metadata(base).to_string())
        }
        "/jwks" => {
            state.jwks_fetches.set(state.jwks_fetches.get() + 1);
            reply(StatusCode::OK, state.jwks.clone())
        }
        "/stats" => reply(
            StatusCode::OK,
            json!({
                "metadata_fetches": state.metadata_fetches.get(),
                "jwks_fetches": state.jwks_fetches.get(),
            })
            .to_string(),
        ),
        _ => reply(StatusCode::NOT_FOUND, "{}".into()),
    })
}

/// Serves on `addr` (loopback) until `lifetime` has passed. Once bound, `on_bound` learns
/// the port and the token minted for `audience` (valid for the lifetime plus a margin).
pub fn run(
    addr: &str,
    lifetime: Duration,
    audience: &str,
    on_bound: impl FnOnce(u16, &str) -> Result<()>,
) -> Result<()> {
    let key = Key::generate()?;
    let state = Rc::new(State {
        base: OnceCell::new(),
        jwks: key.jwks().to_string(),
        metadata_fetches: Cell::new(0),
        jwks_fetches: Cell::new(0),
    });
    let exp = unix_now() + lifetime.as_secs() + MARGIN_SECS;
    let bound = {
        let state = state.clone();
        move |port: u16| {
            let base = format!("http://127.0.0.1:{port}");
            let token = key.mint(&base, audience, exp)?;
            let _ = state.base.set(base);
            on_bound(port, &token)
        }
    };
    jsonsrv::run_with(addr, lifetime, bound, move |req| answer(state.clone(), req))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The token verifies with the published key (as a JWK), for its issuer and audience.
    #[test]
    fn token_verifies_with_the_published_key() {
        let key = Key::generate().unwrap();
        let exp = unix_now() + 3600;
        let token = key.mint("http://127.0.0.1:1", "urn:aud", exp).unwrap();
        let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(key.jwks()).unwrap();
        let jwk = jwks.find(KID).expect("the kid is published");
        let decoding = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        v.set_audience(&["urn:aud"]);
        v.set_issuer(&["http://127.0.0.1:1"]);
        let data = jsonwebtoken::decode::<Value>(&token, &decoding, &v).unwrap();
        assert_eq!(data.claims["scope"], SCOPE);
        assert_eq!(data.claims["exp"], exp);
        assert_eq!(data.header.kid.as_deref(), Some(KID));
        let meta = metadata("http://127.0.0.1:1");
        assert_eq!(meta["jwks_uri"], "http://127.0.0.1:1/jwks");
    }
}
