//! Incoming messages: the types, the [`Limits`], and [`parse`], which
//! applies the JSON-RPC envelope rules.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::json;
use serde_json::value::RawValue;

use crate::envelope::{CallVisitor, Envelope, Slot, Top};
use crate::{ErrorObject, ErrorResponse, RequestId, readable_id, scan};

/// Size limits applied by [`parse`] before any JSON parsing happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest accepted message, in bytes (default 16 MiB).
    pub max_bytes: usize,
    /// The deepest accepted nesting of arrays and objects, counting the
    /// top-level container as 1 (default 128). Anything within the limit
    /// parses. Above 128, note that an error response's `data` is parsed
    /// into a `serde_json::Value`, whose own limit of 128 levels still
    /// applies: deeper `data` makes the error object invalid.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 128,
        }
    }
}

/// A request: a call that expects a response with the same `id`.
#[derive(Debug, Clone)]
pub struct Request {
    /// The id to answer with.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters as unparsed JSON, always an object or an array.
    pub params: Option<Box<RawValue>>,
}

/// A notification: a call without an `id`, which must not be answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters as unparsed JSON, always an object or an array.
    pub params: Option<Box<RawValue>>,
}

/// A response to a request this side sent.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request it answers.
    pub id: RequestId,
    /// The `result` as unparsed JSON (any JSON value, `null` included), or
    /// the `error`.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// One incoming message, valid or not.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response with an id.
    Response(Response),
    /// A well-formed error response without a usable id: the `id` key is
    /// absent, or `null` as plain JSON-RPC 2.0 allows. It reports that the
    /// peer could not read something this side sent. It must never be
    /// answered (answering would let two peers trade errors forever); log
    /// it instead.
    ErrorWithoutId(ErrorObject),
    /// An object or batch item that breaks the envelope rules. Answer it
    /// with `error`, echoing `id` when it is `Some` and omitting the id key
    /// when it is `None`.
    Invalid {
        /// The message's id, when it was present and a valid id.
        id: Option<RequestId>,
        /// The error to send back (code -32600).
        error: ErrorObject,
    },
}

impl Message {
    /// The id carried by the message, if any (for `Invalid`, the readable
    /// id to echo).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Invalid { id, .. } => id.as_ref(),
            Message::Notification(_) | Message::ErrorWithoutId(_) => None,
        }
    }
}

/// The result of [`parse`]: one message, a batch, or an error that applies
/// to the whole input.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// A single JSON object.
    Single(Message),
    /// A non-empty JSON array; each element became a message, invalid
    /// elements as [`Message::Invalid`].
    Batch(Vec<Message>),
    /// The input as a whole was rejected; send this back. It carries the
    /// request's id when one could still be read from the top-level object
    /// (see [`readable_id`](crate::readable_id)), and none otherwise.
    Invalid(ErrorResponse),
}

fn whole_input(bytes: &[u8], error: ErrorObject) -> Parsed {
    Parsed::Invalid(ErrorResponse {
        id: readable_id(bytes),
        error,
    })
}

/// Parses one incoming JSON-RPC message or batch.
///
/// Checks, in order:
///
/// 1. More than `limits.max_bytes` bytes: -32600 `message too large`,
///    without looking at the content.
/// 2. Nesting deeper than `limits.max_depth` (a linear byte scan that
///    understands strings and escapes, so it never recurses): -32600
///    `message nested too deeply`. This is -32600 rather than -32700
///    because the input is refused by policy, whether or not it is valid
///    JSON.
/// 3. Invalid UTF-8 or invalid JSON (including trailing characters): -32700
///    with the parser's complaint.
/// 4. A top level that is not an object or array: -32600; an empty array:
///    -32600.
///
/// Each object (the top level or a batch element) is then read in one
/// pass, and becomes [`Message::Invalid`] (code -32600, keeping a valid id
/// when there is one) if: a key is repeated; `jsonrpc` is not exactly
/// `"2.0"`; `id` is not an integer or a string (for example `null`, `1.5`
/// or `true`; the id is then dropped); `method` is not a string; a request
/// or notification carries `result` or `error`, or `params` that is not an
/// object or array; a response has both `result` and `error`, no id, or an
/// `error` without an integer `code` and a string `message`; or there is
/// no `method`, `result` or `error`. Unknown keys are ignored. A batch
/// element that is not an object is invalid with no id.
///
/// The one exception for ids: an error response whose `id` is absent or
/// `null` is [`Message::ErrorWithoutId`], not invalid.
///
/// Whenever the answer is an error, it carries the id if one can still be
/// read from the top-level object ([`readable_id`](crate::readable_id)):
/// a message too large or too deep, a syntax error or a number out of
/// range after the `id`, or an id written as `-0` or `7.0`, which JSON
/// Schema counts as integers but which this envelope refuses.
pub fn parse(bytes: &[u8], limits: &Limits) -> Parsed {
    match admit(bytes, limits) {
        Ok(text) => parse_text(text),
        Err(refused) => whole_input(bytes, refused),
    }
}

/// What [`parse_call`] found.
#[derive(Debug)]
pub enum Incoming<P> {
    /// A request for the expected method, with its id and its `params` read as `P`.
    Call(RequestId, P),
    /// Anything else, exactly as [`parse`] reads it.
    Other(Parsed),
}

