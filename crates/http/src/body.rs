//! Response bodies: nothing, one JSON document, or a Server-Sent Events stream read from a
//! [`Cell`].
//!
//! [`Body`] is an enum rather than a boxed trait object so that the common answers (a JSON
//! reply, an empty 202) cost no allocation beyond their bytes, and hyper learns their exact
//! length. Only SSE streams are boxed.

use crate::stream::{Cell, Next};
use bytes::Bytes;
use futures_util::Stream;
use http_body::{Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use toolwright_server::{Reply, ReplyFuture};

/// A response body.
pub enum Body {
    /// No body.
    Empty,
    /// A complete body (taken when sent).
    Full(Option<Bytes>),
    /// An event stream.
    Sse(Pin<Box<dyn Stream<Item = Bytes> + Send>>),
}

impl Body {
    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body::Full(Some(bytes.into()))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Empty => Poll::Ready(None),
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Sse(s) => s
                .as_mut()
                .poll_next(cx)
                .map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Empty => true,
            Body::Full(b) => b.is_none(),
            Body::Sse(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Empty | Body::Full(None) => SizeHint::with_exact(0),
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Sse(_) => SizeHint::default(),
        }
    }
}

/// Appends one SSE event carrying `line` (a JSON-RPC message, newline-terminated or not).
/// `id` is `(stream, number)` when the stream is resumable.
pub(crate) fn write_event(out: &mut Vec<u8>, id: Option<(u32, u64)>, line: &[u8]) {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    out.reserve(body.len() + 32);
    if let Some((stream, seq)) = id {
        write_id(out, stream, seq);
    }
    // Writers emit single-line JSON; a stray newline still cannot break the framing.
    for part in body.split(|&b| b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(part.strip_suffix(b"\r").unwrap_or(part));
        out.push(b'\n');
    }
    out.push(b'\n');
}

fn write_id(out: &mut Vec<u8>, stream: u32, seq: u64) {
    use std::io::Write;
    let _ = writeln!(out, "id: {stream}-{seq}");
}

/// The priming event of a resumable stream: an id and empty data, so that a client that
/// loses the connection before any message can still resume (2025-11-25).
pub(crate) fn priming_event(stream: u32, before: u64, retry: Option<Duration>) -> Bytes {
    let mut out = Vec::with_capacity(40);
    write_id(&mut out, stream, before);
    if let Some(r) = retry {
        use std::io::Write;
        let _ = writeln!(out, "retry: {}", r.as_millis());
    }
    out.extend_from_slice(b"data: \n\n");
    Bytes::from(out)
}

