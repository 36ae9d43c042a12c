//! Sans-IO newline framing: [`LineDecoder`] splits a byte stream into
//! lines, enforcing a maximum line length without ever buffering more than
//! that of an over-long line.

use std::ops::{Deref, Range};
use std::str::Utf8Error;

use crate::scan::find_byte;
use crate::{FrameError, readable_id};

/// Splits a byte stream into lines, for newline-delimited JSON-RPC (the MCP
/// stdio transport).
///
/// Feed bytes with [`push`](Self::push), then call
/// [`next_line`](Self::next_line) until it returns `None` before feeding
/// more. At end of input call
/// [`finish`](Self::finish) until it returns `None`.
///
/// - Lines are yielded without their `\n` and with one trailing `\r`
///   stripped, borrowed from the internal buffer (no copy).
/// - Blank lines (only spaces, tabs, `\r`) are skipped.
/// - A partial line is not an error; it waits for more bytes.
/// - A line longer than `max_line` is reported once as
///   [`FrameError::TooLong`]. If its newline has not arrived yet, what was
///   buffered is dropped and every further byte is discarded on arrival up
///   to and including the newline, so memory stays bounded by `max_line`
///   plus one fed chunk. Decoding then resumes with the next line.
///
/// ```
/// use toolwright_jsonrpc::{FrameError, LineDecoder};
///
/// let mut decoder = LineDecoder::new(8);
/// decoder.push(b"one\r\ntw");
/// assert_eq!(decoder.next_line().unwrap().unwrap().as_bytes(), b"one");
/// assert!(decoder.next_line().is_none());
/// decoder.push(b"o\nmuch too long\nlast");
/// assert_eq!(decoder.next_line().unwrap().unwrap().as_bytes(), b"two");
/// assert_eq!(decoder.next_line().unwrap().unwrap_err(), FrameError::TooLong { len_so_far: 13, id: None });
/// assert!(decoder.next_line().is_none());
/// assert_eq!(decoder.finish().unwrap().unwrap().as_bytes(), b"last");
/// ```
#[derive(Debug)]
pub struct LineDecoder {
    /// Initialized storage; the pending bytes are `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// `buf[start..scanned]` is known to hold no `\n`.
    scanned: usize,
    max_line: usize,
    /// Dropping the rest of a line already reported as too long.
    discarding: bool,
}

/// One line from a [`LineDecoder`], borrowed from its buffer: without the
/// `\n`, without a trailing `\r`, never blank. Dereferences to `[u8]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    bytes: &'a [u8],
}

impl<'a> Line<'a> {
    /// The bytes of the line.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The line as UTF-8 text.
    ///
    /// # Errors
    ///
    /// If the line is not valid UTF-8.
    pub fn to_str(&self) -> Result<&'a str, Utf8Error> {
        std::str::from_utf8(self.bytes)
    }

    /// The length of the line in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the line is empty (never true for yielded lines, which are
    /// not blank).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl Deref for Line<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl AsRef<[u8]> for Line<'_> {
    fn as_ref(&self) -> &[u8] {
        self.bytes
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

impl LineDecoder {
    /// A decoder that accepts lines of up to `max_line` bytes (not counting
    /// the `\n` or a `\r` before it).
    pub fn new(max_line: usize) -> Self {
        LineDecoder {
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            max_line,
            discarding: false,
        }
    }

    /// The maximum line length given to [`new`](Self::new).
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// How many received bytes are held, waiting to be yielded.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
    }

    /// Ensures at least `n` bytes of initialized space after `end`, moving
    /// pending bytes to the front first if that makes room.
    fn make_room(&mut self, n: usize) {
        if self.start == self.end {
            self.clear();
        } else if self.start > 0 && self.buf.len() - self.end < n {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < n {
            self.buf.resize(self.end + n, 0);
        }
    }

    /// Appends received bytes. While the rest of an over-long line is being
    /// discarded, bytes up to its newline are dropped here without being
    /// stored.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.discarding && self.start == self.end {
            match find_byte(b'\n', bytes) {
                None => return,
                Some(i) => {
                    self.discarding = false;
                    bytes = &bytes[i + 1..];
                }
            }
        }
        self.make_room(bytes.len());
        self.buf[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// The next complete line, `Some(Err(TooLong))` once per over-long
    /// line, or `None` when more bytes are needed.
    pub fn next_line(&mut self) -> Option<Result<Line<'_>, FrameError>> {
        let range = self.next_range()?;
        Some(range.map(|r| Line {
            bytes: &self.buf[r],
        }))
    }

    /// At end of input: like [`next_line`](Self::next_line), but once no
    /// complete line is left, yields the final unterminated line (if not
    /// blank). Call until it returns `None`. The decoder is then empty and
    /// could be reused.
    pub fn finish(&mut self) -> Option<Result<Line<'_>, FrameError>> {
        let range = match self.next_range() {
            Some(range) => range,
            None => Ok(self.final_range()?),
        };
        Some(range.map(|r| Line {
            bytes: &self.buf[r],
        }))
    }

    fn strip_cr(&self, range: Range<usize>) -> Range<usize> {
        if range.end > range.start && self.buf[range.end - 1] == b'\r' {
            range.start..range.end - 1
        } else {
            range
        }
    }

    fn next_range(&mut self) -> Option<Result<Range<usize>, FrameError>> {
        loop {
            if self.discarding {
                let i = match find_byte(b'\n', &self.buf[self.start..self.end]) {
                    Some(i) => i,
                    None => {
                        self.clear();
                        return None;
                    }
                };
                self.start += i + 1;
                self.scanned = self.start;
                self.discarding = false;
            }
            let Some(i) = find_byte(b'\n', &self.buf[self.scanned..self.end]) else {
                self.scanned = self.end;
                let pending = self.end - self.start;
                if pending > self.max_line {
                    // One byte over is fine if it may be the `\r` of `\r\n`.
                    let maybe_crlf =
                        pending - 1 == self.max_line && self.buf[self.end - 1] == b'\r';
                    if !maybe_crlf {
                        let id = readable_id(&self.buf[self.start..self.end]);
                        self.clear();
                        self.discarding = true;
                        return Some(Err(FrameError::TooLong {
                            len_so_far: pending,
                            id,
                        }));
                    }
                }
                return None;
            };
            let newline = self.scanned + i;
            let line = self.strip_cr(self.start..newline);
            self.start = newline + 1;
            self.scanned = self.start;
            if line.len() > self.max_line {
                return Some(Err(FrameError::TooLong {
                    len_so_far: line.len(),
                    id: readable_id(&self.buf[line.clone()]),
                }));
            }
            if !is_blank(&self.buf[line.clone()]) {
                return Some(Ok(line));
            }
        }
    }

    /// The unterminated remainder at end of input, if not blank.
    fn final_range(&mut self) -> Option<Range<usize>> {
        let range = self.strip_cr(self.start..self.end);
        self.start = self.end;
        self.scanned = self.end;
        self.discarding = false;
        (!is_blank(&self.buf[range.clone()])).then_some(range)
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
