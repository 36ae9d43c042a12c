//! Where a jq expression runs: in a child process when the binary has enabled it, else on a
//! thread of this process.
//!
//! jaq cannot be interrupted: its evaluation has no fuel, no step callback and no
//! cancellation point (a native filter is only reached when the program calls one, and
//! `def f: f; f` or `last(range(1e12))` never returns to the caller between steps). So a
//! real time limit needs a process that can be killed:
//!
//! - **Child runner** (the `toolwright` binary calls [`use_child_runner`] at start): the
//!   binary is re-executed as `/proc/self/exe __toolwright_jq`, with an empty environment.
//!   It reads one request on stdin (a JSON header line `{"jq": CODE, "cpu_seconds": N}`,
//!   then the input as JSON text), sets `RLIMIT_CPU` (N seconds soft, one more hard) and
//!   `RLIMIT_AS` ([`CHILD_MEMORY`]) on itself, and answers on stdout with `ok` and a line
//!   feed then the output as JSON text, or `error` and a line feed then the message. A
//!   request it cannot serve (not a request, limits it cannot set) is answered `failed`, a
//!   line feed and why, with exit status 2: the parent reports it as the runner's failure
//!   (and logs it through `tracing`), as it does with what the Rust runtime writes on the
//!   child's stderr when the child dies. The child writes nothing else on stderr: it has no
//!   log of its own (no subscriber; `TOOLWRIGHT_LOG` and the JSON log format are the
//!   parent's), so its one way to say something is its answer. The parent kills it at the
//!   wall deadline. A stack overflow, an allocation past the memory limit or a CPU limit
//!   ends the child, never the server.
//! - **In-process** (no runner configured: library unit tests): a thread evaluates, and the
//!   deadline is checked between outputs only. A call still gets its answer at the deadline,
//!   but an expression that never yields keeps its thread busy, and a stack overflow there
//!   would end the process. Weaker, and documented as such.

use super::jq;
use crate::error::RunError;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

/// The hidden first argument that makes the `toolwright` binary a jq child.
pub const CHILD_ARG: &str = "__toolwright_jq";

/// The child's address-space limit (`RLIMIT_AS`): 1 GiB.
pub const CHILD_MEMORY: u64 = 1 << 30;

/// Most bytes of a child's answer read (its stdout).
const MAX_ANSWER: usize = 64 << 20;

/// Most bytes of a child's stderr kept for a message.
const MAX_STDERR: usize = 2048;

/// Stack of the in-process thread.
const THREAD_STACK: usize = 64 << 20;

static RUNNER: OnceLock<PathBuf> = OnceLock::new();

/// Makes jq expressions run in a child process: this very binary (`/proc/self/exe`), which
/// must call [`jq_child_main`] when its first argument is [`CHILD_ARG`]. Call once, at
/// start; later calls are ignored.
pub fn use_child_runner() {
    use_child_runner_at("/proc/self/exe");
}

/// Like [`use_child_runner`], with the program to run (a `toolwright` binary); for tests
/// that drive shaping from outside the binary.
pub fn use_child_runner_at(program: impl Into<PathBuf>) {
    let _ = RUNNER.set(program.into());
}

#[derive(Deserialize)]
struct Request {
    jq: String,
    cpu_seconds: u64,
}

/// The jq child's `main`: reads one request on stdin, answers on stdout (see the module
/// documentation). Exits 0 after answering, 2 when the request cannot be read.
pub fn jq_child_main() -> ExitCode {
    let mut request = Vec::new();
    if std::io::stdin().read_to_end(&mut request).is_err() {
        return ExitCode::from(2);
    }
    let (head, body) = match request.iter().position(|&b| b == b'\n') {
        Some(i) => (&request[..i], &request[i + 1..]),
        None => (&request[..], &[][..]),
    };
    let Ok(req) = serde_json::from_slice::<Request>(head) else {
        return refuse(&format!(
            "toolwright: {CHILD_ARG}: the first line must be {{\"jq\": ..., \"cpu_seconds\": ...}}"
        ));
    };
    if let Err(e) = limit_self(req.cpu_seconds.max(1)) {
        return refuse(&format!(
            "toolwright: {CHILD_ARG}: cannot set resource limits: {e}"
        ));
    }
    let answer = jq::compile(&req.jq).and_then(|filter| {
        let input = jaq_json::read::parse_single(body)
            .map_err(|e| jq::JqError::Input(format!("the jq input is not JSON: {e:?}")))?;
        jq::run(&filter, input, &|| true)
    });
    let mut out = std::io::stdout().lock();
    let written = match answer {
        Ok(v) => out
            .write_all(b"ok\n")
            .and_then(|()| serde_json::to_writer(&mut out, &v).map_err(std::io::Error::other)),
        Err(m) => out
            .write_all(b"error\n")
            .and_then(|()| out.write_all(m.to_string().as_bytes())),
    };
    if written.is_err() {
        return ExitCode::from(2);
    }
    let _ = out.flush();
    ExitCode::SUCCESS
}

/// Answers `failed` with `why` (see the module documentation) and exits 2.
fn refuse(why: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(FAILED)
        .and_then(|()| out.write_all(why.as_bytes()))
        .and_then(|()| out.flush());
    ExitCode::from(2)
}

/// How the child's answer starts when it could not serve the request.
const FAILED: &[u8] = b"failed\n";

