//! The few plain HTTP requests OAuth needs (metadata GETs, form POSTs), over hyper.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use url::Url;

use super::auth;
use crate::ClientError;

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
    if url.scheme() != "http" {
        return Err(fail(format!(
            "only http:// is supported by this client, not {}://",
            url.scheme()
        )));
    }
    let host = url
        .host_str()
        .ok_or_else(|| fail("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
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
        let stream = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| fail(e.to_string()))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
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
