//! A JWKS document (RFC 7517) read into the keys this crate verifies with: RSA (RS256, a
//! modulus of 2048 bits or more), P-256 (ES256) and Ed25519 (EdDSA) signing keys. Every
//! other key (symmetric `oct` keys, encryption keys, other curves and algorithms) is left
//! out, so no token can be checked with it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// Why a JWKS document, or one key in it, cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unusable {
    /// The document has no `keys` array.
    #[error("it has no \"keys\" array")]
    NoKeys,
    /// The key is for another use than signing.
    #[error("its use is {0:?}, not \"sig\"")]
    Use(String),
    /// The key's operations leave out verifying.
    #[error("its key_ops do not include \"verify\"")]
    Ops,
    /// A member the key needs is absent.
    #[error("no {0:?}")]
    Missing(&'static str),
    /// A member that should be base64url is not.
    #[error("{0:?} is not base64url")]
    NotBase64(&'static str),
    /// An RSA modulus under 2048 bits.
    #[error("an RSA modulus of {0} bits is too short")]
    ShortModulus(usize),
    /// A curve point of the wrong size.
    #[error("{0}")]
    PointSize(&'static str),
    /// A key type (and curve) not accepted.
    #[error("kty {kty:?}{} is not an RSA, P-256 or Ed25519 key", crv.as_ref().map(|c| format!(", crv {c:?}")).unwrap_or_default())]
    Type {
        /// Its `kty`.
        kty: String,
        /// Its `crv`, if any.
        crv: Option<String>,
    },
    /// The key is marked for an algorithm not accepted.
    #[error("its alg {0:?} is not accepted")]
    Alg(String),
}

/// The algorithms a token may be signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// Ed25519.
    EdDsa,
}

impl Alg {
    /// The algorithm a JOSE `alg` names, if it is accepted (`none` and HMAC never are).
    pub fn from_name(name: &str) -> Option<Alg> {
        match name {
            "RS256" => Some(Alg::Rs256),
            "ES256" => Some(Alg::Es256),
            "EdDSA" => Some(Alg::EdDsa),
            _ => None,
        }
    }

    /// Its JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// jsonwebtoken's name for it.
    pub fn jwt(self) -> Algorithm {
        match self {
            Alg::Rs256 => Algorithm::RS256,
            Alg::Es256 => Algorithm::ES256,
            Alg::EdDsa => Algorithm::EdDSA,
        }
    }
}

/// One verification key.
pub(crate) struct Key {
    /// Its `kid`.
    pub kid: Option<String>,
    /// The one algorithm it verifies.
    pub alg: Alg,
    /// The key itself.
    pub decoding: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// The usable keys of a JWKS.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    pub keys: Vec<Key>,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    /// The key to verify with.
    Found(&'a Key),
    /// A key with that `kid`, for another algorithm.
    Mismatch(Alg),
    /// No key.
    Missing,
}

impl KeySet {
    /// Reads a JWKS document; `Err` when it is not one. Keys this crate cannot use are
    /// left out (each with a debug line); the set may be empty.
    pub fn parse(doc: &Value) -> Result<KeySet, Unusable> {
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or(Unusable::NoKeys)?;
        let mut out = Vec::new();
        for (i, jwk) in keys.iter().enumerate() {
            match key(jwk) {
                Ok(k) => out.push(k),
                Err(why) => {
                    tracing::debug!(index = i, kid = ?jwk.get("kid"), "JWKS key left out: {why}")
                }
            }
        }
        Ok(KeySet { keys: out })
    }

    /// The key for a token whose header names `kid` and `alg`. A token without a `kid` is
    /// checked only against a set of one key.
    pub fn lookup(&self, kid: Option<&str>, alg: Alg) -> Lookup<'_> {
        let mut candidates = self.keys.iter().filter(|k| match kid {
            Some(kid) => k.kid.as_deref() == Some(kid),
            None => self.keys.len() == 1,
        });
        let Some(first) = candidates.next() else {
            return Lookup::Missing;
        };
        if first.alg == alg {
            return Lookup::Found(first);
        }
        match candidates.find(|k| k.alg == alg) {
            Some(k) => Lookup::Found(k),
            None => Lookup::Mismatch(first.alg),
        }
    }
}

/// A JWK's string member.
fn text<'a>(jwk: &'a Value, name: &str) -> Option<&'a str> {
    jwk.get(name).and_then(Value::as_str)
}

