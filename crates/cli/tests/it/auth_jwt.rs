//! Streamable HTTP as an OAuth 2.1 protected resource (`serve --http --auth-issuer`):
//! against a loopback authorization server stand-in (RFC 8414 metadata, a JWKS it can
//! change, a count of the JWKS fetches), with keys made at test time (ES256, EdDSA) or a
//! test-only RSA key (`fixtures/auth_rsa_test_key.pem`), and tokens minted here.

use crate::http_client::*;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair,
    RsaPublicKeyComponents,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The scopes the servers here require.
const SCOPES: &str = "tools:read tools:call";

/// A signing key and its public JWK.
pub(crate) struct TestKey {
    alg: Algorithm,
    kid: String,
    signing: EncodingKey,
    jwk: Value,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn es256(kid: &str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    TestKey {
        alg: Algorithm::ES256,
        kid: kid.into(),
        signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "x": b64(&point[1..33]), "y": b64(&point[33..])}),
    }
}

pub(crate) fn ed25519(kid: &str) -> TestKey {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    TestKey {
        alg: Algorithm::EdDSA,
        kid: kid.into(),
        signing: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64(pair.public_key().as_ref())}),
    }
}

/// The test-only RSA key of `fixtures/`.
fn rs256(kid: &str) -> TestKey {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures/auth_rsa_test_key.pem");
    let pem = std::fs::read_to_string(path).unwrap();
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN RSA PRIVATE KEY"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let der = STANDARD.decode(body).unwrap();
    let pair = RsaKeyPair::from_der(&der).unwrap();
    let public = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    TestKey {
        alg: Algorithm::RS256,
        kid: kid.into(),
        signing: EncodingKey::from_rsa_der(&der),
        jwk: json!({"kty": "RSA", "kid": kid, "alg": "RS256", "n": b64(&public.n), "e": b64(&public.e)}),
    }
}

