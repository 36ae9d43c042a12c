//! The two kinds of request this crate makes, over toolwright-net's pooled client, bounded
//! in time and size: a GET of a JSON document (metadata, a JWKS), with the answer's
//! `Cache-Control: max-age`, and a form POST answered with JSON (token introspection).

use http_body_util::{BodyExt, Limited};
use hyper::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use std::time::Duration;
use toolwright_net::{AddressPolicy, Connector, Pool, tls};

/// The largest document read (a JWKS of a few dozen keys is a few tens of KB).
const MAX_BYTES: usize = 1024 * 1024;

/// A JSON document fetched.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// The document.
    pub json: Value,
    /// Its `Cache-Control: max-age`, when it had one.
    pub max_age: Option<Duration>,
}

/// Why a fetch gave no document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// No answer: no connection, a failed request, a timeout, a body cut off or too big.
    Unreachable(String),
    /// An answer other than 200.
    Status(u16),
    /// A 200 whose body is not JSON.
    NotJson(String),
    /// An answer other than 200, with a JSON body (a POST's).
    StatusWith(u16, Value),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Unreachable(why) => f.write_str(why),
            FetchError::Status(s) | FetchError::StatusWith(s, _) => write!(f, "answered HTTP {s}"),
            FetchError::NotJson(why) => write!(f, "the answer is not JSON: {why}"),
        }
    }
}

/// GETs JSON documents through one pool. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    pool: Pool<Connector, String>,
    timeout: Duration,
}

impl Fetcher {
    /// A fetcher over `connector` (default: any address, since the operator named the
    /// issuer, and the webpki roots), each fetch bounded by `timeout`.
    pub fn new(connector: Option<Connector>, timeout: Duration) -> Fetcher {
        let connector =
            connector.unwrap_or_else(|| Connector::new(AddressPolicy::ANY, tls::http1_default()));
        Fetcher {
            pool: Pool::new(connector),
            timeout,
        }
    }

    /// GETs `url` (checked by the caller) as JSON.
    pub async fn get_json(&self, url: &str) -> Result<Fetched, FetchError> {
        let request = hyper::Request::get(url)
            .header(ACCEPT, "application/json")
            .body(String::new())
            .map_err(|e| FetchError::Unreachable(format!("cannot build the request: {e}")))?;
        self.json(request, true).await
    }

    /// POSTs the form `body` to `url` (checked by the caller), with `authorization` as the
    /// `Authorization` header when given. Any status is answered with its JSON body, as
    /// `(status, body)`.
    pub async fn post_form(
        &self,
        url: &str,
        body: String,
        authorization: Option<&str>,
    ) -> Result<(u16, Value), FetchError> {
        let mut request = hyper::Request::post(url)
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(a) = authorization {
            request = request.header(AUTHORIZATION, a);
        }
        let request = request
            .body(body)
            .map_err(|e| FetchError::Unreachable(format!("cannot build the request: {e}")))?;
        match self.json(request, false).await {
            Ok(f) => Ok((200, f.json)),
            Err(FetchError::StatusWith(status, json)) => Ok((status, json)),
            Err(e) => Err(e),
        }
    }

    /// Sends `request` and reads its JSON answer; with `only_ok`, any status but 200 is
    /// [`FetchError::Status`], else a JSON body of another status is
    /// [`FetchError::StatusWith`].
    async fn json(
        &self,
        request: hyper::Request<String>,
        only_ok: bool,
    ) -> Result<Fetched, FetchError> {
        let work = async {
            let response = self
                .pool
                .send(request)
                .await
                .map_err(|e| FetchError::Unreachable(toolwright_net::error_chain(&e)))?;
            let status = response.status().as_u16();
            if status != 200 && only_ok {
                return Err(FetchError::Status(status));
            }
            let max_age = max_age(response.headers());
            let body = Limited::new(response.into_body(), MAX_BYTES)
                .collect()
                .await
                .map_err(|e| FetchError::Unreachable(format!("reading the answer: {e}")))?
                .to_bytes();
            let json = serde_json::from_slice(&body).map_err(|e| {
                if status == 200 {
                    FetchError::NotJson(e.to_string())
                } else {
                    FetchError::Status(status)
                }
            })?;
            if status != 200 {
                return Err(FetchError::StatusWith(status, json));
            }
            Ok(Fetched { json, max_age })
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(FetchError::Unreachable(format!(
                    "no answer within {:?}",
                    self.timeout
                )))
            })
    }
}

/// `max-age` of the `Cache-Control` headers (`no-store` and `no-cache` count as 0).
fn max_age(headers: &HeaderMap) -> Option<Duration> {
    let mut found = None;
    for value in headers.get_all(CACHE_CONTROL) {
        let Ok(value) = value.to_str() else { continue };
        for directive in value.split(',') {
            let directive = directive.trim();
            let (name, arg) = directive.split_once('=').unwrap_or((directive, ""));
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "no-store" | "no-cache" => return Some(Duration::ZERO),
                "max-age" => {
                    if let Ok(secs) = arg.trim().trim_matches('"').parse::<u64>() {
                        found = Some(Duration::from_secs(secs));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;
    use toolwright_testkit::table;

    #[test]
    fn cache_control() {
        table! { |value: &str, secs: Option<u64>| {
                let mut h = HeaderMap::new();
                h.insert(CACHE_CONTROL, HeaderValue::from_str(value).unwrap());
                assert_eq!(max_age(&h), secs.map(Duration::from_secs), "{value}");
            };
            ("max-age=300", Some(300));
            ("public, max-age=3600, must-revalidate", Some(3600));
            ("Max-Age=\"60\"", Some(60));
            ("no-store", Some(0));
            ("max-age=600, no-cache", Some(0));
            ("public", None);
            ("max-age=soon", None);
        }
        assert_eq!(max_age(&HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn failures_are_told_apart() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let answers: [&[u8]; 3] = [
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nnot",
            b"HTTP/1.1 200 OK\r\ncache-control: max-age=42\r\ncontent-length: 2\r\n\r\n{}",
        ];
        tokio::spawn(async move {
            for answer in answers {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await.unwrap();
                s.write_all(answer).await.unwrap();
                // Close it, so the next request opens a connection of its own.
                drop(s);
            }
        });
        let f = Fetcher::new(None, Duration::from_secs(10));
        let url = format!("http://127.0.0.1:{port}/doc");
        assert_eq!(f.get_json(&url).await.unwrap_err(), FetchError::Status(404));
        assert!(matches!(
            f.get_json(&url).await.unwrap_err(),
            FetchError::NotJson(_)
        ));
        let ok = f.get_json(&url).await.unwrap();
        assert_eq!(ok.json, serde_json::json!({}));
        assert_eq!(ok.max_age, Some(Duration::from_secs(42)));
        let closed = format!("http://127.0.0.1:{port}/doc");
        assert!(matches!(
            f.get_json(&closed).await.unwrap_err(),
            FetchError::Unreachable(_)
        ));
    }
}
