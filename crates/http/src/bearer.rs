//! The bearer token every request to the endpoint (and `/metrics`) presents, in one of two
//! ways, never both: a static token compared in constant time
//! ([`HttpConfig::auth_token`]), or a JWT access token of an authorization server
//! ([`HttpConfig::jwt`]) checked by a [`Validator`], whose verified [`Identity`] the
//! request then carries. Besides either (or alone), named API keys
//! ([`HttpConfig::api_keys`]): a token whose SHA-256 digest is a key's speaks for
//! `key:NAME` with the key's scopes. Only the `Authorization` header counts.
//!
//! [`HttpConfig::auth_token`]: crate::HttpConfig::auth_token
//! [`HttpConfig::jwt`]: crate::HttpConfig::jwt
//! [`HttpConfig::api_keys`]: crate::HttpConfig::api_keys

use crate::config::{ApiKey, HttpConfig};
use crate::error::Error;
use crate::guard::Refusal;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::Digest;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use toolwright_auth::{Identity, Validator};

/// How requests authenticate: the API keys, then the mode.
#[derive(Debug)]
pub(crate) struct Bearer {
    mode: Mode,
    keys: Vec<(ApiKey, Arc<Identity>)>,
}

/// The one way besides API keys.
#[derive(Debug)]
enum Mode {
    /// No token needed.
    Open,
    /// This token, compared in constant time.
    Static(Vec<u8>),
    /// A JWT access token the validator accepts, with these scopes.
    Jwt {
        validator: Validator,
        scopes: Vec<String>,
    },
}

/// Refuses a token no client could present: empty or only whitespace, whitespace at either
/// end (a presented token is trimmed), or control characters (no header carries them).
pub fn check_auth_token(token: &str) -> Result<(), Error> {
    let reason = if token.trim_ascii().is_empty() {
        "the token is empty or only whitespace"
    } else if token.trim_ascii() != token {
        "the token begins or ends with whitespace, which no client can send"
    } else if token.bytes().any(|b| b.is_ascii_control()) {
        "the token contains control characters, which no header can carry"
    } else {
        return Ok(());
    };
    Err(Error::config("--auth-token-env", reason))
}

impl Bearer {
    /// The check `config` asks for; `validator` is the one built for [`HttpConfig::jwt`].
    pub(crate) fn new(config: &HttpConfig, validator: Option<Validator>) -> Result<Bearer, Error> {
        let keys = config
            .api_keys
            .iter()
            .map(|k| (k.clone(), Arc::new(k.identity())))
            .collect();
        let mode = match (&config.auth_token, validator, &config.jwt) {
            (Some(_), _, Some(_)) => Err(Error::config(
                "--auth-issuer",
                "a static token (--auth-token-env) and JWT access tokens exclude each other",
            )),
            (Some(t), _, None) => {
                check_auth_token(t)?;
                Ok(Mode::Static(t.as_bytes().to_vec()))
            }
            (None, Some(validator), Some(jwt)) => Ok(Mode::Jwt {
                validator,
                scopes: jwt.scopes.clone(),
            }),
            (None, None, Some(_)) => Err(Error::config("--auth-issuer", "no validator was built")),
            (None, _, None) => Ok(Mode::Open),
        }?;
        Ok(Bearer { mode, keys })
    }

    /// True when requests need a bearer token.
    pub(crate) fn required(&self) -> bool {
        !matches!(self.mode, Mode::Open) || !self.keys.is_empty()
    }

    /// The scopes every request with a JWT needs.
    pub(crate) fn scopes(&self) -> &[String] {
        match &self.mode {
            Mode::Jwt { scopes, .. } => scopes,
            _ => &[],
        }
    }

    /// The identity of the API key whose digest is the token's, comparing every digest in
    /// constant time.
    fn key(&self, token: &[u8]) -> Option<Arc<Identity>> {
        let digest = sha2::Sha256::digest(token);
        let mut found = None;
        for (key, identity) in &self.keys {
            if bool::from(key.sha256.ct_eq(digest.as_slice())) {
                found = Some(identity.clone());
            }
        }
        found
    }

    /// Checks the request's token. `Ok(Some)`: the identity a JWT verified. A JWT with its
    /// key cached is checked without waiting; only an unknown `kid` waits for the bounded
    /// refresh of the issuer's keys.
    pub(crate) async fn check(
        &self,
        headers: &HeaderMap,
    ) -> Result<Option<Arc<Identity>>, Refusal> {
        if !self.keys.is_empty() {
            let token = presented(headers)?;
            if let Some(identity) = self.key(token) {
                return Ok(Some(identity));
            }
            if matches!(self.mode, Mode::Open) {
                return Err(Refusal::BadToken);
            }
        }
        let expected = match &self.mode {
            Mode::Open => return Ok(None),
            Mode::Static(expected) => expected,
            Mode::Jwt { validator, scopes } => {
                let token = presented(headers)?;
                let token = std::str::from_utf8(token).map_err(|_| Refusal::BadToken)?;
                return match validator.validate(token).await {
                    Ok(identity) if identity.missing_scopes(scopes).is_empty() => {
                        Ok(Some(identity))
                    }
                    Ok(identity) => {
                        tracing::debug!(
                            subject = ?identity.subject,
                            missing = ?identity.missing_scopes(scopes),
                            "bearer token refused: a required scope is missing"
                        );
                        Err(Refusal::InsufficientScope)
                    }
                    Err(e) if e.is_token_fault() => {
                        tracing::debug!("bearer token refused: {e}");
                        Err(Refusal::BadToken)
                    }
                    Err(e) => {
                        tracing::warn!("a bearer token could not be checked: {e}");
                        Err(Refusal::IssuerUnavailable)
                    }
                };
            }
        };
        let presented = presented(headers)?;
        if presented.len() == expected.len() && bool::from(presented.ct_eq(expected)) {
            Ok(None)
        } else {
            Err(Refusal::BadToken)
        }
    }
}

