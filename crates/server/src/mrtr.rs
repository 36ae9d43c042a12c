//! Multi-round-trip requests (modern era): `input_required` results and the sealed
//! `requestState` that carries the answers gathered so far.
//!
//! A modern server cannot send requests to its client. When a tool needs input (an
//! elicitation, a sampling, the roots), the call ends with `resultType: "input_required"`,
//! the questions in `inputRequests`, and a `requestState`; the client asks its user, then
//! retries the call with `inputResponses` and that state. The tool runs again from the
//! start and this time finds its answers.
//!
//! `requestState` comes back from the client, so it is sealed: an HMAC-SHA256 over the
//! payload with a key only the server knows, bound to the method, the target (tool name or
//! URI), a digest of the arguments and an expiry. A state that was altered, is too old, or
//! belongs to another call is refused with -32602.
//!
//! Beside the answers, the state can carry one value of the tool's own
//! ([`ToolContext::carry`](crate::ToolContext::carry)): it travels among the answers under
//! [`CARRIED`], a key the client's `inputResponses` cannot set ([`client_answers`] drops
//! it), so what the tool reads back on the retry is what it sealed.

use crate::digest::sha256_hex;
use crate::error::StateError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type HmacSha256 = Hmac<Sha256>;

/// The key of the sealed answers under which a tool's own value travels.
pub const CARRIED: &str = "io.toolwright/carried";

/// A retry's `inputResponses` as answers: everything the client sent but [`CARRIED`], which
/// only a sealed state may bring.
pub fn client_answers(responses: Option<Map<String, Value>>) -> Map<String, Value> {
    let mut answers = responses.unwrap_or_default();
    answers.remove(CARRIED);
    answers
}

/// The key that seals request states. Replicas behind one load balancer must share it.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl StateKey {
    /// A fresh random key.
    pub fn random() -> Self {
        let mut k = [0u8; 32];
        rand::fill(&mut k);
        StateKey(k)
    }

    /// A key derived from a secret (for several replicas).
    pub fn from_secret(secret: &[u8]) -> Self {
        StateKey(Sha256::digest(secret).into())
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// What a sealed state says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatePayload {
    /// Method of the call (`tools/call`, `prompts/get`, `resources/read`).
    pub m: String,
    /// Tool or prompt name, or resource URI.
    pub t: String,
    /// SHA-256 of the canonical arguments, hex ([`crate::digest::sha256_hex`]).
    pub d: String,
    /// Expiry, milliseconds since the Unix epoch.
    pub e: u64,
    /// Answers gathered in earlier rounds.
    pub a: Map<String, Value>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl StateKey {
    /// Seals a payload into an opaque token.
    pub fn seal(&self, payload: &StatePayload) -> String {
        let body = serde_json::to_vec(payload).expect("payload serializes");
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("any key length works");
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// A payload for a call, expiring after `ttl`.
    pub fn payload(
        method: &str,
        target: &str,
        args: &Value,
        ttl: Duration,
        answers: Map<String, Value>,
    ) -> StatePayload {
        StatePayload {
            m: method.into(),
            t: target.into(),
            d: sha256_hex(args),
            e: now_ms() + ttl.as_millis() as u64,
            a: answers,
        }
    }

    /// Opens a token and checks it belongs to this call; the error says why not.
    pub fn open(
        &self,
        token: &str,
        method: &str,
        target: &str,
        args: &Value,
    ) -> Result<StatePayload, StateError> {
        let (body, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Malformed)?;
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("any key length works");
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| StateError::Tampered)?;
        let p: StatePayload = serde_json::from_slice(&body).map_err(|_| StateError::Malformed)?;
        if p.e < now_ms() {
            return Err(StateError::Expired);
        }
        if p.m != method || p.t != target || p.d != sha256_hex(args) {
            return Err(StateError::OtherRequest);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> StateKey {
        StateKey::from_secret(b"test")
    }

    #[test]
    fn round_trip() {
        let args = json!({"b": 1, "a": [1, {"y": 2, "x": 1}]});
        let p = StateKey::payload(
            "tools/call",
            "t",
            &args,
            Duration::from_secs(60),
            Map::new(),
        );
        let token = key().seal(&p);
        let reordered = json!({"a": [1, {"x": 1, "y": 2}], "b": 1});
        assert_eq!(
            key().open(&token, "tools/call", "t", &reordered).unwrap(),
            p
        );
    }

    #[test]
    fn a_client_cannot_set_the_carried_value() {
        let sent = json!({"elicitation-0": {"action": "accept"}, CARRIED: "forged"});
        let Value::Object(sent) = sent else {
            unreachable!()
        };
        let kept = client_answers(Some(sent));
        assert_eq!(kept.len(), 1);
        assert!(kept.contains_key("elicitation-0"));
        assert!(client_answers(None).is_empty());
    }

    #[test]
    fn refusals() {
        let args = json!({"a": 1});
        let token = key().seal(&StateKey::payload(
            "tools/call",
            "t",
            &args,
            Duration::from_secs(60),
            Map::new(),
        ));
        let (body, tag) = token.split_once('.').unwrap();
        let mut tampered_body = URL_SAFE_NO_PAD.decode(body).unwrap();
        tampered_body[5] ^= 1;
        let tampered = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&tampered_body));
        let expired = key().seal(&StatePayload {
            e: 1,
            ..StateKey::payload("tools/call", "t", &args, Duration::ZERO, Map::new())
        });
        let cases = [
            (
                tampered.as_str(),
                "tools/call",
                "t",
                json!({"a": 1}),
                "integrity",
            ),
            ("nodot", "tools/call", "t", json!({"a": 1}), "malformed"),
            (
                token.as_str(),
                "tools/call",
                "other",
                json!({"a": 1}),
                "different",
            ),
            (
                token.as_str(),
                "tools/call",
                "t",
                json!({"a": 2}),
                "different",
            ),
            (
                expired.as_str(),
                "tools/call",
                "t",
                json!({"a": 1}),
                "expired",
            ),
        ];
        for (tok, m, t, a, why) in cases {
            let err = key().open(tok, m, t, &a).unwrap_err();
            assert!(err.to_string().contains(why), "{err} should say {why}");
        }
        assert!(
            StateKey::random()
                .open(&token, "tools/call", "t", &args)
                .is_err()
        );
    }
}
