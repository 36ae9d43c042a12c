//! [`Cell`]: the messages of one response stream, between the code that produces them (a
//! tool's progress and logs, requests to the client, the reply) and the HTTP response that
//! carries them.
//!
//! A POST gets a fresh cell as its `sink`. The handler waits for the first message: when it
//! is the reply, the answer is plain JSON; when a notification comes first, the answer turns
//! into an SSE stream reading the cell. A legacy session's standalone GET stream is a cell
//! too (stream 0), fed by the session's outbound.
//!
//! A cell for a client that accepts only `application/json` is *JSON-only*: it keeps
//! nothing but the reply (progress and log notifications are dropped, and requests to the
//! client are refused at once, see [`Outbound::carries_requests`]), so the answer is always
//! plain JSON.
//!
//! Messages are numbered from 1 in the order they were pushed. A cell that *retains* (legacy
//! sessions, where clients may resume with `Last-Event-ID`) keeps delivered messages, up to
//! its capacity, so that a reader that reconnects can be served again from any number still
//! held. A cell that does not retain forgets each message once delivered.

use parking_lot::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
use toolwright_server::Outbound;
use toolwright_server::{Outcome, Reply};

/// What a reader gets from [`Cell::next`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// The message numbered `seq`.
    Message { seq: u64, line: Vec<u8> },
    /// Nothing yet.
    Pending,
    /// The producer asked to close this reader's stream early (SSE polling): send the
    /// client this reconnection delay, then end; what follows waits for a reconnection.
    Close { retry: Duration },
    /// The producer finished and everything was delivered, or another reader took over.
    End,
}

#[derive(Debug)]
struct State {
    /// Messages held; `held[0]` is number `first`.
    held: VecDeque<Vec<u8>>,
    first: u64,
    /// Number of the next message the current reader gets.
    cursor: u64,
    /// The producer is done: no more messages will come.
    finished: bool,
    /// True when the reply was pushed by [`Cell::finish`] (false: finished without one).
    replied: bool,
    /// What the reply said, when it came typed.
    outcome: Option<Outcome>,
    /// The reply's `Retry-After` (a call refused by a limit).
    retry_after: Option<u64>,
    /// Keep delivered messages for replay.
    retain: bool,
    /// Most messages held at once.
    capacity: usize,
    /// Identifies the current reader; a reader whose ticket is older has been replaced.
    ticket: u64,
    /// The producer may close the reader's stream early (a resumable legacy POST stream).
    closable: bool,
    /// A requested early close: the reader ends after message `.0`, telling the client
    /// to reconnect after `.1`.
    close: Option<(u64, Duration)>,
    /// Only the reply is kept: the client accepts nothing but JSON.
    json_only: bool,
    /// Sees every message (and the end) as it is pushed: a shared session store's log.
    mirror: Option<Mirror>,
}

/// Called with each message's number and the message, then once with `None` at the end.
pub(crate) type MirrorFn = Box<dyn Fn(u64, Option<&[u8]>) + Send + Sync>;

struct Mirror(MirrorFn);

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mirror")
    }
}

/// One response stream's messages. Cheap to create (one allocation behind an `Arc`).
#[derive(Debug)]
pub(crate) struct Cell {
    state: Mutex<State>,
    notify: Notify,
    /// The stream's number within a legacy session (0: the GET stream), for event ids.
    stream: AtomicU32,
}

impl Cell {
    /// A cell holding at most `capacity` messages; `retain` keeps delivered ones for replay.
    pub(crate) fn new(capacity: usize, retain: bool) -> Cell {
        Cell::starting_after(capacity, retain, 0)
    }

