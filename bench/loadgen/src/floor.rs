//! The floor responder: answers `initialize`, `server/discover`, `tools/list` and
//! `tools/call add` with canned shapes (but a real addition), with no MCP machinery: no
//! registry, no schema validation, no per-session state. Whatever the load generator
//! measures against it is the cost of the client, the pipes or sockets, and JSON.
//!
//! stdio: blocking reads on one thread, writes buffered and flushed only when no more
//! input is waiting. HTTP: a hand-written HTTP/1.1 keep-alive server on tokio.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, BufWriter, Write};

use anyhow::{Context, Result, anyhow};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http1;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Args>,
    #[serde(rename = "protocolVersion", borrow, default)]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", default)]
    meta: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Args {
    a: f64,
    b: f64,
}

/// Canned answers, rendered once.
pub struct Floor {
    tools_legacy: String,
    tools_modern: String,
}

const ADD_TOOL: &str = r#"{"name":"add","description":"Add two numbers and return their sum.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},"outputSchema":{"type":"object","properties":{"result":{"type":"number"}},"required":["result"]}}"#;

impl Floor {
    /// Prepares the answers, with `extra` synthetic tools in `tools/list`.
    pub fn new(extra: usize) -> Self {
        let mut tools = String::from(ADD_TOOL);
        for i in 0..extra {
            tools.push(',');
            tools.push_str(&ADD_TOOL.replacen(
                r#""name":"add","description":"Add two numbers and return their sum.""#,
                &format!(r#""name":"bench_tool_{i:04}","description":"Synthetic benchmark tool number {i}: adds two numbers.""#),
                1,
            ));
        }
        Self {
            tools_legacy: format!(r#"{{"tools":[{tools}]}}"#),
            tools_modern: format!(
                r#"{{"resultType":"complete","tools":[{tools}],"ttlMs":0,"cacheScope":"public"}}"#
            ),
        }
    }

    /// Answers one message into `out` (nothing for notifications). Returns whether
    /// anything was written.
    pub fn answer(&self, line: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let req: Request<'_> = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(_) => {
                out.extend_from_slice(
                    br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
                );
                return Ok(true);
            }
        };
        let Some(id) = req.id else { return Ok(false) };
        let modern = req.params.as_ref().is_some_and(|p| p.meta.is_some());
        let head = |out: &mut Vec<u8>| {
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            out.extend_from_slice(id.get().as_bytes());
        };
        head(out);
        match req.method.as_ref() {
            "tools/call" => {
                let p = req.params.as_ref();
                match (p.and_then(|p| p.name.as_deref()), p.and_then(|p| p.arguments.as_ref())) {
                    (Some(name), Some(args)) if name == "add" || name.starts_with("bench_tool_") => {
                        let sum = args.a + args.b;
                        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"{\"result\":"#);
                        serde_json::to_writer(&mut *out, &sum)?;
                        out.extend_from_slice(br#"}"}],"structuredContent":{"result":"#);
                        serde_json::to_writer(&mut *out, &sum)?;
                        out.extend_from_slice(if modern {
                            br#"},"isError":false,"resultType":"complete"}}"#.as_slice()
                        } else {
                            br#"},"isError":false}}"#.as_slice()
                        });
                    }
                    _ => out.extend_from_slice(br#","error":{"code":-32602,"message":"Unknown tool or bad arguments"}}"#),
                }
            }
            "initialize" => {
                let v = req.params.as_ref().and_then(|p| p.protocol_version.as_deref()).unwrap_or("2025-11-25");
                let v = serde_json::to_string(v)?;
                let _ = write!(
                    out,
                    r#","result":{{"protocolVersion":{v},"capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"floor","version":"0.1.0"}}}}}}"#
                );
            }
            "server/discover" => out.extend_from_slice(
                br#","result":{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"0.1.0"},"ttlMs":0,"cacheScope":"public"}}"#,
            ),
            "tools/list" => {
                out.extend_from_slice(br#","result":"#);
                out.extend_from_slice(if modern { &self.tools_modern } else { &self.tools_legacy }.as_bytes());
                out.push(b'}');
            }
            "ping" => out.extend_from_slice(br#","result":{}}"#),
            _ => out.extend_from_slice(br#","error":{"code":-32601,"message":"Method not found"}}"#),
        }
        Ok(true)
    }
}

fn extra_tools() -> usize {
    std::env::var("BENCH_EXTRA_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Serves stdio until stdin closes.
pub fn serve_stdio() -> Result<()> {
    let floor = Floor::new(extra_tools());
    // As toolwright does: a 1 MiB stdout pipe, so a 420 KB tools/list page goes out in one
    // write. A failure (stdout not a pipe, a lower pipe-max-size) leaves the default.
    let _ = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), 1 << 20);
    let mut r = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut w = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4096);
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let msg = line.strip_suffix(b"\n").unwrap_or(&line);
        if msg.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.clear();
        if floor.answer(msg, &mut out)? {
            out.push(b'\n');
            w.write_all(&out)?;
        }
        if r.buffer().is_empty() {
            w.flush()?;
        }
    }
    w.flush()?;
    Ok(())
}

/// Serves Streamable HTTP (POST only, JSON answers) on `addr` until killed.
pub fn serve_http(addr: &str) -> Result<()> {
    let floor: &'static Floor = Box::leak(Box::new(Floor::new(extra_tools())));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        eprintln!("floor listening on http://{}/mcp", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                if let Err(e) = connection(floor, stream).await {
                    eprintln!("floor: connection error: {e:#}");
                }
            });
        }
    })
}

