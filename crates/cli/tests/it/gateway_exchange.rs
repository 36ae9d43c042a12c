//! An upstream called with the caller's identity (`exchange:`, RFC 8693 token exchange):
//! the gateway (`serve --http --auth-issuer`, callers' tokens minted by a loopback issuer)
//! exchanges each caller's token at a token endpoint stand-in written here (the TypeScript
//! SDK's demo authorization server has no token exchange), and the upstream, a real
//! `toolwright serve --http` behind a proxy that records every request's `Authorization`,
//! sees the exchanged token, never the caller's own. A subject's token is exchanged once
//! while it lasts, another subject gets its own, an expiring one is exchanged again, a
//! refused exchange is a tool error at once, and a call without a caller's token (stdio)
//! is refused before anything is sent. gateway_exchange_reads.rs: resources and prompts.

use crate::auth_jwt::{Issuer, claims, es256, mint};
use crate::http_client::*;
use crate::util::Server;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const AUDIENCE: &str = "https://upstream.example/mcp";
const SECRET: &str = "gw s3cret";
const ACCESS: &str = "urn:ietf:params:oauth:token-type:access_token";

/// One HTTP request as read off a socket: its first line, headers (names lowercased) and
/// body.
struct Request {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn read(reader: &mut impl BufRead) -> Option<Request> {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
                break;
            }
            let (k, v) = h.split_once(':')?;
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        Some(Request {
            line,
            headers,
            body,
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A token endpoint that implements the exchange: it checks the client (HTTP Basic), the
/// grant and the token types, reads the subject of the subject token, and issues
/// `xchg-SUB-N` for `expires_in` seconds; it refuses `mallory` (400 `invalid_grant`).
pub(crate) struct TokenEndpoint {
    url: String,
    /// Every request's form.
    hits: Arc<Mutex<Vec<Map<String, Value>>>>,
    expires_in: Arc<AtomicU64>,
}

impl TokenEndpoint {
    fn start() -> TokenEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/oauth/token", listener.local_addr().unwrap());
        let hits = Arc::new(Mutex::new(Vec::new()));
        let expires_in = Arc::new(AtomicU64::new(300));
        let (log, life) = (hits.clone(), expires_in.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let Some(req) = Request::read(&mut reader) else {
                    continue;
                };
                let form: Map<String, Value> = String::from_utf8_lossy(&req.body)
                    .split('&')
                    .filter_map(|p| p.split_once('='))
                    .map(|(k, v)| (percent_decode(k), Value::String(percent_decode(v))))
                    .collect();
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push(form.clone());
                    log.len() - 1
                };
                let field = |k: &str| form.get(k).and_then(Value::as_str).unwrap_or("");
                let client = format!("Basic {}", STANDARD.encode("gw:gw+s3cret"));
                let sub = field("subject_token")
                    .split('.')
                    .nth(1)
                    .and_then(|p| URL_SAFE_NO_PAD.decode(p).ok())
                    .and_then(|p| serde_json::from_slice::<Value>(&p).ok())
                    .and_then(|c| c["sub"].as_str().map(str::to_owned));
                let (status, body) = if req.header("authorization") != Some(client.as_str()) {
                    ("401 Unauthorized", json!({"error": "invalid_client"}))
                } else if field("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
                    || field("subject_token_type") != ACCESS
                    || field("requested_token_type") != ACCESS
                    || field("audience") != AUDIENCE
                {
                    ("400 Bad Request", json!({"error": "invalid_request"}))
                } else {
                    match sub.as_deref() {
                        None | Some("mallory") => (
                            "400 Bad Request",
                            json!({"error": "invalid_grant", "error_description": "this subject may not reach the upstream"}),
                        ),
                        Some(sub) => (
                            "200 OK",
                            json!({"access_token": format!("xchg-{sub}-{n}"), "issued_token_type": ACCESS,
                                "token_type": "Bearer", "expires_in": life.load(Ordering::SeqCst)}),
                        ),
                    }
                };
                let body = body.to_string();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        TokenEndpoint {
            url,
            hits,
            expires_in,
        }
    }

    pub(crate) fn hits(&self) -> Vec<Map<String, Value>> {
        self.hits.lock().unwrap().clone()
    }
}

/// What the upstream was sent: each request's `Mcp-Method` (or HTTP method), `Mcp-Name`
/// and `Authorization`.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

/// A proxy in front of `upstream` that records each request, then forwards it with
/// `Connection: close` and copies the answer back until the upstream closes.
fn recording_proxy(upstream: SocketAddr) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let Some(req) = Request::read(&mut reader) else {
                    return;
                };
                let method = req
                    .header("mcp-method")
                    .map(str::to_owned)
                    .unwrap_or_else(|| req.line.split(' ').next().unwrap().to_owned());
                // Every `Authorization` it carries, so two would show.
                let auths: Vec<&str> = req
                    .headers
                    .iter()
                    .filter(|(k, _)| k == "authorization")
                    .map(|(_, v)| v.as_str())
                    .collect();
                let auth = (!auths.is_empty()).then(|| auths.join(" | "));
                let name = req.header("mcp-name").map(str::to_owned);
                log.lock().unwrap().push((method, name, auth));
                let mut out = req.line.clone();
                for (k, v) in &req.headers {
                    if k != "connection" {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                }
                out.push_str("connection: close\r\n\r\n");
                let mut up = TcpStream::connect(upstream).unwrap();
                up.write_all(out.as_bytes()).unwrap();
                up.write_all(&req.body).unwrap();
                let _ = std::io::copy(&mut up, &mut conn);
            });
        }
    });
    (port, seen)
}

