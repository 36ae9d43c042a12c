//! Replies: the line a transport sends, typed with its outcome, and the writers that make
//! result and error lines.
//!
//! A transport never reads a reply's bytes to learn what it says: [`Reply::outcome`] tells
//! whether it is a result or an error, and which error code, so HTTP can choose a status.

use crate::era::Era;
use crate::server::Server;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use toolwright_jsonrpc::{self as jsonrpc, ErrorObject, RequestId};
use toolwright_protocol::CallToolResult;

/// What a reply says, for a transport that must choose a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A JSON-RPC result (which may still be a tool-level error, `isError: true`).
    Result,
    /// A JSON-RPC error with this code.
    Error(i64),
}

/// One reply line with its outcome, and what the request that made it still holds.
///
/// A transport sends [`line`](Reply::line) and then drops the reply: the call's state is
/// freed only once the client has its answer.
pub struct Reply {
    line: Vec<u8>,
    outcome: Outcome,
    /// A `tools/call` result with `isError: true` (for telemetry's `error.type`).
    tool_error: bool,
    /// An error reply's message (telemetry's span status description).
    error_message: Option<Box<str>>,
    /// Why the call was refused before or instead of running, when it was.
    refused: Option<Refused>,
    spent: Option<Spent>,
}

/// Why a `tools/call` was refused: the reply is a tool error either way, and a transport
/// that can say when to come back (HTTP's `Retry-After`) reads it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The tool's standing forbids the call (the gateway's policy).
    Policy,
    /// A limit ([`crate::limit`]): try again after this many seconds.
    Limit {
        /// Whole seconds, at least 1.
        retry_after: u64,
    },
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("line", &String::from_utf8_lossy(&self.line))
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl Reply {
    /// A result line (written by this crate's writers).
    pub(crate) fn result(line: Vec<u8>) -> Reply {
        Reply {
            line,
            outcome: Outcome::Result,
            tool_error: false,
            error_message: None,
            refused: None,
            spent: None,
        }
    }

    /// A `tools/call` result line, which reports a tool-level error when `is_error`.
    pub(crate) fn call(line: Vec<u8>, is_error: bool) -> Reply {
        Reply {
            tool_error: is_error,
            ..Reply::result(line)
        }
    }

    /// The error reply to request `id` (`None`: the id could not be read).
    pub fn error(id: Option<&RequestId>, error: &ErrorObject) -> Reply {
        let mut line = Vec::with_capacity(96 + error.message.len());
        jsonrpc::write_error(&mut line, id, error);
        Reply {
            line,
            outcome: Outcome::Error(error.code),
            tool_error: false,
            error_message: Some(error.message.as_str().into()),
            refused: None,
            spent: None,
        }
    }

    /// A -32603 reply to `id`.
    pub(crate) fn internal(id: &RequestId, message: String) -> Reply {
        Reply::error(Some(id), &ErrorObject::internal(message))
    }

    /// The reply marked as a refusal.
    pub(crate) fn refused(mut self, why: Refused) -> Reply {
        self.refused = Some(why);
        self
    }

    /// Why the call was refused, when it was (a limit's refusal carries when to retry).
    pub fn refusal(&self) -> Option<Refused> {
        self.refused
    }

    /// Seconds after which a refused call may be tried again (HTTP's `Retry-After`).
    pub fn retry_after(&self) -> Option<u64> {
        match self.refused {
            Some(Refused::Limit { retry_after }) => Some(retry_after),
            _ => None,
        }
    }

    pub(crate) fn with_spent(mut self, spent: Spent) -> Reply {
        self.spent = Some(spent);
        self
    }

    /// The newline-terminated JSON-RPC line.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// Result or error, and the error's code.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// True for a `tools/call` result whose `isError` is true.
    pub fn is_tool_error(&self) -> bool {
        self.tool_error
    }

    /// The error's message, when the reply is an error.
    pub fn error_message(&self) -> Option<&str> {
        self.error_message.as_deref()
    }

    /// The error code, when the reply is an error.
    pub fn error_code(&self) -> Option<i64> {
        match self.outcome {
            Outcome::Error(c) => Some(c),
            Outcome::Result => None,
        }
    }

    /// The line; what the call still held is freed now.
    pub fn into_line(self) -> Vec<u8> {
        self.line
    }

    /// The line and what the call still holds (drop it once the line is sent).
    pub fn into_parts(self) -> (Vec<u8>, Option<Spent>) {
        (self.line, self.spent)
    }
}

/// What a finished `tools/call` still holds once its reply line exists: its context, the
/// tool's registry entry, its structured content, its cancellation token and its spent
/// future. Dropping it frees them.
pub struct Spent {
    pub(crate) _held: Box<dyn Send>,
}

