//! Writers that append one complete message as a single JSON line
//! (terminated by `\n`) to a caller-owned `Vec<u8>`.
//!
//! Keys come out in the order `jsonrpc`, `id`, then `result`/`error` (or
//! `method`, `params`). The envelope is written by hand; only the payload
//! goes through serde_json, straight into the buffer. The output never
//! contains a raw newline before its terminator: serde_json's compact
//! output has none, and a payload that embeds a pre-serialized
//! [`RawValue`] with newlines has them turned into spaces (outside strings
//! a raw newline is only whitespace, so the JSON means the same).
//!
//! On error nothing is appended: the buffer is truncated back to its
//! length on entry.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::id::write_i64;
use crate::scan::flatten_newlines;
use crate::{Error, ErrorObject, ErrorResponse, RequestId};

const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\"";

/// Appends `s` as a JSON string literal, escaping `"`, `\` and control
/// characters.
pub(crate) fn write_json_str(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0x00..=0x1f => 0,
            _ => continue,
        };
        buf.extend_from_slice(&bytes[run..i]);
        run = i + 1;
        if short == 0 {
            let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]];
            buf.extend_from_slice(b"\\u00");
            buf.extend_from_slice(&hex);
        } else {
            buf.extend_from_slice(&[b'\\', short]);
        }
    }
    buf.extend_from_slice(&bytes[run..]);
    buf.push(b'"');
}

/// Serializes `value` at the end of `buf`, flattening any raw newlines.
/// On failure truncates `buf` to `mark` and describes the failed `part`.
fn write_value<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    mark: usize,
    value: &T,
    part: impl FnOnce() -> String,
) -> Result<(), Error> {
    let start = buf.len();
    if let Err(source) = serde_json::to_writer(&mut *buf, value) {
        buf.truncate(mark);
        return Err(Error::Serialize {
            part: part(),
            source,
        });
    }
    flatten_newlines(&mut buf[start..]);
    Ok(())
}

fn write_id_member(buf: &mut Vec<u8>, id: &RequestId) {
    buf.extend_from_slice(b",\"id\":");
    id.write_json(buf);
}

/// Appends a success response: `{"jsonrpc":"2.0","id":…,"result":…}\n`.
///
/// # Errors
///
/// [`Error::Serialize`] if `result` cannot be serialized; nothing is
/// appended then.
pub fn write_result<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &RequestId,
    result: &T,
) -> Result<(), Error> {
    let mark = buf.len();
    buf.extend_from_slice(HEAD);
    write_id_member(buf, id);
    buf.extend_from_slice(b",\"result\":");
    write_value(buf, mark, result, || format!("result for id {id}"))?;
    buf.extend_from_slice(b"}\n");
    Ok(())
}

/// Appends a success response whose `result` is already serialized JSON,
/// copied as is (raw newlines become spaces). Use it to answer from a
/// cache, such as a prebuilt `tools/list` result.
pub fn write_raw_result(buf: &mut Vec<u8>, id: &RequestId, result: &RawValue) {
    buf.extend_from_slice(HEAD);
    write_id_member(buf, id);
    buf.extend_from_slice(b",\"result\":");
    let start = buf.len();
    buf.extend_from_slice(result.get().as_bytes());
    flatten_newlines(&mut buf[start..]);
    buf.extend_from_slice(b"}\n");
}

/// Appends the error object's JSON, leaving out `data` if serializing it
/// fails (it cannot for a `serde_json::Value`, whose keys are strings and
/// numbers finite).
fn write_error_object(buf: &mut Vec<u8>, error: &ErrorObject) {
    buf.extend_from_slice(b"{\"code\":");
    write_i64(buf, error.code);
    buf.extend_from_slice(b",\"message\":");
    write_json_str(buf, &error.message);
    if let Some(data) = &error.data {
        let mark = buf.len();
        buf.extend_from_slice(b",\"data\":");
        // On failure `write_value` has already cut the buffer back to
        // `mark`, so the error goes out without `data`, which beats not
        // answering at all.
        let _unreachable_for_a_value = write_value(buf, mark, data, String::new);
    }
    buf.push(b'}');
}

/// Appends an error response: `{"jsonrpc":"2.0","id":…,"error":{…}}\n`.
///
/// With `id: None` the `id` key is omitted entirely (never `"id":null`),
/// as MCP wants when the offending message's id could not be read.
pub fn write_error(buf: &mut Vec<u8>, id: Option<&RequestId>, error: &ErrorObject) {
    buf.extend_from_slice(HEAD);
    if let Some(id) = id {
        write_id_member(buf, id);
    }
    buf.extend_from_slice(b",\"error\":");
    write_error_object(buf, error);
    buf.extend_from_slice(b"}\n");
}

/// Appends `response` as an error response line; see [`write_error`].
pub fn write_error_response(buf: &mut Vec<u8>, response: &ErrorResponse) {
    write_error(buf, response.id.as_ref(), &response.error);
}

/// Writes `,"method":…` and, unless `params` serializes to `null` (as
/// `None` and `()` do), `,"params":…`, then closes the line.
fn write_call_tail<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    mark: usize,
    method: &str,
    params: &T,
    kind: &str,
) -> Result<(), Error> {
    buf.extend_from_slice(b",\"method\":");
    write_json_str(buf, method);
    let before_params = buf.len();
    buf.extend_from_slice(b",\"params\":");
    let value_start = buf.len();
    write_value(buf, mark, params, || {
        format!("params of {kind} \"{method}\"")
    })?;
    if &buf[value_start..] == b"null" {
        buf.truncate(before_params);
    }
    buf.extend_from_slice(b"}\n");
    Ok(())
}

/// Appends a notification: `{"jsonrpc":"2.0","method":…,"params":…}\n`.
///
/// `params` should serialize to an object or array; if it serializes to
/// `null` (`None`, `()`), the `params` key is omitted.
///
/// # Errors
///
/// [`Error::Serialize`] if `params` cannot be serialized; nothing is
/// appended then.
pub fn write_notification<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    method: &str,
    params: &T,
) -> Result<(), Error> {
    let mark = buf.len();
    buf.extend_from_slice(HEAD);
    write_call_tail(buf, mark, method, params, "notification")
}

/// Appends a notification without `params`:
/// `{"jsonrpc":"2.0","method":…}\n`.
pub fn write_notification_no_params(buf: &mut Vec<u8>, method: &str) {
    buf.extend_from_slice(HEAD);
    buf.extend_from_slice(b",\"method\":");
    write_json_str(buf, method);
    buf.extend_from_slice(b"}\n");
}

/// Appends a request: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}\n`.
///
/// `params` should serialize to an object or array; if it serializes to
/// `null` (`None`, `()`), the `params` key is omitted.
///
/// # Errors
///
/// [`Error::Serialize`] if `params` cannot be serialized; nothing is
/// appended then.
pub fn write_request<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &T,
) -> Result<(), Error> {
    let mark = buf.len();
    buf.extend_from_slice(HEAD);
    write_id_member(buf, id);
    write_call_tail(buf, mark, method, params, "request")
}

/// Appends a request without `params`:
/// `{"jsonrpc":"2.0","id":…,"method":…}\n`.
pub fn write_request_no_params(buf: &mut Vec<u8>, id: &RequestId, method: &str) {
    buf.extend_from_slice(HEAD);
    write_id_member(buf, id);
    buf.extend_from_slice(b",\"method\":");
    write_json_str(buf, method);
    buf.extend_from_slice(b"}\n");
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
