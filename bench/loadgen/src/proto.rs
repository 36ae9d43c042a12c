//! Raw JSON-RPC messages of both MCP eras, written by hand (no SDK), and the minimal
//! response parsing the measurements need.

use std::borrow::Cow;
use std::io::Write;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The modern protocol version: stateless, `_meta` on every request, no `initialize`.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Which era of the protocol the client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// `initialize` + `notifications/initialized`, sessions over HTTP.
    Legacy,
    /// 2026-07-28: per-request `_meta`, no handshake.
    Modern,
}

impl Era {
    /// Parses `legacy` or `modern`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "legacy" => Ok(Self::Legacy),
            "modern" => Ok(Self::Modern),
            other => bail!("unknown era {other:?} (legacy or modern)"),
        }
    }
}

/// The request `_meta` of the modern era (spliced into `params`).
const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"toolwright-loadgen","version":"0.1.0"}}"#;

/// Builds the request lines of one era.
#[derive(Clone, Debug)]
pub struct Proto {
    /// The era spoken.
    pub era: Era,
    /// Version offered in `initialize` (legacy era).
    pub legacy_version: String,
}

impl Proto {
    /// The protocol version in force (for the `MCP-Protocol-Version` header).
    pub fn version(&self) -> &str {
        match self.era {
            Era::Legacy => &self.legacy_version,
            Era::Modern => MODERN_VERSION,
        }
    }

    /// The first request: `initialize` (legacy) or `server/discover` (modern).
    pub fn hello(&self, id: u64) -> String {
        match self.era {
            Era::Legacy => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"toolwright-loadgen","version":"0.1.0"}}}}}}"#,
                self.legacy_version
            ),
            Era::Modern => {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover","params":{{{MODERN_META}}}}}"#
                )
            }
        }
    }

    /// Method name of [`Proto::hello`].
    pub fn hello_method(&self) -> &'static str {
        match self.era {
            Era::Legacy => "initialize",
            Era::Modern => "server/discover",
        }
    }

    /// `notifications/initialized`, sent after the `initialize` response (legacy only).
    pub fn initialized(&self) -> Option<&'static str> {
        match self.era {
            Era::Legacy => Some(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Era::Modern => None,
        }
    }

    /// Appends a `tools/call` of `add` (without a newline) to `out`.
    pub fn call_add(&self, out: &mut Vec<u8>, id: u64, a: i64, b: i64) {
        self.call_add_as(out, id, "add", a, b);
    }

    /// Appends a `tools/call` of the `add` tool exposed under `name` (a gateway's
    /// namespaced `up__add`), without a newline. `name` needs no escaping (checked when
    /// the work was built).
    pub fn call_add_as(&self, out: &mut Vec<u8>, id: u64, name: &str, a: i64, b: i64) {
        let meta = match self.era {
            Era::Legacy => "",
            Era::Modern => MODERN_META,
        };
        let comma = if meta.is_empty() { "" } else { "," };
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"a":{a},"b":{b}}}{comma}{meta}}}}}"#
        );
    }

    /// Appends a `tools/call` of tool `name` with `arguments` (a JSON object, written as
    /// given) to `out`, without a newline.
    pub fn call_named(&self, out: &mut Vec<u8>, id: u64, name: &str, arguments: &str) {
        let meta = match self.era {
            Era::Legacy => "",
            Era::Modern => MODERN_META,
        };
        let comma = if meta.is_empty() { "" } else { "," };
        // The name was checked to need no escaping when the work was built.
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}{comma}{meta}}}}}"#
        );
    }

    /// A `tools/list` request, optionally for the page after `cursor`.
    pub fn tools_list(&self, id: u64, cursor: Option<&str>) -> String {
        let mut params = Vec::new();
        if let Some(c) = cursor {
            params.push(format!(
                r#""cursor":{}"#,
                serde_json::to_string(c).unwrap_or_default()
            ));
        }
        if self.era == Era::Modern {
            params.push(MODERN_META.to_owned());
        }
        if params.is_empty() {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#)
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{}}}}}"#,
                params.join(",")
            )
        }
    }
}

/// The operands of call number `n`, and their sum, so that any response can be checked
/// from its id alone.
pub fn operands(n: u64) -> (i64, i64) {
    ((n % 100_000) as i64, 7)
}