/// A reply that is not ready yet (a tool still running). `None`: nothing to send.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Option<Reply>> + Send + 'static>>;

/// What handling a message produced.
pub enum Handled {
    /// Nothing to send (a notification, a response, a cancelled call).
    Nothing,
    /// A complete reply.
    Reply(Reply),
    /// A reply that comes when the future completes.
    Later(ReplyFuture),
}

impl Handled {
    pub(crate) fn error(id: &RequestId, error: ErrorObject) -> Handled {
        Handled::Reply(Reply::error(Some(id), &error))
    }

    /// The reply, if there is one now.
    pub fn now(self) -> Result<Option<Reply>, ReplyFuture> {
        match self {
            Handled::Nothing => Ok(None),
            Handled::Reply(r) => Ok(Some(r)),
            Handled::Later(fut) => Err(fut),
        }
    }
}

/// A result line around JSON this crate serialized itself (so it is known to be valid and
/// single-line), without parsing it again; the result is `parts` one after the other.
fn raw_result_line<P: AsRef<[u8]>>(id: &RequestId, parts: &[P]) -> Vec<u8> {
    let len: usize = parts.iter().map(|p| p.as_ref().len()).sum();
    let mut buf = Vec::with_capacity(len + 48);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    id.write_json(&mut buf);
    buf.extend_from_slice(b",\"result\":");
    for p in parts {
        buf.extend_from_slice(p.as_ref());
    }
    buf.extend_from_slice(b"}\n");
    buf
}

/// The result line of a result passed on as another server wrote it: that text (`parts`
/// one after the other), with any raw newline in it (whitespace between tokens, since JSON
/// strings escape theirs) made a space, so it stays one line on stdio.
pub(crate) fn forwarded_result_line(id: &RequestId, parts: &[&str]) -> Vec<u8> {
    let mut line = raw_result_line(id, parts);
    let body = line.len() - 2;
    for b in &mut line[..body] {
        if *b == b'\n' {
            *b = b' ';
        }
    }
    line
}

/// A result line around any serializable value.
pub(crate) fn plain_result(id: &RequestId, value: &impl serde::Serialize) -> Reply {
    let mut buf = Vec::with_capacity(128);
    jsonrpc::write_result(&mut buf, id, value).expect("a result serializes");
    Reply::result(buf)
}

/// The line for a successful `tools/call` result whose only content is its structured
/// content, which the text block repeats: the JSON is serialized once and written twice.
/// Byte for byte what serializing `result` with that text block added gives (the test
/// `structured_line_matches_the_general_one` holds it to that).
pub(crate) fn structured_result_line(
    id: &RequestId,
    era: &Era,
    json: &str,
    result: &CallToolResult,
) -> Vec<u8> {
    let mut buf = Vec::with_capacity(2 * json.len() + 128);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    id.write_json(&mut buf);
    buf.extend_from_slice(b",\"result\":{");
    if era.is_modern() {
        buf.extend_from_slice(b"\"resultType\":\"complete\",");
    }
    buf.extend_from_slice(b"\"content\":[{\"type\":\"text\",\"text\":");
    push_json_as_string(&mut buf, json);
    buf.extend_from_slice(b"}],\"structuredContent\":");
    buf.extend_from_slice(json.as_bytes());
    if let Some(is_error) = result.is_error {
        buf.extend_from_slice(if is_error {
            b",\"isError\":true"
        } else {
            b",\"isError\":false"
        });
    }
    if let Some(meta) = &result.meta {
        buf.extend_from_slice(b",\"_meta\":");
        serde_json::to_writer(&mut buf, meta).expect("a JSON object serializes");
    }
    buf.extend_from_slice(b"}}\n");
    buf
}

