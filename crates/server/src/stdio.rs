//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Reading happens on one blocking thread: it reads large chunks, splits them into lines,
//! and handles each line right there. Replies that are ready at once are collected and
//! written with one `write` per chunk read, so a pipelined client costs one syscall per
//! batch, not per message. Calls that must wait run as tokio tasks; their replies (and
//! what any task sends) are queued, and one flush task, scheduled when the queue was empty,
//! writes the whole queue in one `write` after the tasks that were ready with it have run:
//! a burst of forwarded answers leaves in one syscall, not one each. Every write goes
//! through one mutex around the output, so lines never interleave, and the reader's own
//! batch writes what is queued first, so a call's notifications precede its reply.
//!
//! A server whose calls wait on other peers (a gateway) is served by [`serve_stdio_on`]
//! instead: the reading thread hands each read to one task on the runtime where those
//! peers' readers run, which handles its lines there, so a forwarded call starts, waits
//! and ends on one thread.

use crate::reply::{Handled, Spent};
use crate::server::Server;
use crate::session::{Outbound, Session};
use parking_lot::Mutex;
use std::cell::OnceCell;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::TaskTracker;
use toolwright_jsonrpc::{ErrorObject, FrameError, LineDecoder};
use toolwright_protocol::Method;

/// Most bytes queued for the flush task; past it a sender writes itself (waiting for the
/// client to read), so a client that stops reading holds up senders instead of memory.
const MAX_QUEUED: usize = 4 << 20;

struct LineWriter<W> {
    out: Mutex<Out<W>>,
    queue: Mutex<Queued>,
}

/// The output, and the buffer the queue is swapped into to be written (kept, so a burst
/// does not grow a fresh one each time).
struct Out<W> {
    w: W,
    spare: Vec<u8>,
}

/// Lines sent by tasks, waiting for the flush task.
#[derive(Default)]
struct Queued {
    lines: Vec<u8>,
    /// A flush task is scheduled and has not taken the lines yet.
    scheduled: bool,
}

impl<W: Write + Send + 'static> LineWriter<W> {
    fn new(out: W) -> Self {
        LineWriter {
            out: Mutex::new(Out {
                w: out,
                spare: Vec::new(),
            }),
            queue: Mutex::new(Queued::default()),
        }
    }

    /// Writes what is queued, then `bytes`.
    fn write(&self, bytes: &[u8]) {
        self.write_out(bytes, false);
    }

    /// Writes everything queued (the flush task).
    fn flush_queued(&self) {
        self.write_out(&[], true);
    }

    /// Takes the queue (clearing `scheduled` for the flush task) and writes it, then
    /// `bytes`, in one `write` when both have something.
    fn write_out(&self, bytes: &[u8], flushing: bool) {
        let mut out = self.out.lock();
        let out = &mut *out;
        {
            let mut q = self.queue.lock();
            if flushing {
                q.scheduled = false;
            }
            std::mem::swap(&mut q.lines, &mut out.spare);
        }
        let result = if out.spare.is_empty() {
            write_all(&mut out.w, bytes)
        } else {
            out.spare.extend_from_slice(bytes);
            write_all(&mut out.w, &out.spare)
        };
        out.spare.clear();
        if let Err(e) = result {
            tracing::debug!("could not write to the client: {e}");
        }
    }
}

fn write_all(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    out.write_all(bytes)?;
    out.flush()
}

impl<W: Write + Send + 'static> Outbound for Arc<LineWriter<W>> {
    fn send(&self, line: Vec<u8>) {
        // Outside a task (the reader thread, which batches its own) or with a full queue,
        // the sender writes itself.
        let runtime = match tokio::task::try_id() {
            Some(_) => tokio::runtime::Handle::try_current().ok(),
            None => None,
        };
        let Some(runtime) = runtime else {
            return self.write(&line);
        };
        let spawn = {
            let mut q = self.queue.lock();
            if q.lines.len() >= MAX_QUEUED {
                drop(q);
                return self.write(&line);
            }
            q.lines.extend_from_slice(&line);
            !std::mem::replace(&mut q.scheduled, true)
        };
        if spawn {
            let me = self.clone();
            // A task spawned here runs next on this worker (tokio's LIFO slot); yielding
            // once puts it behind the calls already woken, whose replies then join it.
            runtime.spawn(async move {
                tokio::task::yield_now().await;
                me.flush_queued();
            });
        }
    }
}