/// [`parse`] with one method read in a single pass: when `bytes` is a plain request for
/// `method` whose `params` deserialize as `P`, both come back at once, without the raw
/// `params` being captured and read a second time, or the method name copied.
///
/// Everything else, the same method with a broken envelope or with `params` that `P`
/// refuses included, comes back as [`Incoming::Other`] with what [`parse`] returns for it;
/// so a caller that handles `Call` as it would the matching [`Request`] behaves exactly as
/// with [`parse`]. `params` must be an object or an array, as the envelope rules require.
/// The order of the keys does not matter (`params` before `method` is read raw first).
pub fn parse_call<P: DeserializeOwned>(bytes: &[u8], limits: &Limits, method: &str) -> Incoming<P> {
    let text = match admit(bytes, limits) {
        Ok(text) => text,
        Err(refused) => return Incoming::Other(whole_input(bytes, refused)),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let visitor = CallVisitor {
        method,
        params: PhantomData::<P>,
    };
    if let Ok(Some((id, params))) = de.deserialize_map(visitor)
        && de.end().is_ok()
    {
        return Incoming::Call(id, params);
    }
    Incoming::Other(parse_text(text))
}

/// The checks that come before any JSON parsing: size, nesting depth, UTF-8.
fn admit<'a>(bytes: &'a [u8], limits: &Limits) -> Result<&'a str, ErrorObject> {
    if bytes.len() > limits.max_bytes {
        return Err(ErrorObject::invalid_request("message too large")
            .with_data(json!({ "size": bytes.len(), "limit": limits.max_bytes })));
    }
    if scan::exceeds_depth(bytes, limits.max_depth) {
        return Err(ErrorObject::invalid_request("message nested too deeply")
            .with_data(json!({ "maxDepth": limits.max_depth })));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        ErrorObject::parse_error(format!("Parse error: invalid UTF-8 at byte {at}"))
    })
}

fn parse_text(text: &str) -> Parsed {
    let mut de = serde_json::Deserializer::from_str(text);
    // Every visitor accepts every JSON value, so any error here is a
    // syntax error (or serde_json's recursion limit, also syntax).
    let top = match Top::deserialize(&mut de).and_then(|top| de.end().map(|()| top)) {
        Ok(top) => top,
        Err(e) => {
            let error = ErrorObject::parse_error(format!("Parse error: {e}"));
            return whole_input(text.as_bytes(), error);
        }
    };
    match top {
        // An id the envelope rules could not accept (`-0`, `7.0`) may still be readable,
        // exactly, from the text: the error then goes back to it.
        Top::Single(Message::Invalid { id: None, error }) => Parsed::Single(Message::Invalid {
            id: readable_id(text.as_bytes()),
            error,
        }),
        Top::Single(message) => Parsed::Single(message),
        Top::Batch(items) if items.is_empty() => {
            whole_input(b"", ErrorObject::invalid_request("empty batch"))
        }
        Top::Batch(items) => Parsed::Batch(items),
        Top::Scalar => whole_input(
            b"",
            ErrorObject::invalid_request("message must be a JSON object or array"),
        ),
    }
}

fn invalid(id: Option<RequestId>, message: &str) -> Message {
    Message::Invalid {
        id,
        error: ErrorObject::invalid_request(message),
    }
}

const BAD_ID: &str = "\"id\" must be a string or an integer";

/// Applies the envelope rules to the members of one object.
pub(crate) fn classify(env: Envelope) -> Message {
    let Envelope {
        version,
        id,
        method,
        params,
        result,
        error,
        duplicate,
    } = env;
    let (id, id_null, id_wrong) = match id {
        Slot::Valid(id) => (Some(id), false, false),
        Slot::Absent => (None, false, false),
        Slot::Null => (None, true, false),
        Slot::Wrong => (None, false, true),
    };
    if let Some(key) = duplicate {
        return invalid(id, &format!("duplicate key \"{key}\""));
    }
    if !matches!(version, Slot::Valid(_)) {
        return invalid(id, "\"jsonrpc\" must be exactly \"2.0\"");
    }
    let has_error = !matches!(error, Slot::Absent);
    if !matches!(method, Slot::Absent) {
        if id_null || id_wrong {
            return invalid(None, BAD_ID);
        }
        let Slot::Valid(method) = method else {
            return invalid(id, "\"method\" must be a string");
        };
        if result.is_some() || has_error {
            return invalid(id, "a request must not carry \"result\" or \"error\"");
        }
        if let Some(p) = &params
            && !matches!(p.get().as_bytes().first(), Some(b'{' | b'['))
        {
            return invalid(id, "\"params\" must be an object or an array");
        }
        return match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        };
    }
    if result.is_some() && has_error {
        return invalid(
            id,
            "a response must not carry both \"result\" and \"error\"",
        );
    }
    if id_wrong || (id_null && result.is_some()) {
        return invalid(None, BAD_ID);
    }
    if let Some(result) = result {
        return match id {
            Some(id) => Message::Response(Response {
                id,
                outcome: Ok(result),
            }),
            None => invalid(None, "a response must carry an \"id\""),
        };
    }
    match error {
        Slot::Valid(error) => match id {
            Some(id) => Message::Response(Response {
                id,
                outcome: Err(error),
            }),
            None => Message::ErrorWithoutId(error),
        },
        Slot::Null | Slot::Wrong => invalid(
            id,
            "\"error\" must be an object with an integer \"code\" and a string \"message\"",
        ),
        Slot::Absent => invalid(id, "missing \"method\""),
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
