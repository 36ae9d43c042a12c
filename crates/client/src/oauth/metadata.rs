//! Fetching the metadata discovery points at: the protected resource's (RFC 9728), the
//! authorization server's (RFC 8414, OpenID Connect Discovery), and the 2025-03-26 defaults.

use serde_json::{Value, json};
use url::Url;

use super::discovery::{
    authorization_server_metadata_urls, canonical_resource, resource_matches,
    resource_metadata_urls,
};
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

/// The resource the token is for and the authorization server that issues it: the
/// protected resource metadata (`prm`) when the endpoint has it (its `resource` must be the
/// endpoint's, its first authorization server is asked for its metadata), else the
/// 2025-03-26 fallback at the endpoint's origin. Returns the resource, the issuer
/// identifier (the metadata's own, which assertions are addressed to) and the metadata.
pub(crate) async fn discover_server(
    endpoint: &Url,
    prm: Option<&Value>,
) -> Result<(String, String, Value), ClientError> {
    let resource = match prm.and_then(|p| p.get("resource")).and_then(Value::as_str) {
        Some(r) if resource_matches(r, endpoint) => r.to_owned(),
        Some(r) => {
            return Err(auth(format!(
                "the protected resource metadata names {r:?}, not {endpoint}"
            )));
        }
        None => canonical_resource(endpoint).to_string(),
    };
    let mut issuer_name = String::new();
    let meta = match prm {
        Some(p) => {
            let issuer = p
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    auth("the protected resource metadata names no authorization server")
                })?;
            issuer_name = issuer.to_owned();
            let url = Url::parse(issuer).map_err(|e| auth(format!("{issuer}: {e}")))?;
            let meta = server_metadata(&url)
                .await?
                .ok_or_else(|| auth(format!("no authorization server metadata for {issuer}")))?;
            check_issuer(&meta, issuer)?;
            meta
        }
        None => legacy_metadata(endpoint).await?,
    };
    // The issuer identifier, which assertions are addressed to and the authorization
    // response's `iss` is compared with: the metadata's own (checked above to be the one
    // it was found by, when the resource named one).
    if let Some(i) = meta.get("issuer").and_then(Value::as_str) {
        issuer_name = i.to_owned();
    } else if issuer_name.is_empty() {
        issuer_name = endpoint.origin().ascii_serialization();
    }
    Ok((resource, issuer_name, meta))
}

/// RFC 8414 §3.3 (OpenID Connect Discovery §4.3): the metadata's `issuer` must be the
/// issuer identifier its well-known URL was made from, the same string; metadata that
/// names another issuer is not used (its endpoints may be anyone's). Metadata without an
/// `issuer` is taken as the one asked for.
pub(crate) fn check_issuer(meta: &Value, issuer: &str) -> Result<(), ClientError> {
    match meta.get("issuer") {
        None => Ok(()),
        Some(Value::String(i)) if i == issuer => Ok(()),
        Some(other) => Err(auth(format!(
            "the authorization server metadata found for {issuer:?} names issuer {other}; \
             it is not used (RFC 8414 §3.3)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_used_only_for_the_issuer_it_was_found_by() {
        let issuer = "http://127.0.0.1:3000";
        for (meta, ok) in [
            (json!({"issuer": "http://127.0.0.1:3000"}), true),
            (json!({}), true),
            (json!({"issuer": "https://attacker.example.com"}), false),
            (json!({"issuer": "http://127.0.0.1:3000/"}), false),
            (json!({"issuer": 7}), false),
        ] {
            assert_eq!(check_issuer(&meta, issuer).is_ok(), ok, "{meta}");
        }
    }
}
