//! [`Identity`]: who a verified access token speaks for, and what it may do.

use serde_json::{Map, Value};

/// The verified claims of an access token.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Identity {
    /// `sub`: the user (or client) the token was issued for.
    pub subject: Option<String>,
    /// The scopes granted: `scope` (a space-separated string, RFC 8693 §4.2, RFC 9068) and
    /// `scp` (an array or a string, as some issuers write them), each once, in order.
    pub scopes: Vec<String>,
    /// The client the token was issued to: `client_id` (RFC 9068), else `azp` (OpenID).
    pub client_id: Option<String>,
    /// Every claim of the token, as it came.
    pub claims: Map<String, Value>,
}

impl Identity {
    /// The identity the verified `claims` describe.
    pub fn from_claims(claims: Map<String, Value>) -> Identity {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let mut scopes: Vec<String> = Vec::new();
        let mut add = |s: &str| {
            if !s.is_empty() && !scopes.iter().any(|have| have == s) {
                scopes.push(s.to_owned());
            }
        };
        for name in ["scope", "scp"] {
            match claims.get(name) {
                Some(Value::String(s)) => s.split_ascii_whitespace().for_each(&mut add),
                Some(Value::Array(items)) => {
                    items.iter().filter_map(Value::as_str).for_each(&mut add)
                }
                _ => {}
            }
        }
        Identity {
            subject: text("sub"),
            client_id: text("client_id").or_else(|| text("azp")),
            scopes,
            claims,
        }
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The scopes of `required` that were not granted, in its order.
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|s| !self.has_scope(s))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    #[test]
    fn claims_read() {
        table! { |claims: Value, sub: Option<&str>, scopes: &[&str], client: Option<&str>| {
                let Value::Object(map) = claims else { unreachable!() };
                let id = Identity::from_claims(map);
                assert_eq!(id.subject.as_deref(), sub);
                assert_eq!(id.scopes, scopes);
                assert_eq!(id.client_id.as_deref(), client);
            };
            (json!({"sub": "u1", "scope": "a b  c"}), Some("u1"), &["a", "b", "c"], None);
            (json!({"scp": ["a", "b"], "client_id": "cli"}), None, &["a", "b"], Some("cli"));
            (json!({"scope": "a b", "scp": ["b", "c"], "azp": "web"}), None, &["a", "b", "c"], Some("web"));
            (json!({"scp": "x y", "client_id": "c", "azp": "w"}), None, &["x", "y"], Some("c"));
            (json!({"sub": 7, "scope": 3}), None, &[], None);
        }
    }

    #[test]
    fn missing_scopes() {
        let Value::Object(map) = json!({"scope": "read write"}) else {
            unreachable!()
        };
        let id = Identity::from_claims(map);
        let want = |r: &[&str]| r.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(id.missing_scopes(&want(&["read"])).is_empty());
        assert_eq!(
            id.missing_scopes(&want(&["admin", "read", "x"])),
            ["admin", "x"]
        );
    }
}