/// The envelope of one message from the server, its `result` read as `R` in the same pass.
#[derive(Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>"))]
struct Envelope<'a, R> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    result: Option<R>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// What a line from the server turned out to be.
pub enum Incoming<R> {
    /// A response to request `id`, with its `result`.
    Response { id: u64, result: R },
    /// A message that is not a response (a notification or a request): skipped.
    Other,
}

impl<R> Incoming<R> {
    /// Applies `f` to a response's id and result.
    pub fn try_map<U>(self, f: impl FnOnce(u64, R) -> Result<U>) -> Result<Incoming<U>> {
        Ok(match self {
            Incoming::Response { id, result } => Incoming::Response {
                id,
                result: f(id, result)?,
            },
            Incoming::Other => Incoming::Other,
        })
    }
}

/// Parses one message, keeping its `result` raw; a JSON-RPC error response is an error.
pub fn parse_incoming(bytes: &[u8]) -> Result<Incoming<&RawValue>> {
    parse_incoming_as(bytes)
}

/// Parses one message and its `result` as `R` in a single pass over the bytes (a
/// 400 KB tools/list page is not scanned twice); a JSON-RPC error response is an error.
pub fn parse_incoming_as<'a, R: Deserialize<'a>>(bytes: &'a [u8]) -> Result<Incoming<R>> {
    let env: Envelope<'a, R> = serde_json::from_slice(bytes).with_context(|| {
        format!(
            "server sent a line that is not JSON-RPC: {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        )
    })?;
    if env.method.is_some() {
        return Ok(Incoming::Other);
    }
    let Some(id) = env.id else {
        if let Some(err) = env.error {
            bail!("server answered with an error without id: {}", err.get());
        }
        return Ok(Incoming::Other);
    };
    let id: u64 = id
        .get()
        .trim_matches('"')
        .parse()
        .map_err(|_| anyhow!("response id {} is not one of ours", id.get()))?;
    if let Some(err) = env.error {
        bail!("request {id} failed: {}", err.get());
    }
    let result = env
        .result
        .ok_or_else(|| anyhow!("response {id} has neither result nor error"))?;
    Ok(Incoming::Response { id, result })
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(rename = "structuredContent", default)]
    structured: Option<SumObject>,
    #[serde(borrow, default)]
    content: Vec<ContentBlock<'a>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct SumObject {
    result: f64,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// Checks that a `tools/call add` result carries the sum of call `n`'s operands, in
/// `structuredContent.result` or else in the text block (a number or `{"result":n}`).
pub fn check_add(result: &RawValue, n: u64) -> Result<()> {
    let (a, b) = operands(n);
    let want = (a + b) as f64;
    let r: CallResult<'_> = serde_json::from_str(result.get())
        .with_context(|| format!("bad tools/call result: {}", result.get()))?;
    if r.is_error {
        bail!("tools/call add returned isError: {}", result.get());
    }
    let got = match r.structured {
        Some(s) => s.result,
        None => {
            let text = r
                .content
                .iter()
                .find_map(|c| c.text.as_deref())
                .ok_or_else(|| anyhow!("tools/call add result has no sum: {}", result.get()))?;
            match serde_json::from_str::<SumObject>(text) {
                Ok(s) => s.result,
                Err(_) => text
                    .trim()
                    .parse()
                    .map_err(|_| anyhow!("tools/call add text is not a sum: {text:?}"))?,
            }
        }
    };
    if (got - want).abs() > 1e-9 {
        bail!("add({a}, {b}) answered {got}, expected {want}");
    }
    Ok(())
}

/// What each measured call does: the `add` tool (its sum checked), or a named tool with
/// fixed arguments (a declared tool, a peer's command tool), checked for `isError` and,
/// when asked, for a piece of text in its result.
#[derive(Clone, Debug, Default)]
pub enum Work {
    /// `tools/call add` with operands from the id; the sum is checked.
    #[default]
    Add,
    /// The same `add` call under another name (a gateway's `up__add`); the sum is checked.
    AddAs(String),
    /// `tools/call NAME` with the same arguments every time.
    Tool {
        /// Tool name (plain characters only: it is written without escaping).
        name: String,
        /// The arguments, as a JSON object's text (re-serialised compactly).
        arguments: String,
        /// Text the result must contain: in a text block, or in `structuredContent`
        /// serialised as JSON.
        expect: Option<String>,
    },
}

