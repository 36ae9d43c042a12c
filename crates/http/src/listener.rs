//! [`HttpServer`]: the listening socket, one hyper HTTP/1.1 connection task per client,
//! idle-session expiry, and graceful shutdown.

use crate::body::Body;
use crate::config::HttpConfig;
use crate::error::Error;
use crate::guard::{self, Guard};
use crate::service;
use crate::sessions::SessionBackend as _;
use crate::shared::Shared;
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolwright_server::Server;

/// A bound, not yet running, Streamable HTTP server.
pub struct HttpServer {
    listener: TcpListener,
    /// One more listener on the same address per extra serving thread.
    extra: Vec<std::net::TcpListener>,
    shared: Arc<Shared>,
    addr: SocketAddr,
}

/// The service of one connection: the shared state and the client's address and port.
#[derive(Clone)]
struct Svc(Arc<Shared>, SocketAddr);

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let shared = self.0.clone();
        let peer = self.1;
        Box::pin(async move { Ok(service::handle(shared, peer, req).await) })
    }
}

async fn resolve(addr: &str) -> Result<Vec<SocketAddr>, Error> {
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(vec![a]);
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| Error::Address {
            addr: addr.to_owned(),
            reason: e.to_string(),
        })?
        .collect();
    if found.is_empty() {
        return Err(Error::Address {
            addr: addr.to_owned(),
            reason: "it resolves to no address".into(),
        });
    }
    Ok(found)
}

impl HttpServer {
    /// Binds the listening socket and checks the settings. Nothing is served until
    /// [`HttpServer::run`] or [`HttpServer::run_until`].
    pub async fn bind(server: Server, config: HttpConfig) -> Result<HttpServer, Error> {
        check_settings(&config)?;
        let (listener, addr) = bind_first(&config).await?;
        // The others bind the port the first one got (port 0 picks it once).
        let mut extra = Vec::with_capacity(config.threads - 1);
        for _ in 1..config.threads {
            let l = listen(addr, true)
                .and_then(TcpListener::into_std)
                .map_err(|e| Error::Bind { addr, source: e })?;
            extra.push(l);
        }
        let resource = resource_url(&config, addr)?;
        let validator = authorization(&config, &resource).await?;
        let guard = Guard::new(&config, addr, validator)?;
        let (metadata_url, metadata) = resource_metadata(&config, &guard, &resource)?;
        let shared = Arc::new(Shared::new(
            server,
            config,
            guard,
            metadata,
            (&metadata_url, &resource),
        ));
        Ok(HttpServer {
            listener,
            extra,
            shared,
            addr,
        })
    }

    /// The address the server listens on (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint's URL, e.g. `http://127.0.0.1:8080/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.shared.config.path)
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn run(self) -> Result<(), Error> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `signal` completes, then shuts down gracefully: no new connections,
    /// GET streams end, requests in progress finish (for up to the server's
    /// `shutdown_grace`), then every session is closed.
    pub async fn run_until(self, signal: impl Future<Output = ()>) -> Result<(), Error> {
        let HttpServer {
            listener,
            extra,
            shared,
            ..
        } = self;
        let cfg = &shared.config;
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(cfg.header_read_timeout)
            .max_headers(cfg.max_headers)
            .max_header_size(cfg.max_header_bytes)
            .keep_alive(true);
        let acceptor = Acceptor {
            builder: Arc::new(builder),
            shared: shared.clone(),
            conns: TaskTracker::new(),
            closers: Arc::default(),
            next_conn: Arc::default(),
        };
        let stop = CancellationToken::new();
        for l in extra {
            serving_thread(l, acceptor.clone(), stop.clone());
        }
        let sweeper = tokio::spawn(sweep(shared.clone()));
        let store_tasks = shared.sessions.start();
        let accepted = acceptor.run(listener, signal).await;
        stop.cancel();
        if let Err(e) = accepted {
            sweeper.abort();
            acceptor.conns.close();
            shared.calls.close();
            return Err(e);
        }
        tracing::info!("shutting down: finishing requests in progress");
        shared.shutdown.cancel();
        sweeper.abort();
        for t in &store_tasks {
            t.abort();
        }
        for (_, tx) in acceptor.closers.lock().drain() {
            let _ = tx.send(());
        }
        acceptor.conns.close();
        shared.calls.close();
        let grace = shared.server.config().shutdown_grace;
        let finished = tokio::time::timeout(grace, async {
            acceptor.conns.wait().await;
            shared.calls.wait().await;
        })
        .await
        .is_ok();
        if !finished {
            tracing::warn!(
                "requests still running {grace:?} after shutdown began; cancelling them"
            );
        }
        shared.sessions.close_all();
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            acceptor.conns.wait().await;
            shared.calls.wait().await;
        })
        .await;
        Ok(())
    }
}

