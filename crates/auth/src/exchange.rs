//! OAuth 2.0 Token Exchange (RFC 8693) as a client: a caller's access token traded at an
//! authorization server's token endpoint for one meant for another resource (its
//! `audience`), so that a service in the middle never passes the caller's token on.
//!
//! One request per exchange: a form POST of `grant_type`
//! (`urn:ietf:params:oauth:grant-type:token-exchange`), `subject_token` and its type (an
//! access token), `requested_token_type` (an access token), `audience`, `scope` when set,
//! and the client's credentials (HTTP Basic, or `client_id` and `client_secret` in the
//! form; `client_id` alone for a public client). The answer must be 200 with an
//! `access_token` of `token_type` Bearer (N_A is accepted too, RFC 8693 §2.2.1), and an
//! `issued_token_type`, when given, of an access token. No error, and no `Debug`, shows a
//! token or the secret.

use crate::error::Error;
use crate::fetch::{FetchError, Fetcher};
use crate::introspect::basic;
use serde_json::Value;
use std::time::Duration;

/// The grant type of a token exchange.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OAuth access token (RFC 8693 §3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// How the client authenticates at the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientAuth {
    /// A public client: its `client_id` in the form.
    None,
    /// `client_secret_basic`: the id and secret in an `Authorization: Basic` header.
    Basic(String),
    /// `client_secret_post`: the id and secret in the form.
    Post(String),
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.write_str(match self {
            ClientAuth::None => "None",
            ClientAuth::Basic(_) => "Basic(…)",
            ClientAuth::Post(_) => "Post(…)",
        })
    }
}

/// What is asked for, and as which client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeSettings {
    /// The token endpoint (`https://`, or `http://` to this machine).
    pub token_endpoint: String,
    /// The `audience` of the token asked for.
    pub audience: String,
    /// The `scope` asked for, if any.
    pub scope: Option<String>,
    /// The client's id.
    pub client_id: String,
    /// How it authenticates.
    pub client_auth: ClientAuth,
}

/// A token the exchange issued.
#[derive(Clone)]
pub struct Exchanged {
    /// The access token, for the `audience`.
    pub access_token: String,
    /// How long it lives (`expires_in`), when the answer said.
    pub expires_in: Option<Duration>,
}

impl std::fmt::Debug for Exchanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanged")
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// Exchanges tokens at one token endpoint, for one audience. Cheap to share.
#[derive(Debug)]
pub struct TokenExchange {
    settings: ExchangeSettings,
    fetcher: Fetcher,
}

