//! Measurements over Streamable HTTP: a hand-written HTTP/1.1 keep-alive client on
//! tokio `TcpStream`s with `TCP_NODELAY`, one connection per simulated client, accepting
//! JSON or SSE answers.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use crate::http1::{self, Chunk, Head};
use crate::procs::{self, ServerCmd};
use crate::proto::{self, Era, Incoming, Proto, Work};
use crate::redis::{self, CmdStats};
use crate::stats;

/// Where the server listens.
#[derive(Clone, Debug)]
pub struct Target {
    /// Socket address (loopback only).
    pub addr: SocketAddr,
    /// `Host` header value.
    pub host: String,
    /// Path of the MCP endpoint.
    pub path: String,
    /// Extra header lines sent with every request (each `Name: value\r\n`).
    pub headers: String,
}

impl Target {
    /// Parses `http://HOST:PORT/PATH`; the host must be a loopback address.
    pub fn parse(url: &str) -> Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| anyhow!("only http:// URLs: {url}"))?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/mcp"),
        };
        let addr = host
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))?
            .next()
            .ok_or_else(|| anyhow!("{host} did not resolve"))?;
        if !addr.ip().is_loopback() {
            bail!("refusing non-loopback target {addr}: benchmarks stay on this machine");
        }
        Ok(Self {
            addr,
            host: host.to_owned(),
            path: path.to_owned(),
            headers: String::new(),
        })
    }

    /// Adds `Name: value` header lines (e.g. `Authorization: Bearer …`) to every request.
    pub fn with_headers(mut self, headers: &[String]) -> Result<Self> {
        for h in headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| anyhow!("--header wants 'Name: value', got {h:?}"))?;
            let (name, value) = (name.trim(), value.trim());
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                || value.bytes().any(|b| b == b'\r' || b == b'\n')
            {
                bail!("--header {h:?}: not a header line");
            }
            self.headers.push_str(&format!("{name}: {value}\r\n"));
        }
        Ok(self)
    }
}

/// One keep-alive connection speaking MCP over HTTP/1.1.
pub struct Conn {
    stream: TcpStream,
    target: Arc<Target>,
    proto: Proto,
    session: Option<String>,
    initialized: bool,
    buf: Vec<u8>,
    req: Vec<u8>,
    body: Vec<u8>,
    payload: Vec<u8>,
}

async fn connect(addr: SocketAddr) -> Result<TcpStream> {
    let s = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_nodelay(true)?;
    Ok(s)
}

impl Conn {
    /// Opens a connection (no MCP traffic yet).
    pub async fn connect(target: Arc<Target>, proto: Proto) -> Result<Self> {
        Ok(Self {
            stream: connect(target.addr).await?,
            target,
            proto,
            session: None,
            initialized: false,
            buf: Vec::with_capacity(16 * 1024),
            req: Vec::with_capacity(1024),
            body: Vec::with_capacity(4096),
            payload: Vec::with_capacity(512),
        })
    }

