//! The policy point: a connector for hyper-util's client that resolves the host once,
//! checks every address with the address policy take_screenshot uses
//! ([`toolwright_tools::net`]), and connects to an address it checked (never resolving
//! again), then speaks TLS (rustls, ring, the webpki roots) for `https`.

use hyper::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use toolwright_tools::net::{self, AddrClass, AddressPolicy};

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The policy refused an address the host resolves to (nothing was connected).
    #[error("{0}")]
    Refused(String),
    /// Resolving, connecting or the TLS handshake failed.
    #[error("{0}")]
    Failed(String),
}

/// The TLS settings every declared tool shares: ring, TLS 1.2 and 1.3, the webpki roots.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots =
                rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}

/// A connector that applies `policy` to every connection it opens.
#[derive(Clone)]
pub(crate) struct PolicedConnector {
    policy: AddressPolicy,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for PolicedConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicedConnector")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl PolicedConnector {
    /// A connector under `policy`.
    pub(crate) fn new(policy: AddressPolicy) -> PolicedConnector {
        PolicedConnector {
            policy,
            tls: tls_config(),
        }
    }

    /// The checked addresses of `host` (every one must pass, or none is used).
    pub(crate) async fn admitted(
        &self,
        host: &str,
        port: u16,
    ) -> Result<Vec<IpAddr>, ConnectError> {
        let ips = net::resolve(host, port)
            .await
            .map_err(|e| ConnectError::Failed(format!("could not resolve {host}: {e}")))?;
        for ip in &ips {
            if let Some(c) = self.policy.refuses(*ip) {
                let hint = match c.class {
                    AddrClass::Loopback => "this tool sets allow_loopback: false",
                    AddrClass::Unspecified => {
                        "it reaches the local machine; it needs allow_private: true and loopback allowed"
                    }
                    _ => "non-public addresses need allow_private: true in the tool's http",
                };
                return Err(ConnectError::Refused(format!(
                    "{host} resolves to {ip}, in {}; {hint}",
                    c.range
                )));
            }
        }
        Ok(ips)
    }

    async fn connect(self, uri: Uri) -> Result<Conn, ConnectError> {
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => {
                return Err(ConnectError::Failed(format!(
                    "unsupported scheme {:?}",
                    other.unwrap_or("")
                )));
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| ConnectError::Failed("the URL has no host".into()))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let ips = self.admitted(host, port).await?;
        let mut last = None;
        let mut stream = None;
        for ip in ips {
            match TcpStream::connect(SocketAddr::new(ip, port)).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(tcp) = stream else {
            let why = last.map_or_else(|| "no address".to_owned(), |e| e.to_string());
            return Err(ConnectError::Failed(format!(
                "could not connect to {host}:{port}: {why}"
            )));
        };
        let _ = tcp.set_nodelay(true);
        if !https {
            return Ok(Conn::Plain(TokioIo::new(tcp)));
        }
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let name = ServerName::try_from(bare.to_owned())
            .map_err(|e| ConnectError::Failed(format!("{host} is not a TLS server name: {e}")))?;
        let tls = TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| ConnectError::Failed(format!("TLS with {host}:{port} failed: {e}")))?;
        Ok(Conn::Tls(Box::new(TokioIo::new(tls))))
    }
}

impl tower_service::Service<Uri> for PolicedConnector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

/// A connection the policy admitted: plain TCP or TLS over it.
#[derive(Debug)]
pub(crate) enum Conn {
    /// `http`.
    Plain(TokioIo<TcpStream>),
    /// `https`.
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