impl TokenExchange {
    /// An exchanger with `settings`, each request bounded by `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::BadUrl`] when the token endpoint is not `https://` (or `http://` to this
    /// machine), or has user info or a fragment.
    pub fn new(settings: ExchangeSettings, timeout: Duration) -> Result<TokenExchange, Error> {
        crate::url::check("token_endpoint", &settings.token_endpoint, false)?;
        Ok(TokenExchange {
            settings,
            fetcher: Fetcher::new(None, timeout),
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &ExchangeSettings {
        &self.settings
    }

    /// The form and the `Authorization` header of the exchange of `subject_token`.
    fn request(&self, subject_token: &str) -> (String, Option<String>) {
        let s = &self.settings;
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", GRANT_TYPE)
            .append_pair("subject_token", subject_token)
            .append_pair("subject_token_type", ACCESS_TOKEN_TYPE)
            .append_pair("requested_token_type", ACCESS_TOKEN_TYPE)
            .append_pair("audience", &s.audience);
        if let Some(scope) = &s.scope {
            form.append_pair("scope", scope);
        }
        let authorization = match &s.client_auth {
            ClientAuth::None => {
                form.append_pair("client_id", &s.client_id);
                None
            }
            ClientAuth::Post(secret) => {
                form.append_pair("client_id", &s.client_id)
                    .append_pair("client_secret", secret);
                None
            }
            ClientAuth::Basic(secret) => Some(basic(&s.client_id, secret)),
        };
        (form.finish(), authorization)
    }

    /// Exchanges `subject_token` (the caller's access token) for a token for the
    /// audience.
    ///
    /// # Errors
    ///
    /// [`Error::Exchange`]: the endpoint could not be reached in time, refused (with its
    /// `error` and `error_description`), or answered no usable access token.
    pub async fn exchange(&self, subject_token: &str) -> Result<Exchanged, Error> {
        let fail = |reason: String| Error::Exchange {
            endpoint: self.settings.token_endpoint.clone(),
            reason,
        };
        let (body, authorization) = self.request(subject_token);
        let (status, json) = self
            .fetcher
            .post_form(
                &self.settings.token_endpoint,
                body,
                authorization.as_deref(),
            )
            .await
            .map_err(|e| match e {
                FetchError::Status(s) => fail(format!("answered HTTP {s}")),
                other => fail(other.to_string()),
            })?;
        read_answer(status, &json).map_err(fail)
    }
}

/// The token of an answer, or why there is none (the authorization server's own words for a
/// refusal: its `error` code and `error_description`, cut short).
fn read_answer(status: u16, json: &Value) -> Result<Exchanged, String> {
    let text = |k: &str| json.get(k).and_then(Value::as_str);
    if status != 200 {
        let mut why = format!(
            "answered HTTP {status} ({})",
            text("error").unwrap_or("no error code")
        );
        if let Some(d) = text("error_description") {
            let d: String = d.chars().filter(|c| !c.is_control()).take(200).collect();
            why.push_str(&format!(": {d}"));
        }
        return Err(why);
    }
    let token = text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or("the answer has no access_token")?;
    if token.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err("the access_token holds characters no header can carry".into());
    }
    match text("token_type") {
        Some(t) if t.eq_ignore_ascii_case("bearer") || t.eq_ignore_ascii_case("n_a") => {}
        Some(t) => {
            return Err(format!(
                "the token_type is {t:?}; only Bearer tokens are sent on"
            ));
        }
        None => return Err("the answer has no token_type".into()),
    }
    if let Some(t) = text("issued_token_type")
        && t != ACCESS_TOKEN_TYPE
    {
        return Err(format!(
            "the issued_token_type is {t:?}, not an access token ({ACCESS_TOKEN_TYPE})"
        ));
    }
    let expires_in = json
        .get("expires_in")
        .and_then(Value::as_u64)
        .map(Duration::from_secs);
    Ok(Exchanged {
        access_token: token.to_owned(),
        expires_in,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    fn exchanger(auth: ClientAuth, scope: Option<&str>) -> TokenExchange {
        TokenExchange::new(
            ExchangeSettings {
                token_endpoint: "https://as.example/token".into(),
                audience: "https://up.example/mcp".into(),
                scope: scope.map(str::to_owned),
                client_id: "gw id".into(),
                client_auth: auth,
            },
            Duration::from_secs(5),
        )
        .unwrap()
    }

    #[test]
    fn requests() {
        let tt = "urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token";
        let head = format!(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=a.b%2Bc&subject_token_type={tt}&requested_token_type={tt}&audience=https%3A%2F%2Fup.example%2Fmcp"
        );
        let (body, auth) = exchanger(ClientAuth::Basic("s:e".into()), Some("a b")).request("a.b+c");
        assert_eq!(body, format!("{head}&scope=a+b"));
        // base64("gw+id:s%3Ae")
        assert_eq!(auth.as_deref(), Some("Basic Z3craWQ6cyUzQWU="));
        let (body, auth) = exchanger(ClientAuth::Post("sec".into()), None).request("a.b+c");
        assert_eq!(body, format!("{head}&client_id=gw+id&client_secret=sec"));
        assert_eq!(auth, None);
        let (body, _) = exchanger(ClientAuth::None, None).request("a.b+c");
        assert_eq!(body, format!("{head}&client_id=gw+id"));
    }

    #[test]
    fn answers() {
        table! { |status: u16, json: Value, want: Result<(&str, Option<u64>), &str>| {
                let got = read_answer(status, &json)
                    .map(|x| (x.access_token, x.expires_in.map(|d| d.as_secs())));
                match want {
                    Ok((t, e)) => assert_eq!(got, Ok((t.to_owned(), e)), "{json}"),
                    Err(w) => {
                        let e = got.unwrap_err();
                        assert!(e.contains(w), "{json}: {e}");
                    }
                }
            };
            (200, json!({"access_token": "x", "token_type": "Bearer", "expires_in": 60,
                "issued_token_type": ACCESS_TOKEN_TYPE}), Ok(("x", Some(60))));
            (200, json!({"access_token": "x", "token_type": "N_A"}), Ok(("x", None)));
            (200, json!({"token_type": "Bearer"}), Err("no access_token"));
            (200, json!({"access_token": "x"}), Err("no token_type"));
            (200, json!({"access_token": "x", "token_type": "DPoP"}), Err("only Bearer"));
            (200, json!({"access_token": "x y", "token_type": "Bearer"}), Err("no header can carry"));
            (200, json!({"access_token": "x", "token_type": "Bearer",
                "issued_token_type": "urn:ietf:params:oauth:token-type:id_token"}), Err("not an access token"));
            (400, json!({"error": "invalid_grant", "error_description": "subject token expired"}),
                Err("answered HTTP 400 (invalid_grant): subject token expired"));
            (401, json!({}), Err("answered HTTP 401 (no error code)"));
        }
    }

    #[test]
    fn secrets_are_not_shown() {
        let x = exchanger(ClientAuth::Basic("hunter2".into()), None);
        assert!(!format!("{x:?}").contains("hunter2"));
        let t = Exchanged {
            access_token: "tok".into(),
            expires_in: None,
        };
        assert!(!format!("{t:?}").contains("tok"));
    }

    #[test]
    fn endpoints_are_checked() {
        let mut s = exchanger(ClientAuth::None, None).settings().clone();
        s.token_endpoint = "http://as.example/token".into();
        let e = TokenExchange::new(s, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("plain http://"), "{e}");
    }
}
