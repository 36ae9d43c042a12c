//! A small hand-written HTTP/1.1 framing layer (requests and responses with
//! `Content-Length` or chunked bodies), shared by the client and the floor server.

/// Position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A parsed message head (request or response).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Head {
    /// Status code (responses) or 0 (requests).
    pub status: u16,
    /// Method (requests) or empty (responses).
    pub method: String,
    /// `Content-Length`, if present.
    pub content_length: Option<usize>,
    /// `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// `Content-Type` is `text/event-stream`.
    pub sse: bool,
    /// `Connection: close`.
    pub close: bool,
    /// `Mcp-Session-Id`.
    pub session: Option<String>,
}

/// Parses a head (without the final blank line). `response` selects the first-line form.
pub fn parse_head(bytes: &[u8], response: bool) -> Result<Head, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "head is not UTF-8".to_owned())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut head = Head::default();
    let mut parts = first.split(' ');
    if response {
        let version = parts.next().unwrap_or_default();
        if !version.starts_with("HTTP/1.") {
            return Err(format!("bad status line {first:?}"));
        }
        head.status = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {first:?}"))?;
        head.close = version == "HTTP/1.0";
    } else {
        head.method = parts.next().unwrap_or_default().to_owned();
        if head.method.is_empty() {
            return Err(format!("bad request line {first:?}"));
        }
    }
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            head.content_length = Some(
                value
                    .parse()
                    .map_err(|_| format!("bad content-length {value:?}"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("content-type") {
            head.sse = value.to_ascii_lowercase().starts_with("text/event-stream");
        } else if name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            head.close = v.contains("close");
            if v.contains("keep-alive") {
                head.close = false;
            }
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            head.session = Some(value.to_owned());
        }
    }
    Ok(head)
}

/// What a chunked-body decoder step found at the front of the buffer.
#[derive(Debug, PartialEq)]
pub enum Chunk {
    /// Need more bytes.
    Incomplete,
    /// A data chunk: data at `start..start+len`, whole chunk (with CRLFs) `consumed` bytes.
    Data {
        start: usize,
        len: usize,
        consumed: usize,
    },
    /// The last chunk and its trailers: `consumed` bytes.
    End { consumed: usize },
}

/// Decodes the chunk at the front of `buf`.
pub fn next_chunk(buf: &[u8]) -> Result<Chunk, String> {
    let Some(eol) = find(buf, b"\r\n") else {
        return Ok(Chunk::Incomplete);
    };
    let line = std::str::from_utf8(&buf[..eol]).map_err(|_| "bad chunk size".to_owned())?;
    let size_text = line.split(';').next().unwrap_or_default().trim();
    let size =
        usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size {line:?}"))?;
    let start = eol + 2;
    if size == 0 {
        // Trailers end with an empty line; without trailers it is the next two bytes.
        let rest = &buf[start..];
        if rest.starts_with(b"\r\n") {
            return Ok(Chunk::End {
                consumed: start + 2,
            });
        }
        return Ok(match find(rest, b"\r\n\r\n") {
            Some(p) => Chunk::End {
                consumed: start + p + 4,
            },
            None => Chunk::Incomplete,
        });
    }
    if buf.len() < start + size + 2 {
        return Ok(Chunk::Incomplete);
    }
    Ok(Chunk::Data {
        start,
        len: size,
        consumed: start + size + 2,
    })
}

/// Calls `f` with the data of each event of a `text/event-stream` body, in order, until
/// it returns `true`. Multi-line data is joined with `\n`.
pub fn for_each_sse_data(
    body: &[u8],
    mut f: impl FnMut(&[u8]) -> anyhow::Result<bool>,
) -> anyhow::Result<bool> {
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    let mut lines = body.split(|&b| b == b'\n').peekable();
    while let Some(raw) = lines.next() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let last = lines.peek().is_none();
        if line.is_empty() || last {
            if let Some(rest) = line.strip_prefix(b"data:") {
                push_data(&mut data, &mut has_data, rest);
            }
            if has_data && !data.is_empty() && f(&data)? {
                return Ok(true);
            }
            data.clear();
            has_data = false;
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            push_data(&mut data, &mut has_data, rest);
        }
    }
    Ok(false)
}