    /// [`Cell::new`] whose first message is number `after + 1`: a stream resumed from a
    /// shared store's log.
    pub(crate) fn starting_after(capacity: usize, retain: bool, after: u64) -> Cell {
        Cell {
            state: Mutex::new(State {
                held: VecDeque::new(),
                first: after + 1,
                cursor: after + 1,
                finished: false,
                replied: false,
                outcome: None,
                retry_after: None,
                retain,
                capacity: capacity.max(1),
                ticket: 0,
                closable: false,
                close: None,
                json_only: false,
                mirror: None,
            }),
            notify: Notify::new(),
            stream: AtomicU32::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Appends a message and wakes the reader.
    pub(crate) fn push(&self, line: Vec<u8>) {
        {
            let mut s = self.lock();
            if s.finished {
                tracing::debug!("message after the end of its stream dropped");
                return;
            }
            if s.json_only {
                tracing::debug!("message dropped: the client accepts only a JSON reply");
                return;
            }
            s.push(line);
        }
        self.notify.notify_waiters();
    }

    /// Ends the stream, with the reply as its last message when there is one.
    pub(crate) fn finish(&self, reply: Option<Vec<u8>>) {
        {
            let mut s = self.lock();
            if s.finished {
                return;
            }
            if let Some(line) = reply {
                s.push(line);
                s.replied = true;
            }
            s.finished = true;
            if let Some(m) = &s.mirror {
                (m.0)(s.first + s.held.len() as u64, None);
            }
        }
        self.notify.notify_waiters();
    }

    /// [`Cell::finish`] with a reply from the server, whose outcome is kept for the status.
    pub(crate) fn finish_reply(&self, reply: Option<Reply>) {
        if let Some(r) = &reply {
            let mut s = self.lock();
            s.outcome = Some(r.outcome());
            s.retry_after = r.retry_after();
        }
        self.finish(reply.map(Reply::into_line));
    }

    /// The outcome of the reply given to [`Cell::finish_reply`].
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.lock().outcome
    }

    /// The `Retry-After` of the reply given to [`Cell::finish_reply`].
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.lock().retry_after
    }

    /// Where the first message of a POST stands: `Some(true)` when the stream is nothing but
    /// the reply (answer with JSON), `Some(false)` when it must be an event stream (a
    /// notification came first, or it ended without a reply), `None` while undecided.
    pub(crate) fn decided(&self) -> Option<bool> {
        let s = self.lock();
        if s.close.is_some() {
            return Some(false);
        }
        if s.finished {
            return Some(s.replied && s.held.len() == 1 && s.first == 1);
        }
        if s.held.is_empty() { None } else { Some(false) }
    }

    /// Takes the reply of a stream that [`Cell::decided`] found to be only the reply.
    pub(crate) fn take_only_reply(&self) -> Option<Vec<u8>> {
        let mut s = self.lock();
        let line = s.held.pop_front()?;
        s.first += 1;
        s.cursor = s.first;
        Some(line)
    }

    /// True when the producer is done and the current reader got everything.
    pub(crate) fn is_drained(&self) -> bool {
        let s = self.lock();
        s.finished && s.cursor >= s.first + s.held.len() as u64
    }

    /// Starts a new reader, replacing any other. With `after: Some(n)` the reader resumes
    /// after message `n` (from the oldest message still held, if `n` is older than that);
    /// with `None` it starts at the first message not yet delivered. Returns the ticket
    /// to pass to [`Cell::next`], and the number of the last message before the reader's
    /// first (for a priming event).
    pub(crate) fn attach(&self, after: Option<u64>) -> (u64, u64) {
        let (ticket, before) = {
            let mut s = self.lock();
            s.ticket += 1;
            if let Some(n) = after {
                let end = s.first + s.held.len() as u64;
                s.cursor = (n + 1).clamp(s.first, end);
            }
            (s.ticket, s.cursor - 1)
        };
        // A reader that was replaced wakes up and sees `End`.
        self.notify.notify_waiters();
        (ticket, before)
    }

    /// The next message for the reader holding `ticket`.
    pub(crate) fn next(&self, ticket: u64) -> Next {
        let mut s = self.lock();
        if s.ticket != ticket {
            return Next::End;
        }
        if let Some((after, retry)) = s.close
            && s.cursor > after
        {
            // The reader is done: it ends after telling the client when to come back.
            s.close = None;
            s.ticket += 1;
            return Next::Close { retry };
        }
        let index = (s.cursor - s.first) as usize;
        if index < s.held.len() {
            let seq = s.cursor;
            s.cursor += 1;
            let line = if s.retain {
                s.held[index].clone()
            } else {
                // Not retained: the message is delivered once, so it moves out.
                let line = s.held.pop_front().unwrap_or_default();
                s.first += 1;
                line
            };
            return Next::Message { seq, line };
        }
        if s.finished { Next::End } else { Next::Pending }
    }

    /// Waits until something may have changed for readers (a push, the end, a takeover).
    /// Call [`Cell::next`] again afterwards.
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    /// Sets the stream's number within its session.
    pub(crate) fn set_stream(&self, n: u32) {
        self.stream.store(n, Ordering::Relaxed);
    }

    /// The stream's number within its session.
    pub(crate) fn stream(&self) -> u32 {
        self.stream.load(Ordering::Relaxed)
    }

