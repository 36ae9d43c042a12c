//! How a batch reaches the collector: OTLP's two transports, over hyper's own HTTP/1.1 and
//! HTTP/2 clients, the request built from opentelemetry-proto's prost messages.
//!
//! - `http/protobuf`: one POST of the encoded `ExportTraceServiceRequest` to `/v1/traces`
//!   with `content-type: application/x-protobuf`; any 2xx is success, and its body may be
//!   an `ExportTraceServiceResponse` that names rejected spans.
//! - `grpc`: the unary call `TraceService/Export`, a POST over HTTP/2 with `content-type:
//!   application/grpc` and `te: trailers`, whose body is the message behind a 5-byte prefix
//!   (a compression flag, 0 here, and the length as a big-endian u32). The outcome is the
//!   `grpc-status` trailer (or header, when the answer is only trailers) with
//!   `grpc-message`, percent-encoded, beside it; the reply is framed like the request.
//!
//! That is all an exporter needs of either, so it is done here rather than through
//! `opentelemetry-otlp`'s transports, which bring a second HTTP client stack and, for gRPC,
//! tonic and tower: about 0.45 MB of the shipped binary together (issue 18's size target).
//!
//! `http://` is plain TCP (HTTP/2 with prior knowledge for gRPC, as collectors listen on
//! 4317); `https://` is TLS on rustls, trusting the webpki roots and the PEM file
//! `OTEL_EXPORTER_OTLP_CERTIFICATE` names, with ALPN `h2` or `http/1.1`: the connection and
//! the TLS configuration are `toolwright_net`'s ([`Connector::open`],
//! [`toolwright_net::tls::config_with_cas`]), under [`AddressPolicy::ANY`] (the operator
//! named the collector). One connection is kept, and opened again after a failure; it is
//! a handshake of this file's own rather than `toolwright_net`'s pooled client because
//! that client speaks HTTP/1.1 only, and gRPC needs HTTP/2 with prior knowledge.

use crate::config::{Config, Protocol};
use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, Uri};
use hyper_util::rt::TokioExecutor;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use prost::Message;
use std::sync::Arc;
use std::time::Duration;
use toolwright_net::{AddressPolicy, Conn, Connector, closed_before_answer, tls};

/// The gRPC method every export calls.
const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The most of an answer's body that is read.
const MAX_ANSWER: usize = 4 << 20;

/// Why an exporter could not be built from its settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The endpoint does not parse.
    #[error("the endpoint {endpoint:?} is not a URL: {source}")]
    NotUrl {
        /// The endpoint.
        endpoint: String,
        /// Why not.
        source: hyper::http::uri::InvalidUri,
    },
    /// The endpoint has no host.
    #[error("the endpoint {endpoint:?} names no host")]
    NoHost {
        /// The endpoint.
        endpoint: String,
    },
    /// A header the endpoint gives (`host`, `grpc-timeout`) is not a header value.
    #[error("the endpoint {endpoint:?} gives an unusable {header}")]
    Unusable {
        /// The endpoint.
        endpoint: String,
        /// The header.
        header: &'static str,
    },
    /// A configured header's name is not a header name.
    #[error("{name:?} is not a header name")]
    HeaderName {
        /// The name.
        name: String,
    },
    /// A configured header's value is not a header value.
    #[error("the value of header {name} is not a header value")]
    HeaderValue {
        /// The header's name.
        name: String,
    },
    /// The certificate file could not be used.
    #[error(transparent)]
    Tls(toolwright_net::Error),
}

/// Why one export failed.
#[derive(Debug, thiserror::Error)]
#[error("{url}: {failure}")]
pub struct ExportError {
    /// The URL posted to.
    pub url: String,
    /// What went wrong.
    pub failure: Failure,
}

