use super::*;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::Value;

/// Checks a proof as a server would (RFC 9449 §4.3): the header's type and algorithm,
/// its public key (and no private part), the signature under that key; returns the claims.
fn verify(proof: &str) -> Value {
    let header = jsonwebtoken::decode_header(proof).unwrap();
    assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
    assert_eq!(header.alg, Algorithm::ES256);
    let jwk = header.jwk.expect("the public key in the header");
    let text = serde_json::to_value(&jwk).unwrap();
    assert_eq!(text["kty"], "EC");
    assert_eq!(text["crv"], "P-256");
    assert!(text.get("d").is_none(), "no private key: {text}");
    let key = DecodingKey::from_jwk(&jwk).unwrap();
    let mut v = Validation::new(Algorithm::ES256);
    v.required_spec_claims.clear();
    v.validate_exp = false;
    v.validate_aud = false;
    jsonwebtoken::decode::<Value>(proof, &key, &v)
        .expect("the proof verifies with its own public key")
        .claims
}

#[test]
fn a_proof_is_signed_by_the_key_it_carries_and_names_the_request() {
    let key = DpopKey::generate().unwrap();
    let proof = key
        .proof("POST", "https://as.example/token?x=1#f", None, None)
        .unwrap();
    let c = verify(&proof);
    assert_eq!(c["htm"], "POST");
    // No query or fragment in htu (§4.2).
    assert_eq!(c["htu"], "https://as.example/token");
    let iat = c["iat"].as_u64().unwrap();
    assert!(iat.abs_diff(now()) < 5, "{iat}");
    assert!(c["jti"].as_str().is_some_and(|j| j.len() >= 16));
    assert!(c.get("ath").is_none() && c.get("nonce").is_none(), "{c}");
    // The header's key is this key.
    let header = jsonwebtoken::decode_header(&proof).unwrap();
    assert_eq!(header.jwk.as_ref(), Some(key.jwk()));
}

#[test]
fn a_resource_proof_binds_the_token_and_carries_the_nonce() {
    let key = DpopKey::generate().unwrap();
    let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
    let p1 = key
        .proof(
            "POST",
            "http://127.0.0.1:3000/mcp",
            Some(token),
            Some("n-1"),
        )
        .unwrap();
    let c = verify(&p1);
    // ath: base64url(SHA-256(the token's ASCII)), no padding (§4.2).
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    assert_eq!(c["ath"], URL_SAFE_NO_PAD.encode(digest.as_ref()));
    assert_eq!(c["nonce"], "n-1");
    assert_eq!(c["htu"], "http://127.0.0.1:3000/mcp");
    // Every proof is fresh: a new jti each time.
    let p2 = key
        .proof(
            "POST",
            "http://127.0.0.1:3000/mcp",
            Some(token),
            Some("n-1"),
        )
        .unwrap();
    assert_ne!(verify(&p2)["jti"], c["jti"]);
}

#[test]
fn the_key_survives_the_cache() {
    let key = DpopKey::generate().unwrap();
    let again = DpopKey::from_cache(&key.to_cache()).unwrap();
    assert_eq!(again.jwk(), key.jwk());
    let c = verify(
        &again
            .proof("GET", "https://r.example/mcp", None, None)
            .unwrap(),
    );
    assert_eq!(c["htm"], "GET");
    assert!(DpopKey::from_cache("not base64!").is_err());
    assert!(DpopKey::from_cache("AAAA").is_err());
}

/// One case a line: the error named, the `DPoP-Nonce` header, the nonce to retry with.
#[test]
fn a_nonce_is_taken_only_when_the_server_asks_for_one() {
    for (error, header, want) in [
        (Some("use_dpop_nonce"), Some("n1"), Some("n1")),
        (Some("use_dpop_nonce"), Some(" n1 "), Some("n1")),
        (Some("use_dpop_nonce"), None, None),
        (Some("use_dpop_nonce"), Some(""), None),
        (Some("invalid_dpop_proof"), Some("n1"), None),
        (None, Some("n1"), None),
    ] {
        assert_eq!(
            nonce_wanted(error, header).as_deref(),
            want,
            "{error:?} {header:?}"
        );
    }
}

#[test]
fn dpop_is_used_where_the_server_offers_es256() {
    for (meta, want) in [
        (
            json!({"dpop_signing_alg_values_supported": ["ES256"]}),
            true,
        ),
        (
            json!({"dpop_signing_alg_values_supported": ["RS256", "ES256"]}),
            true,
        ),
        (
            json!({"dpop_signing_alg_values_supported": ["RS256"]}),
            false,
        ),
        (json!({"dpop_signing_alg_values_supported": []}), false),
        (json!({}), false),
    ] {
        assert_eq!(offered(&meta), want, "{meta}");
    }
}
