//! The `oauth2` crate's HTTP client: its requests sent by [`fetch::request`] (our hyper
//! client, the same timeout and schemes as every other OAuth request), so that no second
//! HTTP stack comes with it. With a DPoP key, every token request carries a fresh proof,
//! and goes once more with the server's nonce when the server asks for one (RFC 9449 §8).

use http::header::{ACCEPT, CONTENT_TYPE};
use oauth2::{HttpRequest, HttpResponse};
use url::Url;

use super::dpop::{DpopKey, nonce_wanted};
use super::{auth, fetch};
use crate::ClientError;

/// Sends one of `oauth2`'s requests, with DPoP proofs when `dpop` is given. Its
/// `Content-Type` goes with the body and `Accept` is fetch's own (JSON); its other headers
/// (`Authorization`) are passed on.
pub(crate) async fn send(
    request: HttpRequest,
    dpop: Option<&DpopKey>,
) -> Result<HttpResponse, ClientError> {
    let (parts, body) = request.into_parts();
    let url =
        Url::parse(&parts.uri.to_string()).map_err(|e| auth(format!("{}: {e}", parts.uri)))?;
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let content_type = parts.headers.get(CONTENT_TYPE).map(text);
    let headers = parts
        .headers
        .iter()
        .filter(|(k, _)| *k != CONTENT_TYPE && *k != ACCEPT)
        .map(|(k, v)| (k.as_str().to_owned(), text(v)))
        .collect();
    let body = String::from_utf8(body).map_err(|_| auth("an OAuth request body is not UTF-8"))?;
    let body = content_type.as_deref().map(|ct| (ct, body));
    let raw = token_request(&url, body, headers, dpop).await?;
    let mut response = http::Response::builder().status(raw.status);
    for (k, v) in &raw.headers {
        response = response.header(k, v);
    }
    response
        .body(raw.body.to_vec())
        .map_err(|e| auth(format!("{url}: {e}")))
}

/// POSTs a token request: as it is without `dpop`; with it, with a fresh proof (`htm`
/// POST, `htu` the endpoint, the server's latest nonce), and once more when the answer is
/// 400 `use_dpop_nonce` with a `DPoP-Nonce` the proof did not carry. A nonce the server
/// sends with any answer is kept for the next proof.
pub(crate) async fn token_request(
    url: &Url,
    body: Option<(&str, String)>,
    headers: Vec<(String, String)>,
    dpop: Option<&DpopKey>,
) -> Result<fetch::Raw, ClientError> {
    let Some(key) = dpop else {
        return fetch::request(url, "POST", body, headers).await;
    };
    let mut retried = false;
    loop {
        let nonce = key.as_nonce.lock().clone();
        let proof = key.proof("POST", url.as_str(), None, nonce.as_deref())?;
        let mut with_proof = headers.clone();
        with_proof.push(("DPoP".to_owned(), proof));
        let raw = fetch::request(url, "POST", body.clone(), with_proof).await?;
        let given = raw
            .headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let error = (raw.status == 400)
            .then(|| serde_json::from_slice::<serde_json::Value>(&raw.body).ok())
            .flatten()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned));
        let wanted = nonce_wanted(error.as_deref(), given.as_deref());
        if let Some(n) = given.filter(|n| !n.trim().is_empty()) {
            *key.as_nonce.lock() = Some(n.trim().to_owned());
        }
        match wanted {
            Some(n) if !retried && nonce.as_deref() != Some(n.as_str()) => retried = true,
            _ => return Ok(raw),
        }
    }
}

#[cfg(test)]
#[path = "http_client_tests.rs"]
mod tests;
