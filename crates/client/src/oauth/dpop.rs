//! DPoP (RFC 9449, the MCP extension SEP-1932): sender-constrained access tokens.
//!
//! The client holds an ES256 key of its own (made when the first token is asked for, kept
//! in the token cache with the token it is bound to) and signs a fresh proof for every
//! request that token goes with: the token request itself (`htm` POST, `htu` the token
//! endpoint) and each request to the MCP server (with `ath`, the token's SHA-256). The
//! public key rides in the proof's header (`jwk`), and the proof is a `dpop+jwt`.
//!
//! A server may want a nonce of its own in the proofs (§8 for the authorization server,
//! §9 for the resource server): it answers `use_dpop_nonce` with a `DPoP-Nonce` header,
//! and the client asks again with a proof that carries it. Each server's latest nonce is
//! kept here.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;
use url::Url;

use super::auth;
use super::cache::now;
use crate::ClientError;

/// The one proof algorithm this client signs with.
pub(crate) const ALG: &str = "ES256";

/// A DPoP key and the nonces the servers asked for.
pub(crate) struct DpopKey {
    /// The PKCS#8 document of the private key (what the cache keeps).
    pkcs8: Vec<u8>,
    key: EncodingKey,
    jwk: Jwk,
    /// The authorization server's latest nonce.
    pub as_nonce: Mutex<Option<String>>,
    /// The resource server's latest nonce.
    pub rs_nonce: Mutex<Option<String>>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey(ES256, redacted)")
    }
}

impl DpopKey {
    /// A new P-256 key.
    pub fn generate() -> Result<DpopKey, ClientError> {
        let doc =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| auth("cannot make a DPoP key"))?;
        DpopKey::from_pkcs8(doc.as_ref())
    }

    /// The key of a PKCS#8 document (as [`DpopKey::pkcs8`] gives it).
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<DpopKey, ClientError> {
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8,
            &SystemRandom::new(),
        )
        .map_err(|e| auth(format!("the DPoP key does not load: {e}")))?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err(auth(
                "the DPoP key's public point is not an uncompressed P-256 one",
            ));
        }
        let jwk = Jwk {
            common: CommonParameters::default(),
            algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                key_type: EllipticCurveKeyType::EC,
                curve: EllipticCurve::P256,
                x: URL_SAFE_NO_PAD.encode(&point[1..33]),
                y: URL_SAFE_NO_PAD.encode(&point[33..]),
            }),
        };
        Ok(DpopKey {
            pkcs8: pkcs8.to_vec(),
            key: EncodingKey::from_ec_der(pkcs8),
            jwk,
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        })
    }

    /// The private key as the cache keeps it: PKCS#8, base64url.
    pub fn to_cache(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// The key the cache kept ([`DpopKey::to_cache`]).
    pub fn from_cache(text: &str) -> Result<DpopKey, ClientError> {
        let der = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| auth(format!("the cached DPoP key is not base64url: {e}")))?;
        DpopKey::from_pkcs8(&der)
    }

    /// The public key, as the proofs carry it.
    #[cfg(test)]
    pub fn jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// A fresh proof for a request of `method` to `url` (its query and fragment left out
    /// of `htu`, §4.2), with `ath` when it goes with an access token and `nonce` when the
    /// server gave one.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, ClientError> {
        let mut htu = Url::parse(url).map_err(|e| auth(format!("DPoP htu {url:?}: {e}")))?;
        htu.set_query(None);
        htu.set_fragment(None);
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(rand::random::<[u8; 18]>()),
            "htm": method,
            "htu": htu.as_str(),
            "iat": now(),
        });
        if let Some(t) = access_token {
            let digest = ring::digest::digest(&ring::digest::SHA256, t.as_bytes());
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(digest.as_ref()));
        }
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| auth(format!("cannot sign the DPoP proof: {e}")))
    }
}

/// The `DPoP-Nonce` a refusal asks for: the nonce when the answer names the
/// `use_dpop_nonce` error (in its body's `error` or a challenge's), else `None`.
pub(crate) fn nonce_wanted(error: Option<&str>, nonce_header: Option<&str>) -> Option<String> {
    (error == Some("use_dpop_nonce"))
        .then(|| nonce_header.map(str::trim).filter(|n| !n.is_empty()))
        .flatten()
        .map(str::to_owned)
}

/// Whether an authorization server's metadata offers DPoP with this client's algorithm.
pub(crate) fn offered(meta: &serde_json::Value) -> bool {
    meta.get("dpop_signing_alg_values_supported")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == ALG))
}

#[cfg(test)]
#[path = "dpop_tests.rs"]
mod tests;