/// The authorization server stand-in: serves its RFC 8414 metadata (issuer with a path,
/// so the path is inserted after the well-known segment) and a JWKS, one request per
/// connection, counts the JWKS fetches and keeps the path of every request. Its metadata
/// names authorization and token endpoints, for the SDK clients' flows to start; nothing
/// answers there.
pub(crate) struct Issuer {
    pub(crate) url: String,
    jwks: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
    /// The JWKS is answered 503 while set.
    down: Arc<AtomicBool>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Issuer {
    pub(crate) fn start(keys: &[&TestKey]) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{base}/tenant");
        let issuer = Issuer {
            url: url.clone(),
            jwks: Arc::new(Mutex::new(Value::Null)),
            fetches: Arc::new(AtomicUsize::new(0)),
            down: Arc::new(AtomicBool::new(false)),
            paths: Arc::new(Mutex::new(Vec::new())),
        };
        issuer.publish(keys);
        let (jwks, fetches, down, paths) = (
            issuer.jwks.clone(),
            issuer.fetches.clone(),
            issuer.down.clone(),
            issuer.paths.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut request_line = String::new();
                let _ = reader.read_line(&mut request_line);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let path = request_line.split(' ').nth(1).unwrap_or("");
                paths.lock().unwrap().push(path.to_owned());
                let body = match path {
                    "/.well-known/oauth-authorization-server/tenant" => Some(
                        json!({"issuer": url, "jwks_uri": format!("{base}/jwks"), "response_types_supported": ["code"],
                            "authorization_endpoint": format!("{base}/authorize"), "token_endpoint": format!("{base}/token"),
                            "code_challenge_methods_supported": ["S256"]}),
                    ),
                    "/jwks" => {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        Some(jwks.lock().unwrap().clone())
                    }
                    _ => None,
                };
                let (status, body) = match body {
                    _ if path == "/jwks" && down.load(Ordering::SeqCst) => {
                        ("503 Service Unavailable", String::new())
                    }
                    Some(b) => ("200 OK", b.to_string()),
                    None => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        issuer
    }

    /// Serves these keys from now on.
    pub(crate) fn publish(&self, keys: &[&TestKey]) {
        let keys: Vec<Value> = keys.iter().map(|k| k.jwk.clone()).collect();
        *self.jwks.lock().unwrap() = json!({"keys": keys});
    }

    pub(crate) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// The paths of the requests it got so far.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims good for `s` and `iss` for ten minutes, with `extra` set over them (`null`
/// removes a claim).
pub(crate) fn claims(s: &HttpServer, iss: &str, extra: Value) -> Value {
    let mut c = json!({"iss": iss, "aud": s.url(), "sub": "alice", "client_id": "test-client",
        "iat": now(), "exp": now() + 600, "scope": SCOPES});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

pub(crate) fn mint(key: &TestKey, claims: &Value) -> String {
    let header = Header {
        kid: Some(key.kid.clone()),
        ..Header::new(key.alg)
    };
    jsonwebtoken::encode(&header, claims, &key.signing).unwrap()
}

pub(crate) fn start(issuer: &Issuer, extra: &[&str]) -> HttpServer {
    let mut args = vec!["--auth-issuer", issuer.url.as_str()];
    for scope in SCOPES.split(' ') {
        args.extend(["--auth-scope", scope]);
    }
    args.extend_from_slice(extra);
    HttpServer::start(&args)
}

/// A modern `tools/list` with `token`, if any.
fn list(s: &HttpServer, token: Option<&str>) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut h = modern_headers("tools/list", None);
    if let Some(b) = &bearer {
        h.push(("authorization", b));
    }
    s.post(&h, &modern_request(1, "tools/list", json!({})))
}

/// The challenges the server sends.
struct Challenges {
    none: String,
    invalid: String,
    scope: String,
}

fn challenges(s: &HttpServer) -> Challenges {
    let prm = format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr);
    Challenges {
        none: format!("Bearer resource_metadata=\"{prm}\", scope=\"{SCOPES}\""),
        invalid: format!("Bearer error=\"invalid_token\", resource_metadata=\"{prm}\""),
        scope: format!(
            "Bearer error=\"insufficient_scope\", scope=\"{SCOPES}\", resource_metadata=\"{prm}\""
        ),
    }
}

/// `token` is refused with `status` and `challenge`, and a good token still works.
fn refused(s: &HttpServer, token: Option<&str>, (status, challenge): (u16, &str), good: &str) {
    let r = list(s, token);
    assert_eq!(r.status, status, "{token:?}: {}", r.text());
    assert_eq!(r.header("www-authenticate"), Some(challenge), "{token:?}");
    check(true, "tools/list", &r.json());
    assert_eq!(list(s, Some(good)).status, 200, "the server keeps serving");
}

#[test]
fn access_tokens_are_checked() {
    let (rsa, ec, ed) = (rs256("rsa-1"), es256("ec-1"), ed25519("ed-1"));
    let issuer = Issuer::start(&[&rsa, &ec, &ed]);
    let s = start(&issuer, &[]);
    let iss = issuer.url.as_str();
    let ch = challenges(&s);
    let good = mint(&ec, &claims(&s, iss, json!({})));

    // Each accepted algorithm.
    for key in [&rsa, &ec, &ed] {
        let r = list(&s, Some(&mint(key, &claims(&s, iss, json!({})))));
        assert_eq!(r.status, 200, "{:?}: {}", key.alg, r.text());
        r.checked(true, "tools/list");
    }
    let invalid = (401, ch.invalid.as_str());
    refused(&s, None, (401, &ch.none), &good);
    let other_aud = claims(&s, iss, json!({"aud": "http://127.0.0.1:1/mcp"}));
    refused(&s, Some(&mint(&ec, &other_aud)), invalid, &good);
    let expired = claims(&s, iss, json!({"exp": now() - 300}));
    refused(&s, Some(&mint(&ec, &expired)), invalid, &good);
    let early = claims(&s, iss, json!({"nbf": now() + 300}));
    refused(&s, Some(&mint(&ed, &early)), invalid, &good);
    let no_exp = claims(&s, iss, json!({"exp": null}));
    refused(&s, Some(&mint(&rsa, &no_exp)), invalid, &good);
    let other_iss = claims(&s, iss, json!({"iss": "http://127.0.0.1:1/tenant"}));
    refused(&s, Some(&mint(&ec, &other_iss)), invalid, &good);
    // Signed by another key under a kid the issuer uses.
    let impostor = es256("ec-1");
    refused(
        &s,
        Some(&mint(&impostor, &claims(&s, iss, json!({})))),
        invalid,
        &good,
    );
    // HS256 with the issuer's public key as the secret (algorithm confusion).
    let hmac = TestKey {
        alg: Algorithm::HS256,
        kid: "rsa-1".into(),
        signing: EncodingKey::from_secret(rsa.jwk.to_string().as_bytes()),
        jwk: Value::Null,
    };
    refused(
        &s,
        Some(&mint(&hmac, &claims(&s, iss, json!({})))),
        invalid,
        &good,
    );
    // alg none, unsigned.
    let payload = b64(claims(&s, iss, json!({})).to_string().as_bytes());
    let none = format!("{}.{payload}.", b64(br#"{"alg":"none","kid":"ec-1"}"#));
    refused(&s, Some(&none), invalid, &good);
    refused(&s, Some("not-a-jwt"), invalid, &good);
    // A valid token without a required scope: 403, the step-up challenge.
    let read_only = claims(&s, iss, json!({"scope": "tools:read"}));
    refused(&s, Some(&mint(&ec, &read_only)), (403, &ch.scope), &good);
    // `scp` counts too.
    let scp = claims(
        &s,
        iss,
        json!({"scope": null, "scp": ["tools:call", "tools:read"]}),
    );
    assert_eq!(list(&s, Some(&mint(&ed, &scp))).status, 200);

    // The legacy era: initialize, tools/list, tools/call add, all with the token.
    let bearer = format!("Bearer {good}");
    let auth = ("authorization", bearer.as_str());
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(s.post(&[], &init).status, 401);
    let r = s.post(&[auth], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    r.checked(false, "initialize");
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let session = [
        auth,
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    assert_eq!(
        s.post(&session, &notification("notifications/initialized"))
            .status,
        202
    );
    let r = s.post(&session, &request(2, "tools/list", json!({})));
    let tools = r.checked(false, "tools/list")["result"]["tools"].clone();
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "add"));
    let add = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let r = s.post(&session, &request(3, "tools/call", add.clone()));
    assert_eq!(
        r.checked(false, "tools/call")["result"]["structuredContent"]["result"],
        5
    );
    // The session needs the token on every request.
    assert_eq!(
        s.post(&session[1..], &request(4, "tools/call", add)).status,
        401
    );

    // The Protected Resource Metadata, served without a token.
    let r = s.send("GET", "/.well-known/oauth-protected-resource/mcp", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"resource": s.url(), "authorization_servers": [iss],
            "scopes_supported": ["tools:read", "tools:call"], "bearer_methods_supported": ["header"]})
    );
    // /metrics needs a token as /mcp does; /healthz does not.
    let metrics = |auth: &[(&str, &str)]| s.send("GET", "/metrics", auth, b"").status;
    assert_eq!(metrics(&[]), 401);
    assert_eq!(metrics(&[auth]), 200);
    assert_eq!(s.send("GET", "/healthz", &[], b"").status, 200);
    // Every token was checked from the keys fetched at start-up.
    assert_eq!(issuer.fetches(), 1);
}

#[test]
fn rotated_keys_are_fetched_and_made_up_kids_are_bounded() {
    let old = es256("ec-1");
    let issuer = Issuer::start(&[&old]);
    let s = start(&issuer, &[]);
    let iss = issuer.url.clone();
    let ch = challenges(&s);
    let good = |key: &TestKey| mint(key, &claims(&s, &iss, json!({})));
    assert_eq!(list(&s, Some(&good(&old))).status, 200);
    assert_eq!(issuer.fetches(), 1, "the keys are fetched once at start-up");

    // The issuer rotates: the old key goes, a new one comes. A token with the new kid is
    // accepted after one fetch; one with the old kid is refused without another.
    let new = ed25519("ed-2");
    issuer.publish(&[&new]);
    let rotated = Instant::now();
    let r = list(&s, Some(&good(&new)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(issuer.fetches(), 2);
    let r = list(&s, Some(&good(&old)));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some(ch.invalid.as_str()));

    // A storm of tokens with made-up kids, from several clients at once: all refused, and
    // the issuer sees at most one fetch per 30 s of it.
    let storm: Vec<String> = (0..48)
        .map(|i| {
            let key = TestKey {
                kid: format!("made-up-{i}-{}", now()),
                ..es256("x")
            };
            mint(&key, &claims(&s, &iss, json!({})))
        })
        .collect();
    std::thread::scope(|scope| {
        for chunk in storm.chunks(6) {
            let s = &s;
            let invalid = ch.invalid.as_str();
            scope.spawn(move || {
                for token in chunk {
                    let r = list(s, Some(token));
                    assert_eq!(r.status, 401);
                    assert_eq!(r.header("www-authenticate"), Some(invalid));
                }
            });
        }
    });
    let bound = 2 + rotated.elapsed().as_secs() as usize / 30;
    assert!(
        issuer.fetches() <= bound,
        "{} JWKS fetches; at most {bound} allowed",
        issuer.fetches()
    );
    assert_eq!(list(&s, Some(&good(&new))).status, 200, "still serving");
}

#[test]
fn an_audience_of_its_own_and_start_up_refusals() {
    let ec = es256("ec-1");
    let issuer = Issuer::start(&[&ec]);
    let s = start(&issuer, &["--auth-audience", "api://toolwright"]);
    let iss = issuer.url.as_str();
    let own = claims(&s, iss, json!({"aud": ["api://other", "api://toolwright"]}));
    assert_eq!(list(&s, Some(&mint(&ec, &own))).status, 200);
    let resource = claims(&s, iss, json!({}));
    assert_eq!(list(&s, Some(&mint(&ec, &resource))).status, 401);

    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        crate::util::run_cli(&args)
    };
    // An issuer whose metadata names another issuer: refused at start-up.
    let out = serve(&["--auth-issuer", &format!("{iss}/")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("names issuer"), "{err}");
    // An issuer nothing answers for.
    let out = serve(&["--auth-issuer", "http://127.0.0.1:1/tenant"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no metadata document"));
    // Plain http to another machine.
    let out = serve(&["--auth-issuer", "http://auth.example.com"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("https"));
    // A static token and an issuer exclude each other.
    let out = serve(&["--auth-issuer", iss, "--auth-token-env", "TW_TOKEN"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    let out = serve(&["--auth-scope", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(issuer.fetches(), 1);
}

#[test]
fn keys_that_cannot_be_fetched_are_503_only_for_a_kid_not_cached() {
    let ec = es256("ec-1");
    let issuer = Issuer::start(&[&ec]);
    let s = start(&issuer, &[]);
    let iss = issuer.url.clone();
    issuer.down.store(true, Ordering::SeqCst);
    // The cached key needs no fetch: served.
    let good = mint(&ec, &claims(&s, &iss, json!({})));
    assert_eq!(list(&s, Some(&good)).status, 200);
    // A new kid needs one, which fails: 503, to try again later.
    let new = ed25519("ed-2");
    let r = list(&s, Some(&mint(&new, &claims(&s, &iss, json!({})))));
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("30"));
    assert_eq!(issuer.fetches(), 2);
    // Within the interval no other fetch is made: an unknown key, 401.
    let r = list(&s, Some(&mint(&new, &claims(&s, &iss, json!({})))));
    assert_eq!(r.status, 401);
    assert_eq!(issuer.fetches(), 2);
    assert_eq!(list(&s, Some(&good)).status, 200);
}