/// Parses a `Last-Event-ID` written by [`write_event`]: `(stream, number)`.
pub(crate) fn parse_event_id(s: &str) -> Option<(u32, u64)> {
    let (stream, seq) = s.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// Runs code when an SSE stream ends (counters of open streams).
pub(crate) struct OnDrop(pub Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// What an SSE stream reads from, and what it owns.
pub(crate) struct SseSource {
    pub cell: Arc<Cell>,
    pub ticket: u64,
    /// Write `id:` lines (resumable legacy streams).
    pub ids: bool,
    /// A modern call, driven by the stream itself: dropping the stream (the client went
    /// away) drops the call, which cancels it.
    pub call: Option<ReplyFuture>,
    /// Sent first (a priming event).
    pub first: Option<Bytes>,
    /// Comment lines at this interval keep idle streams alive through proxies.
    pub keep_alive: Option<Interval>,
    /// Ends the stream (server shutdown, session end) when cancelled.
    pub stop: Option<CancellationToken>,
    /// Dropped with the stream.
    pub _guard: OnDrop,
}

impl SseSource {
    /// A keep-alive ticker that first fires one period from now.
    pub(crate) fn ticker(period: Duration) -> Interval {
        let mut i = tokio::time::interval_at(Instant::now() + period, period);
        i.set_missed_tick_behavior(MissedTickBehavior::Delay);
        i
    }

    /// The stream as a response body.
    pub(crate) fn into_body(self) -> Body {
        Body::Sse(Box::pin(futures_util::stream::unfold(self, step)))
    }
}

async fn tick(i: &mut Option<Interval>) {
    match i {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

async fn stopped(t: &Option<CancellationToken>) {
    match t {
        Some(t) => t.cancelled().await,
        None => std::future::pending().await,
    }
}

async fn drive(call: &mut Option<ReplyFuture>) -> Option<Reply> {
    match call {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

async fn step(mut src: SseSource) -> Option<(Bytes, SseSource)> {
    if let Some(first) = src.first.take() {
        return Some((first, src));
    }
    let cell = src.cell.clone();
    loop {
        let notified = cell.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match cell.next(src.ticket) {
            Next::Message { seq, line } => {
                let mut out = Vec::new();
                write_event(&mut out, src.ids.then(|| (cell.stream(), seq)), &line);
                return Some((Bytes::from(out), src));
            }
            Next::End => return None,
            Next::Close { retry } => {
                // A `retry` field alone dispatches no event; the stream ends after it.
                let line = format!("retry: {}\n\n", retry.as_millis());
                return Some((Bytes::from(line), src));
            }
            Next::Pending => {}
        }
        tokio::select! {
            biased;
            _ = &mut notified => {}
            reply = drive(&mut src.call), if src.call.is_some() => {
                src.call = None;
                cell.finish_reply(reply);
            }
            _ = stopped(&src.stop) => return None,
            _ = tick(&mut src.keep_alive) => return Some((Bytes::from_static(b": keep-alive\n\n"), src)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: Option<(u32, u64)>, line: &[u8]) -> String {
        let mut out = Vec::new();
        write_event(&mut out, id, line);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events() {
        assert_eq!(event(None, b"{\"a\":1}\n"), "data: {\"a\":1}\n\n");
        assert_eq!(event(Some((3, 7)), b"{}"), "id: 3-7\ndata: {}\n\n");
        assert_eq!(event(None, b"{\n}\n"), "data: {\ndata: }\n\n");
    }

    #[test]
    fn priming() {
        assert_eq!(&priming_event(0, 4, None)[..], b"id: 0-4\ndata: \n\n");
        assert_eq!(
            &priming_event(2, 0, Some(Duration::from_secs(1)))[..],
            b"id: 2-0\nretry: 1000\ndata: \n\n"
        );
    }

    #[test]
    fn event_ids() {
        assert_eq!(parse_event_id("3-7"), Some((3, 7)));
        assert_eq!(parse_event_id(" 0-0 "), Some((0, 0)));
        assert_eq!(parse_event_id("3"), None);
        assert_eq!(parse_event_id("a-1"), None);
        assert_eq!(parse_event_id("1--1"), None);
    }

    #[tokio::test]
    async fn stream_delivers_then_ends() {
        use futures_util::StreamExt;
        let cell = Arc::new(Cell::new(8, false));
        let (ticket, _) = cell.attach(None);
        cell.push(b"{\"n\":1}\n".to_vec());
        cell.finish(Some(b"{\"n\":2}\n".to_vec()));
        let src = SseSource {
            cell,
            ticket,
            ids: false,
            call: None,
            first: None,
            keep_alive: None,
            stop: None,
            _guard: OnDrop(None),
        };
        let frames: Vec<Bytes> = futures_util::stream::unfold(src, step).collect().await;
        assert_eq!(
            frames,
            vec![
                Bytes::from("data: {\"n\":1}\n\n"),
                Bytes::from("data: {\"n\":2}\n\n")
            ]
        );
    }

    #[tokio::test]
    async fn stream_drives_its_call() {
        use futures_util::StreamExt;
        let cell = Arc::new(Cell::new(8, false));
        let (ticket, _) = cell.attach(None);
        let c2 = cell.clone();
        let call: ReplyFuture = Box::pin(async move {
            c2.push(b"{\"progress\":1}".to_vec());
            tokio::task::yield_now().await;
            let e = toolwright_jsonrpc::ErrorObject::internal("done");
            Some(Reply::error(None, &e))
        });
        let src = SseSource {
            cell,
            ticket,
            ids: true,
            call: Some(call),
            first: Some(priming_event(0, 0, None)),
            keep_alive: None,
            stop: None,
            _guard: OnDrop(None),
        };
        let frames: Vec<Bytes> = futures_util::stream::unfold(src, step).collect().await;
        assert_eq!(
            frames,
            vec![
                Bytes::from("id: 0-0\ndata: \n\n"),
                Bytes::from("id: 0-1\ndata: {\"progress\":1}\n\n"),
                Bytes::from(
                    "id: 0-2\ndata: {\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"done\"}}\n\n"
                )
            ]
        );
    }
}