async fn connection(floor: &Floor, mut stream: tokio::net::TcpStream) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(4096);
    let mut resp = Vec::with_capacity(4096);
    loop {
        let head_end = loop {
            if let Some(p) = http1::find(&buf, b"\r\n\r\n") {
                break p;
            }
            if buf.capacity() - buf.len() < 4096 {
                buf.reserve(16 * 1024);
            }
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        let head = http1::parse_head(&buf[..head_end], false).map_err(|e| anyhow!(e))?;
        let len = head.content_length.unwrap_or(0);
        let start = head_end + 4;
        while buf.len() < start + len {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        out.clear();
        resp.clear();
        let answered = head.method == "POST" && floor.answer(&buf[start..start + len], &mut out)?;
        let is_init =
            answered && http1::find(&buf[start..start + len], br#""initialize""#).is_some();
        buf.drain(..start + len);
        if head.method != "POST" {
            resp.extend_from_slice(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
        } else if answered {
            let _ = write!(
                resp,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}\r\n",
                out.len(),
                if is_init {
                    "mcp-session-id: floor\r\n"
                } else {
                    ""
                }
            );
            resp.extend_from_slice(&out);
        } else {
            resp.extend_from_slice(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
        }
        stream.write_all(&resp).await?;
        if head.close {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> serde_json::Value {
        let mut out = Vec::new();
        assert!(Floor::new(2).answer(line.as_bytes(), &mut out).unwrap());
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn adds() {
        let v = answer(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3.5}}}"#,
        );
        assert_eq!(
            (
                v["id"].clone(),
                v["result"]["structuredContent"]["result"].clone()
            ),
            (7.into(), 5.5.into())
        );
        assert_eq!(v["result"]["content"][0]["text"], "{\"result\":5.5}");
    }

    #[test]
    fn modern_call_has_result_type() {
        let v = answer(
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1},"_meta":{}}}"#,
        );
        assert_eq!(
            (v["id"].clone(), v["result"]["resultType"].clone()),
            ("x".into(), "complete".into())
        );
    }

    #[test]
    fn initialize_echoes_version() {
        let v = answer(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    }

    #[test]
    fn lists_extra_tools() {
        let v = answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 3);
        assert_eq!(v["result"]["tools"][2]["name"], "bench_tool_0001");
    }

    #[test]
    fn unknown_tool_is_error() {
        let v = answer(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{"a":1,"b":1}}}"#,
        );
        assert_eq!(v["error"]["code"], -32602);
    }

    #[test]
    fn unknown_method_is_error() {
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":1,"method":"x/y"}"#)["error"]["code"],
            -32601
        );
    }

    #[test]
    fn notification_is_silent() {
        let mut out = Vec::new();
        assert!(
            !Floor::new(0)
                .answer(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                    &mut out
                )
                .unwrap()
        );
        assert!(out.is_empty());
    }

    #[test]
    fn garbage_is_parse_error() {
        assert_eq!(answer("{nope")["error"]["code"], -32700);
    }
}
