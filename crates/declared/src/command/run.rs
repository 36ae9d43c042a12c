//! Running the program: spawned in its own process group with a cleared environment, stdin
//! fed, stdout and stderr read together under byte caps; its whole process tree is owned by
//! a [`Tree`], which ends it after the program exits, on timeout, when stdout passes its
//! cap, and when the call's future is dropped (cancellation, the server's `--call-timeout`).

use super::cwd::{self, Cwd};
use super::tree::{self, Tree};
use super::{CommandAction, argv};
use crate::error::{RunError, Stream};
use crate::{Output, RunContext};
use command_fds::{CommandFdExt, FdMapping};
use rustix::process::Pid;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::pin::{Pin, pin};
use std::process::{ExitStatus, Stdio};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::Instant;
use toolwright_toolfile::paths::Paths;

/// How much of stderr goes into a failure's text.
const TAIL: usize = 2048;

/// Everything a call fills in before the program starts.
struct Filled<'r> {
    argv: Vec<String>,
    env: BTreeMap<OsString, OsString>,
    stdin: Option<Vec<u8>>,
    dir: Cwd,
    paths: Paths<'r>,
}

pub(super) async fn run(
    action: &CommandAction,
    args: &Map<String, Value>,
    ctx: &RunContext<'_>,
) -> Result<Output, RunError> {
    let filled = fill(action, args, ctx)?;
    let program = locate(&action.program, &filled.env).ok_or_else(|| RunError::Spawn {
        program: action.program.clone(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not found on the program's PATH",
        ),
    })?;
    let (mut cmd, dir, stdin) = command(&program, filled, ctx)?;
    tree::become_subreaper();
    let start = Tree::now();
    let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: action.program.clone(),
        source,
    })?;
    // The working directory and the path descriptors are the child's now.
    drop(dir);
    drop(cmd);
    // Declared after `child`, so dropped before it: the tree is ended while the leader is
    // still unreaped (its descendants are found through it), then `kill_on_drop` kills it.
    let mut tree = Tree::new(
        child
            .id()
            .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?)),
        start,
    );

    // The program started, the rest (the timer above all) waits for a runtime task to poll
    // it: see [`Handoff`].
    Handoff::default().await;
    let deadline = Instant::now()
        .checked_add(ctx.timeout)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
    let result = supervise(action, &mut child, &mut tree, stdin, deadline, ctx).await;
    // Whatever happened, nothing of the call is left running, and the leader is reaped.
    tree.end();
    if result.is_err() {
        // The leader by its pid too, should the group kill have failed.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    let (status, stdout, stderr) = result?;
    outcome(action, status, stdout, &stderr)
}

/// Pending until it is polled by a runtime task (or has been polled [`Handoff::MAX`]
/// times outside one), waking itself each time.
///
/// The server polls a call twice on the thread that read the request, with a waker that
/// does nothing, then hands it to a runtime worker as a task. Waiting set up before that is
/// put off to the worker: a timer set from outside the runtime, above all, wakes the parked
/// worker only to have it note the deadline, a wake-up and a park per call, on the CPU the
/// program is starting on. The bound keeps a caller that drives the call with `block_on`
/// (never a task) from polling it for ever; it then costs that caller two polls.
#[derive(Default)]
struct Handoff {
    polls: u8,
}

impl Handoff {
    const MAX: u8 = 2;
}

impl std::future::Future for Handoff {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polls >= Handoff::MAX || tokio::task::try_id().is_some() {
            return Poll::Ready(());
        }
        self.polls += 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Fills argv, environment, stdin and working directory in: everything that can be refused
/// is refused before anything starts. `{name:path}` values are opened now, and the program
/// gets the descriptors, never a name to re-open.
fn fill<'r>(
    action: &CommandAction,
    args: &Map<String, Value>,
    ctx: &RunContext<'r>,
) -> Result<Filled<'r>, RunError> {
    let mut paths = Paths::new(ctx.roots);
    let argv = argv::build(&action.argv, args, &mut paths)?;
    let env = action.env.build(args, &mut paths)?;
    let stdin = match &action.stdin {
        Some(t) => Some(
            t.render_in(args, &argv::server_env, &argv::verbatim, &mut paths)?
                .unwrap_or_default()
                .into_bytes(),
        ),
        None => None,
    };
    let dir = match &action.cwd {
        Some(t) => t.render(args, &argv::server_env, &argv::verbatim)?,
        None => None,
    };
    let dir = cwd::open(dir.as_deref(), ctx.roots)?;
    Ok(Filled {
        argv,
        env,
        stdin,
        dir,
        paths,
    })
}