/// Serves `server` on this process's stdin and stdout until stdin closes. Blocks the calling
/// thread; `runtime` runs the calls that wait.
pub fn serve_stdio(server: &Server, runtime: &tokio::runtime::Handle) -> io::Result<()> {
    let (input, out) = stdio_files()?;
    serve_io(server, input, out, runtime)
}

/// [`serve_stdio`] with a runtime that `build` makes only when something first needs one:
/// the handshake (`initialize`, `notifications/initialized`, `ping`, `server/discover`) and
/// `tools/list` are answered before it exists, so a process's first answers do not wait for
/// its threads.
/// The runtime is shut down (waiting up to 100 ms for its tasks) before this returns.
pub fn serve_stdio_lazy(
    server: &Server,
    build: impl FnOnce() -> io::Result<tokio::runtime::Runtime>,
) -> io::Result<()> {
    let (input, out) = stdio_files()?;
    let built = OnceCell::new();
    let result = serve_with(
        server,
        input,
        out,
        Runtime::Lazy(&built, Some(Box::new(build))),
    );
    if let Some(rt) = built.into_inner() {
        rt.shutdown_timeout(Duration::from_millis(100));
    }
    result
}

/// The pipe capacity asked for stdout: a 1,000-tool list or a screenshot then goes out in
/// one write, instead of 64 KiB at a time with a context switch to the client after each.
const STDOUT_PIPE_BYTES: usize = 1 << 20;

fn stdio_files() -> io::Result<(Input, std::fs::File)> {
    let stdout = io::stdout();
    let out = std::fs::File::from(std::os::fd::AsFd::as_fd(&stdout).try_clone_to_owned()?);
    // Only pipes have a capacity; a file, a terminal or a refused size changes nothing.
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(&out, STDOUT_PIPE_BYTES);
    let stdin = io::stdin();
    let file = std::fs::File::from(std::os::fd::AsFd::as_fd(&stdin).try_clone_to_owned()?);
    Ok((Input::new(file)?, out))
}

/// stdin, read until it closes or until SIGTERM or SIGINT arrives. A signal reads as the
/// end of input, so the server then drains exactly as when the client hangs up: streams
/// end, calls in flight have the grace period to answer, and the process exits 0. A second
/// signal ends the process at once, with status 1.
///
/// The handlers only write a byte to a socket pair (signal-hook's self-pipe). Each read
/// first waits in `epoll` for stdin or that socket: registered once, so a wait costs one
/// syscall and no wait-queue setup (`poll` measured 9% of a pipelined run's CPU in its
/// set-up and tear-down). A stdin that `epoll` refuses (a regular file, `/dev/null`) never
/// blocks, so it is read directly.
struct Input {
    file: std::fs::File,
    #[cfg(target_os = "linux")]
    waiter: Option<Waiter>,
}

#[cfg(target_os = "linux")]
struct Waiter {
    epoll: std::os::fd::OwnedFd,
    /// Kept open: the signal handlers write to its peer.
    _wake: std::os::unix::net::UnixStream,
    events: Vec<rustix::event::epoll::Event>,
}

#[cfg(target_os = "linux")]
const STDIN: u64 = 0;
#[cfg(target_os = "linux")]
const SIGNAL: u64 = 1;

