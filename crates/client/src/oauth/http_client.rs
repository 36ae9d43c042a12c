//! The `oauth2` crate's HTTP client: its requests sent by [`fetch::request`] (our hyper
//! client, the same timeout and schemes as every other OAuth request), so that no second
//! HTTP stack comes with it.

use http::header::{ACCEPT, CONTENT_TYPE};
use oauth2::{HttpRequest, HttpResponse};
use url::Url;

use super::{auth, fetch};
use crate::ClientError;

/// Sends one of `oauth2`'s requests. Its `Content-Type` goes with the body and `Accept` is
/// fetch's own (JSON); its other headers (`Authorization`) are passed on.
pub(crate) async fn send(request: HttpRequest) -> Result<HttpResponse, ClientError> {
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
    let raw = fetch::request(&url, parts.method.as_str(), body, headers).await?;
    let mut response = http::Response::builder().status(raw.status);
    for (k, v) in &raw.headers {
        response = response.header(k, v);
    }
    response
        .body(raw.body.to_vec())
        .map_err(|e| auth(format!("{url}: {e}")))
}
