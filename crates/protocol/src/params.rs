//! Parameters of the requests and notifications a server receives.

use crate::{LoggingLevel, RequestMeta};
use serde::Deserialize;
use serde_json::Value;
use toolwright_jsonrpc::RequestId;

/// Parameters of any request that has nothing but `_meta` (and maybe a cursor).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PaginatedParams {
    /// Where to continue; absent for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(default, rename = "_meta")]
    pub meta: Option<RequestMeta>,
}

/// Parameters of `tools/call`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Arguments; absent means `{}`.
    #[serde(default)]
    pub arguments: Option<Arguments>,
    /// Request metadata (boxed: it is most of the struct's size, and a legacy call has
    /// none, so an unboxed one would be copied around empty with every move).
    #[serde(default, rename = "_meta")]
    pub meta: Option<Box<RequestMeta>>,
    /// Modern MRTR: answers to an earlier `input_required` result.
    #[serde(default)]
    pub input_responses: Option<serde_json::Map<String, Value>>,
    /// Modern MRTR: the state the server handed out with `input_required`.
    #[serde(default)]
    pub request_state: Option<String>,
    /// 2025-11-25 tasks: run as a task.
    #[serde(default)]
    pub task: Option<Value>,
}

/// The `arguments` of a `tools/call`: the value, and the JSON text the client sent.
///
/// The text is kept for tools that must read a number exactly as it was written (a
/// `Value` holds a number as an `f64` or a 64-bit integer, so `0.1000000000000000001` or a
/// 30-digit integer would already be rounded). Reading fails, with serde_json's message,
/// when a number is beyond what a `Value` can hold at all (`1e400`).
#[derive(Debug, Clone)]
pub struct Arguments {
    /// The arguments as a JSON value.
    pub value: Value,
    /// The same arguments as the client wrote them.
    pub text: Box<serde_json::value::RawValue>,
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let value = serde_json::from_str(text.get()).map_err(serde::de::Error::custom)?;
        Ok(Arguments { value, text })
    }
}

/// Parameters of `logging/setLevel`.
#[derive(Debug, Clone, Deserialize)]
pub struct SetLevelParams {
    /// The lowest level the client wants to receive.
    pub level: LoggingLevel,
}

/// Parameters of `notifications/cancelled`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request to cancel.
    pub request_id: RequestId,
    /// Why, for logs.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Parameters of requests that carry only `_meta`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MetaOnlyParams {
    /// Request metadata.
    #[serde(default, rename = "_meta")]
    pub meta: Option<RequestMeta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_params() {
        let p: CallToolParams =
            serde_json::from_value(json!({"name": "add", "arguments": {"a": 1}})).unwrap();
        assert_eq!(p.name, "add");
        assert!(p.meta.is_none());
        assert!(serde_json::from_value::<CallToolParams>(json!({"arguments": {}})).is_err());
    }

    #[test]
    fn cancelled_params_take_string_or_number_ids() {
        let p: CancelledParams = serde_json::from_value(json!({"requestId": "x"})).unwrap();
        assert_eq!(p.request_id, RequestId::String("x".into()));
        assert!(serde_json::from_value::<CancelledParams>(json!({"requestId": null})).is_err());
    }
}
