//! The Streamable HTTP transport: one POST per message, answered with JSON or with an SSE
//! stream that ends with the response. Plain `http://` only (no TLS).

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use toolwright_jsonrpc::{ErrorObject, Message, RequestId, Response};

use crate::ClientError;
use crate::envelope;
use crate::sse::SseParser;

/// Largest response body read.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Where the server is.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    authority: String,
    host: String,
    port: u16,
    path: String,
}

impl Endpoint {
    /// Parses an `http://host[:port]/path` URL.
    pub(crate) fn parse(url: &str) -> Result<Endpoint, ClientError> {
        let bad = |reason: &str| ClientError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(bad(
                    "https is not supported yet (toolwright's client has no TLS); use http:// to a local server",
                ));
            }
            _ => return Err(bad("the URL must start with http://")),
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        Ok(Endpoint {
            authority: authority.as_str().to_owned(),
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            path: uri
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
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

/// What came back for one POST.
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
}

/// Sends one HTTP request and reads the answer. For a request (`id` set), an SSE answer is
/// read until the response with that id arrives; requests the server makes on the stream
/// are answered -32601 with the session headers among `headers`.
pub(crate) async fn exchange(
    endpoint: &Endpoint,
    method: Method,
    body: Option<&[u8]>,
    id: Option<&RequestId>,
    headers: &[(String, String)],
    rpc_method: &str,
    timeout: Duration,
) -> Result<Reply, ClientError> {
    let run = async {
        let io_err = |context: &str, e: &dyn std::fmt::Display| ClientError::Io {
            context: format!("{context} {}", endpoint.authority),
            source: std::io::Error::other(e.to_string()),
        };
        let stream = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
            .await
            .map_err(|source| ClientError::Io {
                context: format!("connecting to {}", endpoint.authority),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| io_err("HTTP handshake with", &e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let payload = body.map_or_else(Vec::new, <[u8]>::to_vec);
        let mut request = Request::builder()
            .method(method)
            .uri(endpoint.path.as_str())
            .header(HOST, endpoint.authority.as_str())
            .header(ACCEPT, "application/json, text/event-stream");
        if body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        for (k, v) in headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let request = request
            .body(Full::new(Bytes::from(payload)))
            .map_err(|e| io_err("building a request to", &e))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| io_err("sending a request to", &e))?;
        let status = response.status().as_u16();
        let session_id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
        let incoming = response.into_body();
        let (answer, text) = if is_sse {
            (
                read_sse(incoming, id, endpoint, headers).await?,
                String::new(),
            )
        } else {
            let bytes = read_body(incoming, rpc_method, endpoint).await?;
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
        })
    };
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| ClientError::Timeout {
            method: rpc_method.to_owned(),
            after: timeout,
        })?
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

/// Reads SSE events until the response with id `wanted` (for a notification or response
/// sent, until the stream ends). Server requests on the stream get -32601 in a new POST.
async fn read_sse(
    mut body: Incoming,
    wanted: Option<&RequestId>,
    endpoint: &Endpoint,
    headers: &[(String, String)],
) -> Result<Option<Answer>, ClientError> {
    let mut parser = SseParser::default();
    let mut seen = 0usize;
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
                        return Ok(Some(Answer::Response(r)));
                    }
                    Message::Request(req) => refuse(endpoint, headers, &req.id),
                    _ => {}
                }
            }
        }
    }
    Ok(None)
}

/// Answers a request the server made on a stream with -32601, in a POST of its own that
/// carries the session headers.
fn refuse(endpoint: &Endpoint, headers: &[(String, String)], id: &RequestId) {
    let reply = envelope::refusal(id);
    let endpoint = endpoint.clone();
    let headers: Vec<(String, String)> = headers
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k == "mcp-session-id" || k == "mcp-protocol-version"
        })
        .cloned()
        .collect();
    tokio::spawn(async move {
        let send = post_and_forget(&endpoint, &reply, &headers);
        let _ = tokio::time::timeout(Duration::from_secs(10), send).await;
    });
}

/// POSTs one message and ignores the answer (replies to server requests get 202).
async fn post_and_forget(endpoint: &Endpoint, message: &[u8], headers: &[(String, String)]) {
    let Ok(stream) = TcpStream::connect((endpoint.host.as_str(), endpoint.port)).await else {
        return;
    };
    let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
    else {
        return;
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(endpoint.path.as_str())
        .header(HOST, endpoint.authority.as_str())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json");
    for (k, v) in headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let body = Bytes::copy_from_slice(message);
    if let Ok(request) = request.body(Full::new(body)) {
        let _ = sender.send_request(request).await;
    }
}