/// What went wrong with one export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// No answer within the timeout.
    #[error("no answer within {ms} ms")]
    Timeout {
        /// The timeout.
        ms: u128,
    },
    /// The connection (or its TLS handshake) could not be opened.
    #[error("{0}")]
    Connect(toolwright_net::Error),
    /// The HTTP handshake failed.
    #[error("HTTP handshake: {0}")]
    Handshake(hyper::Error),
    /// Sending the request failed.
    #[error("{0}")]
    Send(hyper::Error),
    /// Reading the answer failed.
    #[error("reading the answer: {0}")]
    Read(Box<dyn std::error::Error + Send + Sync>),
    /// An HTTP status other than success, with the start of its body.
    #[error("HTTP {status}{excerpt}")]
    Status {
        /// The status.
        status: hyper::StatusCode,
        /// `: ` and the start of a short text body, or nothing.
        excerpt: String,
    },
    /// A gRPC status other than 0.
    #[error("gRPC status {code}: {message}")]
    Grpc {
        /// The status code.
        code: String,
        /// Its message, percent-decoded.
        message: String,
    },
    /// A gRPC answer without `grpc-status`.
    #[error("the answer has no grpc-status")]
    NoGrpcStatus,
    /// The collector rejected some spans.
    #[error("the collector rejected {count} spans: {message}")]
    Rejected {
        /// How many.
        count: i64,
        /// Its message.
        message: String,
    },
}

/// The collector, parsed once.
struct Collector {
    host: String,
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// What each request names: the path for HTTP/1.1 (`/v1/traces`, or the traces
    /// endpoint's), the whole URL of the `Export` method for HTTP/2.
    target: Uri,
    /// The URL posted to, as messages name it.
    url: String,
}

enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    Http2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::Http1(s) => s.is_closed(),
            Sender::Http2(s) => s.is_closed(),
        }
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> hyper::Result<Response<Incoming>> {
        match self {
            Sender::Http1(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
            Sender::Http2(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
        }
    }
}

/// An OTLP trace exporter over either transport: [`OtlpExporter::export`] sends a batch.
pub(crate) struct OtlpExporter {
    protocol: Protocol,
    collector: Collector,
    /// Every request's headers: the protocol's, `user-agent`, then the configured ones.
    headers: HeaderMap,
    timeout: Duration,
    resource: ResourceAttributesWithSchema,
    connection: Option<Sender>,
}

/// The URL export goes to: the traces endpoint as given, else the general one (with
/// `/v1/traces` after it, for HTTP), else the local collector's default port.
fn endpoint(config: &Config) -> String {
    if let Some(url) = &config.traces_endpoint {
        return url.clone();
    }
    match (config.protocol, &config.endpoint) {
        (Protocol::HttpProtobuf, Some(url)) => format!("{}/v1/traces", url.trim_end_matches('/')),
        (Protocol::Grpc, Some(url)) => url.clone(),
        (Protocol::HttpProtobuf, None) => "http://localhost:4318/v1/traces".into(),
        (Protocol::Grpc, None) => "http://localhost:4317".into(),
    }
}

/// What the protocol fixes for the collector at `uri` (`given`, as configured): the path
/// requests name, the ALPN protocol, and the protocol's headers. HTTP/1.1 takes the path
/// and a Host header; HTTP/2 the whole URI, whose scheme and authority become its
/// pseudo-headers.
fn protocol_parts<'u>(
    config: &Config,
    uri: &'u Uri,
    given: &str,
    authority: &str,
) -> Result<ProtocolParts<'u>, SetupError> {
    let fixed = |name: &'static str, value: &str| {
        HeaderValue::try_from(value)
            .map(|v| (HeaderName::from_static(name), v))
            .map_err(|_| SetupError::Unusable {
                endpoint: given.to_owned(),
                header: name,
            })
    };
    Ok(match config.protocol {
        Protocol::HttpProtobuf => ProtocolParts {
            path: uri.path_and_query().map_or("/", |p| p.as_str()),
            alpn: tls::HTTP1,
            headers: vec![
                fixed("host", authority)?,
                fixed("content-type", "application/x-protobuf")?,
            ],
        },
        Protocol::Grpc => ProtocolParts {
            path: EXPORT,
            alpn: tls::H2,
            headers: vec![
                fixed("content-type", "application/grpc")?,
                fixed("te", "trailers")?,
                fixed("grpc-timeout", &format!("{}m", config.timeout.as_millis()))?,
            ],
        },
    })
}

