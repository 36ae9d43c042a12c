//! Answering a server's `elicitation/create` without a person: accept with the requested
//! schema's defaults (SEP-1034), decline, or cancel.

use serde_json::{Map, Value, json};
use toolwright_jsonrpc::ErrorObject;

use crate::peer::{BoxFuture, PeerHandler};

/// How [`Client`](crate::Client) answers elicitation requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAnswer {
    /// Accept, with each property's `default` from `requestedSchema`.
    AcceptDefaults,
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

impl ElicitAnswer {
    /// The `elicitation/create` result for a request's `params`.
    pub fn result(self, params: &Value) -> Value {
        match self {
            ElicitAnswer::Decline => json!({"action": "decline"}),
            ElicitAnswer::Cancel => json!({"action": "cancel"}),
            ElicitAnswer::AcceptDefaults => {
                json!({"action": "accept", "content": Value::Object(defaults(params))})
            }
        }
    }
}

/// Each property of `params.requestedSchema` that has a `default`, with that default.
fn defaults(params: &Value) -> Map<String, Value> {
    params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter_map(|(k, p)| Some((k.clone(), p.get("default")?.clone())))
                .collect()
        })
        .unwrap_or_default()
}

impl PeerHandler for ElicitAnswer {
    fn request(
        &self,
        method: String,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let answer = *self;
        Box::pin(async move {
            if method == "elicitation/create" {
                Ok(answer.result(&params))
            } else {
                Err(ErrorObject::new(
                    toolwright_jsonrpc::code::METHOD_NOT_FOUND,
                    format!("{method} is not offered by this client"),
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepting_applies_each_default() {
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "ok": {"type": "boolean", "default": false},
            "free": {"type": "string"}}}});
        assert_eq!(
            ElicitAnswer::AcceptDefaults.result(&params),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30, "ok": false}})
        );
        assert_eq!(
            ElicitAnswer::Decline.result(&params),
            json!({"action": "decline"})
        );
        assert_eq!(
            ElicitAnswer::Cancel.result(&json!({})),
            json!({"action": "cancel"})
        );
    }
}
