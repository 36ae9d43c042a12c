//! The validator's cases, one line each, with keys made at test time (ring) and tokens
//! minted with jsonwebtoken.

use super::*;
use crate::jwks::KeySet;
use jsonwebtoken::{Algorithm, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};
use serde_json::json;
use toolwright_testkit::table;

const ISS: &str = "https://auth.example.com";
const AUD: &str = "https://mcp.example.com/mcp";

/// A signing key and its public JWK.
struct TestKey {
    alg: Algorithm,
    signing: EncodingKey,
    jwk: Value,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn es256(kid: &'static str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    TestKey {
        alg: Algorithm::ES256,
        signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": b64(&point[1..33]), "y": b64(&point[33..])}),
    }
}

fn ed25519(kid: &'static str) -> TestKey {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    TestKey {
        alg: Algorithm::EdDSA,
        signing: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64(pair.public_key().as_ref())}),
    }
}

fn now_secs() -> i64 {
    i64::try_from(now()).unwrap()
}

/// Claims valid for an hour, with `extra` members set over them (`null` removes one).
fn claims(extra: Value) -> Value {
    let mut c =
        json!({"iss": ISS, "aud": AUD, "sub": "u1", "exp": now_secs() + 3600, "scope": "read"});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

fn mint(key: &TestKey, kid: Option<&str>, claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(key.alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &key.signing).unwrap()
}

/// A token with a header of our own making and a signature of junk.
fn raw(header: Value, claims: &Value) -> String {
    format!(
        "{}.{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes()),
        b64(b"signature")
    )
}

/// The variant of a refusal, by name.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::MissingToken => "missing",
        Error::Malformed { .. } => "malformed",
        Error::KeyInHeader { .. } => "key in header",
        Error::DisallowedAlgorithm { .. } => "algorithm",
        Error::UnknownKey { .. } => "unknown key",
        Error::AlgorithmMismatch { .. } => "mismatch",
        Error::BadSignature { .. } => "signature",
        Error::NoExpiry => "no exp",
        Error::Expired { .. } => "expired",
        Error::NotYetValid { .. } => "not yet",
        Error::WrongIssuer { .. } => "issuer",
        Error::WrongAudience { .. } => "audience",
        Error::Inactive => "inactive",
        Error::IssuerUnreachable { .. } => "unreachable",
        Error::BadUrl { .. } | Error::Discovery { .. } | Error::Jwks { .. } => "setup",
        Error::Exchange { .. } => "exchange",
    }
}

fn validator(keys: &[&TestKey], audiences: &[&str]) -> Validator {
    let jwks = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    let mut settings = Settings::new(ISS, AUD);
    settings.audiences = audiences.iter().map(|a| (*a).to_owned()).collect();
    let refresh = Refresh {
        miss_interval: Duration::from_secs(3600),
        ..Refresh::default()
    };
    let cache = KeyCache::preloaded(KeySet::parse(&jwks).unwrap(), refresh);
    Validator::with_cache(settings, "http://127.0.0.1:1/jwks".into(), cache)
}

