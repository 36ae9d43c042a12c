//! HTTP connections under the policy: [`Connector`] opens one (resolved once with the
//! policy applied, connected to a checked address, TLS for `https`), as hyper-util's
//! client connector (a `Service<Uri>`) or directly ([`Connector::open`]); [`pooled`] is
//! the pooled client over it, and [`Pool`] that client with the one retry a kept
//! connection earns ([`closed_before_answer`]).
//!
//! Callers that need one connection of their own, rather than a pool, open it with
//! [`Connector::open`] and run hyper's handshake on the [`Conn`] themselves: the MCP
//! client's long-lived GET stream, the OTLP exporter (one kept HTTP/2 connection with
//! prior knowledge for gRPC) and the screenshot proxy (a request forwarded on a connection
//! to the address it checked). The MCP client's other requests go through a [`Pool`].

use crate::Error;
use crate::policy::AddressPolicy;
use crate::resolve::{Resolve, SystemResolver, connect, resolve_checked};
use crate::tls;
use hyper::body::Incoming;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The pooled HTTP client over `connector` (a [`Connector`], or a caller's wrapper of
/// one), on tokio: HTTP/1.1, or one multiplexed HTTP/2 connection when TLS agreed `h2` by
/// ALPN (the connector's TLS configuration decides whether `h2` is offered). Idle
/// connections are kept [`POOL_IDLE`], as many per host as the load needed: hyper-util's
/// default sets no per-host cap, so 16 concurrent requests keep 16 connections rather than
/// closing some and reconnecting on the next burst.
pub fn pooled<C, B>(connector: C) -> Client<C, B>
where
    C: Connect + Clone,
    B: hyper::body::Body + Send,
    B::Data: Send,
{
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(usize::MAX)
        .build(connector)
}

/// Whether a request failed because its connection closed before any of the answer
/// came: cancelled or closed under it, or the end of the stream where a response head
/// should be. On a connection that had answered before, that is a server closing a
/// connection it had kept idle just as the request went out, and the request is worth
/// sending once more on a new connection; on a new connection it is the server's own
/// failure, and sending again could run the request twice. The OTLP exporter's kept
/// connection and [`Pool::send`] both judge by it.
pub fn closed_before_answer(e: &hyper::Error) -> bool {
    e.is_canceled() || e.is_closed() || e.is_incomplete_message()
}

/// Whether a connection has carried a response: the extra a [`Conn`] gives hyper-util
/// when it is opened, which the pool keeps with the connection and hands back with every
/// response and failure on it.
#[derive(Clone, Debug, Default)]
struct Answered(Arc<AtomicBool>);

/// A pooled client ([`pooled`]) that sends a request again, once and on a new connection,
/// when a kept connection was closed under it ([`closed_before_answer`]). Cheap to clone:
/// clones share the pool.
///
/// Dropping [`Pool::send`]'s future before the response head, or the response's body
/// before its end, closes that connection rather than giving it back to the pool: hyper's
/// HTTP/1.1 dispatcher closes a connection whose waiter or body receiver went away
/// (`poll_ready` of its client dispatch, `poll_drain_or_close_read`), and the pool only
/// takes back a connection that is ready for another request. Over HTTP/2 the stream is
/// reset instead. Either way the server sees the request abandoned.
pub struct Pool<C, B> {
    kept: Client<C, B>,
    fresh: Client<C, B>,
}

impl<C: Clone, B> Clone for Pool<C, B> {
    fn clone(&self) -> Self {
        Pool {
            kept: self.kept.clone(),
            fresh: self.fresh.clone(),
        }
    }
}

impl<C, B> std::fmt::Debug for Pool<C, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl<C, B> Pool<C, B>
where
    C: Connect + Clone + Send + Sync + 'static,
    B: hyper::body::Body + Clone + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// A pool over `connector` ([`pooled`]), and beside it a client that keeps nothing,
    /// for the one retry on a connection of its own.
    pub fn new(connector: C) -> Pool<C, B> {
        let fresh = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector.clone());
        Pool {
            kept: pooled(connector),
            fresh,
        }
    }

    /// Sends `request` on a pooled connection. When a connection that had answered before
    /// closed before any of this answer came, the request goes once more on a new
    /// connection; any other failure is the caller's.
    ///
    /// # Errors
    ///
    /// hyper-util's error: `is_connect()` when no connection was made (its source is the
    /// connector's error), else the failure of the request, with hyper's error as source.
    pub async fn send(
        &self,
        request: Request<B>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        let again = copy(&request);
        let first = self.kept.request(request).await;
        let response = match first {
            Err(e) if answered_before(&e) && source_is(&e, closed_before_answer) => {
                self.fresh.request(again).await?
            }
            other => other?,
        };
        if let Some(Answered(flag)) = response.extensions().get::<Answered>() {
            flag.store(true, Ordering::Relaxed);
        }
        Ok(response)
    }
}

/// The same request again: method, URI, version, headers, extensions and body.
fn copy<B: Clone>(r: &Request<B>) -> Request<B> {
    let mut out = Request::new(r.body().clone());
    *out.method_mut() = r.method().clone();
    *out.uri_mut() = r.uri().clone();
    *out.version_mut() = r.version();
    *out.headers_mut() = r.headers().clone();
    *out.extensions_mut() = r.extensions().clone();
    out
}

