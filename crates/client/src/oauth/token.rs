//! Token requests: the form posted to a token endpoint, with the client authenticated as
//! the server advertises, and the answer read.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use super::assertion::{ClientKey, JWT_BEARER_ASSERTION};
use super::{Session, auth, fetch};
use crate::ClientError;

/// What a token endpoint granted.
pub(crate) struct Tokens {
    pub access: String,
    pub refresh: Option<String>,
    pub expires: Option<Instant>,
    pub scope: Option<String>,
}

/// The token endpoint authentication to use: with a secret, `client_secret_basic` if the
/// server takes it, else `client_secret_post`; `none` otherwise.
pub(crate) fn secret_method(has_secret: bool, supported: &[&str]) -> String {
    if has_secret {
        for m in ["client_secret_basic", "client_secret_post"] {
            if supported.contains(&m) {
                return m.into();
            }
        }
    }
    if supported.contains(&"none") || !has_secret {
        "none".into()
    } else {
        "client_secret_basic".into()
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
pub(crate) fn basic_header(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// Posts a grant (`params`, plus `resource`) to the session's token endpoint, the client
/// authenticated by its method; `key` signs a `private_key_jwt` assertion.
pub(crate) async fn token_request(
    session: &Session,
    params: &[(&str, &str)],
    key: Option<&ClientKey>,
) -> Result<Tokens, ClientError> {
    let c = &session.client;
    let mut headers = Vec::new();
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.extend_pairs(params.iter().copied());
        form.append_pair("resource", &session.resource);
        match (c.method.as_str(), &c.secret) {
            ("client_secret_basic", Some(secret)) => {
                headers.push(("authorization", basic_header(&c.id, secret)));
            }
            ("client_secret_post", Some(secret)) => {
                form.append_pair("client_id", &c.id);
                form.append_pair("client_secret", secret);
            }
            ("private_key_jwt", _) => {
                let key = key.ok_or_else(|| auth("private_key_jwt needs the client's key"))?;
                form.append_pair("client_id", &c.id);
                form.append_pair("client_assertion_type", JWT_BEARER_ASSERTION);
                form.append_pair("client_assertion", &key.assertion(&c.id, &session.issuer)?);
            }
            _ => {
                form.append_pair("client_id", &c.id);
            }
        }
        form.finish()
    };
    let answer = fetch::post_form(&session.token_endpoint, body, headers).await?;
    read_tokens(answer, "the token endpoint")
}

/// A token endpoint's answer: 200 with an `access_token`, else an error naming the
/// server's `error` code.
pub(crate) fn read_tokens(answer: fetch::Answer, what: &str) -> Result<Tokens, ClientError> {
    let doc = answer.json.unwrap_or(Value::Null);
    if answer.status != 200 {
        let code = doc
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no error code");
        let desc = doc
            .get("error_description")
            .and_then(Value::as_str)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(auth(format!(
            "{what} answered HTTP {} ({code}{desc})",
            answer.status
        )));
    }
    let access = doc
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or_else(|| auth(format!("the answer of {what} has no access_token")))?;
    Ok(Tokens {
        access: access.to_owned(),
        refresh: doc
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(str::to_owned),
        expires: doc
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|s| Instant::now() + Duration::from_secs(s)),
        scope: doc.get("scope").and_then(Value::as_str).map(str::to_owned),
    })
}