/// What the protocol fixes: see [`protocol_parts`].
struct ProtocolParts<'u> {
    /// The path requests name.
    path: &'u str,
    /// The ALPN protocol offered over TLS.
    alpn: &'static [u8],
    /// The protocol's headers.
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// Every request's headers: the protocol's, `user-agent`, then the configured ones.
fn request_headers(
    config: &Config,
    protocol_headers: Vec<(HeaderName, HeaderValue)>,
) -> Result<HeaderMap, SetupError> {
    let mut headers = HeaderMap::new();
    headers.extend(protocol_headers);
    headers.insert(
        "user-agent",
        HeaderValue::from_static(concat!("toolwright/", env!("CARGO_PKG_VERSION"))),
    );
    for (k, v) in &config.headers {
        let name = HeaderName::try_from(k.as_str())
            .map_err(|_| SetupError::HeaderName { name: k.clone() })?;
        let value = HeaderValue::try_from(v.as_str())
            .map_err(|_| SetupError::HeaderValue { name: k.clone() })?;
        headers.insert(name, value);
    }
    Ok(headers)
}

impl OtlpExporter {
    /// Checks the endpoint, headers and certificate `config` names.
    pub(crate) fn new(config: &Config, resource: &Resource) -> Result<OtlpExporter, SetupError> {
        let given = endpoint(config);
        let not_url = |source| SetupError::NotUrl {
            endpoint: given.clone(),
            source,
        };
        let uri: Uri = given.parse().map_err(not_url)?;
        let secure = uri.scheme_str() == Some("https");
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| SetupError::NoHost {
                endpoint: given.clone(),
            })?;
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let base = format!("{}://{authority}", if secure { "https" } else { "http" });
        let ProtocolParts {
            path,
            alpn,
            headers: protocol_headers,
        } = protocol_parts(config, &uri, &given, authority)?;
        let url = format!("{base}{path}");
        let target = match config.protocol {
            Protocol::HttpProtobuf => path,
            Protocol::Grpc => &url,
        };
        let headers = request_headers(config, protocol_headers)?;
        Ok(OtlpExporter {
            protocol: config.protocol,
            collector: Collector {
                host: host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
                port: uri.port_u16().unwrap_or(if secure { 443 } else { 80 }),
                tls: if secure {
                    let files: Vec<std::path::PathBuf> =
                        config.certificate.iter().cloned().collect();
                    Some(tls::config_with_cas(&files, &[alpn]).map_err(SetupError::Tls)?)
                } else {
                    None
                },
                target: target.parse().map_err(not_url)?,
                url,
            },
            headers,
            timeout: config.timeout,
            resource: ResourceAttributesWithSchema::from(resource),
            connection: None,
        })
    }

    /// Sends `batch` as one export, within the configured timeout.
    pub(crate) async fn export(&mut self, batch: Vec<SpanData>) -> Result<(), ExportError> {
        let message = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch, &self.resource),
        };
        let body = match self.protocol {
            Protocol::HttpProtobuf => Bytes::from(message.encode_to_vec()),
            Protocol::Grpc => frame(&message),
        };
        let timeout = self.timeout;
        let outcome = match tokio::time::timeout(timeout, self.call(body)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::Timeout {
                ms: timeout.as_millis(),
            }),
        };
        outcome.map_err(|failure| {
            self.connection = None;
            ExportError {
                url: self.collector.url.clone(),
                failure,
            }
        })
    }

    async fn call(&mut self, body: Bytes) -> Result<(), Failure> {
        let (mut sender, kept) = match self.connection.take() {
            Some(s) if !s.is_closed() => (s, true),
            _ => (self.connect().await?, false),
        };
        let response = match sender.send(self.request(body.clone())).await {
            Ok(response) => response,
            // A kept connection that the collector closed while it sat idle, before this
            // request got through: once more, on a new one (net's rule, which the MCP
            // client's pool follows too).
            Err(e) if kept && closed_before_answer(&e) => {
                sender = self.connect().await?;
                sender
                    .send(self.request(body))
                    .await
                    .map_err(Failure::Send)?
            }
            Err(e) => return Err(Failure::Send(e)),
        };
        self.connection = Some(sender);
        let (head, body) = response.into_parts();
        let answer = Limited::new(body, MAX_ANSWER)
            .collect()
            .await
            .map_err(Failure::Read)?;
        let trailers = answer.trailers().cloned().unwrap_or_default();
        let bytes = answer.to_bytes();
        let reply = match self.protocol {
            Protocol::HttpProtobuf => {
                if !head.status.is_success() {
                    return Err(Failure::Status {
                        status: head.status,
                        excerpt: excerpt(&bytes),
                    });
                }
                Some(bytes)
            }
            Protocol::Grpc => {
                if head.status != hyper::StatusCode::OK {
                    return Err(Failure::Status {
                        status: head.status,
                        excerpt: String::new(),
                    });
                }
                grpc_status(&trailers, &head.headers)?;
                unframe(bytes)
            }
        };
        if let Some(reply) = reply
            && let Ok(reply) = ExportTraceServiceResponse::decode(reply)
            && let Some(partial) = reply.partial_success
            && partial.rejected_spans > 0
        {
            return Err(Failure::Rejected {
                count: partial.rejected_spans,
                message: partial.error_message,
            });
        }
        Ok(())
    }

    /// The export request carrying `body`.
    fn request(&self, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.collector.target.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }

    async fn connect(&self) -> Result<Sender, Failure> {
        let c = &self.collector;
        let config = c.tls.clone().unwrap_or_else(tls::http1_default);
        let io: Conn = Connector::new(AddressPolicy::ANY, config)
            .open(c.tls.is_some(), &c.host, c.port)
            .await
            .map_err(Failure::Connect)?;
        let handshake = Failure::Handshake;
        Ok(match self.protocol {
            Protocol::HttpProtobuf => {
                let (sender, connection) = http1::handshake(io).await.map_err(handshake)?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Sender::Http1(sender)
            }
            Protocol::Grpc => {
                let (sender, connection) = http2::Builder::new(TokioExecutor::new())
                    .handshake(io)
                    .await
                    .map_err(handshake)?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Sender::Http2(sender)
            }
        })
    }
}

