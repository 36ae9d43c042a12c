//! The client over https: `toolwright list` and `call --url https://…` through a real TLS
//! server on loopback, and a gateway whose upstream is reached over https.
//!
//! Each test makes a throwaway CA and a server certificate for `localhost` (rcgen), and
//! puts a TLS-terminating proxy (tokio-rustls, in the test process) in front of a real
//! `toolwright serve --http`. The CA is not among the webpki roots, so the client trusts
//! the server only when told to (`--ca-cert`, `$SSL_CERT_FILE`, a gateway's `ca_cert`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

use crate::client::{HttpPeer, code, s, stderr, stdout};
use crate::util::bin;

/// A CA, written to `ca.pem` in a directory of its own, and a server certificate it signed.
pub(crate) struct Pki {
    dir: tempfile::TempDir,
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl Pki {
    /// A CA, and a certificate for `names` (DNS names or IP addresses) signed by it.
    pub(crate) fn new(names: &[&str]) -> Pki {
        Self::make(names, false)
    }

    /// The same, with a certificate that expired in 2001.
    fn expired(names: &[&str]) -> Pki {
        Self::make(names, true)
    }

    fn make(names: &[&str], expired: bool) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "toolwright test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = KeyPair::generate().unwrap();
        let mut leaf =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .unwrap();
        if expired {
            leaf.not_before = rcgen::date_time_ymd(2000, 1, 1);
            leaf.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let leaf = leaf.signed_by(&leaf_key, &issuer).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), pem("CERTIFICATE", ca_cert.der())).unwrap();
        Pki {
            dir,
            chain: vec![leaf.der().clone()],
            key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()),
        }
    }

    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server certificate and its key as PEM files beside `ca.pem` (`cert.pem`,
    /// `key.pem`), for a server that reads them itself.
    pub(crate) fn leaf_files(&self) -> (PathBuf, PathBuf) {
        let (cert, key) = (self.file("cert.pem"), self.file("key.pem"));
        std::fs::write(&cert, pem("CERTIFICATE", &self.chain[0])).unwrap();
        std::fs::write(&key, pem("PRIVATE KEY", self.key.secret_pkcs8_der())).unwrap();
        (cert, key)
    }

    /// A file in the directory (beside `ca.pem`).
    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `der` in PEM under `tag` (`CERTIFICATE`, `PRIVATE KEY`): base64, 64 characters a line,
/// between the markers.
fn pem(tag: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {tag}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {tag}-----\n"));
    out
}

/// A TLS-terminating proxy on 127.0.0.1 that forwards every connection, decrypted, to
/// `upstream` (plain TCP). It runs on a thread of its own until the test process ends.
fn tls_proxy(pki: &Pki, upstream: SocketAddr) -> SocketAddr {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(pki.chain.clone(), PrivateKeyDer::Pkcs8(pki.key.clone_key()))
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses our certificate ends the handshake: nothing to do.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
    });
    addr
}

/// The port of an `http://127.0.0.1:PORT/mcp` URL.
fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `toolwright ARGS…` with `$SSL_CERT_FILE` unset unless `env` sets it.
fn run(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("SSL_CERT_FILE")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run toolwright")
}

