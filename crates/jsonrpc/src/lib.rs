//! JSON-RPC 2.0 as MCP uses it: the message envelope, request ids, error
//! codes, fast response writers and newline framing.
//!
//! This crate is the bottom layer of toolwright. It knows nothing of MCP
//! methods or of any I/O runtime (no tokio, no async): bytes go in, typed
//! messages come out, and replies are appended to a caller-owned `Vec<u8>`.
//! It sits on the hot path of the stdio server, so incoming messages are
//! parsed in a single pass straight from the line buffer, `params` and
//! `result` stay as unparsed [`RawValue`](serde_json::value::RawValue)s, and
//! the writers emit each reply as one `\n`-terminated line with no
//! intermediate `serde_json::Value`.
//!
//! A typical read loop:
//!
//! ```
//! use toolwright_jsonrpc::{LineDecoder, Limits, Message, Parsed, parse, write_result};
//!
//! let mut decoder = LineDecoder::new(Limits::default().max_bytes);
//! let mut out = Vec::new();
//! decoder.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
//! while let Some(line) = decoder.next_line() {
//!     let line = line.expect("line within the limit");
//!     if let Parsed::Single(Message::Request(req)) = parse(line.as_bytes(), &Limits::default()) {
//!         write_result(&mut out, &req.id, &serde_json::json!({})).unwrap();
//!     }
//! }
//! assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
//! ```
//!
//! # Layout
//!
//! - `id.rs`: [`RequestId`], a JSON integer or string.
//! - [`code`] (`code.rs`): the numeric error codes of JSON-RPC and MCP.
//! - `object.rs`: [`ErrorObject`] (`{code, message, data?}`) and
//!   [`ErrorResponse`] (an error with an optional id).
//! - `message.rs`: the incoming message types ([`Message`], [`Request`],
//!   [`Notification`], [`Response`], [`Parsed`]), [`Limits`], [`parse`],
//!   which applies every envelope rule, and [`parse_call`], which also reads
//!   one expected method's `params` in the same pass.
//! - `envelope.rs` (private): the serde visitors that read one envelope in a
//!   single, lenient pass so that a readable `id` survives other mistakes.
//! - `scan.rs` (private): byte scans that run before serde (nesting depth,
//!   newline search).
//! - `write.rs`: the `write_*` functions that append one JSON line per message.
//! - `frame.rs`: [`LineDecoder`], sans-IO newline framing with a line limit.
//! - `error.rs`: [`Error`] and [`FrameError`].
//!
//! Unit tests sit beside the code; the larger tables for `message.rs`,
//! `write.rs` and `frame.rs` live in sibling `*_tests.rs` files.

// The test-table helper (`table! { check; (a, b, ...); ... }`), for every test module.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

pub mod code;
mod envelope;
mod error;
mod frame;
mod id;
mod message;
mod object;
mod recover;
mod scan;
mod write;

pub use error::{Error, FrameError};
pub use frame::{Line, LineDecoder};
pub use id::RequestId;
pub use message::{
    Incoming, Limits, Message, Notification, Parsed, Request, Response, parse, parse_call,
};
pub use object::{ErrorObject, ErrorResponse};
pub use recover::readable_id;
pub use write::{
    write_error, write_error_response, write_notification, write_notification_no_params,
    write_raw_result, write_request, write_request_no_params, write_result,
};
