//! The policy point: a small HTTP forward proxy on 127.0.0.1 through which Chromium makes
//! every connection.
//!
//! `CONNECT host:port` (HTTPS, and WebSockets of both kinds) and absolute-form requests
//! (`GET http://host/…`, plain HTTP) are handled alike: the host is resolved once (an IP
//! literal is taken as is, `localhost` and `*.localhost` are loopback), every address is
//! checked against the [`Policy`] (both by [`toolwright_net::resolve_checked`], the one
//! resolution with the address policy applied), and the proxy connects to a checked address itself,
//! never resolving again, so neither DNS rebinding nor a redirect can change the answer. A
//! refusal is a `403` sent before any connection to the target is made. Each plain-HTTP
//! request is checked and forwarded on a connection of its own (in origin form), so a
//! kept-alive connection from the browser never carries a request to a second host
//! unchecked. The DevTools port and the proxies' own ports are refused whatever the
//! policy says.
//!
//! Every attempt is recorded (a capture lists the refusals in its result) and logged at
//! debug level under `toolwright::proxy`. A proxy made with [`Rules::RefuseAll`] stands
//! behind the browser-wide `--proxy-server`: it refuses everything, which is where
//! Chromium's own background traffic (update checks, accounts, time) ends up.

use super::error::Refusal;
use super::policy::{self, AddrClass, Policy, classify};
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use std::convert::Infallible;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection to the target may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts kept in the log, at most (later ones are counted, not kept).
const MAX_KEPT: usize = 1_000;

pub(crate) use toolwright_net::{Resolve, SystemResolver};

/// What a proxy lets through.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rules {
    /// What the policy admits.
    Policy(Policy),
    /// Nothing (the browser's own traffic).
    RefuseAll,
}

/// What became of one attempt.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Refused before any connection was made.
    Refused(Refusal),
    /// Connected to this checked address.
    Connected(SocketAddr),
    /// Admitted, but no checked address answered.
    Failed(String),
}

/// One request the proxy handled.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    /// `CONNECT host:port`, or the method and URL of a plain-HTTP request.
    pub target: String,
    /// `host:port` as the browser wrote it.
    pub authority: String,
    /// What happened.
    pub outcome: Outcome,
}

#[derive(Debug, Default)]
struct Log {
    kept: Vec<Attempt>,
    refused: usize,
    total: usize,
}

struct State {
    rules: Rules,
    /// Ports on the local machine that are never reached (DevTools, the proxies).
    guarded: Vec<u16>,
    resolver: Arc<dyn Resolve>,
    log: Mutex<Log>,
    stop: CancellationToken,
}

/// A running proxy; stops (closing its connections and tunnels) when dropped.
pub(crate) struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.cancel();
    }
}

type Body = Either<Incoming, Full<Bytes>>;

