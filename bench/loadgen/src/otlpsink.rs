//! An OTLP/HTTP trace receiver for the telemetry section: it accepts `POST /v1/traces`
//! (protobuf), counts the requests, bytes and spans, and answers with an empty
//! `ExportTraceServiceResponse`; `GET /stats` returns the counts as JSON. The spans are
//! counted by decoding the request with prost, down to the span level and no further: a
//! receiver that decodes less than a real collector costs the server under test nothing
//! it would not pay anyway (the export's cost is on the sending side).

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use prost::Message;

use crate::jsonsrv;

/// `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`, only its spans.
#[derive(Clone, PartialEq, Message)]
struct ExportRequest {
    #[prost(message, repeated, tag = "1")]
    resource_spans: Vec<ResourceSpans>,
}

/// `opentelemetry.proto.trace.v1.ResourceSpans`: field 2 is `scope_spans`.
#[derive(Clone, PartialEq, Message)]
struct ResourceSpans {
    #[prost(message, repeated, tag = "2")]
    scope_spans: Vec<ScopeSpans>,
}

/// `opentelemetry.proto.trace.v1.ScopeSpans`: field 2 is `spans`.
#[derive(Clone, PartialEq, Message)]
struct ScopeSpans {
    #[prost(message, repeated, tag = "2")]
    spans: Vec<Span>,
}

/// A span, its fields skipped.
#[derive(Clone, PartialEq, Message)]
struct Span {}

/// What the sink has received.
#[derive(Default)]
struct Counts {
    requests: Cell<u64>,
    spans: Cell<u64>,
    bytes: Cell<u64>,
    rejected: Cell<u64>,
}

fn reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from(body)));
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    res
}

/// The number of spans in an encoded `ExportTraceServiceRequest`.
fn spans_in(body: &[u8]) -> Result<u64, prost::DecodeError> {
    let req = ExportRequest::decode(body)?;
    Ok(req
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len() as u64)
        .sum())
}

async fn answer(
    counts: Rc<Counts>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    if method == Method::GET && path == "/stats" {
        let body = serde_json::json!({
            "requests": counts.requests.get(),
            "spans": counts.spans.get(),
            "bytes": counts.bytes.get(),
            "rejected": counts.rejected.get(),
        });
        return Ok(reply(
            StatusCode::OK,
            "application/json",
            body.to_string().into_bytes(),
        ));
    }
    if method != Method::POST || path != "/v1/traces" {
        return Ok(reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            b"POST /v1/traces or GET /stats\n".to_vec(),
        ));
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            counts.rejected.set(counts.rejected.get() + 1);
            return Ok(reply(
                StatusCode::BAD_REQUEST,
                "text/plain",
                b"unreadable body\n".to_vec(),
            ));
        }
    };
    match spans_in(&body) {
        Ok(n) => {
            counts.requests.set(counts.requests.get() + 1);
            counts.bytes.set(counts.bytes.get() + body.len() as u64);
            counts.spans.set(counts.spans.get() + n);
            // An empty ExportTraceServiceResponse: no partial_success, zero bytes.
            Ok(reply(StatusCode::OK, "application/x-protobuf", Vec::new()))
        }
        Err(e) => {
            counts.rejected.set(counts.rejected.get() + 1);
            Ok(reply(
                StatusCode::BAD_REQUEST,
                "text/plain",
                format!("not an ExportTraceServiceRequest: {e}\n").into_bytes(),
            ))
        }
    }
}

/// Serves on `addr` (loopback) until `lifetime` has passed.
pub fn run(addr: &str, lifetime: Duration, on_bound: impl FnOnce(u16) -> Result<()>) -> Result<()> {
    let counts = Rc::new(Counts::default());
    jsonsrv::run_with(addr, lifetime, on_bound, move |req| {
        answer(counts.clone(), req)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes a request of `per_scope` spans in each of two scopes of two resources, with
    /// fields the sink skips (a span's name and ids, a resource).
    fn request(per_scope: usize) -> Vec<u8> {
        fn field(tag: u32, bytes: &[u8]) -> Vec<u8> {
            let mut out = Vec::new();
            prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
            prost::encoding::encode_varint(bytes.len() as u64, &mut out);
            out.extend_from_slice(bytes);
            out
        }
        let span = [
            field(5, b"tools/call add"),
            field(1, &[7; 16]),
            field(2, &[9; 8]),
        ]
        .concat();
        let scope = [
            field(1, &field(1, b"toolwright")),
            (0..per_scope).flat_map(|_| field(2, &span)).collect(),
        ]
        .concat();
        let resource = [
            field(1, &field(1, b"attrs")),
            field(2, &scope),
            field(2, &scope),
        ]
        .concat();
        [field(1, &resource), field(1, &resource)].concat()
    }

    #[test]
    fn counts_spans_through_resources_and_scopes() {
        assert_eq!(spans_in(&request(3)).unwrap(), 12);
        assert_eq!(spans_in(&[]).unwrap(), 0);
        assert!(spans_in(&[0xff, 0xff]).is_err());
    }
}