/// The gateway's config: the upstream behind the proxy, with `exchange:`.
fn config(dir: &std::path::Path, proxy: u16, endpoint: &TokenEndpoint, extra: &str) -> String {
    let path = dir.join("gw.yaml");
    std::fs::write(
        &path,
        format!(
            "{extra}gateway: {{state_file: {state}}}\nservers:\n  up:\n    url: http://127.0.0.1:{proxy}/mcp\n    bearer_env: TW_TEST_SERVICE_TOKEN\n    exchange:\n      token_endpoint: {url}\n      audience: {AUDIENCE}\n      scope: tickets:read\n      client_id: gw\n      client_secret: ${{TW_TEST_EXCHANGE_SECRET}}\n",
            state = dir.join("pins.json").display(),
            url = endpoint.url,
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// A modern `tools/call` of `up__add` through the gateway with `token`.
fn add(gw: &HttpServer, token: &str, a: i64, b: i64) -> Value {
    let bearer = format!("Bearer {token}");
    let mut h = modern_headers("tools/call", Some("up__add"));
    h.push(("authorization", &bearer));
    let r = gw.post(
        &h,
        &modern_request(
            7,
            "tools/call",
            json!({"name": "up__add", "arguments": {"a": a, "b": b}}),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

/// The `Authorization` of the upstream's latest `tools/call`.
fn last_call_auth(seen: &Seen) -> Option<String> {
    let seen = seen.lock().unwrap();
    seen.iter()
        .rev()
        .find(|(m, _, _)| m == "tools/call")
        .and_then(|(_, _, a)| a.clone())
}

/// An upstream (`toolwright serve --http` with `upstream_args`) behind a recording proxy,
/// the token endpoint, an issuer of callers' tokens, and the gateway (`--http
/// --auth-issuer`, plus `gw_args`) with the upstream under `exchange:` in a config that
/// starts with `config_extra`.
pub(crate) struct Rig {
    pub(crate) seen: Seen,
    pub(crate) endpoint: TokenEndpoint,
    pub(crate) gw: HttpServer,
    key: crate::auth_jwt::TestKey,
    issuer: Issuer,
    config: String,
    _upstream: HttpServer,
    _dir: tempfile::TempDir,
}

impl Rig {
    pub(crate) fn start(upstream_args: &[&str], config_extra: &str, gw_args: &[&str]) -> Rig {
        let upstream = HttpServer::start(upstream_args);
        let (proxy, seen) = recording_proxy(upstream.addr);
        let endpoint = TokenEndpoint::start();
        let key = es256("k1");
        let issuer = Issuer::start(&[&key]);
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), proxy, &endpoint, config_extra);
        let gw = gateway(&config, &issuer.url, gw_args);
        Rig {
            seen,
            endpoint,
            gw,
            key,
            issuer,
            config,
            _upstream: upstream,
            _dir: dir,
        }
    }

    /// Another gateway on the same config, upstream, token endpoint and issuer: a replica.
    pub(crate) fn replica(&self, gw_args: &[&str]) -> HttpServer {
        gateway(&self.config, &self.issuer.url, gw_args)
    }

    /// A token of `sub` for the gateway, with `extra` claims.
    pub(crate) fn token(&self, sub: &str, mut extra: Value) -> String {
        extra["sub"] = json!(sub);
        mint(&self.key, &claims(&self.gw, &self.issuer.url, extra))
    }
}

/// A gateway on `config` whose callers' tokens `issuer` signs, with the exchange's secrets
/// in its environment.
fn gateway(config: &str, issuer: &str, gw_args: &[&str]) -> HttpServer {
    let mut args = vec!["--config", config, "--auth-issuer", issuer];
    args.extend(gw_args);
    HttpServer::start_with_env(
        &args,
        &[
            ("TW_TEST_EXCHANGE_SECRET", SECRET),
            ("TW_TEST_SERVICE_TOKEN", "svc-token"),
        ],
    )
}

#[test]
fn the_upstream_sees_the_exchanged_token_once_per_subject_and_never_the_callers() {
    let rig = Rig::start(&[], "", &["--auth-scope", "tools:call"]);
    let (seen, endpoint, gw) = (&rig.seen, &rig.endpoint, &rig.gw);
    let token = |sub: &str, jti: &str| rig.token(sub, json!({"jti": jti}));
    let callers: Vec<String> = ["alice", "bob", "carol", "mallory"]
        .iter()
        .flat_map(|s| [token(s, "1"), token(s, "2")])
        .collect();

    // The gateway lists the upstream (lazily, with no caller's token), then alice calls.
    let alice = &callers[0];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let bearer = format!("Bearer {alice}");
        let mut h = modern_headers("tools/list", None);
        h.push(("authorization", &bearer));
        let r = gw.post(&h, &modern_request(1, "tools/list", json!({})));
        let names = crate::util::sorted_tool_names(&r.json()["result"]["tools"]);
        if names.iter().any(|n| n == "up__add") {
            break;
        }
        assert!(Instant::now() < deadline, "no up__add: {names:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let sum = add(gw, alice, 1, 2);
    assert_eq!(sum["structuredContent"]["result"], 3, "{sum}");
    assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-alice-0"));
    let hits = endpoint.hits();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["subject_token"], alice.as_str());
    assert_eq!(hits[0]["scope"], "tickets:read");
    assert_eq!(hits[0]["audience"], AUDIENCE);

    // Her second call, with another token of hers: the exchanged token is reused.
    let sum = add(gw, &callers[1], 2, 2);
    assert_eq!(sum["structuredContent"]["result"], 4, "{sum}");
    assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-alice-0"));
    assert_eq!(endpoint.hits().len(), 1);

    // Bob gets his own.
    add(gw, &callers[2], 1, 1);
    assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-bob-1"));
    assert_eq!(endpoint.hits().len(), 2);

    // A token that lives 31 s is used for 1 s (30 s short of its expiry), then exchanged
    // again.
    endpoint.expires_in.store(31, Ordering::SeqCst);
    add(gw, &callers[4], 1, 1);
    assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-carol-2"));
    std::thread::sleep(Duration::from_millis(1300));
    add(gw, &callers[5], 1, 1);
    assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-carol-3"));
    assert_eq!(endpoint.hits().len(), 4);

    // A refused exchange is a tool error, at once, and the upstream is not called.
    let calls_before = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _, _)| m == "tools/call")
        .count();
    let started = Instant::now();
    let refused = add(gw, &callers[6], 1, 1);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("could not be exchanged") && text.contains("invalid_grant"),
        "{text}"
    );
    assert!(!text.contains(callers[6].as_str()), "{text}");
    let calls_after = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _, _)| m == "tools/call")
        .count();
    assert_eq!(calls_before, calls_after);

    // Nothing the upstream was sent carries a caller's own token, or the client secret.
    let seen = seen.lock().unwrap().clone();
    // The gateway's own requests carry its service credential (`bearer_env`), and calls
    // the exchanged token alone.
    assert!(
        seen.iter()
            .any(|(m, _, a)| m == "tools/list" && a.as_deref() == Some("Bearer svc-token")),
        "{seen:?}"
    );
    for (method, _, auth) in &seen {
        let auth = auth.as_deref().unwrap_or_default();
        if method == "tools/call" {
            assert!(
                auth.starts_with("Bearer xchg-") && !auth.contains('|'),
                "{auth}"
            );
        } else {
            assert_eq!(auth, "Bearer svc-token", "{method}");
        }
    }
    for (method, _, auth) in &seen {
        let auth = auth.as_deref().unwrap_or_default();
        for t in &callers {
            assert!(
                !auth.contains(t.as_str()),
                "{method} carried a caller's token"
            );
        }
        assert!(!auth.contains("s3cret"), "{method}: {auth}");
    }
    // Nor does the gateway's log.
    let log = gw.stderr.lock().unwrap().join("\n");
    for t in &callers {
        assert!(!log.contains(t.as_str()), "the log holds a caller's token");
    }
    assert!(!log.contains("xchg-"), "the log holds an exchanged token");
}

