//! HTTP connections under the policy: [`Connector`] opens one (resolved once with the
//! policy applied, connected to a checked address, TLS for `https`), as hyper-util's
//! client connector (a `Service<Uri>`) or directly ([`Connector::open`]); [`pooled`] is
//! the pooled client over it.
//!
//! Callers that need one connection of their own, rather than a pool, open it with
//! [`Connector::open`] and run hyper's handshake on the [`Conn`] themselves: the MCP
//! client (a connection per exchange, whose drop cancels the request), the OTLP exporter
//! (one kept HTTP/2 connection with prior knowledge for gRPC) and the screenshot proxy (a
//! request forwarded on a connection to the address it checked).

use crate::Error;
use crate::policy::AddressPolicy;
use crate::resolve::{Resolve, SystemResolver, connect, resolve_checked};
use crate::tls;
use hyper::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How long an idle pooled connection is kept.
pub const POOL_IDLE: Duration = Duration::from_secs(30);

/// Opens connections under an address policy, speaking TLS for `https`. Cheap to clone.
#[derive(Clone)]
pub struct Connector {
    policy: AddressPolicy,
    tls: Arc<rustls::ClientConfig>,
    resolver: Arc<dyn Resolve>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector under `policy`, with `tls` for `https` and the system resolver.
    pub fn new(policy: AddressPolicy, tls: Arc<rustls::ClientConfig>) -> Connector {
        Connector {
            policy,
            tls,
            resolver: Arc::new(SystemResolver),
        }
    }

    /// The same connector, looking names up with `resolver`.
    pub fn with_resolver(self, resolver: Arc<dyn Resolve>) -> Connector {
        Connector { resolver, ..self }
    }

    /// The policy it applies.
    pub fn policy(&self) -> AddressPolicy {
        self.policy
    }

    /// A connection to `host:port` (`host` as a URL writes it): resolved once with the
    /// policy applied ([`resolve_checked`]), connected to the first checked address that
    /// answers, then TLS when `https`.
    ///
    /// # Errors
    ///
    /// [`Error::Unresolvable`], [`Error::Refused`], [`Error::Connect`], or
    /// [`Error::ServerName`] and [`Error::Tls`] for `https`.
    pub async fn open(&self, https: bool, host: &str, port: u16) -> Result<Conn, Error> {
        let addrs = resolve_checked(self.resolver.as_ref(), &self.policy, host, port).await?;
        let tcp = connect(host, &addrs).await?;
        if !https {
            return Ok(Conn::Plain(TokioIo::new(tcp)));
        }
        let tls = tls::handshake(&self.tls, host, port, tcp).await?;
        Ok(Conn::Tls(Box::new(TokioIo::new(tls))))
    }

    async fn connect_uri(self, uri: Uri) -> Result<Conn, Error> {
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => {
                return Err(Error::Scheme {
                    scheme: other.unwrap_or("").to_owned(),
                });
            }
        };
        let host = uri.host().ok_or(Error::NoHost)?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        self.open(https, host, port).await
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect_uri(uri))
    }
}

/// The pooled HTTP/1.1 client over `connector` (a [`Connector`], or a caller's wrapper of
/// one): idle connections kept [`POOL_IDLE`], on tokio.
pub fn pooled<C, B>(connector: C) -> Client<C, B>
where
    C: Connect + Clone,
    B: hyper::body::Body + Send,
    B::Data: Send,
{
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .build(connector)
}

/// A connection the policy admitted: plain TCP or TLS over it.
#[derive(Debug)]
pub enum Conn {
    /// `http`.
    Plain(TokioIo<TcpStream>),
    /// `https`.
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Conn {
    /// The ALPN protocol the server chose (`None` for plain TCP or when none was agreed).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Conn::Plain(_) => None,
            Conn::Tls(s) => s.inner().get_ref().1.alpn_protocol(),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refuses_before_connecting() {
        let default = AddressPolicy {
            allow_private: false,
            allow_loopback: true,
        };
        let c = Connector::new(default, tls::http1_default());
        let e = c.open(false, "10.0.0.1", 80).await.unwrap_err();
        assert!(matches!(e, Error::Refused { .. }), "{e:?}");
        let mut svc = c.clone();
        let e = tower_service::Service::call(&mut svc, "ftp://x/".parse().unwrap())
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Scheme { .. }), "{e:?}");
        let live = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = live.local_addr().unwrap().port();
        let conn = c.open(false, "localhost", port).await.unwrap();
        assert!(matches!(conn, Conn::Plain(_)) && conn.alpn().is_none());
    }
}
