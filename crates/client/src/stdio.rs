//! The stdio transport: a child process, one JSON-RPC message per line each way.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use toolwright_jsonrpc::{LineDecoder, Message, RequestId, Response};

use crate::ClientError;
use crate::envelope;

/// How much of the server's stderr is kept for error messages.
const STDERR_KEEP: usize = 4096;

/// A running server process.
pub(crate) struct StdioTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: mpsc::UnboundedReceiver<Message>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// The task copying stderr; it ends when the server closes stderr.
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl StdioTransport {
    /// Starts `program args…` with piped stdin and stdout; its stderr is kept (the tail)
    /// for error messages.
    pub(crate) fn spawn(program: &str, args: &[String]) -> Result<Self, ClientError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ClientError::Spawn {
                program: program.to_owned(),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (tx, incoming) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            // Lines over the limit, and lines that are not JSON-RPC messages, are dropped: a
            // server should not write them, and a client cannot act on them.
            let mut stdout = stdout;
            let mut decoder = LineDecoder::new(envelope::max_line());
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = stdout.read(&mut buf).await.unwrap_or(0);
                let eof = n == 0;
                decoder.push(&buf[..n]);
                loop {
                    let next = if eof {
                        decoder.finish()
                    } else {
                        decoder.next_line()
                    };
                    let Some(line) = next else { break };
                    let Ok(line) = line else { continue };
                    for m in envelope::messages(&line) {
                        if tx.send(m).is_err() {
                            return;
                        }
                    }
                }
                if eof {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEEP)));
        let keep = Arc::clone(&stderr);
        let stderr_task = tokio::spawn(async move {
            let mut pipe = stderr_pipe;
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
        Ok(StdioTransport {
            child,
            stdin,
            incoming,
            stderr,
            stderr_task: Some(stderr_task),
        })
    }

    /// What the server wrote to stderr lately.
    pub(crate) fn stderr_tail(&self) -> String {
        let k = self.stderr.lock();
        let bytes: Vec<u8> = k.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The error for a server that went away: waits (briefly) for its last stderr output.
    async fn closed(&mut self, method: &str) -> ClientError {
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        ClientError::Closed {
            method: method.to_owned(),
            stderr: self.stderr_tail(),
        }
    }

    /// Writes one message, a `\n`-terminated line.
    pub(crate) async fn send(&mut self, line: &[u8], method: &str) -> Result<(), ClientError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(self.closed(method).await);
        };
        if stdin.write_all(line).await.is_err() || stdin.flush().await.is_err() {
            return Err(self.closed(method).await);
        }
        Ok(())
    }

    /// Sends the request `line` and waits for the response with its `id`. Requests from
    /// the server are answered with -32601 (this client offers no capabilities);
    /// notifications and anything else are dropped.
    pub(crate) async fn request(
        &mut self,
        id: &RequestId,
        line: &[u8],
        method: &str,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        self.send(line, method).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, self.incoming.recv()).await;
            let msg = match next {
                Err(_) => {
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        after: timeout,
                    });
                }
                Ok(None) => return Err(self.closed(method).await),
                Ok(Some(m)) => m,
            };
            match msg {
                Message::Response(r) if r.id == *id => return Ok(r),
                Message::Request(req) => self.send(&envelope::refusal(&req.id), method).await?,
                _ => {}
            }
        }
    }

    /// Closes stdin, waits up to `grace` for the process to exit, then kills it.
    pub(crate) async fn close(mut self, grace: Duration) {
        self.stdin.take();
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
