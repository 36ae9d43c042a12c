use super::*;

use jsonwebtoken::{DecodingKey, Validation};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::Value;

/// A fresh P-256 key as PKCS#8 PEM, and its public point (what verifies it).
fn keypair() -> (String, Vec<u8>) {
    let rng = ring::rand::SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
    let pem = pem::encode(&pem::Pem::new("PRIVATE KEY", der.as_ref().to_vec()));
    (pem, pair.public_key().as_ref().to_vec())
}

#[test]
fn the_assertion_verifies_and_names_the_client_and_the_issuer() {
    let (pem, public) = keypair();
    let key = ClientKey::from_pem(&pem).unwrap();
    let jwt = key.assertion("client-1", "http://as.example/").unwrap();

    let header = jsonwebtoken::decode_header(&jwt).unwrap();
    assert_eq!(header.alg, Algorithm::ES256);
    assert_eq!(header.typ.as_deref(), Some("JWT"));

    let mut v = Validation::new(Algorithm::ES256);
    v.set_audience(&["http://as.example/"]);
    v.set_issuer(&["client-1"]);
    v.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub", "jti"]);
    let data = jsonwebtoken::decode::<Value>(&jwt, &DecodingKey::from_ec_der(&public), &v).unwrap();
    let c = data.claims;
    assert_eq!(c["sub"], "client-1");
    let (iat, exp) = (c["iat"].as_u64().unwrap(), c["exp"].as_u64().unwrap());
    assert!(iat <= now() && now() < exp && exp - iat <= LIFETIME);
    assert!(c["jti"].as_str().is_some_and(|j| j.len() >= 32));

    // Another assertion is another jti; another key does not verify it.
    let again = key.assertion("client-1", "http://as.example/").unwrap();
    let c2 = jsonwebtoken::decode::<Value>(&again, &DecodingKey::from_ec_der(&public), &v)
        .unwrap()
        .claims;
    assert_ne!(c["jti"], c2["jti"]);
    let (_, other) = keypair();
    assert!(jsonwebtoken::decode::<Value>(&jwt, &DecodingKey::from_ec_der(&other), &v).is_err());
}

#[test]
fn keys_that_cannot_sign_es256_are_refused_up_front() {
    let err = |text: &str| ClientKey::from_pem(text).unwrap_err().to_string();
    assert!(err("not a key").contains("the client key"));
    let (pem, _) = keypair();
    let sec1 = pem.replace("PRIVATE KEY", "EC PRIVATE KEY");
    assert!(err(&sec1).contains("PKCS#8"), "{}", err(&sec1));
    let junk = pem::encode(&pem::Pem::new(
        "PRIVATE KEY",
        vec![0x30, 0x03, 0x02, 0x01, 0x00],
    ));
    assert!(err(&junk).contains("EC P-256"), "{}", err(&junk));
}
