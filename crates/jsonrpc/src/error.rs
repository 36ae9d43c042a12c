//! The crate's error types: [`Error`] for fallible operations and
//! [`FrameError`] for line framing.
//!
//! Malformed *incoming messages* are not errors of this kind: [`parse`]
//! turns them into JSON-RPC error objects ready to send back.
//!
//! [`parse`]: crate::parse

/// Something this crate could not do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value handed to one of the `write_*` functions could not be
    /// serialized as JSON (for example a map with non-string keys). Nothing
    /// was appended to the output buffer.
    #[error("cannot serialize the {part}: {source}")]
    Serialize {
        /// Which part of which message failed, such as
        /// `params of request "tools/call"`.
        part: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// Line framing failed.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// A problem with the framing of incoming lines, reported by
/// [`LineDecoder`](crate::LineDecoder).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A line grew past the decoder's maximum. It is reported once; the
    /// rest of it is discarded as it arrives, up to and including its
    /// newline, and decoding resumes with the next line.
    #[error("line too long: rejected after {len_so_far} bytes")]
    TooLong {
        /// How many bytes of the line had been received when it was
        /// rejected (the whole line if its newline had already arrived).
        len_so_far: usize,
        /// The id of the request, when the part of the line received could
        /// be read up to a whole top-level `id`
        /// ([`readable_id`](crate::readable_id)).
        id: Option<crate::RequestId>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        table! { |err: Error, want: &str| assert_eq!(err.to_string(), want);
            (Error::Frame(FrameError::TooLong { len_so_far: 9, id: None }), "line too long: rejected after 9 bytes");
            (Error::from(FrameError::TooLong { len_so_far: 0, id: None }), "line too long: rejected after 0 bytes");
            (Error::Serialize { part: "result for id 1".into(), source: serde::ser::Error::custom("boom") }, "cannot serialize the result for id 1: boom");
        }
    }
}
