//! Measurements over stdio: newline-delimited JSON-RPC on the server's pipes.
//!
//! The client is plain blocking I/O on OS threads (no async runtime): one thread in the
//! sequential case, a writer and a reader thread in the pipelined case.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{TrySendError, sync_channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::procs::{self, ServerCmd};
use crate::proto::{self, Incoming, Proto, ToolsPage, Work};
use crate::stats;

/// A running server spoken to over its stdin/stdout.
pub struct StdioServer {
    child: Child,
    pid: u32,
    w: BufWriter<ChildStdin>,
    r: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
    proto: Proto,
}

/// Reads one line into `line`; EOF is an error.
fn read_line(r: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> Result<()> {
    line.clear();
    if r.read_until(b'\n', line).context("reading server stdout")? == 0 {
        bail!("server closed its stdout");
    }
    Ok(())
}

impl StdioServer {
    /// Spawns the server and performs the era's opening exchange (`initialize` +
    /// `notifications/initialized`, or `server/discover`). Returns the server and the
    /// time from spawn to the first response.
    pub fn start(cmd: &ServerCmd, proto: &Proto) -> Result<(Self, Duration)> {
        let t0 = Instant::now();
        let mut child = cmd.spawn(true, None)?;
        let pid = child.id();
        let stdin = child.stdin.take().ok_or_else(|| anyhow!("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no stdout pipe"))?;
        let mut s = Self {
            child,
            pid,
            w: BufWriter::with_capacity(64 * 1024, stdin),
            r: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(4096),
            next_id: 1,
            proto: proto.clone(),
        };
        let id = s.take_id();
        let hello = s.proto.hello(id);
        s.roundtrip(hello.as_bytes(), id, |l| {
            proto::parse_incoming_as::<IgnoredAny>(l)
        })
        .with_context(|| format!("{} failed", s.proto.hello_method()))?;
        let elapsed = t0.elapsed();
        if let Some(note) = s.proto.initialized() {
            s.send(note.as_bytes())?;
        }
        Ok((s, elapsed))
    }

    /// Process id of the server.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn send(&mut self, line: &[u8]) -> Result<()> {
        self.w.write_all(line)?;
        self.w.write_all(b"\n")?;
        self.w.flush().context("writing to server stdin")
    }

    /// Sends one request and waits for its response, skipping notifications. `parse` reads
    /// each line that arrives (envelope and result in one pass).
    fn roundtrip<T>(
        &mut self,
        req: &[u8],
        id: u64,
        mut parse: impl FnMut(&[u8]) -> Result<Incoming<T>>,
    ) -> Result<T> {
        self.send(req)?;
        loop {
            read_line(&mut self.r, &mut self.line)?;
            match parse(&self.line)? {
                Incoming::Response { id: got, result } if got == id => return Ok(result),
                Incoming::Response { id: got, .. } => {
                    bail!("unexpected response id {got} while waiting for {id}")
                }
                Incoming::Other => {}
            }
        }
    }

    /// One `tools/call` of `work`, checked; returns its round-trip time.
    pub fn call(&mut self, work: &Work, buf: &mut Vec<u8>) -> Result<Duration> {
        let id = self.take_id();
        buf.clear();
        work.request(&self.proto, buf, id);
        let t = Instant::now();
        self.roundtrip(buf, id, |line| {
            proto::parse_incoming(line)?.try_map(|got, r| work.check(r, got))
        })?;
        Ok(t.elapsed())
    }

    /// Lists all tools, following every page; returns (tools, pages).
    pub fn list_all_tools(&mut self) -> Result<(usize, usize)> {
        let mut cursor: Option<String> = None;
        let (mut tools, mut pages) = (0, 0);
        loop {
            let id = self.take_id();
            let req = self.proto.tools_list(id, cursor.as_deref());
            let page = self.roundtrip(req.as_bytes(), id, |l| {
                proto::parse_incoming_as::<ToolsPage>(l)
            })?;
            let (n, next) = page.into_parts();
            tools += n;
            pages += 1;
            match next {
                Some(c) if pages < 100_000 => cursor = Some(c),
                _ => return Ok((tools, pages)),
            }
        }
    }

    /// Keeps `inflight` calls outstanding until `calls` were sent or `max` elapsed.
    pub fn pipelined(
        &mut self,
        work: &Work,
        calls: u64,
        inflight: usize,
        max: Duration,
    ) -> Result<Pipelined> {
        let first = self.next_id;
        let fence = first + calls;
        self.next_id = fence + 1;
        let sent = AtomicU64::new(0);
        let (tx, rx) = sync_channel::<()>(inflight.max(1));
        let cpu0 = procs::cpu_time(self.pid)?;
        let t0 = Instant::now();
        let deadline = t0 + max;
        let proto = &self.proto;
        let (w, r, line, sent) = (&mut self.w, &mut self.r, &mut self.line, &sent);

        let (received, elapsed) = std::thread::scope(|s| -> Result<(u64, Duration)> {
            let writer = s.spawn(move || -> Result<()> {
                let mut buf = Vec::with_capacity(512);
                let mut i = 0;
                let mut put = |w: &mut BufWriter<ChildStdin>, id: u64| -> Result<()> {
                    buf.clear();
                    work.request(proto, &mut buf, id);
                    buf.push(b'\n');
                    w.write_all(&buf).context("writing to server stdin")
                };
                while i < calls {
                    if i % 32 == 0 && Instant::now() >= deadline {
                        break;
                    }
                    match tx.try_send(()) {
                        Ok(()) => {}
                        Err(TrySendError::Full(())) => {
                            w.flush().context("writing to server stdin")?;
                            if tx.send(()).is_err() {
                                return Ok(());
                            }
                        }
                        Err(TrySendError::Disconnected(())) => return Ok(()),
                    }
                    put(w, first + i)?;
                    i += 1;
                }
                sent.store(i, Ordering::Release);
                // What is still buffered must reach the server before waiting for a slot:
                // those calls hold slots that only their answers free. (Without this flush,
                // a burst that ended with its window filled but unflushed waited forever.)
                w.flush().context("writing to server stdin")?;
                // The fence: one last call, after which the reader knows the count.
                if tx.send(()).is_err() {
                    return Ok(());
                }
                put(w, fence)?;
                w.flush().context("writing to server stdin")?;
                Ok(())
            });

            let mut received = 0u64;
            let mut expected: Option<u64> = None;
            let read = (|| -> Result<()> {
                loop {
                    read_line(r, line)?;
                    if let Incoming::Response { id, result } = proto::parse_incoming(line)? {
                        if id < first || id > fence {
                            bail!("unexpected response id {id}");
                        }
                        work.check(result, id)?;
                        if id == fence {
                            expected = Some(sent.load(Ordering::Acquire));
                        } else {
                            received += 1;
                        }
                        let _ = rx.recv();
                        if expected.is_some_and(|e| received >= e) {
                            return Ok(());
                        }
                    }
                }
            })();
            let elapsed = t0.elapsed();
            drop(rx);
            let wrote = writer
                .join()
                .map_err(|_| anyhow!("writer thread panicked"))?;
            read?;
            wrote?;
            Ok((received, elapsed))
        })?;
        let cpu = procs::cpu_time(self.pid)?.saturating_sub(cpu0);
        Ok(Pipelined {
            calls: received,
            elapsed,
            server_cpu: cpu,
        })
    }

    /// Ends the server (closes stdin, waits briefly, kills).
    pub fn stop(mut self) {
        procs::reap(&mut self.child);
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        procs::reap(&mut self.child);
    }
}