/// The settings [`HttpServer::bind`] refuses before binding anything.
fn check_settings(config: &HttpConfig) -> Result<(), Error> {
    if !config.path.starts_with('/') {
        return Err(Error::config(
            "path",
            format!("{:?} must start with /", config.path),
        ));
    }
    for (setting, n) in [
        ("--max-sessions", config.max_sessions),
        ("--max-sse-streams", config.max_sse_streams),
        (
            "--max-sse-streams-per-client",
            config.max_sse_streams_per_client,
        ),
        ("--max-get-streams", config.max_get_streams),
        (
            "--max-get-streams-per-client",
            config.max_get_streams_per_client,
        ),
        ("--max-body-bytes", config.max_body_bytes),
    ] {
        if n == 0 {
            return Err(Error::config(setting, "must be at least 1"));
        }
    }
    if config.session_idle_timeout.is_zero() {
        return Err(Error::config(
            "--session-idle-timeout",
            "must be at least 1 second",
        ));
    }
    if config.threads == 0 {
        return Err(Error::config("--http-threads", "must be at least 1"));
    }
    if let Some(jwt) = &config.jwt {
        if config.auth_token.is_some() {
            return Err(Error::config(
                "--auth-issuer",
                "a static token (--auth-token-env) and JWT access tokens exclude each other",
            ));
        }
        // RFC 6749 §3.3: a scope is printable ASCII without space, `"` or `\`; it is
        // quoted into the WWW-Authenticate challenge as it is.
        for scope in &jwt.scopes {
            let ok = !scope.is_empty()
                && scope
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
            if !ok {
                return Err(Error::config(
                    "--auth-scope",
                    format!(
                        "{scope:?} is not a scope (printable ASCII, no space, quote or backslash)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The listener on the first of the addresses `config.addr` resolves to that can be bound,
/// and the address it got.
async fn bind_first(config: &HttpConfig) -> Result<(TcpListener, SocketAddr), Error> {
    let shared_port = config.threads > 1;
    let mut last = None;
    let mut bound = None;
    for a in resolve(&config.addr).await? {
        match listen(a, shared_port) {
            Ok(l) => {
                bound = Some(l);
                break;
            }
            Err(e) => last = Some(Error::Bind { addr: a, source: e }),
        }
    }
    let listener = match bound {
        Some(l) => l,
        None => return Err(last.expect("at least one address was tried")),
    };
    let addr = listener.local_addr().map_err(|e| Error::Bind {
        addr: "0.0.0.0:0".parse().expect("valid"),
        source: e,
    })?;
    Ok((listener, addr))
}

/// The URL of the Protected Resource Metadata, and (when a token is required) the paths
/// serving it and the document.
type Metadata = (String, Option<(Vec<String>, Bytes)>);

/// This server's canonical URL (the metadata's `resource`, the default audience of access
/// tokens): [`HttpConfig::resource_url`], or `http://<addr><path>`.
fn resource_url(config: &HttpConfig, addr: SocketAddr) -> Result<String, Error> {
    let resource = config
        .resource_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}{}", config.path));
    if guard::split_url(&resource).is_none() {
        return Err(Error::config(
            "--resource-url",
            format!("{resource:?} is not an absolute http(s) URL"),
        ));
    }
    Ok(resource)
}

/// The validator of [`HttpConfig::jwt`], once the issuer's metadata and keys are fetched.
async fn authorization(
    config: &HttpConfig,
    resource: &str,
) -> Result<Option<toolwright_auth::Validator>, Error> {
    let Some(jwt) = &config.jwt else {
        return Ok(None);
    };
    let audience = jwt.audience.clone().unwrap_or_else(|| resource.to_owned());
    let mut settings = toolwright_auth::Settings::new(jwt.issuer.clone(), audience);
    settings.leeway = jwt.leeway;
    settings.introspection = jwt.introspection.clone();
    let validator = toolwright_auth::Validator::discover(settings)
        .await
        .map_err(|source| Error::Authorization {
            issuer: jwt.issuer.clone(),
            source,
        })?;
    tracing::info!(
        issuer = %jwt.issuer,
        jwks_uri = validator.jwks_uri().unwrap_or("none"),
        introspection = validator.introspection_endpoint().unwrap_or("off"),
        "bearer tokens are checked as access tokens of the issuer"
    );
    Ok(Some(validator))
}

/// The resource's metadata (RFC 9728) at `resource`, after checking the URLs the settings
/// name.
fn resource_metadata(
    config: &HttpConfig,
    guard: &Guard,
    resource: &str,
) -> Result<Metadata, Error> {
    let split = guard::split_url(resource).ok_or_else(|| {
        Error::config(
            "--resource-url",
            format!("{resource:?} is not an absolute http(s) URL"),
        )
    })?;
    for s in &config.authorization_servers {
        if guard::split_url(s).is_none() {
            return Err(Error::config(
                "--authorization-server",
                format!("{s:?} is not an absolute http(s) URL"),
            ));
        }
    }
    // With JWT access tokens their issuer is the authorization server to name first.
    let mut servers: Vec<String> = config.jwt.iter().map(|j| j.issuer.clone()).collect();
    for s in &config.authorization_servers {
        if !servers.contains(s) {
            servers.push(s.clone());
        }
    }
    let metadata_url = guard::metadata_url(&split);
    let metadata = guard.requires_token().then(|| {
        let mut paths = vec![
            format!("/.well-known/oauth-protected-resource{}", split.path),
            format!("/.well-known/oauth-protected-resource{}", config.path),
            "/.well-known/oauth-protected-resource".to_owned(),
        ];
        paths.dedup();
        (
            paths,
            Bytes::from(guard::metadata_document(resource, &servers, guard.scopes())),
        )
    });
    if guard.requires_token() && servers.is_empty() {
        tracing::warn!(
            "bearer authentication is on but no --authorization-server is named; MCP clients expect one"
        );
    }
    Ok((metadata_url, metadata))
}

/// Binds a listening socket; `shared_port` lets more sockets bind the same address
/// (`SO_REUSEPORT`).
fn listen(addr: SocketAddr, shared_port: bool) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restarted server may rebind a port in TIME_WAIT.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    #[cfg(unix)]
    socket.set_reuseport(shared_port)?;
    #[cfg(not(unix))]
    let _ = shared_port;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// What every accept loop shares: the connection settings, the server, and the
/// connections in progress (tracked for graceful shutdown).
#[derive(Clone)]
struct Acceptor {
    builder: Arc<http1::Builder>,
    shared: Arc<Shared>,
    conns: TaskTracker,
    closers: Arc<Mutex<HashMap<u64, oneshot::Sender<()>>>>,
    next_conn: Arc<AtomicU64>,
}

impl Acceptor {
    /// Accepts connections until `stop` completes, each served by a task of the runtime
    /// this runs on. Fails only when accepting keeps failing.
    async fn run(
        &self,
        listener: TcpListener,
        stop: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        tokio::pin!(stop);
        let mut failures = 0u32;
        loop {
            let accepted = tokio::select! {
                biased;
                _ = &mut stop => return Ok(()),
                a = listener.accept() => a,
            };
            let (stream, peer) = match accepted {
                Ok(a) => {
                    failures = 0;
                    a
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little and go on.
                    failures += 1;
                    tracing::warn!("accept failed: {e}");
                    if failures > 1000 {
                        return Err(Error::Accept(e));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            self.serve(stream, peer);
        }
    }

    fn serve(&self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        // Without this every small reply waits for the peer's delayed ACK (~40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.closers.lock().insert(id, tx);
        let builder = self.builder.clone();
        let svc = Svc(self.shared.clone(), peer);
        let closers = self.closers.clone();
        self.conns.spawn(async move {
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            let mut rx = rx;
            let result = tokio::select! {
                biased;
                r = conn.as_mut() => r,
                _ = &mut rx => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!("connection ended: {e}");
            }
            closers.lock().remove(&id);
        });
    }
}

/// Serves `listener` on a thread of its own, with a single-threaded runtime, until `stop`;
/// the thread then stays until the connections it holds have ended.
fn serving_thread(listener: std::net::TcpListener, acceptor: Acceptor, stop: CancellationToken) {
    let spawned = std::thread::Builder::new()
        .name("toolwright-http".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!("an HTTP serving thread could not start its runtime: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("an HTTP serving thread could not listen: {e}");
                        return;
                    }
                };
                if let Err(e) = acceptor.run(listener, stop.cancelled()).await {
                    tracing::error!("{e}");
                }
                // Connections and calls started here run on this runtime.
                acceptor.conns.wait().await;
                acceptor.shared.calls.wait().await;
            });
        });
    if let Err(e) = spawned {
        // Its listener was dropped with the thread's closure, so the kernel spreads the
        // connections over the other listeners.
        tracing::error!("could not start an HTTP serving thread: {e}");
    }
}

/// Ends idle sessions.
async fn sweep(shared: Arc<Shared>) {
    let idle = shared.config.session_idle_timeout;
    let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        shared.sessions.expire();
    }
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