/// Appends `json`, compact JSON text from serde_json, as a JSON string. Such text holds no
/// control characters (serde_json escapes them inside strings), so only the quote and the
/// backslash need a backslash: the bytes serde_json's string escaping gives, in one scan.
fn push_json_as_string(buf: &mut Vec<u8>, json: &str) {
    let bytes = json.as_bytes();
    buf.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'"' || b == b'\\' {
            buf.extend_from_slice(&bytes[start..i]);
            buf.push(b'\\');
            start = i;
        }
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// The line of a `CallToolResult` in `era`.
pub(crate) fn call_result_line(id: &RequestId, era: &Era, r: &CallToolResult) -> Vec<u8> {
    if era.is_modern() {
        // `{` + `"resultType":"complete",` + the rest of the object.
        let body = serde_json::to_vec(r).expect("a CallToolResult serializes");
        let first = toolwright_protocol::COMPLETE_FIRST.as_bytes();
        return raw_result_line(id, &[first, &body[1..]]);
    }
    let mut buf = Vec::with_capacity(160);
    jsonrpc::write_result(&mut buf, id, r).expect("a CallToolResult serializes");
    buf
}

/// A `CallToolResult` reply (a result, even when the tool reports `isError`).
pub(crate) fn call_result(id: &RequestId, era: &Era, r: &CallToolResult) -> Reply {
    Reply::call(call_result_line(id, era, r), r.is_error())
}

impl Server {
    /// Serializes a result, adding what the modern era requires (`resultType`, serverInfo).
    pub(crate) fn result(&self, id: &RequestId, era: &Era, mut value: Value) -> Reply {
        if era.is_modern()
            && let Some(obj) = value.as_object_mut()
        {
            obj.entry("resultType").or_insert_with(|| json!("complete"));
            if !obj.contains_key("_meta") {
                obj.insert("_meta".into(), self.inner.info_meta.clone());
            }
        }
        plain_result(id, &value)
    }
}

/// Params that may be absent (then `T::default()`).
pub(crate) fn parse_params<T: DeserializeOwned + Default>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(raw) => parse_required(Some(raw)),
    }
}

/// Params that must be present.
pub(crate) fn parse_required<T: DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    match params {
        None => Err(ErrorObject::invalid_params("params are required")),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}"))),
    }
}

/// The text of a panic's payload.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Joins the replies of a 2025-03-26 batch into one array line.
pub(crate) fn join_batch(replies: Vec<Reply>) -> Option<Reply> {
    if replies.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(replies.iter().map(|r| r.line.len()).sum::<usize>() + 2);
    out.push(b'[');
    for (i, r) in replies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r.line.strip_suffix(b"\n").unwrap_or(&r.line));
    }
    out.extend_from_slice(b"]\n");
    Some(Reply::result(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use std::sync::Arc;
    use toolwright_protocol::{ClientCapabilities, Content, ProtocolVersion};

    /// The one-pass line of a structured result is byte for byte the general serialization
    /// of the same result with the text block added, in both eras.
    #[test]
    fn structured_line_matches_the_general_one() {
        let eras = [
            Era::Legacy(ProtocolVersion::LATEST_LEGACY),
            Era::Modern {
                version: ProtocolVersion::LATEST,
                capabilities: Arc::new(ClientCapabilities::default()),
                log_level: None,
            },
        ];
        let values = [
            json!({"result": 3}),
            json!({"result": -0.5, "note": "say \"hi\"\\n\tand\u{1}\u{7f} é ✓ / \\\"\\"}),
            json!({"list": [1, {"a": null, "b": [true, false]}], "empty": {}}),
            json!("plain"),
            json!([]),
        ];
        let mut meta = Map::new();
        meta.insert("k".into(), json!({"x": [1, "two"]}));
        let ids = [RequestId::Number(7), RequestId::from("id \"q\"")];
        for era in &eras {
            for value in &values {
                for id in &ids {
                    for (is_error, meta) in [(None, None), (Some(false), Some(meta.clone()))] {
                        let mut result = CallToolResult::structured(value.clone());
                        result.is_error = is_error;
                        result.meta = meta;
                        let json = serde_json::to_string(value).unwrap();
                        let fast = structured_result_line(id, era, &json, &result);
                        result.content = vec![Content::text(serde_json::to_string(value).unwrap())];
                        let general = call_result_line(id, era, &result);
                        assert_eq!(
                            String::from_utf8(fast).unwrap(),
                            String::from_utf8(general).unwrap()
                        );
                    }
                }
            }
        }
    }

    /// A forwarded result is written as its parts, raw newlines made spaces; a modern
    /// result's leading `resultType` is left out by writing the rest after a `{`.
    #[test]
    fn a_forwarded_result_is_written_from_its_parts() {
        let id = RequestId::Number(3);
        let text = "{\"resultType\":\"complete\",\"content\":[],\n\"isError\":false}";
        let rest = text
            .strip_prefix(toolwright_protocol::COMPLETE_FIRST)
            .unwrap();
        let line = forwarded_result_line(&id, &["{", rest]);
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[], \"isError\":false}}\n"
        );
        let whole = forwarded_result_line(&id, &[text]);
        let v: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(whole.iter().filter(|&&b| b == b'\n').count(), 1);
    }

    #[test]
    fn an_error_reply_knows_its_code() {
        let r = Reply::error(
            Some(&RequestId::Number(1)),
            &ErrorObject::method_not_found("x"),
        );
        assert_eq!(r.outcome(), Outcome::Error(-32601));
        assert_eq!(r.error_code(), Some(-32601));
        let r = plain_result(&RequestId::Number(1), &json!({}));
        assert_eq!(r.outcome(), Outcome::Result);
        assert_eq!(r.line(), b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    }
}
