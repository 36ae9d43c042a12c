//! The TLS client configuration every outgoing `https` connection uses: rustls on the ring
//! provider (TLS 1.2 and 1.3), trusting the webpki roots (Mozilla's CA list, compiled in;
//! no system store) plus the certificates of any PEM files the operator names, with the
//! ALPN protocols the caller speaks.
//!
//! PEM files are read one way, with rustls-pki-types' parser: every `CERTIFICATE` section
//! is added (a file may hold several, and its other sections, such as keys, are skipped);
//! a file with none is refused.

use crate::error::{CaProblem, Error};
use crate::resolve::authority;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The ALPN name of HTTP/1.1.
pub const HTTP1: &[u8] = b"http/1.1";
/// The ALPN name of HTTP/2.
pub const H2: &[u8] = b"h2";

/// The webpki roots alone.
pub fn webpki_roots() -> RootCertStore {
    RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned())
}

/// Adds every certificate of the PEM file `path` to `store`; returns how many.
///
/// # Errors
///
/// [`Error::CaFile`] when the file cannot be read, a section is not PEM, it holds no
/// certificate, or one that is not a usable CA certificate.
pub fn add_pem_file(store: &mut RootCertStore, path: &Path) -> Result<usize, Error> {
    let bad = |problem| Error::CaFile {
        path: path.to_owned(),
        problem,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(CaProblem::Read(e)))?;
    let mut count = 0;
    for (i, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        let cert = cert.map_err(|e| bad(CaProblem::NotPem(e)))?;
        store.add(cert).map_err(|source| {
            bad(CaProblem::Unusable {
                index: i + 1,
                source,
            })
        })?;
        count += 1;
    }
    if count == 0 {
        return Err(bad(CaProblem::NoCertificate));
    }
    Ok(count)
}

/// The webpki roots plus the certificates of every file in `files` ([`add_pem_file`]).
///
/// # Errors
///
/// As [`add_pem_file`], for the first file that fails.
pub fn roots_with<P: AsRef<Path>>(files: &[P]) -> Result<RootCertStore, Error> {
    let mut store = webpki_roots();
    for path in files {
        add_pem_file(&mut store, path.as_ref())?;
    }
    Ok(store)
}

/// A client configuration trusting `roots`, offering the ALPN protocols `alpn` in order.
pub fn client_config(roots: RootCertStore, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// [`client_config`] of the webpki roots plus `files` ([`roots_with`]).
///
/// # Errors
///
/// As [`roots_with`].
pub fn config_with_cas(
    files: &[PathBuf],
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ClientConfig>, Error> {
    Ok(client_config(roots_with(files)?, alpn))
}

/// The webpki roots alone, ALPN `http/1.1`: built once, shared.
pub fn http1_default() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| client_config(webpki_roots(), &[HTTP1]))
        .clone()
}

/// The TLS handshake with `host` (brackets of an IPv6 literal allowed) over `tcp`, the
/// certificate checked for `host` (SNI) against `config`'s roots.
///
/// # Errors
///
/// [`Error::ServerName`] when `host` cannot be checked, [`Error::Tls`] when the handshake
/// fails (the rustls error, if any, is inside its `source`).
pub async fn handshake(
    config: &Arc<rustls::ClientConfig>,
    host: &str,
    port: u16,
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>, Error> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let name = ServerName::try_from(bare.to_owned()).map_err(|source| Error::ServerName {
        host: host.to_owned(),
        source,
    })?;
    TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|source| Error::Tls {
            authority: authority(host, port),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let e = roots_with(std::slice::from_ref(path)).unwrap_err();
            assert!(
                matches!(e, Error::CaFile { .. }) && e.to_string().contains(says),
                "{e}"
            );
        }
        let none: &[PathBuf] = &[];
        assert_eq!(roots_with(none).unwrap().len(), webpki_roots().len());
    }

    #[test]
    fn alpn_is_offered_in_order() {
        let c = client_config(webpki_roots(), &[H2, HTTP1]);
        assert_eq!(c.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert_eq!(http1_default().alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