/// Result of one pipelined burst.
pub struct Pipelined {
    /// Calls answered (the fence excluded).
    pub calls: u64,
    /// First request to last response.
    pub elapsed: Duration,
    /// Server CPU time (user + system) over the burst.
    pub server_cpu: Duration,
}

/// Settings shared by the stdio measurements.
#[derive(Clone, Debug)]
pub struct StdioOpts {
    /// Server to spawn.
    pub cmd: ServerCmd,
    /// Era and version.
    pub proto: Proto,
    /// Measured calls (upper bound).
    pub calls: u64,
    /// Warm-up calls before measuring (upper bound).
    pub warmup: u64,
    /// Time bound of the measured part.
    pub max: Duration,
    /// Requests in flight (pipelined).
    pub inflight: usize,
    /// Spawns (cold start) or list iterations (tools/list).
    pub samples: usize,
    /// Minimum number of tools `tools/list` must return.
    pub expect_tools: usize,
    /// What each call does.
    pub work: Work,
}

/// Cold start: spawn to first response, `samples` times.
pub fn cold_start(o: &StdioOpts) -> Result<Value> {
    let mut ms = Vec::new();
    for _ in 0..o.samples.max(1) {
        let (server, t) = StdioServer::start(&o.cmd, &o.proto)?;
        server.stop();
        ms.push(t.as_secs_f64() * 1000.0);
    }
    let median = stats::median(&ms).unwrap_or(f64::NAN);
    let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(json!({ "median_ms": median, "min_ms": min, "samples_ms": ms }))
}

