//! [`HttpServer`]: the listening socket, one hyper HTTP/1.1 connection task per client,
//! idle-session expiry, and graceful shutdown.

use crate::body::Body;
use crate::config::HttpConfig;
use crate::error::Error;
use crate::guard::{self, Guard};
use crate::service::{self, Shared};
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;
use toolwright_server::Server;

/// A bound, not yet running, Streamable HTTP server.
pub struct HttpServer {
    listener: TcpListener,
    shared: Arc<Shared>,
    addr: SocketAddr,
}

#[derive(Clone)]
struct Svc(Arc<Shared>);

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move { Ok(service::handle(shared, req).await) })
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
        if !config.path.starts_with('/') {
            return Err(Error::config(
                "path",
                format!("{:?} must start with /", config.path),
            ));
        }
        for (setting, n) in [
            ("--max-sessions", config.max_sessions),
            ("--max-sse-streams", config.max_sse_streams),
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
        let mut last = None;
        let mut bound = None;
        for a in resolve(&config.addr).await? {
            match TcpListener::bind(a).await {
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
        let guard = Guard::new(&config, addr)?;
        let resource = config
            .resource_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}{}", config.path));
        let split = guard::split_url(&resource).ok_or_else(|| {
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
                Bytes::from(guard::metadata_document(
                    &resource,
                    &config.authorization_servers,
                )),
            )
        });
        if guard.requires_token() && config.authorization_servers.is_empty() {
            tracing::warn!(
                "bearer authentication is on but no --authorization-server is named; MCP clients expect one"
            );
        }
        let shared = Arc::new(Shared::new(server, config, guard, metadata, &metadata_url));
        Ok(HttpServer {
            listener,
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
            listener, shared, ..
        } = self;
        let cfg = &shared.config;
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(cfg.header_read_timeout)
            .max_headers(cfg.max_headers)
            .max_header_size(cfg.max_header_bytes)
            .keep_alive(true);
        let builder = Arc::new(builder);
        let conns = TaskTracker::new();
        let closers: Arc<Mutex<HashMap<u64, oneshot::Sender<()>>>> = Arc::default();
        let next_conn = AtomicU64::new(0);
        let sweeper = tokio::spawn(sweep(shared.clone()));
        tokio::pin!(signal);
        let mut failures = 0u32;
        loop {
            let accepted = tokio::select! {
                biased;
                _ = &mut signal => break,
                a = listener.accept() => a,
            };
            let stream = match accepted {
                Ok((s, _)) => {
                    failures = 0;
                    s
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little and go on.
                    failures += 1;
                    tracing::warn!("accept failed: {e}");
                    if failures > 1000 {
                        sweeper.abort();
                        return Err(Error::Accept(e));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Without this every small reply waits for the peer's delayed ACK (~40 ms).
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("TCP_NODELAY: {e}");
            }
            let id = next_conn.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            closers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, tx);
            let builder = builder.clone();
            let svc = Svc(shared.clone());
            let closers = closers.clone();
            conns.spawn(async move {
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
                closers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
            });
        }
        drop(listener);
        tracing::info!("shutting down: finishing requests in progress");
        shared.shutdown.cancel();
        sweeper.abort();
        for (_, tx) in closers.lock().unwrap_or_else(|p| p.into_inner()).drain() {
            let _ = tx.send(());
        }
        conns.close();
        shared.calls.close();
        let grace = shared.server.config().shutdown_grace;
        let finished = tokio::time::timeout(grace, async {
            conns.wait().await;
            shared.calls.wait().await;
        })
        .await
        .is_ok();
        if !finished {
            tracing::warn!(
                "requests still running {grace:?} after shutdown began; cancelling them"
            );
        }
        for s in shared.sessions.take_all() {
            s.close();
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            conns.wait().await;
            shared.calls.wait().await;
        })
        .await;
        Ok(())
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
        for s in shared.sessions.take_expired(idle) {
            tracing::debug!(session = %s.id, "session expired");
            s.close();
        }
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
