//! The few plain HTTP requests OAuth needs (metadata GETs, form POSTs), over hyper, on a
//! connection from [`crate::connect`] (TLS for `https://`, trusting what the MCP
//! endpoint's connection trusts). OAuth 2.1 wants TLS for every authorization server
//! endpoint: `http://` is refused here except to this machine ([`require_https`]).

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use url::Url;

use super::auth;
use crate::ClientError;
use crate::connect;

/// How long one OAuth request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// An answer: its status and, when it parsed, its JSON body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub json: Option<Value>,
}

/// GETs `url` as JSON.
pub(crate) async fn get_json(url: &Url) -> Result<Answer, ClientError> {
    send(url, "GET", None, Vec::new()).await
}

/// POSTs a form (`application/x-www-form-urlencoded`), with extra headers.
pub(crate) async fn post_form(
    url: &Url,
    form: String,
    headers: Vec<(&'static str, String)>,
) -> Result<Answer, ClientError> {
    send(
        url,
        "POST",
        Some(("application/x-www-form-urlencoded", form)),
        headers,
    )
    .await
}

/// POSTs JSON.
pub(crate) async fn post_json(url: &Url, body: &Value) -> Result<Answer, ClientError> {
    send(
        url,
        "POST",
        Some(("application/json", body.to_string())),
        Vec::new(),
    )
    .await
}

/// OAuth 2.1 (§1.5) has every authorization server endpoint served over TLS: an `http://`
/// URL is accepted only for loopback (`localhost`, 127.0.0.0/8, `::1`), where a local
/// server or a test runs. `what` names the URL in the error.
pub(crate) fn require_https(what: &str, url: &Url) -> Result<(), ClientError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if url.host_str().is_some_and(connect::is_loopback) => Ok(()),
        "http" => Err(auth(format!(
            "{what} {url}: OAuth over plain http:// is allowed only to this machine \
             (localhost); any other host must be reached over https://"
        ))),
        other => Err(auth(format!(
            "{what} {url}: an OAuth URL is https:// (or http:// to localhost), not {other}://"
        ))),
    }
}

async fn send(
    url: &Url,
    method: &str,
    body: Option<(&str, String)>,
    headers: Vec<(&'static str, String)>,
) -> Result<Answer, ClientError> {
    let headers = headers
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let raw = request(url, method, body, headers).await?;
    let json = serde_json::from_slice(&raw.body).ok();
    Ok(Answer {
        status: raw.status,
        json,
    })
}

/// An answer as it came: status, headers and body.
#[derive(Debug)]
pub(crate) struct Raw {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// Sends one request (`body`: its content type and text) and reads the whole answer.
pub(crate) async fn request(
    url: &Url,
    method: &str,
    body: Option<(&str, String)>,
    headers: Vec<(String, String)>,
) -> Result<Raw, ClientError> {
    let fail = |why: String| auth(format!("{url}: {why}"));
    require_https("OAuth request to", url)?;
    let https = url.scheme() == "https";
    let host = url
        .host_str()
        .ok_or_else(|| fail("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url
        .port_or_known_default()
        .unwrap_or(if https { 443 } else { 80 });
    let authority = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let mut target = url.path().to_owned();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let work = async {
        let stream = connect::open(&connect::current_roots(), https, &host, port)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(stream)
            .await
            .map_err(|e| fail(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut request = http::Request::builder()
            .method(method)
            .uri(target.as_str())
            .header(HOST, authority.as_str())
            .header(ACCEPT, "application/json");
        for (k, v) in &headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let payload = match body {
            Some((ct, text)) => {
                request = request.header(CONTENT_TYPE, ct);
                text
            }
            None => String::new(),
        };
        let request = request
            .body(Full::new(Bytes::from(payload)))
            .map_err(|e| fail(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let status = response.status().as_u16();
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| fail(e.to_string()))?
            .to_bytes();
        Ok(Raw {
            status,
            headers: parts.headers,
            body,
        })
    };
    tokio::time::timeout(TIMEOUT, work)
        .await
        .map_err(|_| fail(format!("no answer within {} s", TIMEOUT.as_secs())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_server_urls_are_https_except_to_this_machine() {
        let ok = |u: &str| require_https("token_endpoint", &Url::parse(u).unwrap());
        for u in [
            "https://as.example/token",
            "https://10.0.0.1/token",
            "http://localhost:8080/token",
            "http://127.0.0.1/token",
            "http://[::1]:9/token",
            "http://app.localhost/token",
        ] {
            assert!(ok(u).is_ok(), "{u}");
        }
        for (u, says) in [
            ("http://as.example/token", "allowed only to this machine"),
            ("http://10.0.0.1/token", "allowed only to this machine"),
            (
                "http://localhost.evil.example/token",
                "allowed only to this machine",
            ),
            ("ftp://as.example/token", "not ftp://"),
        ] {
            let e = ok(u).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("token_endpoint"), "{u}: {e}");
        }
    }

    #[tokio::test]
    async fn an_http_request_to_another_host_is_refused_before_connecting() {
        // Port 9 on a TEST-NET address: were it tried, the request would hang or fail
        // differently.
        let url = Url::parse("http://192.0.2.1:9/.well-known/oauth-authorization-server").unwrap();
        let e = get_json(&url).await.unwrap_err().to_string();
        assert!(e.contains("allowed only to this machine"), "{e}");
    }
}
