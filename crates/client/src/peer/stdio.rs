//! The stdio link: a child process, one JSON-RPC message per line each way. One reader
//! task dispatches everything the child writes. Lines to the child are queued and one
//! writer task writes them: while it is busy writing, later lines gather in the queue and
//! go in its next `write`, so a burst of calls costs one syscall (and one wake-up of the
//! child) rather than one per line, and the writer is woken only when it was idle. A line
//! sent while the writer is idle with nothing queued is written at once by its sender, with
//! a non-blocking `write` (what it cannot take is queued): a call alone does not wait for a
//! task to be woken. A call dropped half-way cannot leave half a line in the pipe, since a
//! sender writes under the queue's lock and queues what remains.
//!
//! The server runs in a process group of its own, which ends with the link: closing it
//! closes stdin and, after a grace, kills the group (a wrapper such as `npx` and the
//! server it started alike); dropping it kills the group at once.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use toolwright_jsonrpc::LineDecoder;

use super::PeerOptions;
use super::route::{Inner, Origin};
use crate::{ClientError, envelope};

/// How much of the server's stderr is kept for error messages.
const STDERR_KEEP: usize = 4096;

/// Lines waiting for the writer task.
#[derive(Default)]
struct Outbox {
    /// Whole lines, in the order they were sent.
    queued: Vec<u8>,
    /// The writer waits for work: the next line wakes it.
    idle: bool,
    /// Nothing more is accepted: stdin is closing, or a write failed.
    closed: bool,
    /// A second descriptor of the child's stdin (non-blocking, as tokio made it): with the
    /// writer idle and nothing queued, a sender writes its line at once through it, so a
    /// call alone reaches the child without waiting for the writer task to be woken.
    /// Dropped with the queue's end, so the child sees its stdin close.
    direct: Option<OwnedFd>,
}

/// The queue to the child's stdin, shared by the link and its writer task.
#[derive(Default)]
struct Queue {
    outbox: Mutex<Outbox>,
    wake: tokio::sync::Notify,
}

/// A running server process.
pub(super) struct StdioLink {
    program: String,
    queue: Arc<Queue>,
    /// The writer task; it ends once the queue is closed and drained.
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    child: tokio::sync::Mutex<Child>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// The task copying stderr; it ends when the server closes stderr.
    stderr_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// How the child ended, once the reader saw its stdout close.
    exit: Mutex<Option<String>>,
    /// Its process group (the child's pid).
    group: Option<Pid>,
}

impl Drop for StdioLink {
    fn drop(&mut self) {
        // The writer ends too (it holds only the queue and stdin).
        {
            let mut out = self.queue.outbox.lock();
            out.closed = true;
            out.direct = None;
        }
        self.queue.wake.notify_one();
        self.kill_group();
    }
}

