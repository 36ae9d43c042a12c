//! Opening a connection to an `http://` or `https://` server: the one place this crate
//! opens a socket (the Streamable HTTP transport and the OAuth requests both come here).
//!
//! `https` is TLS 1.2 or 1.3 over rustls (the ring provider), with SNI, ALPN `http/1.1`,
//! and the certificate checked against [`TlsRoots`]: the webpki roots (Mozilla's CA list,
//! built in), plus any PEM files of private CAs the user names. A failed handshake is
//! sorted into a [`TlsFailure`] so that the message says what to do about it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

use crate::ClientError;
use crate::error::TlsFailure;

/// The variable naming a PEM file of extra trusted CA certificates, as OpenSSL-based tools
/// read it (here its certificates are added to the built-in roots, not put in their place).
const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

/// An open connection: plain TCP, or TLS over it.
pub(crate) type Stream = Either<TcpStream, Box<TlsStream<TcpStream>>>;

/// Which certificate authorities an `https://` server's certificate may chain to: the
/// webpki roots, plus the certificates of any PEM files added. Cheap to clone.
#[derive(Clone)]
pub struct TlsRoots {
    config: Arc<rustls::ClientConfig>,
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
        static DEFAULT: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        TlsRoots {
            config: DEFAULT
                .get_or_init(|| client_config(webpki_store()))
                .clone(),
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
        let mut store = webpki_store();
        for path in files {
            add_pem_file(&mut store, path)?;
        }
        Ok(TlsRoots {
            config: client_config(store),
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

fn webpki_store() -> RootCertStore {
    RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned())
}

fn client_config(roots: RootCertStore) -> Arc<rustls::ClientConfig> {
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

fn add_pem_file(store: &mut RootCertStore, path: &Path) -> Result<(), ClientError> {
    let bad = |reason: String| ClientError::CaCert {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut count = 0;
    for (i, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        let cert = cert.map_err(|e| bad(format!("not PEM: {e}")))?;
        store
            .add(cert)
            .map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
        count += 1;
    }
    if count == 0 {
        return Err(bad(
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_owned(),
        ));
    }
    Ok(())
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
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|source| ClientError::Io {
            context: format!("connecting to {authority}"),
            source,
        })?;
    let _ = tcp.set_nodelay(true);
    if !https {
        return Ok(Either::Left(tcp));
    }
    let name = ServerName::try_from(host.to_owned()).map_err(|e| ClientError::Tls {
        host: authority.clone(),
        kind: TlsFailure::Handshake,
        detail: format!("{host:?} is not a name TLS can check: {e}"),
    })?;
    match TlsConnector::from(roots.config.clone())
        .connect(name, tcp)
        .await
    {
        Ok(tls) => Ok(Either::Right(Box::new(tls))),
        Err(e) => {
            let (kind, detail) = classify(&e, roots);
            Err(ClientError::Tls {
                host: authority,
                kind,
                detail,
            })
        }
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

    #[test]
    fn bad_ca_files_are_named_and_explained() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for (path, says) in [
            (&missing, "missing.pem: No such file"),
            (&empty, "empty.pem: it holds no PEM certificate"),
            (&garbage, "garbage.pem: certificate 1: "),
        ] {
            let e = TlsRoots::with_ca_files(std::slice::from_ref(path)).unwrap_err();
            assert!(
                matches!(e, ClientError::CaCert { .. }) && e.to_string().contains(says),
                "{e}"
            );
        }
        assert!(TlsRoots::with_ca_files(&[]).unwrap().files().is_empty());
    }
}