impl Input {
    #[cfg(target_os = "linux")]
    fn new(file: std::fs::File) -> io::Result<Input> {
        use rustix::event::epoll;
        let (wake, notify) = std::os::unix::net::UnixStream::pair()?;
        notify.set_nonblocking(true)?;
        let again = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            // The order matters: the exit checks the flag a first signal has set.
            signal_hook::flag::register_conditional_shutdown(signal, 1, again.clone())?;
            signal_hook::flag::register(signal, again.clone())?;
            signal_hook::low_level::pipe::register(signal, notify.try_clone()?)?;
        }
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            &wake,
            epoll::EventData::new_u64(SIGNAL),
            epoll::EventFlags::IN,
        )?;
        let waiter = match epoll::add(
            &epoll,
            &file,
            epoll::EventData::new_u64(STDIN),
            epoll::EventFlags::IN,
        ) {
            Ok(()) => Some(Waiter {
                epoll,
                _wake: wake,
                events: Vec::with_capacity(2),
            }),
            // Files and /dev/null are always ready (and reach their end without a signal).
            Err(rustix::io::Errno::PERM) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Input { file, waiter })
    }

    #[cfg(not(target_os = "linux"))]
    fn new(file: std::fs::File) -> io::Result<Input> {
        Ok(Input { file })
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(target_os = "linux")]
        if let Some(w) = &mut self.waiter {
            use rustix::event::epoll;
            // With no timeout, a wait that returns has at least one event.
            loop {
                w.events.clear();
                match epoll::wait(
                    &w.epoll,
                    rustix::buffer::spare_capacity(&mut w.events),
                    None,
                ) {
                    Ok(_) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            if w.events.iter().any(|e| e.data.u64() == SIGNAL) {
                tracing::info!("signal received: answering the calls in flight, then exiting");
                return Ok(0);
            }
        }
        self.file.read(buf)
    }
}

/// [`serve_stdio`] for a server whose calls wait on `runtime` for other peers (a gateway's
/// upstreams, whose readers run there): this thread only reads stdin and hands each read
/// to one task on `runtime`, which splits it into lines, handles them and writes the
/// replies. A forwarded call then starts, waits and ends on the thread that reads its
/// upstream's answer: one hand-over per read instead of one per call, and what a call
/// allocates is freed on the thread that allocated it.
pub fn serve_stdio_on(server: &Server, runtime: &tokio::runtime::Handle) -> io::Result<()> {
    let (mut input, output) = stdio_files()?;
    let writer = Arc::new(LineWriter::new(output));
    let sink: Arc<dyn Outbound> = Arc::new(writer.clone());
    let session = stdio_session(server, sink.clone());
    let tracker = TaskTracker::new();
    let (reads, mut handed) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let handler = {
        let (server, session, tracker) = (server.clone(), session.clone(), tracker.clone());
        runtime.spawn(async move {
            let mut decoder = LineDecoder::new(server.config().limits.max_bytes);
            let mut replies = Outgoing {
                first: None,
                rest: Vec::new(),
                spent: Vec::new(),
            };
            let mut warming = false;
            while let Some(chunk) = handed.recv().await {
                decoder.push(&chunk);
                while let Some(frame) = decoder.next_line() {
                    handle_frame(&server, &session, &sink, &tracker, frame, &mut replies);
                }
                replies.send(&writer);
                if !warming {
                    server.warm_up();
                    warming = true;
                }
            }
            if let Some(last) = decoder.finish() {
                handle_frame(&server, &session, &sink, &tracker, last, &mut replies);
                replies.send(&writer);
            }
        })
    };
    let mut chunk = vec![0u8; 64 * 1024];
    while let Some(n) = read_some(&mut input, &mut chunk) {
        if reads.send(chunk[..n].to_vec()).is_err() {
            break;
        }
    }
    drop(reads);
    if let Err(e) = runtime.block_on(handler) {
        tracing::error!("the stdio handler ended abnormally: {e}");
    }
    drain(server, &session, &tracker, Some(runtime));
    Ok(())
}

/// One framed line, handed to the server, or the framing error in its place.
#[inline]
fn handle_frame(
    server: &Server,
    session: &Arc<Session>,
    sink: &Arc<dyn Outbound>,
    tracker: &TaskTracker,
    frame: Result<toolwright_jsonrpc::Line<'_>, FrameError>,
    replies: &mut Outgoing,
) {
    match frame {
        Ok(line) => dispatch_line(server, session, sink, tracker, line.as_bytes(), replies),
        Err(FrameError::TooLong { len_so_far, id }) => replies.push(too_long(
            server.config().limits.max_bytes,
            len_so_far,
            id.as_ref(),
        )),
        Err(e) => tracing::warn!("framing error: {e}"),
    }
}

/// Serves `server` on any byte stream pair (the stdio transport without the process).
pub fn serve_io<R: Read, W: Write + Send + 'static>(
    server: &Server,
    input: R,
    output: W,
    runtime: &tokio::runtime::Handle,
) -> io::Result<()> {
    serve_with(server, input, output, Runtime::Given(runtime))
}