    async fn fill(&mut self) -> Result<()> {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 * 1024);
        }
        if self.stream.read_buf(&mut self.buf).await? == 0 {
            bail!("server closed the connection");
        }
        Ok(())
    }

    /// POSTs `payload` (in `self.payload`) and reads the whole response into `self.body`.
    async fn post(&mut self, method: &str, name: Option<&str>) -> Result<Head> {
        use std::io::Write;
        let t = &*self.target;
        self.req.clear();
        let _ = write!(
            self.req,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            t.path,
            t.host,
            self.payload.len()
        );
        self.req.extend_from_slice(t.headers.as_bytes());
        if let Some(s) = &self.session {
            let _ = write!(self.req, "Mcp-Session-Id: {s}\r\n");
        }
        if self.initialized || self.proto.era == Era::Modern {
            let _ = write!(
                self.req,
                "MCP-Protocol-Version: {}\r\n",
                self.proto.version()
            );
        }
        if self.proto.era == Era::Modern {
            let _ = write!(self.req, "Mcp-Method: {method}\r\n");
            if let Some(n) = name {
                let _ = write!(self.req, "Mcp-Name: {n}\r\n");
            }
        }
        self.req.extend_from_slice(b"\r\n");
        self.req.extend_from_slice(&self.payload);
        self.stream
            .write_all(&self.req)
            .await
            .context("sending request")?;

        let head_end = loop {
            if let Some(p) = http1::find(&self.buf, b"\r\n\r\n") {
                break p;
            }
            self.fill().await?;
        };
        let head = http1::parse_head(&self.buf[..head_end], true).map_err(|e| anyhow!(e))?;
        self.buf.drain(..head_end + 4);
        self.body.clear();
        if head.chunked {
            loop {
                match http1::next_chunk(&self.buf).map_err(|e| anyhow!(e))? {
                    Chunk::Incomplete => self.fill().await?,
                    Chunk::Data {
                        start,
                        len,
                        consumed,
                    } => {
                        self.body.extend_from_slice(&self.buf[start..start + len]);
                        self.buf.drain(..consumed);
                    }
                    Chunk::End { consumed } => {
                        self.buf.drain(..consumed);
                        break;
                    }
                }
            }
        } else if let Some(len) = head.content_length {
            while self.buf.len() < len {
                self.fill().await?;
            }
            self.body.extend_from_slice(&self.buf[..len]);
            self.buf.drain(..len);
        } else if !(head.status < 200 || head.status == 204 || head.status == 304) {
            // No framing: the body runs to the end of the connection.
            while self.stream.read_buf(&mut self.buf).await? > 0 {}
            self.body.append(&mut self.buf);
            self.reconnect().await?;
        }
        if head.close {
            self.reconnect().await?;
        }
        Ok(head)
    }

    async fn reconnect(&mut self) -> Result<()> {
        self.buf.clear();
        self.stream = connect(self.target.addr).await?;
        Ok(())
    }

    /// Sends a request (already in `self.payload`) and hands its result to `f`.
    async fn request<T>(
        &mut self,
        id: u64,
        method: &str,
        name: Option<&str>,
        mut f: impl FnMut(&RawValue) -> Result<T>,
    ) -> Result<T> {
        let head = self.post(method, name).await?;
        if let Some(s) = &head.session {
            self.session = Some(s.clone());
        }
        if head.status != 200 {
            bail!(
                "HTTP {} for {method}: {}",
                head.status,
                String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
            );
        }
        let mut out = None;
        let mut take = |bytes: &[u8]| -> Result<bool> {
            match proto::parse_incoming(bytes)? {
                Incoming::Response { id: got, result } if got == id => {
                    out = Some(f(result)?);
                    Ok(true)
                }
                Incoming::Response { id: got, .. } => bail!("response id {got}, expected {id}"),
                Incoming::Other => Ok(false),
            }
        };
        if head.sse {
            http1::for_each_sse_data(&self.body, &mut take)?;
        } else {
            take(&self.body)?;
        }
        out.ok_or_else(|| anyhow!("no response to {method} (id {id}) in the HTTP answer"))
    }

    /// The legacy handshake (`initialize`, session id, `notifications/initialized`);
    /// nothing in the modern era.
    pub async fn handshake(&mut self, id: u64) -> Result<()> {
        if self.proto.era == Era::Modern {
            return Ok(());
        }
        self.payload = self.proto.hello(id).into_bytes();
        self.request(id, "initialize", None, |_| Ok(())).await?;
        self.initialized = true;
        if let Some(note) = self.proto.initialized() {
            self.payload.clear();
            self.payload.extend_from_slice(note.as_bytes());
            let head = self.post("notifications/initialized", None).await?;
            if !(200..300).contains(&head.status) {
                bail!("HTTP {} for notifications/initialized", head.status);
            }
        }
        Ok(())
    }

    /// One checked `tools/call` of `work` (`add` by default).
    pub async fn call(&mut self, work: &Work, id: u64) -> Result<()> {
        self.payload.clear();
        work.request(&self.proto, &mut self.payload, id);
        self.request(id, "tools/call", Some(work.tool_name()), |r| {
            work.check(r, id)
        })
        .await
    }
}

