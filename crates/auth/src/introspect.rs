//! Opaque access tokens, checked by asking the authorization server (RFC 7662 token
//! introspection): a form POST of the token to its introspection endpoint, authenticated
//! with this resource's client credentials when it has them. An answer is kept for the
//! token (by its SHA-256 digest, never the token) until it expires or for a minute,
//! whichever comes first, so a client's calls ask once a minute at most.
//!
//! What an answer must say: `active: true`; `exp`, when present, within the leeway of now,
//! as `nbf`; `iss`, when present, the issuer; and an `aud` naming this resource (required:
//! a token for another resource is refused, as RFC 8707 and the MCP spec ask).

use crate::error::Error;
use crate::fetch::Fetcher;
use crate::identity::Identity;
use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::Digest as _;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How long an answer is kept at most (seconds).
const KEEP_SECS: u64 = 60;
/// Most answers kept.
const KEEP_MAX: usize = 1024;

/// How a resource asks: where, and as which client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Introspection {
    /// The introspection endpoint. `None`: the issuer metadata's
    /// `introspection_endpoint`.
    pub endpoint: Option<String>,
    /// This resource's client id and secret at the authorization server (HTTP Basic),
    /// when it needs them to introspect.
    pub client: Option<(String, String)>,
}

/// Answers kept: the identity by the token's SHA-256 digest, and until when (unix seconds).
type Kept = HashMap<[u8; 32], (Arc<Identity>, u64)>;

/// Asks one authorization server about tokens.
pub(crate) struct Introspector {
    endpoint: String,
    authorization: Option<String>,
    fetcher: Fetcher,
    kept: Mutex<Kept>,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the client secret.
        f.debug_struct("Introspector")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 appendix B), for form
/// bodies and HTTP Basic credentials.
pub(crate) fn form(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The `Authorization` value of a client authenticated with HTTP Basic at a token or
/// introspection endpoint: RFC 6749 §2.3.1 form-encodes the id and secret before Basic.
pub(crate) fn basic(id: &str, secret: &str) -> String {
    let pair = format!("{}:{}", form(id), form(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

impl Introspector {
    pub(crate) fn new(
        endpoint: String,
        client: Option<&(String, String)>,
        fetcher: Fetcher,
    ) -> Self {
        let authorization = client.map(|(id, secret)| basic(id, secret));
        Introspector {
            endpoint,
            authorization,
            fetcher,
            kept: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The identity the authorization server vouches for, or why not.
    pub(crate) async fn check(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
        leeway: u64,
        now: u64,
    ) -> Result<Arc<Identity>, Error> {
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Ok(kept) = self.kept.lock()
            && let Some((identity, until)) = kept.get(&digest)
            && now < *until
        {
            return Ok(identity.clone());
        }
        let body = format!("token={}&token_type_hint=access_token", form(token));
        let (status, answer) = self
            .fetcher
            .post_form(&self.endpoint, body, self.authorization.as_deref())
            .await
            .map_err(|e| Error::IssuerUnreachable {
                url: self.endpoint.clone(),
                reason: e.to_string(),
            })?;
        let Value::Object(claims) = answer else {
            return Err(unreachable_answer(
                &self.endpoint,
                status,
                "not a JSON object",
            ));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            // RFC 7662 answers 200 with `active: false`; some servers answer 4xx with it.
            if status == 200 || claims.get("active") == Some(&Value::Bool(false)) {
                return Err(Error::Inactive);
            }
            return Err(unreachable_answer(
                &self.endpoint,
                status,
                "no `active` member",
            ));
        }
        if status != 200 {
            return Err(unreachable_answer(
                &self.endpoint,
                status,
                "active, but not 200",
            ));
        }
        let until = check_claims(&claims, issuer, audiences, leeway, now)?;
        let identity = Arc::new(Identity::from_claims(claims));
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= KEEP_MAX {
                kept.retain(|_, (_, until)| now < *until);
                if kept.len() >= KEEP_MAX {
                    kept.clear();
                }
            }
            kept.insert(digest, (identity.clone(), until));
        }
        Ok(identity)
    }
}

fn unreachable_answer(url: &str, status: u16, what: &str) -> Error {
    Error::IssuerUnreachable {
        url: url.to_owned(),
        reason: format!("its introspection answer (HTTP {status}) is {what}"),
    }
}

/// Checks an active answer's times, issuer and audience; when it may be kept until.
fn check_claims(
    claims: &Map<String, Value>,
    issuer: &str,
    audiences: &[String],
    leeway: u64,
    now: u64,
) -> Result<u64, Error> {
    let number = |name: &str| claims.get(name).and_then(Value::as_u64);
    let exp = number("exp");
    if let Some(exp) = exp
        && now > exp.saturating_add(leeway)
    {
        return Err(Error::Expired { exp });
    }
    if let Some(nbf) = number("nbf")
        && nbf > now.saturating_add(leeway)
    {
        return Err(Error::NotYetValid { nbf });
    }
    if let Some(iss) = claims.get("iss")
        && iss.as_str() != Some(issuer)
    {
        return Err(Error::WrongIssuer {
            found: iss.as_str().map(str::to_owned),
            expected: issuer.to_owned(),
        });
    }
    crate::validate::check_audience(claims, audiences)?;
    Ok(exp.map_or(now + KEEP_SECS, |e| e.min(now + KEEP_SECS)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    #[test]
    fn answers_are_checked() {
        let aud = vec!["https://mcp.example/mcp".to_owned()];
        table! { |answer: Value, want: Result<u64, &str>| {
                let Value::Object(claims) = answer else { unreachable!() };
                let got = check_claims(&claims, "https://as.example", &aud, 30, 1000)
                    .map_err(|e| e.to_string());
                match want {
                    Ok(until) => assert_eq!(got, Ok(until)),
                    Err(part) => assert!(got.as_ref().is_err_and(|e| e.contains(part)), "{got:?}"),
                }
            };
            (json!({"active": true, "aud": "https://mcp.example/mcp", "exp": 1030}), Ok(1030));
            (json!({"active": true, "aud": ["x", "https://mcp.example/mcp"]}), Ok(1060));
            (json!({"active": true, "aud": "https://mcp.example/mcp", "exp": 5000}), Ok(1060));
            (json!({"active": true, "aud": "https://mcp.example/mcp", "exp": 960}), Err("expired"));
            (json!({"active": true, "aud": "https://mcp.example/mcp", "nbf": 1100}), Err("not valid before"));
            (json!({"active": true, "aud": "https://mcp.example/mcp", "iss": "https://evil"}), Err("issuer"));
            (json!({"active": true, "aud": "https://other/mcp"}), Err("audience"));
            (json!({"active": true}), Err("audience"));
        }
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form("a b+c/é~*"), "a+b%2Bc%2F%C3%A9%7E*");
    }
}
