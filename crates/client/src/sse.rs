//! A minimal Server-Sent Events parser (the parts MCP uses: `event`, `data`, comments).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field; empty means `message`.
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser: push bytes as they arrive, get complete events back.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    pending: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The last `retry` field: how long (ms) the server wants a client to wait before
    /// reconnecting.
    pub(crate) retry: Option<u64>,
    /// The last `id` field: what `Last-Event-ID` names when the stream is resumed.
    pub(crate) last_event_id: Option<String>,
}

impl SseParser {
    /// Feeds a chunk; returns the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.pending.iter().position(|&b| b == b'\n' || b == b'\r') {
            // A CR LF pair ends one line, not two.
            let mut end = pos + 1;
            if self.pending[pos] == b'\r' {
                match self.pending.get(pos + 1) {
                    Some(b'\n') => end += 1,
                    None => break, // wait: the LF may be in the next chunk
                    Some(_) => {}
                }
            }
            let line: Vec<u8> = self.pending.drain(..end).take(pos).collect();
            let line = String::from_utf8_lossy(&line).into_owned();
            self.line(&line, &mut out);
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&str]) -> Vec<(String, String)> {
        let mut p = SseParser::default();
        chunks
            .iter()
            .flat_map(|c| p.push(c.as_bytes()))
            .map(|e| (e.event, e.data))
            .collect()
    }

    #[test]
    fn parses_events() {
        let ev = |e: &str, d: &str| (e.to_owned(), d.to_owned());
        assert_eq!(events(&["data: {\"a\":1}\n\n"]), [ev("", "{\"a\":1}")]);
        assert_eq!(
            events(&["event: message\ndata: x\nid: 1\n\n"]),
            [ev("message", "x")]
        );
        assert_eq!(events(&["data: a\ndata: b\n\n"]), [ev("", "a\nb")]);
        assert_eq!(
            events(&[": keep-alive\n\n", "data:x\r\n\r\n"]),
            [ev("", "x")]
        );
        assert_eq!(
            events(&["da", "ta: split\r", "\n", "\r\n"]),
            [ev("", "split")]
        );
        assert_eq!(events(&["id: 7\nretry: 10\n\n"]), []);
        let mut p = SseParser::default();
        p.push(b"id: 7\nretry: 10\ndata: x\n\nid: 8\n\n");
        assert_eq!((p.last_event_id.as_deref(), p.retry), (Some("8"), Some(10)));
        assert_eq!(events(&["data: unterminated"]), []);
        let mut p = SseParser::default();
        p.push(b"retry: 1500\nretry: soon\n\n");
        assert_eq!(p.retry, Some(1500));
    }
}
