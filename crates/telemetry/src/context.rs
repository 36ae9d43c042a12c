//! W3C Trace Context: the `traceparent` and `tracestate` a request carries (in
//! `params._meta`, as the MCP conventions and the 2026-07-28 spec put them, or in HTTP
//! headers) and the ones a server passes on to what it calls.

use data_encoding::HEXLOWER;

/// The trace a span belongs to and the span itself, as `traceparent` carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanContext {
    /// 16 bytes, never all zero.
    pub trace_id: [u8; 16],
    /// 8 bytes, never all zero.
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// `tracestate`, passed on as it came.
    pub state: Option<String>,
}

/// `N` bytes from `2N` lowercase hex digits (trace context allows no other case).
fn hex_into<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    HEXLOWER.decode_mut(s.as_bytes(), &mut out).ok()?;
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    HEXLOWER.encode(bytes)
}

impl SpanContext {
    /// Reads a `traceparent` (version `00`, or a later version's first four fields), with
    /// its `tracestate`; `None` when it is malformed or names the invalid all-zero ids.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
        let mut parts = traceparent.trim().split('-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || hex_into::<1>(version).is_none() {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let trace_id = hex_into::<16>(trace).filter(|t| t.iter().any(|b| *b != 0))?;
        let span_id = hex_into::<8>(span).filter(|s| s.iter().any(|b| *b != 0))?;
        let [flags] = hex_into::<1>(flags)?;
        Some(SpanContext {
            trace_id,
            span_id,
            flags,
            state: tracestate
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        })
    }

    /// A new span: in `parent`'s trace (keeping its flags and state), or in a new sampled
    /// trace.
    pub fn child_of(parent: Option<&SpanContext>) -> SpanContext {
        let mut span_id = [0u8; 8];
        while span_id == [0; 8] {
            rand::fill(&mut span_id);
        }
        match parent {
            Some(p) => SpanContext {
                span_id,
                ..p.clone()
            },
            None => {
                let mut trace_id = [0u8; 16];
                while trace_id == [0; 16] {
                    rand::fill(&mut trace_id);
                }
                SpanContext {
                    trace_id,
                    span_id,
                    flags: 1,
                    state: None,
                }
            }
        }
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id as 16 lowercase hex digits.
    pub fn span_id_hex(&self) -> String {
        hex(&self.span_id)
    }

    /// The `traceparent` naming this span as the parent of what it calls.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id_hex(),
            self.span_id_hex(),
            self.flags
        )
    }
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when it was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