/// Settings of the HTTP measurement.
#[derive(Clone, Debug)]
pub struct HttpOpts {
    /// Server to spawn (`{port}` in its arguments), unless `url` is given.
    pub cmd: ServerCmd,
    /// Existing server to measure instead (no CPU or RSS figures then).
    pub url: Option<String>,
    /// Era and version.
    pub proto: Proto,
    /// Concurrent clients, each with its own connection (and session).
    pub clients: usize,
    /// Measured calls, all clients together (upper bound).
    pub calls: u64,
    /// Warm-up calls per client.
    pub warmup: u64,
    /// Time bound of the measured part.
    pub max: Duration,
    /// How long the server may take to accept connections.
    pub ready: Duration,
    /// Client runtime threads (1 = current-thread runtime).
    pub threads: usize,
    /// What each call does.
    pub work: Work,
    /// Extra request headers (`Name: value`).
    pub headers: Vec<String>,
    /// Other processes whose CPU time over the measured part is reported per call
    /// (label, pid; the pids of one label are summed), e.g. a proxy and the servers
    /// behind it.
    pub watch: Vec<(String, u32)>,
    /// A Redis whose `INFO commandstats` is read before and after the measured part.
    pub redis: Option<SocketAddr>,
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// HTTP throughput and latency with `clients` concurrent keep-alive clients.
pub fn run(o: &HttpOpts) -> Result<Value> {
    let (mut child, target) = match &o.url {
        Some(url) => (None, Target::parse(url)?),
        None => {
            let port = free_port()?;
            let child = o.cmd.spawn(false, Some(port))?;
            (
                Some(child),
                Target::parse(&format!("http://127.0.0.1:{port}/mcp"))?,
            )
        }
    };
    let target = target.with_headers(&o.headers)?;
    let pid = child.as_ref().map(|c| c.id());
    let rt = if o.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(o.threads)
            .enable_all()
            .build()?
    };
    let target = Arc::new(target);
    let result = (|| -> Result<Value> {
        rt.block_on(wait_ready(&target, child.as_mut(), o.ready))?;
        let (calls, elapsed, cpu, mut lat, extra) = rt.block_on(drive(o, target.clone(), pid))?;
        let rss = pid.map(procs::peak_rss_kb).transpose()?;
        let l = stats::latency(&mut lat);
        let mut out = json!({
            "clients": o.clients,
            "calls": calls,
            "elapsed_s": elapsed.as_secs_f64(),
            "calls_per_s": calls as f64 / elapsed.as_secs_f64(),
            "p50_us": l.p50_us, "p99_us": l.p99_us, "mean_us": l.mean_us, "max_us": l.max_us,
            "server_cpu_s": cpu.map(|c| c.as_secs_f64()),
            "cpu_us_per_call": cpu.map(|c| c.as_secs_f64() * 1e6 / calls.max(1) as f64),
            "peak_rss_kb": rss,
        });
        extra.write(calls, &mut out);
        Ok(out)
    })();
    drop(rt);
    if let Some(c) = child.as_mut() {
        procs::reap(c);
    }
    result
}

