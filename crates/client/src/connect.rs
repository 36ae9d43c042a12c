//! Opening a connection to an `http://` or `https://` server: the one place this crate
//! opens a socket (the Streamable HTTP transport and the OAuth requests both come here).
//!
//! The connection is `toolwright_net`'s ([`Connector::open`]): the host resolved once, its
//! addresses sorted by [`AddressPolicy::ANY`] (the user named this server, so every class
//! is admitted), the first that answers connected to. `https` is that crate's TLS client
//! configuration: TLS 1.2 or 1.3 over rustls (the ring provider), with SNI, and the
//! certificate checked against [`TlsRoots`]: the webpki roots (Mozilla's CA list, built
//! in), plus any PEM files of private CAs the user names. A failed handshake is sorted
//! into a [`TlsFailure`] so that the message says what to do about it.
//!
//! Two ways in, with the same policy and roots: [`pool`], the kept connections of one
//! server's requests (ALPN `h2` then `http/1.1`: one multiplexed HTTP/2 connection when
//! the server offers it), and [`open`], one connection of the caller's own with ALPN
//! `http/1.1` only, on which the caller runs hyper's HTTP/1.1 handshake (the legacy GET
//! stream, which lives as long as the session, and the OAuth requests).

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::CertificateError;
use toolwright_net::{AddressPolicy, Connector, Error as NetError, Pool, tls};

use crate::ClientError;
use crate::error::TlsFailure;

/// The variable naming a PEM file of extra trusted CA certificates, as OpenSSL-based tools
/// read it (here its certificates are added to the built-in roots, not put in their place).
const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

/// An open connection: plain TCP, or TLS over it.
pub(crate) type Stream = toolwright_net::Conn;

/// Which certificate authorities an `https://` server's certificate may chain to: the
/// webpki roots, plus the certificates of any PEM files added. Cheap to clone.
#[derive(Clone)]
pub struct TlsRoots {
    /// ALPN `http/1.1`: a connection of its own ([`open`]).
    config: Arc<rustls::ClientConfig>,
    /// The same roots, ALPN `h2` then `http/1.1`: the pool's connections ([`pool`]).
    pooled: Arc<rustls::ClientConfig>,
    files: Vec<PathBuf>,
}

impl std::fmt::Debug for TlsRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsRoots")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl Default for TlsRoots {
    /// The webpki roots alone.
    fn default() -> Self {
        static POOLED: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        let config = tls::http1_default();
        TlsRoots {
            pooled: POOLED.get_or_init(|| offering_h2(&config)).clone(),
            config,
            files: Vec::new(),
        }
    }
}

impl TlsRoots {
    /// The webpki roots plus every certificate in `files` (PEM; a file may hold several,
    /// and its other sections, such as keys, are skipped). With no files, the default.
    ///
    /// # Errors
    ///
    /// [`ClientError::CaCert`] when a file cannot be read, is not PEM, holds no
    /// certificate, or holds one that is not a usable CA certificate.
    pub fn with_ca_files(files: &[PathBuf]) -> Result<TlsRoots, ClientError> {
        if files.is_empty() {
            return Ok(TlsRoots::default());
        }
        let config = tls::config_with_cas(files, &[tls::HTTP1]).map_err(|e| match e {
            NetError::CaFile { path, problem } => ClientError::CaCert {
                path,
                reason: problem.to_string(),
            },
            other => ClientError::CaCert {
                path: files[0].clone(),
                reason: other.to_string(),
            },
        })?;
        Ok(TlsRoots {
            pooled: offering_h2(&config),
            config,
            files: files.to_vec(),
        })
    }

    /// [`TlsRoots::with_ca_files`] of the file `$SSL_CERT_FILE` names, when it is set and
    /// not empty, followed by `files`.
    ///
    /// # Errors
    ///
    /// As [`TlsRoots::with_ca_files`].
    pub fn from_env_and_files(files: &[PathBuf]) -> Result<TlsRoots, ClientError> {
        let mut all = Vec::new();
        let env = std::env::var_os(SSL_CERT_FILE)
            .filter(|f| !f.is_empty())
            .map(PathBuf::from);
        all.extend(env.clone());
        all.extend(files.iter().cloned());
        TlsRoots::with_ca_files(&all).map_err(|e| match e {
            ClientError::CaCert { path, reason } if Some(&path) == env.as_ref() => {
                ClientError::CaCert {
                    path,
                    reason: format!("{reason} (the file ${SSL_CERT_FILE} names)"),
                }
            }
            other => other,
        })
    }

    /// The PEM files added to the webpki roots.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The roots, as an error message names them.
    fn describe(&self) -> String {
        let mut s = "the built-in webpki roots".to_owned();
        for f in &self.files {
            s.push_str(" and ");
            s.push_str(&f.display().to_string());
        }
        s
    }
}

/// `config` with ALPN `h2` offered before `http/1.1`.
fn offering_h2(config: &Arc<rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut both = rustls::ClientConfig::clone(config);
    both.alpn_protocols = vec![tls::H2.to_vec(), tls::HTTP1.to_vec()];
    Arc::new(both)
}

tokio::task_local! {
    /// The roots of the connection whose authorizer is running (see [`with_roots`]).
    static AUTH_ROOTS: TlsRoots;
}

