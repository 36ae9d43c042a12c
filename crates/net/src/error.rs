//! Why no connection was made, or no TLS configuration built.

use crate::addr::Classified;
use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

/// Why a host was not resolved, refused, not connected to, or a CA file not loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The resolver failed or found no address.
    #[error("could not resolve {host}: {source}")]
    Unresolvable {
        /// The host, as the caller gave it.
        host: String,
        /// What the resolver said.
        source: io::Error,
    },
    /// The policy refused an address the host resolves to (nothing was connected).
    #[error("{host} resolves to {ip}, in {}", class.range)]
    Refused {
        /// The host, as the caller gave it.
        host: String,
        /// The refused address.
        ip: IpAddr,
        /// Its class and block.
        class: Classified,
    },
    /// No checked address accepted a connection.
    #[error("could not connect to {authority}: {source}")]
    Connect {
        /// `host:port`.
        authority: String,
        /// The last address's error.
        source: io::Error,
    },
    /// The host cannot be checked against a certificate.
    #[error("{host} is not a TLS server name: {source}")]
    ServerName {
        /// The host.
        host: String,
        /// Why not.
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed (its rustls error, when there is one, is the source's
    /// inner error).
    #[error("TLS with {authority} failed: {source}")]
    Tls {
        /// `host:port`.
        authority: String,
        /// The handshake's error.
        source: io::Error,
    },
    /// A URL that is neither `http` nor `https`.
    #[error("unsupported scheme {scheme:?}")]
    Scheme {
        /// The scheme (empty when there is none).
        scheme: String,
    },
    /// A URL without a host.
    #[error("the URL has no host")]
    NoHost,
    /// A file of extra CA certificates could not be used.
    #[error("{}: {problem}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: CaProblem,
    },
}

/// What is wrong with a file of extra CA certificates.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaProblem {
    /// It could not be read.
    #[error("{0}")]
    Read(io::Error),
    /// A section is not valid PEM.
    #[error("not PEM: {0}")]
    NotPem(rustls::pki_types::pem::Error),
    /// It holds no certificate section.
    #[error("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate,
    /// A certificate (counted from 1) is not a usable CA certificate.
    #[error("certificate {index}: {source}")]
    Unusable {
        /// Which certificate of the file, from 1.
        index: usize,
        /// What rustls said.
        source: rustls::Error,
    },
}

/// An error and its sources, on one line (`outer: inner: innermost`), as a log line or a
/// message to the user wants the reason a request failed.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