impl StdioLink {
    /// Starts `program args…` with piped stdio, in the environment and directory
    /// `options` give. Returns the link and the child's stdout, for [`read`].
    pub(super) fn spawn(
        program: &str,
        args: &[String],
        options: &PeerOptions,
    ) -> Result<(StdioLink, ChildStdout), ClientError> {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if options.env_clear {
            command.env_clear();
        }
        command.envs(options.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &options.cwd {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|source| ClientError::Spawn {
            program: program.to_owned(),
            source,
        })?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        let stdin = child.stdin.take().expect("stdin is piped");
        let queue = Arc::new(Queue::default());
        queue.outbox.lock().direct = second_stdin(&stdin);
        let writer = tokio::spawn(write_queued(queue.clone(), stdin));
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEEP)));
        let keep = Arc::clone(&stderr);
        let stderr_task = tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut k = keep.lock();
                k.extend(&buf[..n]);
                while k.len() > STDERR_KEEP {
                    k.pop_front();
                }
            }
        });
        let link = StdioLink {
            program: program.to_owned(),
            queue,
            writer: Mutex::new(Some(writer)),
            child: tokio::sync::Mutex::new(child),
            stderr,
            stderr_task: Mutex::new(Some(stderr_task)),
            exit: Mutex::new(None),
            group,
        };
        Ok((link, stdout))
    }

    /// What the server wrote to stderr lately.
    pub(super) fn stderr_tail(&self) -> String {
        let k = self.stderr.lock();
        let bytes: Vec<u8> = k.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Why the connection is dead, for [`PeerHandler::closed`](super::PeerHandler::closed).
    pub(super) fn why_dead(&self) -> String {
        let exit = self
            .exit
            .lock()
            .clone()
            .unwrap_or_else(|| "closed".to_owned());
        let tail = self.stderr_tail();
        let tail = tail.trim();
        if tail.is_empty() {
            format!("{} {exit}", self.program)
        } else {
            format!("{} {exit}; its stderr ended with:\n{tail}", self.program)
        }
    }

    /// Queues one `\n`-terminated line for the child; false when its stdin is gone (a
    /// write failed, or the link is closing).
    pub(super) fn send(&self, line: &[u8]) -> bool {
        let wake = {
            let mut out = self.queue.outbox.lock();
            if out.closed {
                return false;
            }
            let mut rest = line;
            if out.idle
                && out.queued.is_empty()
                && let Some(fd) = &out.direct
            {
                // The writer is parked and nothing is ahead of this line: write it here.
                match rustix::io::write(fd, line) {
                    Ok(n) if n == line.len() => return true,
                    Ok(n) => rest = &line[n..],
                    Err(rustix::io::Errno::AGAIN) => {}
                    Err(_) => {
                        out.closed = true;
                        out.direct = None;
                        return false;
                    }
                }
            }
            out.queued.extend_from_slice(rest);
            std::mem::take(&mut out.idle)
        };
        if wake {
            self.queue.wake.notify_one();
        }
        true
    }

    /// Closes stdin (after what is queued is written), waits up to `grace` for the process
    /// to exit, then kills its process group (what it started too) and waits for it.
    pub(super) async fn close(&self, grace: Duration) {
        self.queue.outbox.lock().closed = true;
        // The writer drops the other descriptor once the queue is drained.
        self.queue.wake.notify_one();
        let writer = self.writer.lock().take();
        if let Some(writer) = writer {
            // The writer drops stdin once the queue is drained; a child that reads nothing
            // cannot hold this up past the grace.
            let _ = tokio::time::timeout(grace, writer).await;
        }
        let mut child = self.child.lock().await;
        let exited = tokio::time::timeout(grace, child.wait()).await.is_ok();
        self.kill_group();
        if !exited {
            let _ = child.kill().await;
        }
    }

    /// Kills whatever is left of the server's process group.
    fn kill_group(&self) {
        if let Some(pid) = self.group {
            // ESRCH when nothing is left: fine.
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }

    /// After stdout closed: wait briefly for the last of stderr and the exit status.
    async fn settle(&self) {
        let task = self.stderr_task.lock().take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        let status = match self.child.try_lock() {
            Ok(mut child) => {
                match tokio::time::timeout(Duration::from_millis(200), child.wait()).await {
                    Ok(Ok(status)) => format!("exited ({status})"),
                    _ => "closed its stdout".to_owned(),
                }
            }
            Err(_) => "was closed".to_owned(),
        };
        *self.exit.lock() = Some(status);
    }
}

/// A second descriptor of `stdin`, when it is non-blocking (a full pipe then refuses a
/// write instead of holding up the sender's thread).
fn second_stdin(stdin: &ChildStdin) -> Option<OwnedFd> {
    let flags = rustix::fs::fcntl_getfl(stdin).ok()?;
    if !flags.contains(rustix::fs::OFlags::NONBLOCK) {
        return None;
    }
    stdin.as_fd().try_clone_to_owned().ok()
}

/// The writer task: writes what is queued, all of it in one `write_all`, until the queue
/// is closed and drained or a write fails (the child's stdin is gone: the reader sees the
/// child's end and fails the calls, with its stderr).
async fn write_queued(queue: Arc<Queue>, mut stdin: ChildStdin) {
    let mut batch = Vec::new();
    loop {
        {
            let mut out = queue.outbox.lock();
            if out.queued.is_empty() {
                if out.closed {
                    out.direct = None;
                    break;
                }
                out.idle = true;
            } else {
                std::mem::swap(&mut out.queued, &mut batch);
            }
        }
        if batch.is_empty() {
            queue.wake.notified().await;
            continue;
        }
        if stdin.write_all(&batch).await.is_err() {
            let mut out = queue.outbox.lock();
            out.closed = true;
            out.direct = None;
            out.queued = Vec::new();
            break;
        }
        batch.clear();
    }
}

/// The reader task: dispatches every message the child writes, until its stdout closes
/// (then the connection dies) or the peer is gone. Lines over the limit and lines that
/// are not JSON-RPC are dropped: a client cannot act on them.
pub(super) async fn read(inner: Weak<Inner>, mut stdout: ChildStdout) {
    let mut decoder = LineDecoder::new(envelope::max_line());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stdout.read(&mut buf).await.unwrap_or(0);
        let eof = n == 0;
        decoder.push(&buf[..n]);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        loop {
            let next = if eof {
                decoder.finish()
            } else {
                decoder.next_line()
            };
            let Some(line) = next else { break };
            let Ok(line) = line else { continue };
            for m in envelope::messages(&line) {
                inner.on_message(m, &Origin::Stdio);
            }
        }
        if eof {
            if let super::route::Link::Stdio(link) = &inner.link {
                link.settle().await;
            }
            inner.die();
            return;
        }
    }
}
