//! The Streamable HTTP exchange: one HTTP request per message, answered with JSON or with
//! an SSE stream (read as it arrives) that ends with the response, over `http://` or
//! `https://`. Requests go over the endpoint's pool of kept connections
//! ([`connect::pool`]: HTTP/1.1, or HTTP/2 when the server offers it), never a connection
//! per request; the legacy GET stream, which lives as long as the session, has a
//! connection of its own ([`connect::open`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use toolwright_jsonrpc::{ErrorObject, Message, RequestId, Response};
use toolwright_net::{Connector, Pool};

use crate::ClientError;
use crate::connect::{self, TlsRoots};
use crate::envelope;
use crate::sse::SseParser;

/// Largest response body read.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Where the server is, and the pool of connections to it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The URL as given.
    pub url: String,
    authority: String,
    host: String,
    port: u16,
    path: String,
    https: bool,
    /// What an `https` server's certificate is checked against.
    pub roots: TlsRoots,
    /// The kept connections to this server, shared by clones.
    pooled: Arc<Pooled>,
}

/// What the pool is asked for, and the pool.
#[derive(Debug)]
struct Pooled {
    /// `scheme://authority/path`, without user info.
    uri: Uri,
    pool: Pool<Connector, Full<Bytes>>,
}

impl Endpoint {
    /// Parses an `http://` or `https://` `host[:port]/path` URL.
    pub(crate) fn parse(url: &str, roots: &TlsRoots) -> Result<Endpoint, ClientError> {
        let bad = |reason: &str| ClientError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("the URL must start with http:// or https://")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        // `Host` and messages name the host and port, never a URL's user info.
        let bare = authority.as_str().rsplit('@').next().unwrap_or_default();
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        let scheme = if https { "https" } else { "http" };
        let pooled_uri = format!("{scheme}://{bare}{path}")
            .parse()
            .map_err(|_| bad("not a URL"))?;
        Ok(Endpoint {
            url: url.to_owned(),
            authority: bare.to_owned(),
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
            path,
            https,
            roots: roots.clone(),
            pooled: Arc::new(Pooled {
                uri: pooled_uri,
                pool: connect::pool(roots),
            }),
        })
    }
}

/// The JSON-RPC answer an HTTP exchange brought back.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A response (from a JSON body, or the one with the request's id on an SSE stream).
    Response(Response),
    /// An error without an id, sent instead of a response (e.g. with a 400).
    Error(ErrorObject),
}

/// What came back for one HTTP request.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// `Mcp-Session-Id`, when the server set one.
    pub session_id: Option<String>,
    /// The JSON-RPC answer, if the body held one.
    pub answer: Option<Answer>,
    /// The start of the body (empty for an SSE stream).
    pub text: String,
    /// The last SSE `retry` field, if the answer was a stream that set one.
    pub retry: Option<Duration>,
    /// Every `WWW-Authenticate` header value, in order.
    pub www_authenticate: Vec<String>,
    /// `DPoP-Nonce`, the nonce the server wants in the next DPoP proof (RFC 9449 §9).
    pub dpop_nonce: Option<String>,
    /// Whether the answer was an SSE stream.
    pub sse: bool,
    /// The stream's last event id, if it set one.
    pub last_event_id: Option<String>,
}

/// One HTTP request to make.
pub(crate) struct Exchange<'a> {
    /// POST, GET or DELETE.
    pub method: Method,
    /// The JSON-RPC message POSTed, if any.
    pub body: Option<&'a [u8]>,
    /// The id of the request in `body`: an SSE answer is read until its response.
    pub id: Option<&'a RequestId>,
    /// Extra headers (session, version, `Mcp-*`, a call's own `Authorization`).
    pub headers: &'a [(String, String)],
    /// The connection's credentials for this attempt (its authorizer's `Authorization`,
    /// DPoP proof), sent after `headers`.
    pub auth: &'a [(String, String)],
    /// The JSON-RPC method, for error messages.
    pub rpc_method: &'a str,
    /// On a connection of its own rather than the pool's (the long-lived GET stream).
    pub alone: bool,
    /// Told the status as soon as the response head arrives (a stream is open then).
    pub on_head: Option<&'a (dyn Fn(u16) + Send + Sync)>,
}

impl<'a> Exchange<'a> {
    /// A request without a body (GET, DELETE).
    pub(crate) fn bodiless(
        method: Method,
        headers: &'a [(String, String)],
        rpc_method: &'a str,
    ) -> Exchange<'a> {
        Exchange {
            method,
            body: None,
            id: None,
            headers,
            auth: &[],
            rpc_method,
            alone: false,
            on_head: None,
        }
    }

    /// The same request, on a connection of its own.
    pub(crate) fn alone(self) -> Exchange<'a> {
        Exchange {
            alone: true,
            ..self
        }
    }
}