async fn wait_ready(
    target: &Target,
    mut child: Option<&mut std::process::Child>,
    limit: Duration,
) -> Result<()> {
    let until = Instant::now() + limit;
    loop {
        if TcpStream::connect(target.addr).await.is_ok() {
            return Ok(());
        }
        if let Some(c) = child.as_deref_mut()
            && let Some(status) = c.try_wait()?
        {
            bail!("server exited before listening ({status})");
        }
        if Instant::now() >= until {
            bail!("server not listening on {} after {limit:?}", target.addr);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

type Drive = (u64, Duration, Option<Duration>, Vec<u64>, Extra);

/// What the measured part cost outside the server's own process: the client's CPU, the
/// watched processes' CPU, Redis's commands.
#[derive(Default)]
struct Extra {
    /// Wall time of the measured part.
    elapsed: Duration,
    /// The machine's (busy, all, steal) CPU ticks over it.
    machine: (u64, u64, u64),
    client_cpu: Duration,
    watched: BTreeMap<String, Duration>,
    redis: Option<CmdStats>,
}

impl Extra {
    /// Adds `client_cpu_us_per_call`, `cpu_us_per_call_<label>` (and `cpu_s_<label>`) per
    /// watched label, and `redis_cmds_per_call`, `redis_usec_per_call` and `redis_cmds`
    /// (per command, per call) to the result line.
    fn write(&self, calls: u64, out: &mut Value) {
        let per = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
        out["client_cpu_us_per_call"] = json!(per(self.client_cpu));
        // What the machine had (cores × wall time) and what all its processes used, this
        // harness's and everyone else's, per call.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let tick = Duration::from_nanos(1_000_000_000 / procs::ticks_per_s());
        let (busy, all, steal) = self.machine;
        out["cores"] = json!(cores);
        out["machine_us_per_call"] = json!(per(self.elapsed * cores as u32));
        out["machine_busy_us_per_call"] = json!(per(tick * busy as u32));
        out["machine_busy_share"] = json!(busy as f64 / all.max(1) as f64);
        out["machine_steal_share"] = json!(steal as f64 / all.max(1) as f64);
        for (label, d) in &self.watched {
            out[format!("cpu_us_per_call_{label}")] = json!(per(*d));
            out[format!("cpu_s_{label}")] = json!(d.as_secs_f64());
        }
        if let Some(r) = &self.redis {
            let n = calls.max(1) as f64;
            out["redis_cmds_per_call"] = json!(r.calls() as f64 / n);
            out["redis_usec_per_call"] = json!(r.usec() as f64 / n);
            let by: serde_json::Map<String, Value> =
                r.0.iter()
                    .map(|(k, (c, _))| (k.clone(), json!(*c as f64 / n)))
                    .collect();
            out["redis_cmds"] = Value::Object(by);
        }
    }
}

/// CPU time of each watched pid, in order.
fn watched_cpu(watch: &[(String, u32)]) -> Result<Vec<Duration>> {
    watch.iter().map(|(_, p)| procs::cpu_time(*p)).collect()
}

async fn drive(o: &HttpOpts, target: Arc<Target>, pid: Option<u32>) -> Result<Drive> {
    let barrier = Arc::new(Barrier::new(o.clients + 1));
    let claimed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in 0..o.clients {
        let (barrier, claimed, target, proto) = (
            barrier.clone(),
            claimed.clone(),
            target.clone(),
            o.proto.clone(),
        );
        let (warmup, calls, max, work) = (o.warmup, o.calls, o.max, o.work.clone());
        tasks.push(tokio::spawn(async move {
            let base = (c as u64 + 1) * 1_000_000_000;
            let setup = async {
                let mut conn = Conn::connect(target, proto).await?;
                conn.handshake(base).await?;
                for i in 0..warmup {
                    conn.call(&work, base + 1 + i).await?;
                }
                Ok::<_, anyhow::Error>(conn)
            };
            let setup = tokio::time::timeout(Duration::from_secs(60), setup).await;
            // Every client reaches the barrier, ready or not, so that none waits forever.
            barrier.wait().await;
            let mut conn = setup.map_err(|_| anyhow!("client setup timed out"))??;
            let deadline = Instant::now() + max;
            let mut lat = Vec::with_capacity(4096);
            let mut id = base + 1 + warmup;
            while claimed.fetch_add(1, Ordering::Relaxed) < calls && Instant::now() < deadline {
                let t = Instant::now();
                conn.call(&work, id).await?;
                lat.push(t.elapsed().as_nanos() as u64);
                id += 1;
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    barrier.wait().await;
    let t0 = Instant::now();
    let cpu0 = pid.map(procs::cpu_time).transpose()?;
    let me = std::process::id();
    let (me0, watch0) = (procs::cpu_time(me)?, watched_cpu(&o.watch)?);
    let machine0 = procs::machine_ticks()?;
    // Read while the clients already call: a slow answer only delays this task.
    let redis0 = match o.redis {
        Some(addr) => Some(redis::commandstats(addr).await?),
        None => None,
    };
    let mut all = Vec::new();
    let mut first_err = None;
    for t in tasks {
        match t
            .await
            .map_err(|e| anyhow!("client task failed: {e}"))
            .and_then(|r| r)
        {
            Ok(mut lat) => all.append(&mut lat),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let elapsed = t0.elapsed();
    let cpu = match (pid, cpu0) {
        (Some(p), Some(c0)) => Some(procs::cpu_time(p)?.saturating_sub(c0)),
        _ => None,
    };
    let machine1 = procs::machine_ticks()?;
    let mut extra = Extra {
        elapsed,
        machine: (
            machine1.0.saturating_sub(machine0.0),
            machine1.1.saturating_sub(machine0.1),
            machine1.2.saturating_sub(machine0.2),
        ),
        client_cpu: procs::cpu_time(me)?.saturating_sub(me0),
        ..Extra::default()
    };
    for ((label, _), (c1, c0)) in o
        .watch
        .iter()
        .zip(watched_cpu(&o.watch)?.into_iter().zip(watch0))
    {
        *extra.watched.entry(label.clone()).or_default() += c1.saturating_sub(c0);
    }
    if let (Some(addr), Some(before)) = (o.redis, redis0) {
        extra.redis = Some(redis::commandstats(addr).await?.since(&before));
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if all.is_empty() {
        bail!("no call was answered");
    }
    Ok((all.len() as u64, elapsed, cpu, all, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_url() {
        let t = Target::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (t.addr.port(), t.path.as_str(), t.host.as_str()),
            (8080, "/mcp", "127.0.0.1:8080")
        );
    }

    #[test]
    fn url_without_path_defaults_to_mcp() {
        assert_eq!(Target::parse("http://127.0.0.1:9").unwrap().path, "/mcp");
    }

    #[test]
    fn extra_headers() {
        let t = Target::parse("http://127.0.0.1:9/mcp")
            .unwrap()
            .with_headers(&["Authorization: Bearer x.y".into()])
            .unwrap();
        assert_eq!(t.headers, "Authorization: Bearer x.y\r\n");
        let bad = |h: &str| {
            Target::parse("http://127.0.0.1:9/mcp")
                .unwrap()
                .with_headers(&[h.into()])
                .is_err()
        };
        assert!(bad("no colon") && bad("Bad Name: x") && bad("A: b\r\nC: d"));
    }

    #[test]
    fn non_loopback_refused() {
        assert!(Target::parse("http://10.0.0.1:80/mcp").is_err());
    }

    #[test]
    fn https_refused() {
        assert!(Target::parse("https://127.0.0.1:80/mcp").is_err());
    }
}