    /// Lets the producer close the reader's stream early ([`Outbound::close_stream`]): for
    /// POST streams of legacy sessions whose clients can resume them (2025-11-25 and later).
    pub(crate) fn set_closable(&self) {
        self.lock().closable = true;
    }

    /// Makes the cell JSON-only: nothing but the reply is kept, and requests to the client
    /// are refused.
    pub(crate) fn set_json_only(&self) {
        self.lock().json_only = true;
    }

    /// Appends a message read from a shared store's log under its number there: a number
    /// already passed is skipped (a duplicate); a gap (the log dropped events this reader
    /// had not seen) moves the numbering on when nothing is waiting.
    pub(crate) fn push_numbered(&self, seq: u64, line: Vec<u8>) {
        {
            let mut s = self.lock();
            let next = s.first + s.held.len() as u64;
            if seq < next || s.finished {
                return;
            }
            if seq > next {
                tracing::warn!(
                    "{} events of a stream were dropped from the session store before this \
                     reader got them",
                    seq - next
                );
                if s.held.is_empty() && s.cursor == s.first {
                    s.first = seq;
                    s.cursor = seq;
                }
            }
            s.push(line);
        }
        self.notify.notify_waiters();
    }

    /// Hands every message held, and every later one, to `f` with its number (and the end
    /// as `None`), in order: the cell's copy in a shared session store.
    pub(crate) fn mirror(&self, f: MirrorFn) {
        let mut s = self.lock();
        for (i, line) in s.held.iter().enumerate() {
            f(s.first + i as u64, Some(line));
        }
        if s.finished {
            f(s.first + s.held.len() as u64, None);
        }
        s.mirror = Some(Mirror(f));
    }

    /// Makes the cell keep delivered messages (a legacy POST stream that turned into SSE).
    pub(crate) fn set_retain(&self, retain: bool) {
        self.lock().retain = retain;
    }
}

impl State {
    fn push(&mut self, line: Vec<u8>) {
        if let Some(m) = &self.mirror {
            (m.0)(self.first + self.held.len() as u64, Some(&line));
        }
        self.held.push_back(line);
        while self.held.len() > self.capacity {
            self.held.pop_front();
            if self.cursor == self.first {
                tracing::warn!(
                    "a stream's reader fell {} messages behind; dropping the oldest",
                    self.capacity
                );
                self.cursor += 1;
            }
            self.first += 1;
        }
    }
}

impl Outbound for Cell {
    fn send(&self, line: Vec<u8>) {
        self.push(line);
    }

    fn carries_requests(&self) -> bool {
        !self.lock().json_only
    }

    fn close_stream(&self, retry: Duration) -> bool {
        {
            let mut s = self.lock();
            if !s.closable || s.finished || s.json_only {
                return false;
            }
            // Messages sent so far still go out on this stream; later ones wait.
            let last = s.first + s.held.len() as u64 - 1;
            s.close = Some((last, retry));
        }
        self.notify.notify_waiters();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: u8) -> Vec<u8> {
        vec![b'0' + n]
    }