/// Sends one HTTP request and reads the answer. For a request (`id` set), an SSE answer is
/// read until the response with that id arrives; without an id, until the stream ends.
/// Every other message on the stream (notifications, requests from the server, other
/// responses) goes to `on_message` as it arrives.
///
/// Dropping the returned future before the answer is read to its end closes the
/// connection it was on (which, in the modern era, cancels the request): a pooled one is
/// not given back half read ([`Pool`] says how hyper sees to that), and one of its own is
/// driven inside this future. There is no timeout here; callers bound the future
/// themselves.
pub(crate) async fn exchange(
    endpoint: &Endpoint,
    ex: Exchange<'_>,
    on_message: &mut (dyn FnMut(Message) + Send),
) -> Result<Reply, ClientError> {
    if ex.alone {
        return exchange_alone(endpoint, ex, on_message).await;
    }
    let request = build_request(endpoint.pooled.uri.clone(), &ex)
        .map_err(|e| io_err(endpoint, "building a request to", &e))?;
    let response = endpoint
        .pooled
        .pool
        .send(request)
        .await
        .map_err(|e| send_failure(endpoint, &e))?;
    read_reply(response, endpoint, &ex, on_message).await
}

/// [`exchange`] on a connection of its own, driven inside the returned future so that
/// dropping it closes the connection.
async fn exchange_alone(
    endpoint: &Endpoint,
    ex: Exchange<'_>,
    on_message: &mut (dyn FnMut(Message) + Send),
) -> Result<Reply, ClientError> {
    let stream = connect::open(
        &endpoint.roots,
        endpoint.https,
        &endpoint.host,
        endpoint.port,
    )
    .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(stream)
        .await
        .map_err(|e| io_err(endpoint, "HTTP handshake with", &e))?;
    let work = async {
        let path = Uri::try_from(endpoint.path.as_str())
            .map_err(|e| io_err(endpoint, "building a request to", &e))?;
        let mut request =
            build_request(path, &ex).map_err(|e| io_err(endpoint, "building a request to", &e))?;
        request.headers_mut().insert(
            HOST,
            HeaderValue::from_str(&endpoint.authority)
                .map_err(|e| io_err(endpoint, "building a request to", &e))?,
        );
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| request_failure(endpoint, &e))?;
        read_reply(response, endpoint, &ex, on_message).await
    };
    let drive = async {
        let _ = conn.await;
        std::future::pending::<()>().await;
    };
    tokio::select! {
        reply = work => reply,
        () = drive => unreachable!("drive never completes"),
    }
}

/// An I/O failure talking to the endpoint, `context` saying what was being done.
fn io_err(endpoint: &Endpoint, context: &str, e: &dyn std::fmt::Display) -> ClientError {
    ClientError::Io {
        context: format!("{context} {}", endpoint.authority),
        source: std::io::Error::other(e.to_string()),
    }
}

/// hyper's failure to get an answer to a request, explained.
fn request_failure(endpoint: &Endpoint, e: &hyper::Error) -> ClientError {
    if e.is_parse() && !endpoint.https {
        // A TLS server answers plain HTTP with a TLS alert.
        let hint = format!("{e}: the answer is not HTTP; is it an https:// server?");
        io_err(endpoint, "sending a request to", &hint)
    } else {
        io_err(endpoint, "sending a request to", e)
    }
}

/// The pool's failure: no connection (the connector's error, explained as [`open`]
/// explains it), or hyper's failure on the request.
///
/// [`open`]: connect::open
fn send_failure(endpoint: &Endpoint, e: &hyper_util::client::legacy::Error) -> ClientError {
    let source = std::error::Error::source(e);
    if let Some(net) = source.and_then(|s| s.downcast_ref::<toolwright_net::Error>()) {
        return connect::failure(net, &endpoint.roots, &endpoint.host, endpoint.port);
    }
    match source.and_then(|s| s.downcast_ref::<hyper::Error>()) {
        Some(h) => request_failure(endpoint, h),
        None => io_err(
            endpoint,
            "sending a request to",
            &source.map_or_else(|| e.to_string(), ToString::to_string),
        ),
    }
}