fn push_data(data: &mut Vec<u8>, has_data: &mut bool, rest: &[u8]) {
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    if *has_data {
        data.push(b'\n');
    }
    data.extend_from_slice(rest);
    *has_data = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_head() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nMcp-Session-Id: abc\r\nTransfer-Encoding: chunked", true).unwrap();
        assert_eq!(
            (h.status, h.sse, h.chunked, h.session.as_deref()),
            (200, true, true, Some("abc"))
        );
    }

    #[test]
    fn response_head_json_length() {
        let h = parse_head(
            b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\ncontent-length: 0",
            true,
        )
        .unwrap();
        assert_eq!((h.status, h.sse, h.content_length), (202, false, Some(0)));
    }

    #[test]
    fn http10_closes() {
        assert!(parse_head(b"HTTP/1.0 200 OK", true).unwrap().close);
    }
    #[test]
    fn connection_close() {
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nConnection: close", true)
                .unwrap()
                .close
        );
    }
    #[test]
    fn bad_status_line() {
        assert!(parse_head(b"HTTX 200", true).is_err());
    }
    #[test]
    fn bad_header_line() {
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nnocolon", true).is_err());
    }
    #[test]
    fn request_head() {
        let h = parse_head(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 12",
            false,
        )
        .unwrap();
        assert_eq!((h.method.as_str(), h.content_length), ("POST", Some(12)));
    }
    #[test]
    fn chunk_data() {
        assert_eq!(
            next_chunk(b"5\r\nhello\r\n0\r\n\r\n").unwrap(),
            Chunk::Data {
                start: 3,
                len: 5,
                consumed: 10
            }
        );
    }
    #[test]
    fn chunk_incomplete() {
        assert_eq!(next_chunk(b"5\r\nhel").unwrap(), Chunk::Incomplete);
    }
    #[test]
    fn chunk_end() {
        assert_eq!(
            next_chunk(b"0\r\n\r\n").unwrap(),
            Chunk::End { consumed: 5 }
        );
    }
    #[test]
    fn chunk_end_with_trailer() {
        assert_eq!(
            next_chunk(b"0\r\nX: y\r\n\r\n").unwrap(),
            Chunk::End { consumed: 11 }
        );
    }
    #[test]
    fn chunk_extension() {
        assert!(matches!(
            next_chunk(b"a;x=1\r\n0123456789\r\n").unwrap(),
            Chunk::Data { len: 10, .. }
        ));
    }
    #[test]
    fn chunk_bad_size() {
        assert!(next_chunk(b"zz\r\n").is_err());
    }

    fn events(body: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for_each_sse_data(body, |d| {
            out.push(String::from_utf8(d.to_vec()).unwrap());
            Ok(false)
        })
        .unwrap();
        out
    }

    #[test]
    fn sse_two_events() {
        assert_eq!(
            events(b"event: message\ndata: {\"a\":1}\n\ndata: 2\n\n"),
            ["{\"a\":1}", "2"]
        );
    }
    #[test]
    fn sse_priming_event_skipped() {
        assert_eq!(events(b"id: 0\nretry: 3000\ndata:\n\ndata: x\n\n"), ["x"]);
    }
    #[test]
    fn sse_crlf_and_multiline() {
        assert_eq!(events(b"data: a\r\ndata: b\r\n\r\n"), ["a\nb"]);
    }
    #[test]
    fn sse_unterminated_last_event() {
        assert_eq!(events(b"data: z"), ["z"]);
    }
    #[test]
    fn sse_stops_when_asked() {
        let mut n = 0;
        assert!(
            for_each_sse_data(b"data: 1\n\ndata: 2\n\n", |_| {
                n += 1;
                Ok(true)
            })
            .unwrap()
        );
        assert_eq!(n, 1);
    }
}