/// Runs `f` repeatedly for at most `count` times or `max`, whichever comes first.
fn bounded(count: u64, max: Duration, mut f: impl FnMut() -> Result<()>) -> Result<u64> {
    let until = Instant::now() + max;
    let mut n = 0;
    while n < count && (n % 16 != 0 || Instant::now() < until) {
        f()?;
        n += 1;
    }
    Ok(n)
}

/// Sequential `tools/call` latency (`add`, or the named tool of `--tool`).
pub fn sequential(o: &StdioOpts) -> Result<Value> {
    let (mut server, _) = StdioServer::start(&o.cmd, &o.proto)?;
    let mut buf = Vec::with_capacity(512);
    bounded(o.warmup, o.max / 4, || {
        server.call(&o.work, &mut buf).map(drop)
    })?;
    let mut ns = Vec::with_capacity(o.calls.min(1 << 22) as usize);
    let t0 = Instant::now();
    let cpu0 = procs::cpu_time(server.pid())?;
    bounded(o.calls, o.max, || {
        ns.push(server.call(&o.work, &mut buf)?.as_nanos() as u64);
        Ok(())
    })?;
    let elapsed = t0.elapsed();
    let cpu = procs::cpu_time(server.pid())?.saturating_sub(cpu0);
    let rss = procs::peak_rss_kb(server.pid())?;
    server.stop();
    let calls = ns.len();
    let l = stats::latency(&mut ns);
    Ok(json!({
        "calls": calls,
        "p50_us": l.p50_us, "p99_us": l.p99_us, "mean_us": l.mean_us, "max_us": l.max_us,
        "calls_per_s": calls as f64 / elapsed.as_secs_f64(),
        "cpu_us_per_call": cpu.as_secs_f64() * 1e6 / calls.max(1) as f64,
        "peak_rss_kb": rss,
    }))
}

/// Pipelined throughput with `inflight` requests outstanding, server CPU per call.
pub fn pipelined(o: &StdioOpts) -> Result<Value> {
    let (mut server, _) = StdioServer::start(&o.cmd, &o.proto)?;
    if o.warmup > 0 {
        server.pipelined(&o.work, o.warmup, o.inflight, o.max / 4)?;
    }
    let p = server.pipelined(&o.work, o.calls, o.inflight, o.max)?;
    let rss = procs::peak_rss_kb(server.pid())?;
    server.stop();
    if p.calls == 0 {
        bail!("no call was answered");
    }
    Ok(json!({
        "calls": p.calls,
        "inflight": o.inflight,
        "elapsed_s": p.elapsed.as_secs_f64(),
        "calls_per_s": p.calls as f64 / p.elapsed.as_secs_f64(),
        "server_cpu_s": p.server_cpu.as_secs_f64(),
        "cpu_us_per_call": p.server_cpu.as_secs_f64() * 1e6 / p.calls as f64,
        "peak_rss_kb": rss,
    }))
}

/// `tools/list` latency (all pages followed) on a server with many tools.
pub fn tools_list(o: &StdioOpts) -> Result<Value> {
    let (mut server, _) = StdioServer::start(&o.cmd, &o.proto)?;
    let t = Instant::now();
    let (tools, pages) = server.list_all_tools()?;
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    if tools < o.expect_tools {
        bail!(
            "tools/list returned {tools} tools, expected at least {}",
            o.expect_tools
        );
    }
    let mut ns = Vec::new();
    bounded(o.samples.max(1) as u64, o.max, || {
        let t = Instant::now();
        let (n, _) = server.list_all_tools()?;
        ns.push(t.elapsed().as_nanos() as u64);
        if n != tools {
            bail!("tools/list returned {n} tools, then {tools}");
        }
        Ok(())
    })?;
    let rss = procs::peak_rss_kb(server.pid())?;
    server.stop();
    let l = stats::latency(&mut ns);
    Ok(json!({
        "tools": tools, "pages": pages, "iterations": ns.len(),
        "median_ms": l.p50_us / 1000.0, "p99_ms": l.p99_us / 1000.0, "first_ms": first_ms,
        "peak_rss_kb": rss,
    }))
}