#[test]
fn tokens() {
    let ec = es256("ec-1");
    let ed = ed25519("ed-1");
    let impostor = es256("ec-1");
    let v = validator(&[&ec, &ed], &[AUD]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ok = claims(json!({}));
    let hs = EncodingKey::from_secret(ec.jwk.to_string().as_bytes());
    let hs256 = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: Some("ec-1".into()),
            ..jsonwebtoken::Header::new(Algorithm::HS256)
        },
        &ok,
        &hs,
    )
    .unwrap();
    let t = now_secs();
    table! { |token: String, want: &str| {
            let got = rt.block_on(v.validate(&token));
            let got = got.as_ref().map_or_else(kind, |_| "ok");
            assert_eq!(got, want, "{token}");
        };
        (mint(&ec, Some("ec-1"), &ok), "ok");
        (mint(&ed, Some("ed-1"), &ok), "ok");
        (mint(&ec, Some("ec-1"), &claims(json!({"aud": ["other", AUD]}))), "ok");
        (mint(&ec, Some("ec-1"), &claims(json!({"exp": t - 30}))), "ok");
        (mint(&ec, Some("ec-1"), &claims(json!({"nbf": t + 30}))), "ok");
        (mint(&ec, Some("ec-1"), &claims(json!({"exp": (t + 60) as f64 + 0.5}))), "ok");
        (mint(&ec, Some("ec-1"), &claims(json!({"exp": t - 120}))), "expired");
        (mint(&ec, Some("ec-1"), &claims(json!({"nbf": t + 120}))), "not yet");
        (mint(&ec, Some("ec-1"), &claims(json!({"exp": null}))), "no exp");
        (mint(&ec, Some("ec-1"), &claims(json!({"exp": "tomorrow"}))), "no exp");
        (mint(&ec, Some("ec-1"), &claims(json!({"iss": "https://evil.example"}))), "issuer");
        (mint(&ec, Some("ec-1"), &claims(json!({"iss": "https://auth.example.com/"}))), "issuer");
        (mint(&ec, Some("ec-1"), &claims(json!({"iss": null}))), "issuer");
        (mint(&ec, Some("ec-1"), &claims(json!({"aud": "https://other.example/mcp"}))), "audience");
        (mint(&ec, Some("ec-1"), &claims(json!({"aud": null}))), "audience");
        (mint(&impostor, Some("ec-1"), &ok), "signature");
        (mint(&ec, Some("ed-1"), &ok), "mismatch");
        (mint(&ec, Some("nope"), &ok), "unknown key");
        (mint(&ec, None, &ok), "unknown key");
        (hs256, "algorithm");
        (raw(json!({"alg": "none", "kid": "ec-1"}), &ok), "algorithm");
        (raw(json!({"alg": "HS512", "kid": "ec-1"}), &ok), "algorithm");
        (raw(json!({"alg": "PS256", "kid": "ec-1"}), &ok), "algorithm");
        (raw(json!({"alg": "ES256", "kid": "ec-1", "jwk": ec.jwk}), &ok), "key in header");
        (raw(json!({"alg": "ES256", "kid": "ec-1", "jku": "https://evil.example/k"}), &ok), "key in header");
        (raw(json!({"alg": "ES256", "kid": "ec-1", "x5u": "https://evil.example/c"}), &ok), "key in header");
        (raw(json!({"alg": "ES256", "kid": "ec-1"}), &ok), "signature");
        (raw(json!({"kid": "ec-1"}), &ok), "malformed");
        (raw(json!({"alg": "ES256", "kid": 1}), &ok), "malformed");
        (raw(json!("ES256"), &ok), "malformed");
        (String::new(), "missing");
        ("not-a-jwt".into(), "malformed");
        ("a.b.c.d.e".into(), "malformed");
        ("%%%.e30.sig".into(), "malformed");
    }
}

#[tokio::test]
async fn a_verified_token_says_who_and_what() {
    let ed = ed25519("k");
    let v = validator(&[&ed], &["urn:override"]);
    let token = mint(
        &ed,
        None,
        &claims(
            json!({"aud": "urn:override", "scope": "read write", "scp": ["admin"], "client_id": "cli", "tenant": "t1"}),
        ),
    );
    let id = v.validate(&token).await.unwrap();
    assert_eq!(id.subject.as_deref(), Some("u1"));
    assert_eq!(id.scopes, ["read", "write", "admin"]);
    assert_eq!(id.client_id.as_deref(), Some("cli"));
    assert_eq!(id.claims["tenant"], "t1");
    // The resource URL is no longer an audience once the override is set.
    let token = mint(&ed, None, &claims(json!({})));
    assert!(matches!(
        v.validate(&token).await,
        Err(Error::WrongAudience { .. })
    ));
}

#[tokio::test]
async fn a_verified_token_is_remembered_until_the_keys_change() {
    let ed = ed25519("k");
    let v = validator(&[&ed], &[AUD]);
    let token = mint(&ed, Some("k"), &claims(json!({})));
    let first = v.validate(&token).await.unwrap();
    let again = v.validate(&token).await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "the second use is not verified again"
    );
    // A token that was refused is not remembered: it is refused again, for the same reason.
    let late = mint(&ed, Some("k"), &claims(json!({"exp": now_secs() - 3600})));
    for _ in 0..2 {
        assert!(matches!(
            v.validate(&late).await,
            Err(Error::Expired { .. })
        ));
    }
    // The issuer drops the key: the remembered token goes through the whole check again.
    let other = ed25519("k2");
    v.inner
        .cache
        .as_ref()
        .unwrap()
        .replace(KeySet::parse(&json!({"keys": [other.jwk]})).unwrap());
    assert!(matches!(
        v.validate(&token).await,
        Err(Error::UnknownKey { .. })
    ));
}
