//! Request bodies: read once, within [`HttpConfig::max_body_bytes`] and
//! [`HttpConfig::body_read_timeout`].

use crate::config::HttpConfig;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::future::Future;
use std::task::Poll;

/// Why a body was not read.
pub(crate) enum BodyError {
    /// Over the limit; the id of the request when the part read shows one.
    TooLarge(Option<toolwright_jsonrpc::RequestId>),
    Timeout,
    Broken,
}

/// How much of a body declared too large is read to find the request's id.
const ID_PREFIX_BYTES: usize = 64 * 1024;

/// Reads a body of at most `limit` bytes. Over it, the bytes read so far (never more than
/// `limit`) are kept, so that the refusal can name the request's id if they show one.
async fn collect_up_to(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let mut body = std::pin::pin!(body);
    // Most bodies are one frame, which is then kept as it came, without a copy.
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut held = 0;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyError::Broken)?.into_data() else {
            continue;
        };
        if held + data.len() > limit {
            let mut prefix = chunks.concat();
            prefix.extend_from_slice(&data[..limit - held]);
            return Err(BodyError::TooLarge(toolwright_jsonrpc::readable_id(
                &prefix,
            )));
        }
        held += data.len();
        chunks.push(data);
    }
    Ok(match chunks.len() {
        1 => chunks.pop().expect("one chunk"),
        _ => Bytes::from(chunks.concat()),
    })
}

/// Reads a body within the size limit and the body read timeout.
pub(crate) async fn read_body(config: &HttpConfig, body: Incoming) -> Result<Bytes, BodyError> {
    read_within(config, collect_up_to(body, config.max_body_bytes)).await
}

/// The id of a request whose body is declared larger than the limit, from its first bytes.
pub(crate) async fn id_of_oversized(
    config: &HttpConfig,
    body: Incoming,
) -> Option<toolwright_jsonrpc::RequestId> {
    match read_within(config, collect_up_to(body, ID_PREFIX_BYTES)).await {
        Err(BodyError::TooLarge(id)) => id,
        Ok(all) => toolwright_jsonrpc::readable_id(&all),
        Err(_) => None,
    }
}

/// Runs a body read: a small body usually came with the headers and is taken at once, with
/// no timer armed; otherwise it must arrive within the body read timeout.
async fn read_within(
    config: &HttpConfig,
    read: impl Future<Output = Result<Bytes, BodyError>>,
) -> Result<Bytes, BodyError> {
    let mut read = std::pin::pin!(read);
    let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(r) => r,
        Poll::Pending => match tokio::time::timeout(config.body_read_timeout, read).await {
            Ok(r) => r,
            Err(_) => Err(BodyError::Timeout),
        },
    }
}