/// The replies to one read. Most reads carry one message: its line is kept as it came and
/// written as is (no copy), and freed only once the client has it. Several lines are
/// gathered into one buffer, for one write.
struct Outgoing {
    first: Option<Vec<u8>>,
    rest: Vec<u8>,
    /// What the calls answered here still hold, dropped once their lines are written.
    spent: Vec<Spent>,
}

impl Outgoing {
    fn push(&mut self, line: Vec<u8>) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(line);
        } else {
            self.buffer().extend_from_slice(&line);
        }
    }

    /// The gathering buffer, holding every line so far.
    fn buffer(&mut self) -> &mut Vec<u8> {
        if let Some(first) = self.first.take() {
            self.rest.extend_from_slice(&first);
        }
        &mut self.rest
    }

    fn send<W: Write + Send + 'static>(&mut self, writer: &LineWriter<W>) {
        if let Some(line) = self.first.take() {
            writer.write(&line);
        } else if !self.rest.is_empty() {
            writer.write(&self.rest);
            self.rest.clear();
        }
        self.spent.clear();
    }
}

type BuildRuntime<'a> = Box<dyn FnOnce() -> io::Result<tokio::runtime::Runtime> + 'a>;

/// Where the calls that wait run.
enum Runtime<'a> {
    Given(&'a tokio::runtime::Handle),
    /// Built by the function on first need, kept in the cell.
    Lazy(
        &'a OnceCell<tokio::runtime::Runtime>,
        Option<BuildRuntime<'a>>,
    ),
}

impl<'a> Runtime<'a> {
    /// The runtime, built now if it was not.
    fn handle(&mut self) -> io::Result<&'a tokio::runtime::Handle> {
        match self {
            Runtime::Given(h) => Ok(h),
            Runtime::Lazy(cell, build) => {
                let cell: &'a OnceCell<tokio::runtime::Runtime> = cell;
                if cell.get().is_none() {
                    // A build that failed is not tried again; every later call hears so.
                    let make = build.take().ok_or_else(|| {
                        io::Error::other("the async runtime could not be started")
                    })?;
                    let _ = cell.set(make()?);
                }
                Ok(cell.get().expect("set above").handle())
            }
        }
    }

    /// The runtime if it exists.
    fn existing(&self) -> Option<&'a tokio::runtime::Handle> {
        match self {
            Runtime::Given(h) => Some(h),
            Runtime::Lazy(cell, _) => {
                let cell: &'a OnceCell<tokio::runtime::Runtime> = cell;
                cell.get().map(tokio::runtime::Runtime::handle)
            }
        }
    }
}

/// Whether `line` is a handshake message, which is answered without a runtime.
fn handshake(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Peek<'_>>(line).is_ok_and(|p| {
        p.method.as_deref().map(Method::parse).is_some_and(|m| {
            matches!(
                m,
                Method::Initialize
                    | Method::Initialized
                    | Method::Ping
                    | Method::ServerDiscover
                    | Method::ToolsList
            )
        })
    })
}

