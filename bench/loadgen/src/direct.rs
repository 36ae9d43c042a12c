//! The floors of the declared-tool benchmark: what the work of a command-backed or an
//! HTTP-backed tool costs without any MCP server in between.
//!
//! - [`spawn`]: spawn a program (`/bin/true`), capture its stdout and stderr to the end,
//!   wait for it, check its exit status: what a command tool must do at the least.
//! - [`http_get`]: one keep-alive HTTP/1.1 connection per worker (`TCP_NODELAY`), a `GET`
//!   at a time, the body read whole and checked.
//!
//! Both run `concurrency` workers on OS threads that take calls from one shared budget,
//! so that concurrency 1 gives the sequential latency and more gives throughput.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::http1;
use crate::stats;

/// Settings shared by the two floors.
#[derive(Clone, Debug)]
pub struct DirectOpts {
    /// Measured calls (upper bound, over all workers).
    pub calls: u64,
    /// Calls before measuring (sequential).
    pub warmup: u64,
    /// Workers, each doing one call at a time.
    pub concurrency: usize,
    /// Time bound of the measured part.
    pub max: Duration,
}

/// Runs `concurrency` workers that each call `one` (with a per-worker state made by
/// `init`) until the budget of calls or the time runs out; returns the JSON line.
pub fn drive<S>(
    o: &DirectOpts,
    init: impl Fn() -> Result<S> + Sync,
    one: impl Fn(&mut S) -> Result<()> + Sync,
) -> Result<Value> {
    let mut warm = init()?;
    for _ in 0..o.warmup {
        one(&mut warm)?;
    }
    drop(warm);
    let workers = o.concurrency.max(1);
    let left = AtomicU64::new(o.calls);
    let t0 = Instant::now();
    let deadline = t0 + o.max;
    let per: Vec<Result<Vec<u64>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| -> Result<Vec<u64>> {
                    let mut state = init()?;
                    let mut ns = Vec::new();
                    while Instant::now() < deadline
                        && left
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                            .is_ok()
                    {
                        let t = Instant::now();
                        one(&mut state)?;
                        ns.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok(ns)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("worker panicked"))))
            .collect()
    });
    let elapsed = t0.elapsed();
    let mut ns = Vec::new();
    for r in per {
        ns.extend(r?);
    }
    if ns.is_empty() {
        bail!("no call was made");
    }
    let calls = ns.len();
    let l = stats::latency(&mut ns);
    Ok(json!({
        "calls": calls,
        "concurrency": workers,
        "elapsed_s": elapsed.as_secs_f64(),
        "calls_per_s": calls as f64 / elapsed.as_secs_f64(),
        "p50_us": l.p50_us, "p99_us": l.p99_us, "mean_us": l.mean_us, "max_us": l.max_us,
    }))
}

/// Spawns `argv` and waits for it, stdout and stderr captured (stdin empty); a non-zero
/// exit is an error.
fn spawn_once(argv: &[String]) -> Result<()> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| anyhow!("no program given (after --)"))?;
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("spawning {prog}"))?;
    if !out.status.success() {
        bail!("{prog} exited with {}", out.status);
    }
    Ok(())
}

/// The command floor: spawn and wait, `concurrency` at a time.
pub fn spawn(o: &DirectOpts, argv: &[String]) -> Result<Value> {
    if argv.is_empty() {
        bail!("spawn: give the program after --");
    }
    drive(o, || Ok(()), |()| spawn_once(argv))
}

/// A `http://127.0.0.1:PORT/PATH` URL split into the address to connect to and the
/// request target.
fn split_url(url: &str) -> Result<(SocketAddr, String, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("only http:// URLs: {url:?}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr: SocketAddr = authority
        .parse()
        .with_context(|| format!("{authority:?} is not IP:PORT"))?;
    if !addr.ip().is_loopback() {
        bail!("loopback targets only, not {addr}");
    }
    Ok((addr, authority.to_owned(), path.to_owned()))
}

/// One keep-alive connection and the request it sends.
struct Getter {
    stream: TcpStream,
    request: Vec<u8>,
    buf: Vec<u8>,
    expect: Option<String>,
}

impl Getter {
    fn connect(url: &str, expect: Option<&str>) -> Result<Self> {
        let (addr, host, path) = split_url(url)?;
        let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Self {
            stream,
            request: format!(
                "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\r\n"
            )
            .into_bytes(),
            buf: Vec::with_capacity(4096),
            expect: expect.map(str::to_owned),
        })
    }

    /// Sends the request and reads the whole response (`Content-Length` bodies only).
    fn get(&mut self) -> Result<()> {
        self.stream
            .write_all(&self.request)
            .context("writing the request")?;
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = http1::find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            let n = self
                .stream
                .read(&mut chunk)
                .context("reading the response")?;
            if n == 0 {
                bail!("the server closed the connection");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head = http1::parse_head(&self.buf[..head_end], true).map_err(|e| anyhow!(e))?;
        if head.status != 200 {
            bail!("HTTP status {}", head.status);
        }
        let len = head
            .content_length
            .ok_or_else(|| anyhow!("response without Content-Length"))?;
        let body_start = head_end + 4;
        while self.buf.len() < body_start + len {
            let n = self.stream.read(&mut chunk).context("reading the body")?;
            if n == 0 {
                bail!("the server closed the connection in the body");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        if self.buf.len() > body_start + len {
            bail!("more bytes than the response's Content-Length");
        }
        if let Some(want) = &self.expect {
            let body = &self.buf[body_start..];
            if http1::find(body, want.as_bytes()).is_none() {
                bail!(
                    "{want:?} not in the body {:?}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                );
            }
        }
        if head.close {
            bail!("the server does not keep the connection alive");
        }
        Ok(())
    }
}

/// The HTTP floor: `GET url` on keep-alive connections, `concurrency` at a time.
pub fn http_get(o: &DirectOpts, url: &str, expect: Option<&str>) -> Result<Value> {
    split_url(url)?;
    drive(o, || Getter::connect(url, expect), Getter::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(calls: u64, concurrency: usize) -> DirectOpts {
        DirectOpts {
            calls,
            warmup: 1,
            concurrency,
            max: Duration::from_secs(20),
        }
    }

    #[test]
    fn url_is_split() {
        let (addr, host, path) = split_url("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!(
            (addr.port(), host.as_str(), path.as_str()),
            (8080, "127.0.0.1:8080", "/a/b?c=1")
        );
        assert_eq!(split_url("http://127.0.0.1:1").unwrap().2, "/");
    }

    #[test]
    fn only_loopback_http() {
        assert!(split_url("https://127.0.0.1:1/").is_err());
        assert!(split_url("http://10.0.0.1:80/").is_err());
        assert!(split_url("http://example.com/").is_err());
    }

    #[test]
    fn spawn_counts_every_call() {
        let v = spawn(&opts(12, 3), &["true".to_owned()]).unwrap();
        assert_eq!(
            (v["calls"].as_u64(), v["concurrency"].as_u64()),
            (Some(12), Some(3))
        );
        assert!(v["p50_us"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn spawn_of_a_failing_program_fails() {
        assert!(spawn(&opts(2, 1), &["false".to_owned()]).is_err());
    }

    #[test]
    fn get_against_the_json_server() {
        let (port, _server) = crate::jsonsrv::spawn_for_test();
        let url = format!("http://127.0.0.1:{port}/x");
        let v = http_get(&opts(50, 2), &url, Some(r#""ok":true"#)).unwrap();
        assert_eq!(v["calls"].as_u64(), Some(50));
        assert!(http_get(&opts(1, 1), &url, Some("nope")).is_err());
    }
}
