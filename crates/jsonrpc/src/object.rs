//! [`ErrorObject`] (the `error` member of a response) and [`ErrorResponse`]
//! (an error together with the id it answers, if known).

use std::fmt;

use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RequestId;
use crate::code;

/// A JSON-RPC error object: `{"code": int, "message": string, "data"?: any}`.
///
/// `data` is omitted from the JSON when it is `None`; a `"data": null`
/// read from the wire also becomes `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`code`](crate::code).
    pub code: i64,
    /// A short, human-readable description.
    pub message: String,
    /// Additional structured information, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with the given code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// A -32700 parse error: the input was not valid JSON.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(code::PARSE_ERROR, message)
    }

    /// A -32600 invalid request: valid JSON, but not a valid message.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, message)
    }

    /// A -32601 error with the message `Method not found: <method>`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// A -32602 invalid params error.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// A -32603 internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// The same error with `data` set (replacing any previous data).
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// An error reply: the error and the id of the message it answers.
///
/// `id` is `None` when the offending message's id could not be read; the
/// `id` key is then left out of the JSON entirely (MCP's schema has no
/// `"id": null`). Serializing yields the whole envelope,
/// `{"jsonrpc":"2.0","id"?:…,"error":{…}}`, the same bytes as
/// [`write_error_response`](crate::write_error_response) minus the newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    /// The id of the message this answers, if it was readable.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

impl ErrorResponse {
    /// An error reply for `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        ErrorResponse { id, error }
    }
}

impl Serialize for ErrorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = if self.id.is_some() { 3 } else { 2 };
        let mut s = serializer.serialize_struct("ErrorResponse", len)?;
        s.serialize_field("jsonrpc", "2.0")?;
        match &self.id {
            Some(id) => s.serialize_field("id", id)?,
            None => s.skip_field("id")?,
        }
        s.serialize_field("error", &self.error)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_set_code_and_message() {
        table! { |err: ErrorObject, code: i64, message: &str| assert_eq!((err.code, err.message.as_str(), err.data), (code, message, None));
            (ErrorObject::parse_error("bad json"), -32700, "bad json");
            (ErrorObject::invalid_request("no method"), -32600, "no method");
            (ErrorObject::method_not_found("tools/frob"), -32601, "Method not found: tools/frob");
            (ErrorObject::invalid_params("missing name"), -32602, "missing name");
            (ErrorObject::internal("oops"), -32603, "oops");
            (ErrorObject::new(code::REQUEST_TIMEOUT, "timed out"), -32001, "timed out");
        }
    }

    #[test]
    fn serialization_omits_absent_data_and_ids() {
        table! { |value: Value, want: Value| assert_eq!(value, want);
            (json!(ErrorObject::internal("x")), json!({"code": -32603, "message": "x"}));
            (json!(ErrorObject::internal("x").with_data(json!({"k": 1}))), json!({"code": -32603, "message": "x", "data": {"k": 1}}));
            (json!(ErrorResponse::new(None, ErrorObject::parse_error("p"))), json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "p"}}));
            (json!(ErrorResponse::new(Some(RequestId::from("a")), ErrorObject::internal("i"))), json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32603, "message": "i"}}));
        }
    }

    #[test]
    fn error_response_key_order_is_jsonrpc_id_error() {
        table! { |resp: ErrorResponse, want: &str| assert_eq!(serde_json::to_string(&resp).unwrap(), want);
            (ErrorResponse::new(Some(RequestId::Number(5)), ErrorObject::internal("i")), r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"i"}}"#);
            (ErrorResponse::new(None, ErrorObject::internal("i").with_data(json!(1))), r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"i","data":1}}"#);
        }
    }

    #[test]
    fn deserialize_reads_data_and_treats_null_data_as_absent() {
        table! { |input: &str, want: Option<ErrorObject>| assert_eq!(serde_json::from_str::<ErrorObject>(input).ok(), want, "input {input}");
            (r#"{"code":-1,"message":"m"}"#, Some(ErrorObject::new(-1, "m")));
            (r#"{"code":-1,"message":"m","data":null}"#, Some(ErrorObject::new(-1, "m")));
            (r#"{"code":-1,"message":"m","data":[1]}"#, Some(ErrorObject::new(-1, "m").with_data(json!([1]))));
            (r#"{"code":1.5,"message":"m"}"#, None);
            (r#"{"message":"m"}"#, None);
        }
    }

    #[test]
    fn display_shows_message_and_code() {
        assert_eq!(
            ErrorObject::method_not_found("x").to_string(),
            "Method not found: x (-32601)"
        );
    }
}
