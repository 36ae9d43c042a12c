//! Fetching the metadata discovery points at: the protected resource's (RFC 9728), the
//! authorization server's (RFC 8414, OpenID Connect Discovery), and the 2025-03-26 defaults.

use serde_json::{Value, json};
use url::Url;

use super::discovery::{authorization_server_metadata_urls, resource_metadata_urls};
use super::{auth, fetch};
use crate::ClientError;

/// The first protected resource metadata found, or `None` when there is none (a
/// 2025-03-26 server).
pub(crate) async fn protected_resource_metadata(
    endpoint: &Url,
    advertised: Option<&str>,
) -> Result<Option<Value>, ClientError> {
    let mut urls = Vec::new();
    if let Some(a) = advertised {
        urls.push(Url::parse(a).map_err(|e| auth(format!("resource_metadata {a:?}: {e}")))?);
    } else {
        urls = resource_metadata_urls(endpoint);
    }
    for u in urls {
        let a = fetch::get_json(&u).await?;
        if a.status == 200
            && let Some(doc) = a.json.filter(Value::is_object)
        {
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

pub(crate) async fn server_metadata(issuer: &Url) -> Result<Option<Value>, ClientError> {
    for u in authorization_server_metadata_urls(issuer) {
        let a = fetch::get_json(&u).await?;
        if a.status == 200
            && let Some(doc) = a.json.filter(Value::is_object)
        {
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

/// 2025-03-26: the authorization server is the MCP server's origin; without metadata,
/// its default endpoints (and S256, which that revision requires).
pub(crate) async fn legacy_metadata(endpoint: &Url) -> Result<Value, ClientError> {
    let mut base = endpoint.clone();
    base.set_path("/");
    base.set_query(None);
    base.set_fragment(None);
    if let Some(doc) = server_metadata(&base).await? {
        return Ok(doc);
    }
    let at = |p: &str| base.join(p).map(String::from).unwrap_or_default();
    Ok(json!({
        "authorization_endpoint": at("/authorize"),
        "token_endpoint": at("/token"),
        "registration_endpoint": at("/register"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
    }))
}
