//! [`Caller`]: who a request speaks for, as the transport verified it (an HTTP request's
//! access token). The server knows nothing of tokens: the transport that checked one
//! builds a `Caller` from it and sets it on the session ([`Session::set_caller`]). Over
//! stdio there is none.
//!
//! [`Session::set_caller`]: crate::Session::set_caller

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The verified identity a request carries: its subject, the scopes granted and every
/// claim of the token, as it came.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Caller {
    /// The user (or client) the token was issued for (`sub`).
    pub subject: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// Every claim of the token.
    pub claims: Map<String, Value>,
}

impl Caller {
    /// A caller with these parts.
    pub fn new(subject: Option<String>, scopes: Vec<String>, claims: Map<String, Value>) -> Self {
        Caller {
            subject,
            scopes,
            claims,
        }
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The claim `name`, as it came.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }

    /// The claim `name` as text: a string as it is, a number or a boolean written out;
    /// `None` for a missing claim, `null`, an array or an object.
    pub fn claim_text(&self, name: &str) -> Option<String> {
        match self.claims.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// The access token a request presented, as the transport verified it: what the gateway
/// exchanges for a token meant for an upstream (RFC 8693). Never written out: its `Debug`
/// shows no byte of it, and it is not serialized (a session stored for other replicas
/// keeps no token).
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(std::sync::Arc<str>);

impl SubjectToken {
    /// The token `text`, as the request carried it.
    pub fn new(text: &str) -> SubjectToken {
        SubjectToken(std::sync::Arc::from(text))
    }

    /// The token itself, to send where it is exchanged (and nowhere else).
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    #[test]
    fn claims_as_text() {
        let Value::Object(claims) =
            json!({"sub": "u1", "n": 7, "ok": true, "list": [1], "nul": null})
        else {
            unreachable!()
        };
        let caller = Caller::new(Some("u1".into()), vec!["a".into()], claims);
        table! { |name: &str, text: Option<&str>| assert_eq!(caller.claim_text(name).as_deref(), text);
            ("sub", Some("u1"));
            ("n", Some("7"));
            ("ok", Some("true"));
            ("list", None);
            ("nul", None);
            ("missing", None);
        }
        assert!(caller.has_scope("a"));
        assert!(!caller.has_scope("b"));
    }

    #[test]
    fn a_subject_token_is_not_shown() {
        let t = SubjectToken::new("eyJ.secret.sig");
        assert_eq!(format!("{t:?}"), "SubjectToken(…)");
        assert_eq!(t.secret(), "eyJ.secret.sig");
    }
}