/// A base64url member's bytes.
fn bytes(jwk: &Value, name: &'static str) -> Result<Vec<u8>, Unusable> {
    let value = text(jwk, name).ok_or(Unusable::Missing(name))?;
    URL_SAFE_NO_PAD
        .decode(value.trim_end_matches('='))
        .map_err(|_| Unusable::NotBase64(name))
}

/// One JWK as a key, or why it is left out.
fn key(jwk: &Value) -> Result<Key, Unusable> {
    if let Some(usage) = text(jwk, "use")
        && usage != "sig"
    {
        return Err(Unusable::Use(usage.to_owned()));
    }
    if let Some(ops) = jwk.get("key_ops").and_then(Value::as_array)
        && !ops.iter().any(|o| o == "verify")
    {
        return Err(Unusable::Ops);
    }
    let kty = text(jwk, "kty").ok_or(Unusable::Missing("kty"))?;
    let named = text(jwk, "alg");
    let crv = text(jwk, "crv");
    let (alg, decoding) = match (kty, crv) {
        ("RSA", _) => {
            let n = bytes(jwk, "n")?;
            let e = bytes(jwk, "e")?;
            let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
            if bits < 2048 {
                return Err(Unusable::ShortModulus(bits));
            }
            (Alg::Rs256, DecodingKey::from_rsa_raw_components(&n, &e))
        }
        ("EC", Some("P-256")) => {
            let x = bytes(jwk, "x")?;
            let y = bytes(jwk, "y")?;
            if x.len() != 32 || y.len() != 32 {
                return Err(Unusable::PointSize(
                    "a P-256 key's x and y are 32 bytes each",
                ));
            }
            let point: Vec<u8> = [&[4u8][..], &x, &y].concat();
            (Alg::Es256, DecodingKey::from_ec_der(&point))
        }
        ("OKP", Some("Ed25519")) => {
            let x = bytes(jwk, "x")?;
            if x.len() != 32 {
                return Err(Unusable::PointSize("an Ed25519 key's x is 32 bytes"));
            }
            (Alg::EdDsa, DecodingKey::from_ed_der(&x))
        }
        (kty, crv) => {
            return Err(Unusable::Type {
                kty: kty.to_owned(),
                crv: crv.map(str::to_owned),
            });
        }
    };
    // A key's own `alg` must be the one its type allows (`Ed25519` is an older spelling
    // of EdDSA); a key marked for another algorithm (PS256, ES384, an HMAC) is left out.
    if let Some(named) = named
        && named != alg.name()
        && !(alg == Alg::EdDsa && named == "Ed25519")
    {
        return Err(Unusable::Alg(named.to_owned()));
    }
    Ok(Key {
        kid: text(jwk, "kid").map(str::to_owned),
        alg,
        decoding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    /// 256 bytes of modulus, base64url.
    fn modulus() -> String {
        URL_SAFE_NO_PAD.encode([0xC5u8; 256])
    }

    fn b64(n: usize) -> String {
        URL_SAFE_NO_PAD.encode(vec![7u8; n])
    }

    #[test]
    fn keys_are_kept_or_left_out() {
        let n = modulus();
        let short = URL_SAFE_NO_PAD.encode([0xC5u8; 128]);
        let (x, y) = (b64(32), b64(32));
        use Unusable as U;
        let ty = |kty: &str, crv: Option<&str>| U::Type {
            kty: kty.to_owned(),
            crv: crv.map(str::to_owned),
        };
        table! { |jwk: Value, want: Result<Alg, Unusable>| {
                let got = key(&jwk).map(|k| k.alg);
                assert_eq!(got, want, "{jwk}");
            };
            (json!({"kty": "RSA", "n": n, "e": "AQAB"}), Ok(Alg::Rs256));
            (json!({"kty": "RSA", "n": n, "e": "AQAB", "alg": "RS256", "use": "sig"}), Ok(Alg::Rs256));
            (json!({"kty": "RSA", "n": n, "e": "AQAB", "alg": "PS256"}), Err(U::Alg("PS256".into())));
            (json!({"kty": "RSA", "n": n, "e": "AQAB", "alg": "HS256"}), Err(U::Alg("HS256".into())));
            (json!({"kty": "RSA", "n": n, "e": "AQAB", "use": "enc"}), Err(U::Use("enc".into())));
            (json!({"kty": "RSA", "n": n, "e": "AQAB", "key_ops": ["encrypt"]}), Err(U::Ops));
            (json!({"kty": "RSA", "n": short, "e": "AQAB"}), Err(U::ShortModulus(1024)));
            (json!({"kty": "RSA", "n": "!!", "e": "AQAB"}), Err(U::NotBase64("n")));
            (json!({"kty": "RSA", "e": "AQAB"}), Err(U::Missing("n")));
            (json!({"kty": "EC", "crv": "P-256", "x": x, "y": y}), Ok(Alg::Es256));
            (json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "alg": "ES384"}), Err(U::Alg("ES384".into())));
            (json!({"kty": "EC", "crv": "P-384", "x": b64(48), "y": b64(48)}), Err(ty("EC", Some("P-384"))));
            (json!({"kty": "EC", "crv": "P-256", "x": b64(31), "y": y}), Err(U::PointSize("a P-256 key's x and y are 32 bytes each")));
            (json!({"kty": "OKP", "crv": "Ed25519", "x": x}), Ok(Alg::EdDsa));
            (json!({"kty": "OKP", "crv": "Ed25519", "x": x, "alg": "Ed25519"}), Ok(Alg::EdDsa));
            (json!({"kty": "OKP", "crv": "X25519", "x": x}), Err(ty("OKP", Some("X25519"))));
            (json!({"kty": "oct", "k": "c2VjcmV0"}), Err(ty("oct", None)));
            (json!({"kty": "oct", "k": "c2VjcmV0", "alg": "HS256"}), Err(ty("oct", None)));
            (json!({"n": n, "e": "AQAB"}), Err(U::Missing("kty")));
        }
    }

    #[test]
    fn lookup_by_kid_and_alg() {
        let (x, y) = (b64(32), b64(32));
        let set = KeySet::parse(&json!({"keys": [
            {"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": "a"},
            {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "b"},
            {"kty": "RSA", "n": modulus(), "e": "AQAB", "kid": "b"},
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
        ]}))
        .unwrap();
        assert_eq!(set.keys.len(), 3);
        let found = |kid: Option<&str>, alg| match set.lookup(kid, alg) {
            Lookup::Found(k) => format!("{:?}", k.alg),
            Lookup::Mismatch(a) => format!("mismatch {a:?}"),
            Lookup::Missing => "missing".into(),
        };
        table! { |kid: Option<&str>, alg: Alg, want: &str| assert_eq!(found(kid, alg), want, "{kid:?} {alg:?}");
            (Some("a"), Alg::Es256, "Es256");
            (Some("a"), Alg::Rs256, "mismatch Es256");
            (Some("b"), Alg::Rs256, "Rs256");
            (Some("b"), Alg::EdDsa, "EdDsa");
            (Some("b"), Alg::Es256, "mismatch EdDsa");
            (Some("h"), Alg::Es256, "missing");
            (Some("zz"), Alg::Es256, "missing");
            (None, Alg::Es256, "missing");
        }
        let one =
            KeySet::parse(&json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x}]})).unwrap();
        assert!(matches!(one.lookup(None, Alg::EdDsa), Lookup::Found(_)));
        assert_eq!(
            KeySet::parse(&json!({"keys": {}})).err(),
            Some(Unusable::NoKeys)
        );
        assert_eq!(KeySet::parse(&json!([])).err(), Some(Unusable::NoKeys));
    }
}