impl Proxy {
    /// Starts a proxy on an ephemeral port of 127.0.0.1.
    pub async fn start(
        rules: Rules,
        guarded: Vec<u16>,
        resolver: Arc<dyn Resolve>,
    ) -> io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            rules,
            guarded,
            resolver,
            log: Mutex::default(),
            stop: CancellationToken::new(),
        });
        let accepting = state.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = accepting.stop.cancelled() => break,
                    a = listener.accept() => a,
                };
                match accepted {
                    Ok((stream, _)) => {
                        tokio::spawn(accepting.clone().serve(stream));
                    }
                    Err(e) => {
                        tracing::debug!(target: "toolwright::proxy", "accept: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        });
        Ok(Proxy { addr, state })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's URL, for Chromium.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The attempts so far (the first [`MAX_KEPT`]), how many were refused, and how many
    /// there were in all.
    pub fn attempts(&self) -> (Vec<Attempt>, usize, usize) {
        let log = self.state.log.lock();
        (log.kept.clone(), log.refused, log.total)
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Either::Right(Full::new(Bytes::from(body))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Headers that belong to one hop, never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

fn strip_hop_by_hop(headers: &mut hyper::HeaderMap) {
    for h in HOP_BY_HOP {
        headers.remove(*h);
    }
}

impl State {
    async fn serve(self: Arc<Self>, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let this = self.clone();
        let service = hyper::service::service_fn(move |req| {
            let this = this.clone();
            async move { Ok::<_, Infallible>(this.handle(req).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        tokio::select! {
            r = conn => if let Err(e) = r {
                tracing::debug!(target: "toolwright::proxy", "a browser connection: {e}");
            },
            () = self.stop.cancelled() => {}
        }
    }

    fn record(&self, target: String, authority: String, outcome: Outcome) {
        match &outcome {
            Outcome::Refused(r) => {
                tracing::debug!(target: "toolwright::proxy", "refused {target}: {r}");
            }
            Outcome::Connected(to) => {
                tracing::debug!(target: "toolwright::proxy", "{target}: connected to {to}");
            }
            Outcome::Failed(e) => tracing::debug!(target: "toolwright::proxy", "{target}: {e}"),
        }
        let mut log = self.log.lock();
        log.total += 1;
        if matches!(outcome, Outcome::Refused(_)) {
            log.refused += 1;
        }
        if log.kept.len() < MAX_KEPT {
            log.kept.push(Attempt {
                target,
                authority,
                outcome,
            });
        }
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let uri = req.uri().clone();
        let Some(authority) = uri.authority().cloned() else {
            return text(
                StatusCode::BAD_REQUEST,
                "this proxy takes CONNECT host:port and absolute-form http:// requests\n".into(),
            );
        };
        let connect = req.method() == Method::CONNECT;
        if !connect && uri.scheme_str() != Some("http") {
            return text(
                StatusCode::BAD_REQUEST,
                "only http:// requests are forwarded; https goes through CONNECT\n".into(),
            );
        }
        let port = authority
            .port_u16()
            .unwrap_or(if connect { 443 } else { 80 });
        let host = authority.host();
        let target = if connect {
            format!("CONNECT {authority}")
        } else {
            format!("{} {uri}", req.method())
        };
        let label = if connect {
            authority.to_string()
        } else {
            uri.to_string()
        };
        let addrs = match self.admit(host, port, &label).await {
            Ok(a) => a,
            Err(refusal) => {
                let body = format!("{refusal}\n");
                self.record(target, authority.to_string(), Outcome::Refused(refusal));
                return text(StatusCode::FORBIDDEN, body);
            }
        };
        let (stream, to) = match connect_any(&addrs).await {
            Ok(s) => s,
            Err(e) => {
                let message = format!("{} ({label}: {e})", net_error(&e));
                self.record(
                    target,
                    authority.to_string(),
                    Outcome::Failed(message.clone()),
                );
                return text(StatusCode::BAD_GATEWAY, format!("{message}\n"));
            }
        };
        self.record(target, authority.to_string(), Outcome::Connected(to));
        if connect {
            self.tunnel(req, stream);
            return Response::new(Either::Right(Full::new(Bytes::new())));
        }
        match self.forward(req, stream).await {
            Ok(r) => r,
            Err(e) => text(
                StatusCode::BAD_GATEWAY,
                format!("forwarding to {label} failed: {e}\n"),
            ),
        }
    }

    /// Resolves `host` once and checks every address; the addresses to connect to.
    async fn admit(&self, host: &str, port: u16, label: &str) -> Result<Vec<SocketAddr>, Refusal> {
        let policy = match self.rules {
            Rules::RefuseAll => {
                return Err(Refusal::Internal {
                    url: label.to_owned(),
                    what: "the browser's own connections (outside any capture) are not allowed",
                });
            }
            Rules::Policy(p) => p,
        };
        let unresolvable = |reason: String| Refusal::Unresolvable {
            url: label.to_owned(),
            host: toolwright_net::resolve::bare_host(host),
            reason,
        };
        let addrs = tokio::time::timeout(
            RESOLVE_TIMEOUT,
            toolwright_net::resolve_checked(
                self.resolver.as_ref(),
                &policy.address_policy(),
                host,
                port,
            ),
        )
        .await
        .map_err(|_| unresolvable("no answer in time".into()))?
        .map_err(|e| policy::net_refusal(&policy, label, host, e))?;
        for addr in &addrs {
            let local = matches!(
                classify(addr.ip()).class,
                AddrClass::Loopback | AddrClass::Unspecified
            );
            if local && self.guarded.contains(&port) {
                return Err(Refusal::Internal {
                    url: label.to_owned(),
                    what: "it is the browser's DevTools port or the policy proxy's own",
                });
            }
        }
        Ok(addrs)
    }

    /// Answers `200` to a CONNECT (already done by the caller) and relays bytes both ways.
    fn tunnel(self: &Arc<Self>, req: Request<Incoming>, mut upstream: TcpStream) {
        let stop = self.stop.clone();
        tokio::spawn(async move {
            let upgraded = match hyper::upgrade::on(req).await {
                Ok(u) => u,
                Err(e) => {
                    tracing::debug!(target: "toolwright::proxy", "CONNECT upgrade: {e}");
                    return;
                }
            };
            let mut client = TokioIo::new(upgraded);
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                () = stop.cancelled() => {}
            }
        });
    }

    /// Sends one plain-HTTP request, in origin form, on its own connection to the checked
    /// address.
    ///
    /// A handshake of its own rather than `toolwright_net`'s pooled client: the request must
    /// go to the address this proxy just checked for it, and a pooled connection could carry
    /// it to an address checked for another request (or resolve the name again).
    async fn forward(
        &self,
        req: Request<Incoming>,
        upstream: TcpStream,
    ) -> Result<Response<Body>, hyper::Error> {
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await?;
        let stop = self.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                r = conn => if let Err(e) = r {
                    tracing::debug!(target: "toolwright::proxy", "upstream connection: {e}");
                },
                () = stop.cancelled() => {}
            }
        });
        let (mut parts, body) = req.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        parts.uri = path
            .parse()
            .unwrap_or_else(|_| hyper::Uri::from_static("/"));
        strip_hop_by_hop(&mut parts.headers);
        let response = sender
            .send_request(Request::from_parts(parts, body))
            .await?;
        let (mut parts, body) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        Ok(Response::from_parts(parts, Either::Left(body)))
    }
}

/// Chromium's name for a failed connection, so that a page that cannot be reached fails as
/// it would without the proxy.
fn net_error(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "net::ERR_CONNECTION_REFUSED",
        io::ErrorKind::TimedOut => "net::ERR_CONNECTION_TIMED_OUT",
        io::ErrorKind::ConnectionReset => "net::ERR_CONNECTION_RESET",
        io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
            "net::ERR_ADDRESS_UNREACHABLE"
        }
        _ => "net::ERR_CONNECTION_FAILED",
    }
}

/// Connects to the first of `addrs` that answers.
async fn connect_any(addrs: &[SocketAddr]) -> io::Result<(TcpStream, SocketAddr)> {
    let mut last = io::Error::other("no addresses");
    for &addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok((s, addr));
            }
            Ok(Err(e)) => last = e,
            Err(_) => last = io::Error::new(io::ErrorKind::TimedOut, "timed out"),
        }
    }
    Err(last)
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