impl Work {
    /// A named tool call; `arguments` must be a JSON object.
    pub fn tool(name: &str, arguments: &str, expect: Option<&str>) -> Result<Self> {
        check_name(name)?;
        let v: serde_json::Value = serde_json::from_str(arguments)
            .with_context(|| format!("--arguments is not JSON: {arguments:?}"))?;
        if !v.is_object() {
            bail!("--arguments must be a JSON object, got {arguments:?}");
        }
        Ok(Self::Tool {
            name: name.to_owned(),
            arguments: v.to_string(),
            expect: expect.map(str::to_owned),
        })
    }

    /// `add` exposed under `name` (checked like [`Work::tool`]'s name).
    pub fn add_as(name: &str) -> Result<Self> {
        check_name(name)?;
        Ok(Self::AddAs(name.to_owned()))
    }

    /// The tool name each call sends.
    pub fn tool_name(&self) -> &str {
        match self {
            Work::Add => "add",
            Work::AddAs(name) | Work::Tool { name, .. } => name,
        }
    }

    /// Appends call number `id` (without a newline) to `out`.
    pub fn request(&self, proto: &Proto, out: &mut Vec<u8>, id: u64) {
        match self {
            Work::Add => {
                let (a, b) = operands(id);
                proto.call_add(out, id, a, b);
            }
            Work::AddAs(name) => {
                let (a, b) = operands(id);
                proto.call_add_as(out, id, name, a, b);
            }
            Work::Tool {
                name, arguments, ..
            } => proto.call_named(out, id, name, arguments),
        }
    }

    /// Checks the result of call number `id`.
    pub fn check(&self, result: &RawValue, id: u64) -> Result<()> {
        match self {
            Work::Add | Work::AddAs(_) => check_add(result, id),
            Work::Tool { name, expect, .. } => check_tool(result, name, expect.as_deref()),
        }
    }
}

/// A tool name is written into requests without escaping: plain characters only.
fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        bail!("tool name {name:?}: only plain characters are allowed");
    }
    Ok(())
}

#[derive(Deserialize)]
struct AnyResult<'a> {
    #[serde(rename = "structuredContent", borrow, default)]
    structured: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Vec<ContentBlock<'a>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// Checks a named tool's result: not `isError`, and `expect` (if any) found in a text
/// block or in `structuredContent`.
pub fn check_tool(result: &RawValue, name: &str, expect: Option<&str>) -> Result<()> {
    let r: AnyResult<'_> = serde_json::from_str(result.get())
        .with_context(|| format!("bad tools/call result: {}", result.get()))?;
    let brief = || result.get().chars().take(300).collect::<String>();
    if r.is_error {
        bail!("tools/call {name} returned isError: {}", brief());
    }
    let Some(want) = expect else {
        return Ok(());
    };
    let in_text = r
        .content
        .iter()
        .any(|c| c.text.as_deref().is_some_and(|t| t.contains(want)));
    let in_structured = r.structured.is_some_and(|s| {
        serde_json::from_str::<serde_json::Value>(s.get())
            .is_ok_and(|v| v.to_string().contains(want))
    });
    if !in_text && !in_structured {
        bail!("tools/call {name}: {want:?} not in the result: {}", brief());
    }
    Ok(())
}

/// One `tools/list` page: its tools (counted, not kept) and the next cursor.
#[derive(Deserialize)]
pub struct ToolsPage {
    tools: Vec<IgnoredAny>,
    #[serde(rename = "nextCursor", default)]
    next_cursor: Option<String>,
}