/// Whether the connection `e` happened on had carried a response before.
fn answered_before(e: &hyper_util::client::legacy::Error) -> bool {
    let Some(info) = e.connect_info() else {
        return false;
    };
    let mut extras = hyper::http::Extensions::new();
    info.get_extras(&mut extras);
    extras
        .get::<Answered>()
        .is_some_and(|Answered(flag)| flag.load(Ordering::Relaxed))
}

/// Whether hyper's error under `e` passes `test`.
fn source_is(e: &hyper_util::client::legacy::Error, test: fn(&hyper::Error) -> bool) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<hyper::Error>())
        .is_some_and(test)
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
    /// What hyper-util's pool learns of a new connection (it asks once per connection):
    /// HTTP/2 when TLS agreed `h2`, and a fresh `Answered` flag of its own.
    fn connected(&self) -> Connected {
        let connected = Connected::new().extra(Answered::default());
        if self.alpn() == Some(tls::H2) {
            connected.negotiated_h2()
        } else {
            connected
        }
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

    /// Reads one request head (these requests have no body).
    async fn read_head(s: &mut TcpStream) -> bool {
        use tokio::io::AsyncReadExt;
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !seen.ends_with(b"\r\n\r\n") {
            match s.read(&mut byte).await {
                Ok(1) => seen.push(byte[0]),
                _ => return false,
            }
        }
        true
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    async fn get(pool: &Pool<Connector, String>, port: u16) -> Result<u16, String> {
        use http_body_util::BodyExt;
        let request = Request::get(format!("http://127.0.0.1:{port}/"))
            .body(String::new())
            .unwrap();
        let response = pool.send(request).await.map_err(|e| format!("{e:?}"))?;
        let status = response.status().as_u16();
        response.into_body().collect().await.unwrap();
        Ok(status)
    }

    /// A kept connection the server closes under the next request is replaced once and
    /// the request answered on the new one; a new connection closed unanswered is an
    /// error, not sent again.
    #[tokio::test]
    async fn a_kept_connection_closed_under_a_request_is_replaced_once() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.unwrap();
            assert!(read_head(&mut first).await);
            first.write_all(OK).await.unwrap();
            // The second request on the kept connection: closed unanswered.
            assert!(
                read_head(&mut first).await,
                "the kept connection was reused"
            );
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            assert!(read_head(&mut second).await);
            second.write_all(OK).await.unwrap();
            // A new pool's first connection, closed unanswered.
            let (mut third, _) = listener.accept().await.unwrap();
            assert!(read_head(&mut third).await);
            drop(third);
            let again = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
            assert!(
                again.is_err(),
                "a failure on a new connection is not retried"
            );
            second
        });
        let pool = Pool::new(Connector::new(AddressPolicy::ANY, tls::http1_default()));
        assert_eq!(get(&pool, port).await, Ok(200));
        // The pool takes the connection back in a task of its own once the body is read;
        // on this single-threaded runtime that task runs while this one waits. If it had
        // not, the server's assertion that the connection was reused fails.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(get(&pool, port).await, Ok(200));
        let fresh = Pool::new(Connector::new(AddressPolicy::ANY, tls::http1_default()));
        let e = get(&fresh, port).await.unwrap_err();
        assert!(
            e.contains("IncompleteMessage") || e.contains("Canceled"),
            "{e}"
        );
        drop(server.await.unwrap());
    }

    /// A TLS server that agrees `h2` by ALPN gets one connection, and the requests after
    /// the first are multiplexed on it.
    #[tokio::test]
    async fn an_https_server_that_agrees_h2_is_one_multiplexed_connection() {
        use hyper::server::conn::http2;
        use std::sync::atomic::AtomicUsize;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der = cert.der().clone();
        let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], private)
        .unwrap();
        server.alpn_protocols = vec![tls::H2.to_vec(), tls::HTTP1.to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let tls = acceptor.accept(tcp).await.unwrap();
                    let answer = hyper::service::service_fn(|r: Request<Incoming>| async move {
                        let text = format!("{:?}", r.version());
                        Ok::<_, std::convert::Infallible>(Response::new(text))
                    });
                    let _ = http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), answer)
                        .await;
                });
            }
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der).unwrap();
        let config = tls::client_config(roots, &[tls::H2, tls::HTTP1]);
        let pool: Pool<Connector, String> = Pool::new(Connector::new(AddressPolicy::ANY, config));
        let url = format!("https://localhost:{port}/");
        let get = |pool: Pool<Connector, String>, url: String| async move {
            use http_body_util::BodyExt;
            let request = Request::get(url).body(String::new()).unwrap();
            let response = pool.send(request).await.unwrap();
            let version = response.version();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (version, String::from_utf8_lossy(&body).into_owned())
        };
        let h2 = (hyper::Version::HTTP_2, "HTTP/2.0".to_owned());
        assert_eq!(get(pool.clone(), url.clone()).await, h2);
        let calls: Vec<_> = (0..8)
            .map(|_| tokio::spawn(get(pool.clone(), url.clone())))
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap(), h2);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one connection");
    }
}