/// The HTTP request of one exchange: the endpoint's path, the accepted media types, the
/// JSON body if any, and the exchange's headers. (`Host` is the pool's to set from the
/// URI, or the caller's on a connection of its own.)
fn build_request(uri: Uri, ex: &Exchange<'_>) -> Result<Request<Full<Bytes>>, http::Error> {
    let payload = ex.body.map_or_else(Bytes::new, Bytes::copy_from_slice);
    let mut request = Request::builder()
        .method(ex.method.clone())
        .uri(uri)
        .header(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
    if ex.body.is_some() {
        request = request.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    for (k, v) in ex.headers.iter().chain(ex.auth) {
        request = match known_name(k) {
            Some(name) => request.header(name, v.as_str()),
            None => request.header(k.as_str(), v.as_str()),
        };
    }
    request.body(Full::new(payload))
}

/// The MCP headers' names as constants: a name parsed from text that is not one of HTTP's
/// own is copied to the heap, on every request.
fn known_name(name: &str) -> Option<HeaderName> {
    const KNOWN: [&str; 6] = [
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "mcp-session-id",
        "last-event-id",
        "dpop",
    ];
    KNOWN
        .iter()
        .find(|k| k.eq_ignore_ascii_case(name))
        .map(|k| HeaderName::from_static(k))
}

/// What came back: the status and the headers the client acts on, then the answer, read
/// from an SSE stream (every other message to `on_message`) or a JSON body.
async fn read_reply(
    response: http::Response<Incoming>,
    endpoint: &Endpoint,
    ex: &Exchange<'_>,
    on_message: &mut (dyn FnMut(Message) + Send),
) -> Result<Reply, ClientError> {
    let status = response.status().as_u16();
    if let Some(on_head) = ex.on_head {
        on_head(status);
    }
    let headers = response.headers();
    let session_id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let www_authenticate = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let dpop_nonce = headers
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_sse = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
    let incoming = response.into_body();
    let mut retry = None;
    let mut last_event_id = None;
    let (answer, text) = if is_sse {
        let (answer, r, last) = read_sse(incoming, ex.id, on_message).await;
        retry = r;
        last_event_id = last;
        (answer, String::new())
    } else {
        let bytes = read_body(incoming, ex.rpc_method, endpoint).await?;
        let mut messages = envelope::messages(&bytes).into_iter();
        let answer = match (messages.next(), messages.next()) {
            (Some(Message::Response(r)), None) => Some(Answer::Response(r)),
            (Some(Message::ErrorWithoutId(e)), None) => Some(Answer::Error(e)),
            _ => None,
        };
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(500)]).into_owned();
        (answer, text)
    };
    Ok(Reply {
        status,
        session_id,
        answer,
        text,
        retry,
        www_authenticate,
        dpop_nonce,
        sse: is_sse,
        last_event_id,
    })
}

async fn read_body(
    mut body: Incoming,
    rpc_method: &str,
    endpoint: &Endpoint,
) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ClientError::Io {
            context: format!(
                "reading the answer to {rpc_method} from {}",
                endpoint.authority
            ),
            source: std::io::Error::other(e.to_string()),
        })?;
        if let Ok(data) = frame.into_data() {
            out.extend_from_slice(&data);
            if out.len() > MAX_BODY {
                return Err(ClientError::Malformed {
                    what: format!("answer to {rpc_method}"),
                    detail: format!("the body is larger than {MAX_BODY} bytes"),
                });
            }
        }
    }
    Ok(out)
}

/// Reads SSE events until the response with id `wanted` (without one, until the stream
/// ends); every other message goes to `on_message`. Also returns the stream's last
/// `retry`.
async fn read_sse(
    mut body: Incoming,
    wanted: Option<&RequestId>,
    on_message: &mut (dyn FnMut(Message) + Send),
) -> (Option<Answer>, Option<Duration>, Option<String>) {
    let mut parser = SseParser::default();
    let mut seen = 0usize;
    let retry = |p: &SseParser| p.retry.map(Duration::from_millis);
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            break; // A broken stream: whatever we have is all there is.
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len();
        if seen > MAX_BODY {
            break;
        }
        for event in parser.push(&data) {
            if !(event.event.is_empty() || event.event == "message") {
                continue;
            }
            for msg in envelope::messages(event.data.as_bytes()) {
                match msg {
                    Message::Response(r) if Some(&r.id) == wanted => {
                        return (
                            Some(Answer::Response(r)),
                            retry(&parser),
                            parser.last_event_id.clone(),
                        );
                    }
                    other => on_message(other),
                }
            }
        }
    }
    (None, retry(&parser), parser.last_event_id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_default_their_scheme_s_port_and_keep_user_info_out_of_host() {
        let roots = TlsRoots::default();
        for (url, https, host, port, authority, path) in [
            ("http://h/mcp", false, "h", 80, "h", "/mcp"),
            ("https://h/mcp", true, "h", 443, "h", "/mcp"),
            ("https://h:8443", true, "h", 8443, "h:8443", "/"),
            ("HTTPS://[::1]:9/m?x=1", true, "::1", 9, "[::1]:9", "/m?x=1"),
            ("https://u:p@h/mcp", true, "h", 443, "h", "/mcp"),
        ] {
            let e = Endpoint::parse(url, &roots).unwrap();
            assert_eq!(
                (
                    e.https,
                    e.host.as_str(),
                    e.port,
                    e.authority.as_str(),
                    e.path.as_str()
                ),
                (https, host, port, authority, path),
                "{url}"
            );
        }
        for (url, says) in [
            ("ftp://h/mcp", "must start with http:// or https://"),
            ("ws://h/mcp", "must start with"),
            ("not a url", "not a URL"),
        ] {
            let e = Endpoint::parse(url, &roots).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