#[test]
fn a_call_without_a_callers_token_is_refused_before_anything_is_sent() {
    let upstream = HttpServer::start(&[]);
    let (proxy, seen) = recording_proxy(upstream.addr);
    let endpoint = TokenEndpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), proxy, &endpoint, "");
    // Over stdio there is no token.
    let mut gw = Server::start_with_env(
        &["--config", &path],
        None,
        &[
            ("TW_TEST_EXCHANGE_SECRET", std::path::Path::new(SECRET)),
            ("TW_TEST_SERVICE_TOKEN", std::path::Path::new("svc-token")),
        ],
    )
    .handshake(LEGACY);
    let reply = gw.request(
        "tools/call",
        json!({"name": "up__add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("carries no access token"), "{text}");
    assert!(endpoint.hits().is_empty());
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|(m, _, _)| m == "tools/call"),
        "the upstream was called"
    );
}

/// The README's team set-up (`# team.yaml`), with its upstream's `exchange:`, loads as
/// written: `serve --config team.yaml` starts and answers, where a file with a problem
/// stops the start with exit 2.
#[test]
fn the_readmes_team_setup_loads_as_written() {
    let readme = std::fs::read_to_string(crate::util::repo_root().join("README.md")).unwrap();
    let start = readme
        .find("```yaml\n# team.yaml\n")
        .expect("README.md: no team.yaml block")
        + "```yaml\n".len();
    let len = readme[start..].find("```").unwrap();
    let yaml = &readme[start..start + len];
    for part in [
        "exchange:",
        "token_endpoint:",
        "audience:",
        "views:",
        "limits:",
        "api_keys:",
    ] {
        assert!(yaml.contains(part), "the team set-up lost {part:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("team.yaml");
    std::fs::write(&path, yaml).unwrap();
    let path = path.to_str().unwrap().to_owned();
    let secret = std::path::Path::new("s3cret");
    let mut gw = Server::start_with_env(
        &["--config", &path],
        Some(dir.path()),
        &[
            ("TICKETS_SERVICE_TOKEN", secret),
            ("GATEWAY_CLIENT_SECRET", secret),
        ],
    )
    .handshake(LEGACY);
    gw.assert_alive();
}

/// A `redis-server` on a free loopback port, without persistence, killed when dropped.
struct Redis(std::process::Child, u16);

impl Redis {
    fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start redis-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Redis(child, port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two replicas on one Redis (`--session-store`): a subject's token exchanged by one is
/// used by the other, which asks the token endpoint nothing.
#[test]
fn replicas_on_one_redis_share_an_exchanged_token() {
    if !crate::http_deploy::installed("redis-server", "shared token exchange test") {
        return;
    }
    let redis = Redis::start();
    let store = format!("redis://127.0.0.1:{}/0", redis.1);
    let args = [
        "--session-store",
        store.as_str(),
        // Both replicas answer for one resource, so one token is good at either.
        "--resource-url",
        "https://mcp.example.com/mcp",
    ];
    let rig = Rig::start(&[], "", &args);
    let (seen, endpoint, a) = (&rig.seen, &rig.endpoint, &rig.gw);
    let b = rig.replica(&args);
    let alice = rig.token("alice", json!({"aud": "https://mcp.example.com/mcp"}));
    for (i, replica) in [a, &b, a, &b].into_iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(20);
        let result = loop {
            let r = add(replica, &alice, 1, 2);
            if r["structuredContent"]["result"] == 3 || Instant::now() > deadline {
                break r;
            }
            // The replica has not listed the upstream yet.
            std::thread::sleep(Duration::from_millis(200));
        };
        assert_eq!(
            result["structuredContent"]["result"], 3,
            "call {i}: {result}"
        );
        assert_eq!(last_call_auth(seen).as_deref(), Some("Bearer xchg-alice-0"));
    }
    assert_eq!(endpoint.hits().len(), 1, "{:?}", endpoint.hits());
}

/// A caller with an API key has no token of the authorization server to exchange: the
/// call is refused with a tool error, the token endpoint and the upstream's tool untouched.
#[test]
fn an_api_key_caller_is_refused() {
    let (bot_key, entry) = crate::auth_keys::generated("bot", &["tools:call"]);
    let rig = Rig::start(&[], &entry, &[]);
    let (seen, endpoint, gw) = (&rig.seen, &rig.endpoint, &rig.gw);
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let r = add(gw, &bot_key, 1, 2);
        if r["isError"] == true || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("carries no access token"), "{refused}");
    assert!(endpoint.hits().is_empty());
    let seen = seen.lock().unwrap();
    assert!(!seen.iter().any(|(m, _, _)| m == "tools/call"), "{seen:?}");
    assert!(
        !seen
            .iter()
            .any(|(_, _, a)| a.as_deref().is_some_and(|a| a.contains(&bot_key))),
        "the upstream saw the API key"
    );
}