fn serve_with<R: Read, W: Write + Send + 'static>(
    server: &Server,
    mut input: R,
    output: W,
    mut runtime: Runtime<'_>,
) -> io::Result<()> {
    let mut entered = runtime.existing().map(tokio::runtime::Handle::enter);
    let writer = Arc::new(LineWriter::new(output));
    let sink: Arc<dyn Outbound> = Arc::new(writer.clone());
    let session = stdio_session(server, sink.clone());
    let tracker = TaskTracker::new();
    let mut decoder = LineDecoder::new(server.config().limits.max_bytes);
    // The read buffer starts small (a client that sends one message at a time never fills
    // it) and doubles, up to 64 KiB, each time a read fills it.
    let mut chunk = vec![0u8; 4 * 1024];
    let mut replies = Outgoing {
        first: None,
        rest: Vec::with_capacity(64 * 1024),
        spent: Vec::with_capacity(64),
    };
    let mut warming = false;
    let mut on_frame = |frame: Result<toolwright_jsonrpc::Line<'_>, FrameError>,
                        replies: &mut Outgoing| {
        if let Ok(line) = &frame
            && entered.is_none()
            && !handshake(line.as_bytes())
        {
            match runtime.handle() {
                Ok(h) => entered = Some(h.enter()),
                Err(e) => {
                    tracing::error!("starting the async runtime failed: {e}");
                    let err = ErrorObject::internal(format!("the server cannot run calls: {e}"));
                    toolwright_jsonrpc::write_error(replies.buffer(), None, &err);
                    return;
                }
            }
        }
        handle_frame(server, &session, &sink, &tracker, frame, replies);
    };
    while let Some(n) = read_some(&mut input, &mut chunk) {
        decoder.push(&chunk[..n]);
        if n == chunk.len() && chunk.len() < 64 * 1024 {
            chunk.resize(chunk.len() * 2, 0);
        }
        while let Some(line) = decoder.next_line() {
            on_frame(line, &mut replies);
        }
        replies.send(&writer);
        if !warming {
            // The first answers are out: the start-up tools may take the CPU now.
            server.warm_up();
            warming = true;
        }
    }
    if let Some(last) = decoder.finish() {
        on_frame(last, &mut replies);
        replies.send(&writer);
    }
    drain(server, &session, &tracker, runtime.existing());
    Ok(())
}

/// Hands one line to the server: a reply joins this read's batch (what it holds is freed
/// after the write), a reply that must wait is awaited on a tracked task and sent alone.
#[inline]
fn dispatch_line(
    server: &Server,
    session: &Arc<Session>,
    sink: &Arc<dyn Outbound>,
    tracker: &TaskTracker,
    line: &[u8],
    replies: &mut Outgoing,
) {
    match server.handle(session, server.read(line), sink) {
        Handled::Nothing => {}
        Handled::Reply(reply) => {
            let (bytes, spent) = reply.into_parts();
            replies.push(bytes);
            replies.spent.extend(spent);
        }
        Handled::Later(fut) => {
            let sink = sink.clone();
            tracker.spawn(async move {
                if let Some(reply) = fut.await {
                    sink.send(reply.into_line());
                }
            });
        }
    }
}

/// The error line for a message over `max` bytes (`len` read before giving up on it).
fn too_long(max: usize, len: usize, id: Option<&toolwright_jsonrpc::RequestId>) -> Vec<u8> {
    let e = ErrorObject::invalid_request(format!(
        "message too large: over {max} bytes (read {len} before giving up on it)"
    ));
    let mut line = Vec::new();
    toolwright_jsonrpc::write_error(&mut line, id, &e);
    line
}

/// One read into `chunk`: the bytes read, or `None` at the end of input or a failed read.
fn read_some(input: &mut impl Read, chunk: &mut [u8]) -> Option<usize> {
    loop {
        match input.read(chunk) {
            Ok(0) => return None,
            Ok(n) => return Some(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                return None;
            }
        }
    }
}

/// stdin closed: streams end now, and calls in flight get the grace period to answer
/// before they are cancelled (and a second to end); then the session closes.
fn drain(
    server: &Server,
    session: &Session,
    tracker: &TaskTracker,
    runtime: Option<&tokio::runtime::Handle>,
) {
    session.shutdown();
    tracker.close();
    let Some(runtime) = runtime else {
        // Nothing ever needed the runtime, so nothing is running.
        session.close();
        return;
    };
    let grace = server.config().shutdown_grace;
    let finished =
        runtime.block_on(async { tokio::time::timeout(grace, tracker.wait()).await.is_ok() });
    if !finished {
        tracing::info!("calls still running {grace:?} after stdin closed; cancelling them");
        session.close();
        let _ = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(1), tracker.wait()).await });
    }
    session.close();
}

/// The one session of a stdio connection, with a view when there is one for it: the one
/// `stdio_view` names, else the view named `default`. Without either the session sees every
/// tool: whoever started the process is the only caller.
fn stdio_session(server: &Server, sink: Arc<dyn Outbound>) -> Arc<Session> {
    let session = server.new_session(sink);
    let config = server.config();
    let name = config.stdio_view.as_deref().unwrap_or("default");
    if let Some(view) = config.views.named(name) {
        session.set_view(view.clone());
    }
    session
}