/// The command to spawn: `program` with the filled argv and a cleared environment (plus
/// the call's trace context), in its own process group, the path descriptors mapped to
/// their numbers. Also the working directory and stdin, which live until the spawn.
fn command(
    program: &std::path::Path,
    filled: Filled<'_>,
    ctx: &RunContext<'_>,
) -> Result<(Command, Cwd, Option<Vec<u8>>), RunError> {
    let Filled {
        argv,
        env,
        stdin,
        dir,
        paths,
    } = filled;
    let mut cmd = Command::new(program);
    cmd.args(&argv).env_clear().envs(&env);
    if let Some((parent, state)) = &ctx.trace {
        cmd.env("TRACEPARENT", parent);
        if let Some(s) = state {
            cmd.env("TRACESTATE", s);
        }
    }
    if let Some(path) = dir.path() {
        cmd.current_dir(path);
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0)
    .kill_on_drop(true);
    if !paths.is_empty() {
        // Mapped between fork and exec (so this call forks; one without paths keeps
        // `posix_spawn`). The server's copies stay close-on-exec: other calls' children
        // never see them.
        let mappings = paths
            .into_held()
            .map(|(child_fd, parent_fd)| FdMapping {
                parent_fd,
                child_fd,
            })
            .collect();
        cmd.fd_mappings(mappings)
            .map_err(|e| RunError::Io(std::io::Error::other(e)))?;
    }
    Ok((cmd, dir, stdin))
}

/// The call's output when the exit status is one the tool accepts, else its failure.
fn outcome(
    action: &CommandAction,
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: &[u8],
) -> Result<Output, RunError> {
    match status.code() {
        Some(code) if action.ok_exit.contains(&code) => {
            let mut meta = Map::new();
            meta.insert("exitCode".into(), code.into());
            Ok(Output {
                bytes: stdout,
                meta,
            })
        }
        // Some programs (GNU units among them) say what went wrong on stdout: with nothing
        // on stderr, the end of stdout explains the failure instead.
        _ => Err(RunError::Exit {
            program: action.program.clone(),
            status: describe(status),
            stderr_tail: if stderr.iter().all(u8::is_ascii_whitespace) {
                tail_text(&stdout)
            } else {
                tail_text(stderr)
            },
        }),
    }
}

/// Waits for the program and its output, within the deadline and until cancelled.
async fn supervise(
    action: &CommandAction,
    child: &mut Child,
    tree: &mut Tree,
    stdin: Option<Vec<u8>>,
    deadline: Instant,
    ctx: &RunContext<'_>,
) -> Result<(ExitStatus, Vec<u8>, Vec<u8>), RunError> {
    let out = child.stdout.take().ok_or_else(|| io_gone("stdout"))?;
    let err = child.stderr.take().ok_or_else(|| io_gone("stderr"))?;
    let input = child.stdin.take();
    let max_stdout = action.max_stdout;
    let max_stderr = usize::try_from(action.max_stderr).unwrap_or(usize::MAX);
    let mut io = pin!(async move {
        let (out, err, ()) = tokio::try_join!(
            read_capped(out, max_stdout),
            async { Ok(read_tail(err, max_stderr).await?) },
            async { Ok(feed(input, stdin).await?) },
        )?;
        Ok::<_, RunError>((out, err))
    });
    let mut output = None;
    let mut status = None;
    loop {
        if let (Some(s), Some(_)) = (status, &output) {
            let (out, err) = output.take().unwrap_or_default();
            return Ok((s, out, err));
        }
        tokio::select! {
            () = ctx.cancel.cancelled() => return Err(RunError::Cancelled),
            () = tokio::time::sleep_until(deadline) => return Err(RunError::Timeout(ctx.timeout)),
            r = &mut io, if output.is_none() => output = Some(r?),
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                // The leader is done: what it left behind goes now, which also closes their
                // ends of the pipes so reading can finish.
                tree.leader_reaped();
                tree.end();
            }
        }
    }
}

fn io_gone(what: &str) -> RunError {
    RunError::Io(std::io::Error::other(format!(
        "the program's {what} was not captured"
    )))
}