impl Bearer {
    /// The token `headers` carry when `identity` is what an authorization server's token
    /// verified; `None` for an API key's identity, whose key is never passed on.
    pub(crate) fn subject_token(
        &self,
        headers: &HeaderMap,
        identity: &Arc<Identity>,
    ) -> Option<toolwright_server::SubjectToken> {
        if !matches!(self.mode, Mode::Jwt { .. })
            || self.keys.iter().any(|(_, k)| Arc::ptr_eq(k, identity))
        {
            return None;
        }
        let token = std::str::from_utf8(presented(headers).ok()?).ok()?;
        Some(toolwright_server::SubjectToken::new(token))
    }
}

/// The token of the `Authorization: Bearer` header, trimmed.
fn presented(headers: &HeaderMap) -> Result<&[u8], Refusal> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Err(Refusal::NoToken);
    };
    let value = value.as_bytes();
    let Some(scheme) = value.get(..7) else {
        return Err(Refusal::BadToken);
    };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return Err(Refusal::NoToken);
    }
    Ok(value[7..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn bearer(token: Option<&str>) -> Bearer {
        let config = HttpConfig {
            auth_token: token.map(str::to_owned),
            ..HttpConfig::default()
        };
        Bearer::new(&config, None).unwrap()
    }

    fn check(b: &Bearer, auth: Option<&str>) -> Result<(), Refusal> {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(b.check(&h)).map(|id| assert!(id.is_none()))
    }

    #[test]
    fn static_tokens() {
        let b = bearer(Some("s3cret"));
        toolwright_testkit::table! { |auth: Option<&str>, want: Result<(), Refusal>| assert_eq!(check(&b, auth), want, "{auth:?}");
            (Some("Bearer s3cret"), Ok(()));
            (Some("bearer s3cret"), Ok(()));
            (Some("Bearer s3cre"), Err(Refusal::BadToken));
            (Some("Bearer s3cretX"), Err(Refusal::BadToken));
            (Some("Basic czNjcmV0"), Err(Refusal::NoToken));
            (Some("Bear"), Err(Refusal::BadToken));
            (None, Err(Refusal::NoToken));
        }
        assert_eq!(check(&bearer(None), None), Ok(()));
    }

    #[test]
    fn api_keys_speak_for_their_names() {
        let key = |name: &str, secret: &str, scopes: &[&str]| {
            ApiKey::new(
                name,
                sha2::Sha256::digest(secret.as_bytes()).into(),
                scopes.iter().map(|s| (*s).to_owned()).collect(),
            )
        };
        let run = |b: &Bearer, auth: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(a) = auth {
                h.insert(AUTHORIZATION, HeaderValue::from_str(a).unwrap());
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(b.check(&h))
                .map(|id| id.map(|i| (i.subject.clone(), i.scopes.clone())))
        };
        let keys = vec![
            key("ci-bot", "k-ci", &["tickets:read"]),
            key("ops", "k-ops", &[]),
        ];
        let alone = Bearer::new(
            &HttpConfig {
                api_keys: keys.clone(),
                ..HttpConfig::default()
            },
            None,
        )
        .unwrap();
        let with_static = Bearer::new(
            &HttpConfig {
                api_keys: keys,
                auth_token: Some("s3cret".into()),
                ..HttpConfig::default()
            },
            None,
        )
        .unwrap();
        assert!(alone.required());
        type Seen = Result<Option<(Option<String>, Vec<String>)>, Refusal>;
        let ci: Seen = Ok(Some((
            Some("key:ci-bot".to_owned()),
            vec!["tickets:read".to_owned()],
        )));
        toolwright_testkit::table! { |b: &Bearer, auth: Option<&str>, want: Seen| assert_eq!(run(b, auth), want, "{auth:?}");
            (&alone, Some("Bearer k-ci"), ci.clone());
            (&alone, Some("Bearer k-ops"), Ok(Some((Some("key:ops".to_owned()), vec![]))));
            (&alone, Some("Bearer k-c"), Err(Refusal::BadToken));
            (&alone, Some("Bearer s3cret"), Err(Refusal::BadToken));
            (&alone, None, Err(Refusal::NoToken));
            (&with_static, Some("Bearer k-ci"), ci.clone());
            (&with_static, Some("Bearer s3cret"), Ok(None));
            (&with_static, Some("Bearer nope"), Err(Refusal::BadToken));
        }
    }

    #[test]
    fn bad_settings_are_errors() {
        for token in ["", " ", "   ", "\t \t", " s3cret", "s3cret\n", "s3\x01cret"] {
            let bad = HttpConfig {
                auth_token: Some(token.into()),
                ..HttpConfig::default()
            };
            assert!(Bearer::new(&bad, None).is_err(), "{token:?}");
        }
        assert!(check_auth_token("s3 cret").is_ok());
        let both = HttpConfig {
            auth_token: Some("s3cret".into()),
            jwt: Some(crate::JwtAuth::new("https://auth.example")),
            ..HttpConfig::default()
        };
        assert!(Bearer::new(&both, None).is_err());
    }
}