/// The tool names `list --json` printed.
fn tool_names(o: &Output) -> Vec<String> {
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)));
    v["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A trust file that trusts nothing.
fn no_trust(pki: &Pki) -> String {
    let p = pki.file("trusted.json");
    std::fs::write(&p, r#"{"trusted": []}"#).unwrap();
    s(&p)
}

#[test]
fn list_and_call_over_https_with_the_ca_given() {
    let pki = Pki::new(&["localhost"]);
    let server = HttpPeer::toolwright();
    let proxy = tls_proxy(&pki, addr_of(&server.url));
    let url = format!("https://localhost:{}/mcp", proxy.port());
    let trust = no_trust(&pki);
    let ca = s(&pki.ca());

    let plain = run(
        &[
            "list",
            "--json",
            "--trusted-config",
            &trust,
            "--url",
            &server.url,
        ],
        &[],
    );
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let o = run(
        &[
            "list",
            "--json",
            "--trusted-config",
            &trust,
            "--url",
            &url,
            "--ca-cert",
            &ca,
        ],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        tool_names(&o).contains(&"multiply".to_owned()),
        "{}",
        stdout(&o)
    );
    assert_eq!(tool_names(&o), tool_names(&plain));

    for era in ["auto", "legacy"] {
        let o = run(
            &[
                "call",
                "multiply",
                "a=6",
                "b=7",
                "--era",
                era,
                "--trusted-config",
                &trust,
                "--url",
                &url,
                "--ca-cert",
                &ca,
            ],
            &[],
        );
        assert_eq!(code(&o), 0, "{era}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["structuredContent"]["result"], 42, "{era}: {v}");
    }

    // $SSL_CERT_FILE is honoured as an extra root too.
    let o = run(
        &["list", "--json", "--trusted-config", &trust, "--url", &url],
        &[("SSL_CERT_FILE", &pki.ca())],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(tool_names(&o), tool_names(&plain));
}

#[test]
fn https_failures_say_what_is_wrong() {
    let pki = Pki::new(&["localhost"]);
    let server = HttpPeer::toolwright();
    let proxy = tls_proxy(&pki, addr_of(&server.url));
    let port = proxy.port();
    let trust = no_trust(&pki);
    let ca = s(&pki.ca());
    let list = |url: &str, extra: &[&str]| {
        let mut args = vec!["list", "--trusted-config", &trust, "--url", url];
        args.extend_from_slice(extra);
        run(&args, &[])
    };
    let fails = |o: &Output, says: &[&str]| {
        assert_eq!(code(o), 2, "{}{}", stdout(o), stderr(o));
        for s in says {
            assert!(stderr(o).contains(s), "wanted {s:?} in: {}", stderr(o));
        }
    };

    // A private CA that the client was not told about.
    let url = format!("https://localhost:{port}/mcp");
    fails(
        &list(&url, &[]),
        &[
            &format!("the TLS certificate of localhost:{port} is not trusted"),
            "the built-in webpki roots",
            "--ca-cert FILE",
        ],
    );
    // The right CA, the wrong name: the certificate is for localhost, not 127.0.0.1.
    fails(
        &list(
            &format!("https://127.0.0.1:{port}/mcp"),
            &["--ca-cert", &ca],
        ),
        &[&format!(
            "the TLS certificate of 127.0.0.1:{port} is not valid for that name (the names it holds: localhost)"
        )],
    );
    // https:// to a port that speaks plain HTTP.
    let plain = addr_of(&server.url);
    fails(
        &list(&format!("https://{plain}/mcp"), &["--ca-cert", &ca]),
        &[
            &format!("{plain} does not speak TLS"),
            "plain http:// server?",
        ],
    );
    // A certificate past its notAfter.
    let old = Pki::expired(&["localhost"]);
    let old_proxy = tls_proxy(&old, addr_of(&server.url));
    fails(
        &list(
            &format!("https://localhost:{}/mcp", old_proxy.port()),
            &["--ca-cert", &s(&old.ca())],
        ),
        &[&format!(
            "the TLS certificate of localhost:{} has expired",
            old_proxy.port()
        )],
    );
    // http:// to the TLS port.
    fails(
        &list(&format!("http://localhost:{port}/mcp"), &[]),
        &["the answer is not HTTP; is it an https:// server?"],
    );
    // A CA file that is not one.
    let bad = pki.file("bad.pem");
    std::fs::write(&bad, "not a certificate\n").unwrap();
    fails(
        &list(&url, &["--ca-cert", &s(&bad)]),
        &["bad.pem: it holds no PEM certificate"],
    );
    let o = run(
        &["list", "--trusted-config", &trust, "--url", &url],
        &[("SSL_CERT_FILE", &bad)],
    );
    fails(
        &o,
        &["bad.pem: it holds no PEM certificate", "$SSL_CERT_FILE"],
    );
}

#[test]
fn a_gateway_reaches_an_https_upstream_with_its_ca_cert() {
    let pki = Pki::new(&["localhost"]);
    let server = HttpPeer::toolwright();
    let proxy = tls_proxy(&pki, addr_of(&server.url));
    let url = format!("https://localhost:{}/mcp", proxy.port());
    let trust = no_trust(&pki);
    let config = |name: &str, upstream: Value| {
        let path = pki.file(name);
        let doc = json!({
            "gateway": {"state_file": s(&pki.file(&format!("{name}.pins.json")))},
            "servers": {"tls": upstream},
        });
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        s(&path)
    };
    // ca_cert is relative to the config file's directory.
    let good = config(
        "good.yaml",
        json!({"url": url, "ca_cert": "ca.pem", "trust": "trusted", "start": "eager"}),
    );
    let gateway = [s(&bin()), "serve".into(), "--config".into(), good];
    let mut args: Vec<&str> = vec![
        "call",
        "tls__multiply",
        "a=6",
        "b=7",
        "--trusted-config",
        &trust,
        "--",
    ];
    args.extend(gateway.iter().map(String::as_str));
    let o = run(&args, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 42, "{v}");

    // Without it, the upstream's certificate is refused, and the gateway's log says why.
    let bare = config(
        "bare.yaml",
        json!({"url": url, "trust": "trusted", "start": "eager"}),
    );
    let mut gw = crate::util::Server::start_logged(&["--config", &bare], None);
    let lines = gw.stderr_until(Duration::from_secs(30), |l| {
        l.contains("upstream unavailable")
    });
    let last = lines.last().unwrap();
    assert!(
        last.contains(&format!(
            "the TLS certificate of localhost:{} is not trusted",
            proxy.port()
        )),
        "{last}"
    );
    drop(gw);

    // A ca_cert that cannot be read stops the gateway at start, naming the file.
    let missing = config("missing.yaml", json!({"url": url, "ca_cert": "nope.pem"}));
    let o = run(&["serve", "--config", &missing], &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("nope.pem"), "{}", stderr(&o));
}