/// Reads all of `r`; more than `cap` bytes is [`RunError::TooLarge`] (reading stops there).
async fn read_capped(r: impl AsyncRead + Unpin, cap: u64) -> Result<Vec<u8>, RunError> {
    let mut out = Vec::new();
    r.take(cap.saturating_add(1)).read_to_end(&mut out).await?;
    if out.len() as u64 > cap {
        return Err(RunError::TooLarge {
            stream: Stream::Stdout,
            limit: cap,
        });
    }
    Ok(out)
}

/// Reads all of `r`, keeping the last `cap` bytes.
async fn read_tail(mut r: impl AsyncRead + Unpin, cap: usize) -> std::io::Result<Vec<u8>> {
    let mut keep = Vec::new();
    let mut buf = vec![0; 16 << 10];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        keep.extend_from_slice(&buf[..n]);
        if keep.len() > cap.saturating_mul(2).max(buf.len()) {
            keep.drain(..keep.len() - cap);
        }
    }
    if keep.len() > cap {
        keep.drain(..keep.len() - cap);
    }
    Ok(keep)
}

/// Writes `bytes` to the program's stdin and closes it; a program that stops reading is
/// not an error.
async fn feed(w: Option<ChildStdin>, bytes: Option<Vec<u8>>) -> std::io::Result<()> {
    let (Some(mut w), Some(bytes)) = (w, bytes) else {
        return Ok(());
    };
    match w.write_all(&bytes).await {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// "exited with status 2", "was killed by signal 9".
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => format!("ended: {status}"),
    }
}

/// The last [`TAIL`] bytes of stderr as text, starting at a character boundary.
fn tail_text(stderr: &[u8]) -> String {
    let mut start = stderr.len().saturating_sub(TAIL);
    while start < stderr.len() && start > 0 && (stderr[start] & 0xC0) == 0x80 {
        start += 1;
    }
    String::from_utf8_lossy(&stderr[start..]).into_owned()
}

/// The program to start: a path as written, a bare name looked up on the child's own `PATH`
/// (the one the program will see, not the server's). Given as a path, std can start it with
/// `posix_spawn`; a bare name with a `PATH` of the child's own would make it fork.
fn locate(
    program: &str,
    env: &std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        return Some(program.into());
    }
    toolwright_net::on_path(program, env.get(std::ffi::OsStr::new("PATH"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails() {
        table! { |bytes: Vec<u8>, want: String| assert_eq!(tail_text(&bytes), want);
            (b"short".to_vec(), "short".to_owned());
            ([b"x".repeat(5000), b"END".to_vec()].concat(), format!("{}END", "x".repeat(TAIL - 3)));
            // A cut in the middle of "é" (2 bytes) starts after it.
            ([b"a".repeat(10), "é".repeat(TAIL / 2).into_bytes(), b"!".to_vec()].concat(), format!("{}!", "é".repeat(TAIL / 2 - 1)));
            (b"bad \xff".to_vec(), "bad \u{FFFD}".to_owned());
        }
    }

    /// Outside a task (as the server's first polls, or `block_on`) the handoff waits at
    /// most [`Handoff::MAX`] polls; inside a task it is ready at once.
    #[test]
    fn handoff_waits_for_a_task_within_its_bound() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut h = pin!(Handoff::default());
        for _ in 0..Handoff::MAX {
            assert!(h.as_mut().poll(&mut cx).is_pending());
        }
        assert!(h.as_mut().poll(&mut cx).is_ready());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let polls = rt.block_on(async {
            tokio::spawn(async {
                let mut n = 0;
                let mut h = pin!(Handoff::default());
                std::future::poll_fn(|cx| {
                    n += 1;
                    h.as_mut().poll(cx)
                })
                .await;
                n
            })
            .await
            .unwrap()
        });
        assert_eq!(polls, 1);
    }

    #[tokio::test]
    async fn tail_keeps_the_end() {
        let data = [b"x".repeat(100_000), b"END".to_vec()].concat();
        let kept = read_tail(&data[..], 64).await.unwrap();
        assert_eq!(kept.len(), 64);
        assert!(kept.ends_with(b"xEND"));
        assert_eq!(read_tail(&b"abc"[..], 0).await.unwrap(), b"");
    }
}
