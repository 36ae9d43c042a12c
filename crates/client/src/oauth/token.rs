//! Token requests, made with the `oauth2` crate where it has the grant (authorization code
//! with PKCE, refresh, client credentials) and by hand where it does not (the JWT bearer
//! grant of cross-app access); either way the client is authenticated as the server
//! advertises (`client_secret_basic`, `client_secret_post`, `none`, or a `private_key_jwt`
//! assertion), every request names the `resource` (RFC 8707) and carries a DPoP proof when
//! the session has a key, and the answer is read as `oauth2`'s standard token response.

use std::time::Instant;

use base64::Engine;
use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse, BasicTokenType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError,
    Scope, TokenResponse, TokenUrl,
};
use url::Url;

use super::assertion::{ClientKey, JWT_BEARER_ASSERTION};
use super::{Session, auth, http_client};
use crate::ClientError;

/// What a token endpoint granted.
pub(crate) struct Tokens {
    pub access: String,
    pub refresh: Option<String>,
    pub expires: Option<Instant>,
    pub scope: Option<String>,
    /// Whether the token is bound to the session's DPoP key (`token_type` DPoP, RFC 9449
    /// §5): it is then presented with the `DPoP` scheme and a proof.
    pub dpop: bool,
}

impl From<BasicTokenResponse> for Tokens {
    fn from(t: BasicTokenResponse) -> Tokens {
        Tokens {
            access: t.access_token().secret().clone(),
            refresh: t.refresh_token().map(|r| r.secret().clone()),
            expires: t.expires_in().map(|d| Instant::now() + d),
            scope: t
                .scopes()
                .map(|s| s.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(" ")),
            dpop: matches!(t.token_type(), BasicTokenType::Extension(k) if k.eq_ignore_ascii_case("dpop")),
        }
    }
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

/// An `oauth2` client with the session's token endpoint.
type Client<AuthEndpoint = EndpointNotSet> =
    BasicClient<AuthEndpoint, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The session's client as `oauth2` sees it: its ID, its secret when the method sends one,
/// and where the credentials go. Without a secret the ID goes in the body.
fn client(session: &Session) -> Client {
    let c = &session.client;
    let client = BasicClient::new(ClientId::new(c.id.clone()))
        .set_token_uri(TokenUrl::from_url(session.token_endpoint.clone()));
    match (c.method.as_str(), &c.secret) {
        ("client_secret_basic", Some(s)) => client
            .set_client_secret(ClientSecret::new(s.clone()))
            .set_auth_type(AuthType::BasicAuth),
        ("client_secret_post", Some(s)) => client
            .set_client_secret(ClientSecret::new(s.clone()))
            .set_auth_type(AuthType::RequestBody),
        _ => client.set_auth_type(AuthType::RequestBody),
    }
}

/// The parameters `oauth2` does not know that every token request carries: `resource`, and
/// with `private_key_jwt` a fresh client assertion.
fn extra_params(
    session: &Session,
    key: Option<&ClientKey>,
) -> Result<Vec<(&'static str, String)>, ClientError> {
    let c = &session.client;
    let mut out = vec![("resource", session.resource.clone())];
    if c.method == "private_key_jwt" {
        let key = key.ok_or_else(|| auth("private_key_jwt needs the client's key"))?;
        out.push(("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()));
        out.push(("client_assertion", key.assertion(&c.id, &session.issuer)?));
    }
    Ok(out)
}

/// A token request's answer, as `oauth2`'s HTTP client gives it.
type Answer = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, ClientError>> + Send>,
>;

/// `oauth2`'s HTTP client for the session's token requests: with its DPoP key, if any.
fn send(session: &Session) -> impl Fn(oauth2::HttpRequest) -> Answer + use<> {
    let key = session.dpop.clone();
    move |r| {
        let key = key.clone();
        Box::pin(async move { http_client::send(r, key.as_deref()).await })
    }
}

fn scopes(scope: Option<&str>) -> impl Iterator<Item = Scope> + '_ {
    scope
        .unwrap_or_default()
        .split_whitespace()
        .map(|s| Scope::new(s.to_owned()))
}

/// The authorization URL (PKCE S256, a random `state`, the `resource`), with the state to
/// expect back and the verifier for the code exchange.
pub(crate) fn authorization_url(
    session: &Session,
    authorization_endpoint: &Url,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<(Url, CsrfToken, PkceCodeVerifier), ClientError> {
    let redirect = RedirectUrl::new(redirect_uri.to_owned())
        .map_err(|e| auth(format!("redirect URI {redirect_uri:?}: {e}")))?;
    let client = client(session)
        .set_auth_uri(AuthUrl::from_url(authorization_endpoint.clone()))
        .set_redirect_uri(redirect);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", session.resource.as_str())
        .add_scopes(scopes(scope))
        .url();
    Ok((url, state, verifier))
}

/// Exchanges the code (RFC 6749 §4.1.3, with the PKCE verifier).
pub(crate) async fn exchange_code(
    session: &Session,
    redirect_uri: &str,
    code: String,
    verifier: PkceCodeVerifier,
    key: Option<&ClientKey>,
) -> Result<Tokens, ClientError> {
    let redirect = RedirectUrl::new(redirect_uri.to_owned())
        .map_err(|e| auth(format!("redirect URI {redirect_uri:?}: {e}")))?;
    let client = client(session).set_redirect_uri(redirect);
    let mut request = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier);
    for (k, v) in extra_params(session, key)? {
        request = request.add_extra_param(k, v);
    }
    let answer = request.request_async(&send(session)).await;
    answer.map(Tokens::from).map_err(refused)
}

/// Refreshes (RFC 6749 §6).
pub(crate) async fn refresh(
    session: &Session,
    refresh_token: &str,
    key: Option<&ClientKey>,
) -> Result<Tokens, ClientError> {
    let client = client(session);
    let rt = RefreshToken::new(refresh_token.to_owned());
    let mut request = client.exchange_refresh_token(&rt);
    for (k, v) in extra_params(session, key)? {
        request = request.add_extra_param(k, v);
    }
    let answer = request.request_async(&send(session)).await;
    answer.map(Tokens::from).map_err(refused)
}

/// The client credentials grant (RFC 6749 §4.4).
pub(crate) async fn client_credentials(
    session: &Session,
    scope: Option<&str>,
    key: Option<&ClientKey>,
) -> Result<Tokens, ClientError> {
    let client = client(session);
    let mut request = client
        .exchange_client_credentials()
        .add_scopes(scopes(scope));
    for (k, v) in extra_params(session, key)? {
        request = request.add_extra_param(k, v);
    }
    let answer = request.request_async(&send(session)).await;
    answer.map(Tokens::from).map_err(refused)
}

/// What a token endpoint's refusal says.
fn refused(e: RequestTokenError<ClientError, BasicErrorResponse>) -> ClientError {
    match e {
        RequestTokenError::Request(e) => e,
        RequestTokenError::ServerResponse(r) => auth(format!(
            "the token endpoint refused ({}{})",
            r.error(),
            r.error_description()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )),
        RequestTokenError::Parse(e, _) => {
            auth(format!("the token endpoint's answer does not parse: {e}"))
        }
        RequestTokenError::Other(why) => auth(format!("the token endpoint: {why}")),
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1), for the requests
/// `oauth2` does not make.
pub(crate) fn basic_header(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// The JWT bearer grant (RFC 7523 §2.1), which `oauth2` does not have: the form is built
/// here, the client authenticated as [`client`] would, the answer read as `oauth2`'s.
pub(crate) async fn jwt_bearer(
    session: &Session,
    assertion: &str,
    scope: Option<&str>,
    key: Option<&ClientKey>,
) -> Result<Tokens, ClientError> {
    let (body, headers) = jwt_bearer_request(session, assertion, scope, key)?;
    let raw = http_client::token_request(
        &session.token_endpoint,
        Some(("application/x-www-form-urlencoded", body)),
        headers,
        session.dpop.as_deref(),
    )
    .await?;
    if raw.status != 200 {
        return Err(
            match serde_json::from_slice::<BasicErrorResponse>(&raw.body) {
                Ok(r) => refused(RequestTokenError::ServerResponse(r)),
                Err(_) => auth(format!("the token endpoint answered HTTP {}", raw.status)),
            },
        );
    }
    serde_json::from_slice::<BasicTokenResponse>(&raw.body)
        .map(Tokens::from)
        .map_err(|e| auth(format!("the token endpoint's answer does not parse: {e}")))
}

/// The JWT bearer grant's form and headers.
pub(crate) fn jwt_bearer_request(
    session: &Session,
    assertion: &str,
    scope: Option<&str>,
    key: Option<&ClientKey>,
) -> Result<(String, Vec<(String, String)>), ClientError> {
    let c = &session.client;
    let mut headers = Vec::new();
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", super::grants::JWT_BEARER)
        .append_pair("assertion", assertion);
    if let Some(s) = scope {
        form.append_pair("scope", s);
    }
    match (c.method.as_str(), &c.secret) {
        ("client_secret_basic", Some(secret)) => {
            headers.push(("authorization".to_owned(), basic_header(&c.id, secret)));
        }
        ("client_secret_post", Some(secret)) => {
            form.append_pair("client_id", &c.id);
            form.append_pair("client_secret", secret);
        }
        // A JWT bearer grant may name no client (RFC 7523 §3.1: the assertion does).
        _ if c.id.is_empty() => {}
        _ => {
            form.append_pair("client_id", &c.id);
        }
    }
    for (k, v) in extra_params(session, key)? {
        form.append_pair(k, &v);
    }
    Ok((form.finish(), headers))
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