/// `grpc-status` 0, or the error the collector gave.
fn grpc_status(trailers: &HeaderMap, headers: &HeaderMap) -> Result<(), Failure> {
    let get = |name: &str| trailers.get(name).or_else(|| headers.get(name));
    match get("grpc-status").and_then(|s| s.to_str().ok()) {
        Some("0") => Ok(()),
        Some(code) => {
            let message = get("grpc-message")
                .and_then(|m| m.to_str().ok())
                .map(|m| percent_encoding::percent_decode_str(m).decode_utf8_lossy())
                .unwrap_or_default()
                .into_owned();
            Err(Failure::Grpc {
                code: code.to_owned(),
                message,
            })
        }
        None => Err(Failure::NoGrpcStatus),
    }
}

/// The start of an error answer's body, when it is short text.
fn excerpt(body: &[u8]) -> String {
    match std::str::from_utf8(body) {
        Ok(text) if !text.trim().is_empty() => {
            let text = text.trim();
            let end = text.char_indices().nth(200).map_or(text.len(), |(i, _)| i);
            format!(": {}", &text[..end])
        }
        _ => String::new(),
    }
}

/// The message behind gRPC's prefix: not compressed, then its length.
pub(crate) fn frame(message: &impl Message) -> Bytes {
    let len = message.encoded_len();
    let mut out = Vec::with_capacity(5 + len);
    out.push(0);
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    message
        .encode(&mut out)
        .expect("a Vec grows to what it is given");
    Bytes::from(out)
}

/// The first message of a framed body, when there is one and it is not compressed.
pub(crate) fn unframe(mut body: Bytes) -> Option<Bytes> {
    if body.len() < 5 || body[0] != 0 {
        return None;
    }
    body.advance(1);
    let len = usize::try_from(body.get_u32()).ok()?;
    (body.len() >= len).then(|| body.split_to(len))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
