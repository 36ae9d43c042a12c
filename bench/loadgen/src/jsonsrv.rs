//! The HTTP JSON API that the HTTP-backed tools call: hyper's HTTP/1.1 server on a
//! single-threaded tokio runtime, answering every request with `{"ok":true}`
//! (`Content-Type: application/json`, keep-alive). Loopback only, and it ends by itself
//! after its lifetime.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// The body of every answer.
pub const BODY: &[u8] = br#"{"ok":true}"#;

async fn answer(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut res = Response::new(Full::new(Bytes::from_static(BODY)));
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(res)
}

async fn serve<H, F>(listener: TcpListener, handler: H) -> Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + 'static,
{
    loop {
        let (stream, _) = listener.accept().await.context("accepting")?;
        stream.set_nodelay(true)?;
        let handler = handler.clone();
        tokio::task::spawn_local(async move {
            // A client that goes away mid-request is not the server's failure.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service_fn(handler))
                .await;
        });
    }
}

/// Serves on `addr` (a loopback `IP:PORT`, port 0 for any) until `lifetime` has passed;
/// `on_bound` learns the port before the first request is accepted.
pub fn run(addr: &str, lifetime: Duration, on_bound: impl FnOnce(u16) -> Result<()>) -> Result<()> {
    run_with(addr, lifetime, on_bound, answer)
}

/// [`run`], answering each request with `handler` (on one thread: it need not be `Send`).
pub fn run_with<H, F>(
    addr: &str,
    lifetime: Duration,
    on_bound: impl FnOnce(u16) -> Result<()>,
    handler: H,
) -> Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + 'static,
{
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("--addr {addr:?} is not IP:PORT"))?;
    if !addr.ip().is_loopback() {
        bail!("loopback addresses only, not {addr}");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        on_bound(listener.local_addr()?.port())?;
        match tokio::time::timeout(lifetime, serve(listener, handler)).await {
            Ok(r) => r,
            Err(_) => Ok(()),
        }
    })
}

/// Starts the server on a thread of the test process; returns its port.
#[cfg(test)]
pub fn spawn_for_test() -> (u16, std::thread::JoinHandle<Result<()>>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        run("127.0.0.1:0", Duration::from_secs(60), |p| {
            tx.send(p).map_err(|e| anyhow::anyhow!("{e}"))
        })
    });
    let port = rx.recv().expect("json server did not start");
    (port, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_other_addresses() {
        assert!(run("0.0.0.0:0", Duration::from_millis(10), |_| Ok(())).is_err());
    }

    #[test]
    fn ends_after_its_lifetime() {
        let t = std::time::Instant::now();
        run("127.0.0.1:0", Duration::from_millis(50), |_| Ok(())).unwrap();
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