impl ToolsPage {
    /// The number of tools on the page and the cursor of the next one.
    pub fn into_parts(self) -> (usize, Option<String>) {
        (self.tools.len(), self.next_cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy() -> Proto {
        Proto {
            era: Era::Legacy,
            legacy_version: "2025-11-25".into(),
        }
    }

    fn modern() -> Proto {
        Proto {
            era: Era::Modern,
            legacy_version: "2025-11-25".into(),
        }
    }

    fn call(p: &Proto, id: u64) -> serde_json::Value {
        let mut v = Vec::new();
        let (a, b) = operands(id);
        p.call_add(&mut v, id, a, b);
        serde_json::from_slice(&v).unwrap()
    }

    #[test]
    fn legacy_call_has_no_meta() {
        assert!(call(&legacy(), 3)["params"].get("_meta").is_none());
    }

    #[test]
    fn modern_call_has_meta() {
        let v = call(&modern(), 3);
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
        assert_eq!(
            v["params"]["arguments"],
            serde_json::json!({"a": 3, "b": 7})
        );
    }

    #[test]
    fn hello_is_json_in_both_eras() {
        for p in [legacy(), modern()] {
            let v: serde_json::Value = serde_json::from_str(&p.hello(1)).unwrap();
            assert_eq!(v["method"], p.hello_method());
        }
    }

    #[test]
    fn tools_list_with_cursor_is_json() {
        for p in [legacy(), modern()] {
            let v: serde_json::Value =
                serde_json::from_str(&p.tools_list(9, Some("a\"b"))).unwrap();
            assert_eq!(v["params"]["cursor"], "a\"b");
        }
    }

    #[test]
    fn structured_sum_is_checked() {
        let ok =
            RawValue::from_string(r#"{"structuredContent":{"result":10},"content":[]}"#.into())
                .unwrap();
        assert!(check_add(&ok, 3).is_ok());
        let bad =
            RawValue::from_string(r#"{"structuredContent":{"result":11},"content":[]}"#.into())
                .unwrap();
        assert!(check_add(&bad, 3).is_err());
    }

    #[test]
    fn text_sum_is_checked() {
        let plain =
            RawValue::from_string(r#"{"content":[{"type":"text","text":"10.0"}]}"#.into()).unwrap();
        assert!(check_add(&plain, 3).is_ok());
        let obj = RawValue::from_string(
            r#"{"content":[{"type":"text","text":"{\"result\":10}"}]}"#.into(),
        )
        .unwrap();
        assert!(check_add(&obj, 3).is_ok());
    }

    #[test]
    fn is_error_result_fails() {
        let r =
            RawValue::from_string(r#"{"structuredContent":{"result":10},"isError":true}"#.into())
                .unwrap();
        assert!(check_add(&r, 3).is_err());
    }

    #[test]
    fn error_response_fails() {
        assert!(
            parse_incoming(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"x"}}"#)
                .is_err()
        );
    }

    #[test]
    fn notification_is_skipped() {
        let m =
            parse_incoming(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#)
                .unwrap();
        assert!(matches!(m, Incoming::Other));
    }

    #[test]
    fn string_id_is_accepted() {
        let m = parse_incoming(br#"{"jsonrpc":"2.0","id":"12","result":{}}"#).unwrap();
        assert!(matches!(m, Incoming::Response { id: 12, .. }));
    }

    #[test]
    fn tools_page_is_counted() {
        let line = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"x"}}"#;
        let Incoming::Response { id, result } = parse_incoming_as::<ToolsPage>(line).unwrap()
        else {
            panic!("not a response");
        };
        assert_eq!((id, result.into_parts()), (3, (2, Some("x".into()))));
    }

    #[test]
    fn named_call_is_json_in_both_eras() {
        let w = Work::tool("run", r#"{ "command": ["true"] }"#, None).unwrap();
        for p in [legacy(), modern()] {
            let mut v = Vec::new();
            w.request(&p, &mut v, 5);
            let v: serde_json::Value = serde_json::from_slice(&v).unwrap();
            assert_eq!(
                (
                    &v["params"]["name"],
                    &v["params"]["arguments"]["command"][0]
                ),
                (&serde_json::json!("run"), &serde_json::json!("true"))
            );
        }
    }

    #[test]
    fn named_work_refuses_bad_input() {
        assert!(Work::tool("a\"b", "{}", None).is_err());
        assert!(Work::tool("a", "[1]", None).is_err());
        assert!(Work::tool("a", "{", None).is_err());
    }

    #[test]
    fn named_result_is_checked() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let empty = raw(r#"{"content":[]}"#);
        assert!(check_tool(&empty, "t", None).is_ok());
        assert!(check_tool(&empty, "t", Some("ok")).is_err());
        let failed = raw(r#"{"content":[],"isError":true}"#);
        assert!(check_tool(&failed, "t", None).is_err());
        let text = raw(r#"{"content":[{"type":"text","text":"{\"ok\":true}"}]}"#);
        assert!(check_tool(&text, "t", Some(r#""ok":true"#)).is_ok());
        let structured = raw(r#"{"content":[],"structuredContent":{"ok": true}}"#);
        assert!(check_tool(&structured, "t", Some(r#""ok":true"#)).is_ok());
    }

    #[test]
    fn tools_page_error_fails() {
        let line = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#;
        assert!(parse_incoming_as::<ToolsPage>(line).is_err());
    }
}
