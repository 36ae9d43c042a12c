//! The grants that need no browser.
//!
//! - Client credentials (OAuth 2.1 §4.2, the MCP extension SEP-1046): a confidential client
//!   gets a token for itself, authenticated by its secret or by a signed JWT.
//! - Cross-app access (SEP-990, enterprise-managed authorization): the user's ID token from
//!   the enterprise identity provider is exchanged at the IdP's token endpoint (RFC 8693)
//!   for an identity assertion JWT authorization grant (ID-JAG) aimed at the MCP server's
//!   authorization server, which then takes it as a JWT bearer grant (RFC 7523 §2.1).
//! - Workload identity federation (SEP-1933): a JWT the workload's platform issued it
//!   (a Kubernetes service account token, a cloud's identity token) is presented to the
//!   authorization server as a JWT bearer grant, as it is.

use serde_json::Value;
use url::Url;

use super::token::basic_header;
use super::{auth, fetch};
use crate::ClientError;

/// The `grant_type` of an RFC 8693 token exchange.
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The `grant_type` of an RFC 7523 JWT bearer grant.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// RFC 8693's token type of an OpenID Connect ID token.
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion JWT authorization grant.
pub(crate) const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How the client gets its token.
#[derive(Debug, Clone, Default)]
pub enum Grant {
    /// The authorization code grant with PKCE: the user authorizes in a browser.
    #[default]
    AuthorizationCode,
    /// The client credentials grant: the pre-registered client gets a token for itself.
    ClientCredentials,
    /// Cross-app access: an ID token from the enterprise IdP, exchanged for an ID-JAG, then
    /// presented as a JWT bearer grant.
    CrossApp(CrossApp),
    /// A JWT bearer grant (RFC 7523 §2.1) of an assertion the client was given: a
    /// workload's identity token, addressed to the authorization server. The client ID is
    /// optional.
    JwtBearer(Assertion),
}

/// A JWT presented as a grant (its text is not shown by `Debug`).
#[derive(Clone)]
pub struct Assertion(pub String);

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Assertion(redacted)")
    }
}

/// The identity provider's side of cross-app access.
#[derive(Clone)]
pub struct CrossApp {
    /// The user's ID token, issued by the IdP to this client.
    pub id_token: String,
    /// The IdP's token endpoint, where the ID token is exchanged.
    pub idp_token_endpoint: String,
    /// This client's ID at the IdP.
    pub idp_client_id: String,
    /// Its secret at the IdP, if it is a confidential client there (sent with HTTP Basic).
    pub idp_client_secret: Option<String>,
}

impl std::fmt::Debug for CrossApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossApp")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("idp_client_id", &self.idp_client_id)
            .finish_non_exhaustive()
    }
}

/// The token exchange request: its form and headers. `audience` is the issuer of the
/// authorization server the ID-JAG is for, `resource` the MCP server's resource.
pub(crate) fn token_exchange_request(
    x: &CrossApp,
    audience: &str,
    resource: &str,
    scope: Option<&str>,
) -> (String, Vec<(&'static str, String)>) {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", TOKEN_EXCHANGE)
        .append_pair("requested_token_type", ID_JAG_TYPE)
        .append_pair("subject_token", &x.id_token)
        .append_pair("subject_token_type", ID_TOKEN_TYPE)
        .append_pair("audience", audience)
        .append_pair("resource", resource);
    if let Some(s) = scope {
        form.append_pair("scope", s);
    }
    let mut headers = Vec::new();
    match &x.idp_client_secret {
        Some(secret) => headers.push(("authorization", basic_header(&x.idp_client_id, secret))),
        None => {
            form.append_pair("client_id", &x.idp_client_id);
        }
    }
    (form.finish(), headers)
}

/// Exchanges the ID token for an ID-JAG at the IdP.
pub(crate) async fn exchange_id_token(
    x: &CrossApp,
    audience: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<String, ClientError> {
    let endpoint = Url::parse(&x.idp_token_endpoint).map_err(|e| {
        auth(format!(
            "the IdP token endpoint {:?}: {e}",
            x.idp_token_endpoint
        ))
    })?;
    let (form, headers) = token_exchange_request(x, audience, resource, scope);
    let answer = fetch::post_form(&endpoint, form, headers).await?;
    id_jag(answer.status, answer.json.as_ref())
}

/// The ID-JAG of a token exchange answer.
pub(crate) fn id_jag(status: u16, doc: Option<&Value>) -> Result<String, ClientError> {
    let field = |k: &str| doc.and_then(|d| d.get(k)).and_then(Value::as_str);
    if status != 200 {
        return Err(auth(format!(
            "the IdP's token exchange answered HTTP {status} ({}{})",
            field("error").unwrap_or("no error code"),
            field("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )));
    }
    match field("issued_token_type") {
        Some(ID_JAG_TYPE) => {}
        other => {
            return Err(auth(format!(
                "the IdP issued a {} token, not an ID-JAG ({ID_JAG_TYPE})",
                other.unwrap_or("(untyped)")
            )));
        }
    }
    field("access_token")
        .map(str::to_owned)
        .ok_or_else(|| auth("the IdP's token exchange answer has no access_token"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cross_app(secret: Option<&str>) -> CrossApp {
        CrossApp {
            id_token: "eyJ.id.token".into(),
            idp_token_endpoint: "http://idp.example/token".into(),
            idp_client_id: "idp client".into(),
            idp_client_secret: secret.map(str::to_owned),
        }
    }

    fn pairs(form: &str) -> Vec<(String, String)> {
        url::form_urlencoded::parse(form.as_bytes())
            .into_owned()
            .collect()
    }

    #[test]
    fn the_token_exchange_form_asks_for_an_id_jag_for_the_issuer_and_resource() {
        let (form, headers) = token_exchange_request(
            &cross_app(None),
            "http://as.example",
            "http://mcp.example/mcp",
            Some("read write"),
        );
        let want = [
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG_TYPE),
            ("subject_token", "eyJ.id.token"),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", "http://as.example"),
            ("resource", "http://mcp.example/mcp"),
            ("scope", "read write"),
            ("client_id", "idp client"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs(&form), want);
        assert!(headers.is_empty());
    }

    #[test]
    fn a_confidential_idp_client_authenticates_with_basic_and_no_scope_is_left_out() {
        let (form, headers) =
            token_exchange_request(&cross_app(Some("s:1")), "http://as", "http://r", None);
        let p = pairs(&form);
        assert!(p.iter().all(|(k, _)| k != "client_id" && k != "scope"));
        // RFC 6749 §2.3.1: id and secret form-encoded, then base64.
        assert_eq!(
            headers,
            vec![("authorization", "Basic aWRwK2NsaWVudDpzJTNBMQ==".to_owned())]
        );
    }

    #[test]
    fn only_an_id_jag_is_taken_from_the_answer() {
        let ok =
            json!({"access_token": "jag", "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"});
        assert_eq!(id_jag(200, Some(&ok)).unwrap(), "jag");
        let other = json!({"access_token": "t", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"});
        assert!(
            id_jag(200, Some(&other))
                .unwrap_err()
                .to_string()
                .contains("not an ID-JAG")
        );
        let refused = json!({"error": "invalid_grant", "error_description": "Invalid ID token"});
        let e = id_jag(400, Some(&refused)).unwrap_err().to_string();
        assert!(e.contains("invalid_grant: Invalid ID token"), "{e}");
        assert!(id_jag(200, None).is_err());
    }
}