fn limit_self(cpu_seconds: u64) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(cpu_seconds),
            maximum: Some(cpu_seconds + 1),
        },
    )?;
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(CHILD_MEMORY),
            maximum: Some(CHILD_MEMORY),
        },
    )?;
    Ok(())
}

/// Runs `code` on `input` within `limit`: in the child runner when one is configured, else
/// in-process.
pub(crate) async fn evaluate(code: &str, input: Value, limit: Duration) -> Result<Value, RunError> {
    match RUNNER.get() {
        Some(program) => in_child(program, code, &input, limit).await,
        None => in_thread(code, input, limit).await,
    }
}

fn past_limit(limit: Duration) -> RunError {
    RunError::Shape(format!(
        "the jq expression ran past its time limit of {}",
        humantime::format_duration(limit)
    ))
}

async fn in_child(
    program: &Path,
    code: &str,
    input: &Value,
    limit: Duration,
) -> Result<Value, RunError> {
    let cpu_seconds = limit.as_secs() + u64::from(limit.subsec_nanos() > 0);
    let mut payload = serde_json::to_vec(&json!({ "jq": code, "cpu_seconds": cpu_seconds }))
        .map_err(|e| RunError::Shape(e.to_string()))?;
    payload.push(b'\n');
    serde_json::to_writer(&mut payload, input).map_err(|e| RunError::Shape(e.to_string()))?;

    let mut child = tokio::process::Command::new(program)
        .arg(CHILD_ARG)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| RunError::Shape(format!("could not start the jq runner: {e}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(RunError::Shape("the jq runner has no pipes".into()));
    };
    let exchange = async {
        let write = async move {
            // A child that dies early closes its stdin: its status says why.
            let _ = stdin.write_all(&payload).await;
        };
        let (_, out, err) = tokio::join!(
            write,
            read_capped(stdout, MAX_ANSWER),
            read_capped(stderr, MAX_STDERR)
        );
        let status = child.wait().await;
        (out, err, status)
    };
    let finished = tokio::time::timeout(limit, exchange).await;
    let (out, err, status) = match finished {
        Ok(done) => done,
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(past_limit(limit));
        }
    };
    let status = status?;
    let out = out?;
    let err = err.unwrap_or_default();
    if status.success()
        && let Some(answer) = parse_answer(&out)
    {
        return answer;
    }
    // The child's own word on why it failed (a fault of the server's, so logged), else
    // what the runtime wrote as it died (the expression's doing: the call's error says it).
    let text = match out.strip_prefix(FAILED) {
        Some(why) => {
            let text = crashed(status, why, limit);
            tracing::warn!("the jq runner failed: {text}");
            text
        }
        None => crashed(status, &err, limit),
    };
    Err(RunError::Shape(text))
}

fn parse_answer(out: &[u8]) -> Option<Result<Value, RunError>> {
    if let Some(value) = out.strip_prefix(b"ok\n") {
        let v = serde_json::from_slice(value)
            .map_err(|e| RunError::Shape(format!("the jq runner's answer is not JSON: {e}")));
        return Some(v);
    }
    let message = out.strip_prefix(b"error\n")?;
    Some(Err(RunError::Shape(
        String::from_utf8_lossy(message).into_owned(),
    )))
}

fn crashed(status: std::process::ExitStatus, stderr: &[u8], limit: Duration) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let tail = String::from_utf8_lossy(stderr);
    let tail = tail.trim();
    let why = match status.signal() {
        // SIGXCPU, or SIGKILL at the hard CPU limit.
        Some(24 | 9) => {
            return format!(
                "the jq expression ran past its time limit of {}",
                humantime::format_duration(limit)
            );
        }
        Some(sig) => format!("was killed by signal {sig}"),
        None => format!("exited with status {}", status.code().unwrap_or(-1)),
    };
    let mut text = format!(
        "the jq expression's runner {why} (a stack overflow, or past its memory limit of {} MiB?)",
        CHILD_MEMORY >> 20
    );
    if !tail.is_empty() {
        text.push_str(": ");
        text.push_str(tail);
    }
    text
}

/// Reads `r` to its end, keeping the first `cap` bytes (the rest is read and dropped, so the
/// writer never blocks on a full pipe).
async fn read_capped(mut r: impl AsyncRead + Unpin, cap: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok(kept);
        }
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

async fn in_thread(code: &str, input: Value, limit: Duration) -> Result<Value, RunError> {
    let deadline = Instant::now() + limit;
    let code = code.to_owned();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("jq".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let answer = jq::compile(&code).and_then(|filter| {
                let input = jq::to_val(&input)?;
                jq::run(&filter, input, &|| Instant::now() < deadline)
            });
            let _ = tx.send(answer);
        })
        .map_err(|e| RunError::Shape(format!("could not start a jq thread: {e}")))?;
    match tokio::time::timeout_at(deadline.into(), rx).await {
        Err(_) => Err(past_limit(limit)),
        Ok(Err(_)) => Err(RunError::Shape(
            "the jq expression failed (jaq panicked)".into(),
        )),
        Ok(Ok(Err(jq::JqError::TimedOut))) => Err(past_limit(limit)),
        Ok(Ok(answer)) => answer.map_err(|e| RunError::Shape(e.to_string())),
    }
}