/// Runs `f` (an authorizer's handling of a refusal) with `roots` as the trust roots of
/// the requests it makes ([`current_roots`]): the OAuth servers of an `https://` endpoint
/// are trusted as the endpoint is.
pub(crate) async fn with_roots<F: Future>(roots: TlsRoots, f: F) -> F::Output {
    AUTH_ROOTS.scope(roots, f).await
}

/// The roots set by [`with_roots`] around the running future, else the default.
pub(crate) fn current_roots() -> TlsRoots {
    AUTH_ROOTS.try_with(Clone::clone).unwrap_or_default()
}

/// Whether `host` (a URL's host, IPv6 without brackets) names this machine:
/// `localhost`, a `.localhost` name, 127.0.0.0/8 or `::1`.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// Connects to `host:port` (`host` without brackets), speaking TLS when `https`.
pub(crate) async fn open(
    roots: &TlsRoots,
    https: bool,
    host: &str,
    port: u16,
) -> Result<Stream, ClientError> {
    let connector = Connector::new(AddressPolicy::ANY, roots.config.clone());
    connector
        .open(https, host, port)
        .await
        .map_err(|e| failure(&e, roots, host, port))
}

/// The pooled connections of one server's requests, under the same policy and roots as
/// [`open`], offering HTTP/2 on `https`. A connection it could not make fails with
/// `toolwright_net`'s error as the source of hyper-util's ([`failure`] explains it).
pub(crate) fn pool<B>(roots: &TlsRoots) -> Pool<Connector, B>
where
    B: hyper::body::Body + Clone + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Pool::new(Connector::new(AddressPolicy::ANY, roots.pooled.clone()))
}

/// Why a connection to `host:port` could not be made, as the client says it: an
/// unreachable server, or a TLS handshake sorted into a [`TlsFailure`].
pub(crate) fn failure(e: &NetError, roots: &TlsRoots, host: &str, port: u16) -> ClientError {
    let authority = toolwright_net::resolve::authority(host, port);
    // The pool keeps the error it was given, so this reads it through a reference.
    let copy = |source: &std::io::Error| std::io::Error::new(source.kind(), source.to_string());
    match e {
        NetError::Unresolvable { source, .. } | NetError::Connect { source, .. } => {
            ClientError::Io {
                context: format!("connecting to {authority}"),
                source: copy(source),
            }
        }
        NetError::ServerName { source, .. } => ClientError::Tls {
            host: authority,
            kind: TlsFailure::Handshake,
            detail: format!("{host:?} is not a name TLS can check: {source}"),
        },
        NetError::Tls { source, .. } => {
            let (kind, detail) = classify(source, roots);
            ClientError::Tls {
                host: authority,
                kind,
                detail,
            }
        }
        other => ClientError::Io {
            context: format!("connecting to {authority}"),
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// What a failed handshake means.
fn classify(e: &std::io::Error, roots: &TlsRoots) -> (TlsFailure, String) {
    use rustls::Error as E;
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<E>()) else {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => (
                TlsFailure::NotTls,
                "it closed the connection during the handshake".to_owned(),
            ),
            _ => (TlsFailure::Handshake, e.to_string()),
        };
    };
    match tls {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => (TlsFailure::Untrusted, roots.describe()),
            CertificateError::NotValidForName => (
                TlsFailure::NameMismatch,
                "the names it holds differ".to_owned(),
            ),
            CertificateError::NotValidForNameContext { presented, .. } => {
                // rustls writes each name as `DnsName("a.example")`: keep the name.
                let bare = |n: &String| {
                    n.split_once('(')
                        .and_then(|(_, r)| r.strip_suffix(')'))
                        .map_or_else(|| n.clone(), |r| r.trim_matches('"').to_owned())
                };
                let names = if presented.is_empty() {
                    "none".to_owned()
                } else {
                    presented.iter().map(bare).collect::<Vec<_>>().join(", ")
                };
                (
                    TlsFailure::NameMismatch,
                    format!("the names it holds: {names}"),
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                (TlsFailure::Expired, "has expired".to_owned())
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                (TlsFailure::Expired, "is not valid yet".to_owned())
            }
            other => (
                TlsFailure::Handshake,
                format!("its certificate was refused: {other}"),
            ),
        },
        E::InvalidMessage(_) => (
            TlsFailure::NotTls,
            "what it sent is not a TLS record".to_owned(),
        ),
        E::AlertReceived(alert) => (
            TlsFailure::Handshake,
            format!("the server refused it with the alert {alert:?}"),
        ),
        other => (TlsFailure::Handshake, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST.",
            "a.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback(h), "{h}");
        }
        for h in [
            "example.com",
            "localhost.example",
            "10.0.0.1",
            "::2",
            "0.0.0.0",
            "mylocalhost",
        ] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    /// How each bad file is explained is net's (its tests); here, that the refusal is the
    /// client's `CaCert` and names the file.
    #[test]
    fn bad_ca_files_are_the_clients_errors() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let e = TlsRoots::with_ca_files(std::slice::from_ref(&empty)).unwrap_err();
        assert!(
            matches!(e, ClientError::CaCert { .. }) && e.to_string().contains("empty.pem: "),
            "{e}"
        );
        assert!(TlsRoots::with_ca_files(&[]).unwrap().files().is_empty());
    }
}
