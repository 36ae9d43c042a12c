//! JWT client assertions (RFC 7523 §2.2, OAuth's `private_key_jwt`): the client proves who
//! it is with a short-lived JWT signed by its own key instead of a shared secret.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use super::auth;
use super::cache::now;
use crate::ClientError;

/// The `client_assertion_type` of a JWT client assertion.
pub(crate) const JWT_BEARER_ASSERTION: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is good for, in seconds (it is made for one request).
const LIFETIME: u64 = 300;

/// A client's signing key: an EC P-256 private key, signing ES256.
#[derive(Clone)]
pub struct ClientKey {
    key: EncodingKey,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientKey(ES256, redacted)")
    }
}

impl ClientKey {
    /// Reads a PEM `PRIVATE KEY` (PKCS#8) holding an EC P-256 key. The key is tried once
    /// here, so that a wrong one is reported before any request is made.
    pub fn from_pem(text: &str) -> Result<ClientKey, ClientError> {
        let block = pem::parse(text)
            .map_err(|e| auth(format!("the client key is not a PEM document ({e:?})")))?;
        if block.tag() != "PRIVATE KEY" {
            return Err(auth(format!(
                "the client key is a PEM {:?}, not a PKCS#8 \"PRIVATE KEY\" (convert it with `openssl pkcs8 -topk8 -nocrypt`)",
                block.tag()
            )));
        }
        let key = ClientKey {
            key: EncodingKey::from_ec_der(block.contents()),
        };
        key.sign(&json!({})).map_err(|_| {
            auth("the client key is not an EC P-256 private key with its public key (ES256 needs one)")
        })?;
        Ok(key)
    }

    fn sign(&self, claims: &serde_json::Value) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("JWT".into());
        jsonwebtoken::encode(&header, claims, &self.key)
    }

    /// A fresh assertion for `client_id` to present to the authorization server whose
    /// issuer identifier is `audience`: `iss` and `sub` the client, `aud` the issuer, a
    /// random `jti`, valid for a few minutes.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, ClientError> {
        let iat = now();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": iat,
            "exp": iat + LIFETIME,
            "jti": URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>()),
        });
        self.sign(&claims)
            .map_err(|e| auth(format!("cannot sign the client assertion: {e}")))
    }
}

#[cfg(test)]
#[path = "assertion_tests.rs"]
mod tests;