    fn take(c: &Cell, t: u64) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Next::Message { seq, line } = c.next(t) {
            out.push((seq, line));
        }
        out
    }

    #[test]
    fn reply_alone_is_json() {
        let c = Cell::new(8, false);
        assert_eq!(c.decided(), None);
        c.finish(Some(msg(1)));
        assert_eq!(c.decided(), Some(true));
        assert_eq!(c.take_only_reply(), Some(msg(1)));
    }

    #[test]
    fn notification_first_is_a_stream() {
        let c = Cell::new(8, false);
        c.push(msg(1));
        assert_eq!(c.decided(), Some(false));
        c.finish(Some(msg(2)));
        assert_eq!(c.decided(), Some(false));
    }

    #[test]
    fn finished_without_reply_is_a_stream() {
        let c = Cell::new(8, false);
        c.finish(None);
        assert_eq!(c.decided(), Some(false));
        let (t, _) = c.attach(None);
        assert_eq!(c.next(t), Next::End);
    }

    #[test]
    fn messages_come_in_order_then_end() {
        let c = Cell::new(8, false);
        let (t, before) = c.attach(None);
        assert_eq!(before, 0);
        c.push(msg(1));
        c.push(msg(2));
        assert_eq!(take(&c, t), vec![(1, msg(1)), (2, msg(2))]);
        assert_eq!(c.next(t), Next::Pending);
        c.finish(Some(msg(3)));
        assert_eq!(take(&c, t), vec![(3, msg(3))]);
        assert_eq!(c.next(t), Next::End);
        assert!(c.is_drained());
    }

    #[test]
    fn retained_messages_replay_after_a_given_number() {
        let c = Cell::new(8, true);
        let (t, _) = c.attach(None);
        for n in 1..=4 {
            c.push(msg(n));
        }
        assert_eq!(take(&c, t).len(), 4);
        let (t2, before) = c.attach(Some(2));
        assert_eq!(before, 2);
        assert_eq!(c.next(t), Next::End, "the replaced reader ends");
        assert_eq!(take(&c, t2), vec![(3, msg(3)), (4, msg(4))]);
    }

    #[test]
    fn capacity_drops_the_oldest() {
        let c = Cell::new(2, true);
        for n in 1..=5 {
            c.push(msg(n));
        }
        let (t, _) = c.attach(Some(0));
        assert_eq!(take(&c, t), vec![(4, msg(4)), (5, msg(5))]);
    }

    #[test]
    fn nothing_after_finish() {
        let c = Cell::new(4, false);
        c.finish(None);
        c.push(msg(1));
        c.finish(Some(msg(2)));
        let (t, _) = c.attach(None);
        assert_eq!(c.next(t), Next::End);
    }

    #[test]
    fn closing_early_ends_the_reader_and_keeps_the_rest_for_the_next() {
        let retry = Duration::from_millis(500);
        let c = Cell::new(8, true);
        assert!(!c.close_stream(retry), "not closable unless allowed");
        c.set_closable();
        assert_eq!(c.decided(), None);
        c.push(msg(1));
        assert!(c.close_stream(retry));
        assert_eq!(c.decided(), Some(false), "closing needs an event stream");
        c.push(msg(2));
        c.finish(Some(msg(3)));
        assert_eq!(c.decided(), Some(false), "even when only the reply follows");
        let (t, _) = c.attach(None);
        let sent_before = Next::Message {
            seq: 1,
            line: msg(1),
        };
        assert_eq!(c.next(t), sent_before);
        assert_eq!(c.next(t), Next::Close { retry });
        assert_eq!(c.next(t), Next::End);
        let (t2, _) = c.attach(Some(1));
        assert_eq!(take(&c, t2), vec![(2, msg(2)), (3, msg(3))]);
        assert_eq!(c.next(t2), Next::End);
        assert!(!c.close_stream(retry), "nothing to close once finished");
    }

    #[test]
    fn json_only_keeps_only_the_reply() {
        let c = Cell::new(8, false);
        c.set_json_only();
        c.set_closable();
        assert!(!c.carries_requests());
        c.push(msg(1));
        assert!(
            !c.close_stream(Duration::from_millis(1)),
            "no stream to close"
        );
        assert_eq!(c.decided(), None, "a notification does not start a stream");
        c.finish(Some(msg(2)));
        assert_eq!(c.decided(), Some(true));
        assert_eq!(c.take_only_reply(), Some(msg(2)));
        assert!(Cell::new(8, false).carries_requests());
    }

    #[test]
    fn resume_beyond_the_end_waits_for_new_messages() {
        let c = Cell::new(4, true);
        c.push(msg(1));
        let (t, _) = c.attach(Some(99));
        assert_eq!(c.next(t), Next::Pending);
        c.push(msg(2));
        assert_eq!(take(&c, t), vec![(2, msg(2))]);
    }

    #[test]
    fn a_mirror_sees_what_was_held_then_everything_in_order_then_the_end() {
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let c = Cell::new(8, true);
        c.push(msg(1));
        let s = seen.clone();
        c.mirror(Box::new(move |seq, line| {
            s.lock().push((seq, line.map(<[u8]>::to_vec)));
        }));
        c.push(msg(2));
        c.finish(Some(msg(3)));
        c.push(msg(4));
        assert_eq!(
            *seen.lock(),
            vec![
                (1, Some(msg(1))),
                (2, Some(msg(2))),
                (3, Some(msg(3))),
                (4, None)
            ]
        );
    }

    #[test]
    fn numbered_pushes_skip_duplicates_and_jump_gaps() {
        let c = Cell::starting_after(8, false, 4);
        let (t, before) = c.attach(None);
        assert_eq!(before, 4);
        c.push_numbered(5, msg(5));
        c.push_numbered(5, msg(0));
        assert_eq!(take(&c, t), vec![(5, msg(5))]);
        c.push_numbered(9, msg(9));
        c.push_numbered(10, msg(1));
        assert_eq!(take(&c, t), vec![(9, msg(9)), (10, msg(1))]);
    }
}
