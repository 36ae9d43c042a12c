//! MCP's HTTP headers, and the modern era's rule that they mirror the body.
//!
//! A modern (2026-07-28) POST must repeat its protocol version, method and, for
//! `tools/call`, `resources/read` and `prompts/get`, the name or URI it targets in headers,
//! so that gateways can route without reading bodies; tools may ask for arguments to be
//! mirrored too (`x-mcp-header` in the input schema, sent as `Mcp-Param-<Name>`). Values
//! that are not plain visible ASCII travel as `=?base64?<UTF-8 in base64>?=`. Any mismatch,
//! or a missing header, is a -32020 error (HTTP 400).

use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use toolwright_jsonrpc::{ErrorObject, code};
use toolwright_protocol::headers::ParamHeaders;
use toolwright_protocol::meta;
use toolwright_protocol::params::CallToolParams;
use toolwright_protocol::{Method, ProtocolVersion};

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Session-Id` (legacy).
pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `Mcp-Method` (modern).
pub const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (modern).
pub const NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Last-Event-ID` (legacy resumption).
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The protocol version a request's header names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderVersion<'a> {
    /// No header.
    Absent,
    /// A version toolwright speaks.
    Known(ProtocolVersion),
    /// Anything else (as sent).
    Unknown(&'a str),
}

pub(crate) fn header_version(headers: &HeaderMap) -> HeaderVersion<'_> {
    match headers.get(PROTOCOL_VERSION) {
        None => HeaderVersion::Absent,
        Some(v) => match v.to_str() {
            Ok(s) => ProtocolVersion::parse(s.trim())
                .map_or(HeaderVersion::Unknown(s), HeaderVersion::Known),
            Err(_) => HeaderVersion::Unknown("<not visible ASCII>"),
        },
    }
}

/// Decodes a header value, undoing the `=?base64?…?=` form. `None` if malformed.
pub(crate) fn decode(v: &HeaderValue) -> Option<Cow<'_, str>> {
    toolwright_protocol::headers::decode_value(v.to_str().ok()?)
}

/// The parts of `params` the transport looks at, read without building a JSON tree.
#[derive(Debug, Default)]
pub(crate) struct Peek<'a> {
    /// `params._meta` is an object.
    pub has_meta: bool,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, when a string.
    pub version: Option<Cow<'a, str>>,
    /// `params._meta["io.modelcontextprotocol/clientCapabilities"]` is an object.
    pub has_capabilities: bool,
    /// `params.name`, when a string.
    pub name: Option<Cow<'a, str>>,
    /// `params.uri`, when a string.
    pub uri: Option<Cow<'a, str>>,
    /// `params.taskId`, when a string (the Tasks extension's methods).
    pub task_id: Option<Cow<'a, str>>,
    /// `params.arguments`.
    pub arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawParams<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    capabilities: Option<&'a RawValue>,
}

fn is_object(v: &RawValue) -> bool {
    v.get().trim_start().starts_with('{')
}

fn as_str(v: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Cow<'_, str>>(v.get()).ok()
}

impl<'a> Peek<'a> {
    /// The same view of a `tools/call` whose params are already read.
    pub(crate) fn of_call(p: &'a CallToolParams) -> Peek<'a> {
        let meta = p.meta.as_deref();
        Peek {
            has_meta: meta.is_some(),
            version: meta
                .and_then(|m| m.protocol_version.as_deref())
                .map(Cow::Borrowed),
            has_capabilities: meta.is_some_and(|m| m.client_capabilities.is_some()),
            name: Some(Cow::Borrowed(&p.name)),
            uri: None,
            task_id: None,
            arguments: None,
        }
    }
}

/// Reads what the transport needs from `params`; anything malformed reads as absent (the
/// dispatcher reports it properly).
pub(crate) fn peek(params: Option<&RawValue>) -> Peek<'_> {
    let Some(raw) = params else {
        return Peek::default();
    };
    let Ok(p) = serde_json::from_str::<RawParams<'_>>(raw.get()) else {
        return Peek::default();
    };
    let mut out = Peek {
        name: p.name.and_then(as_str),
        uri: p.uri.and_then(as_str),
        task_id: p.task_id.and_then(as_str),
        arguments: p.arguments,
        ..Peek::default()
    };
    if let Some(m) = p.meta.filter(|m| is_object(m)) {
        out.has_meta = true;
        if let Ok(m) = serde_json::from_str::<RawMeta<'_>>(m.get()) {
            out.version = m.version.and_then(as_str);
            out.has_capabilities = m.capabilities.is_some_and(is_object);
        }
    }
    out
}

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(code::HEADER_MISMATCH, message)
}

/// The header a method must mirror in `Mcp-Name`, with the `params` member it mirrors.
fn named_member(method: &str) -> Option<&'static str> {
    match Method::parse(method) {
        Method::ToolsCall | Method::PromptsGet => Some("name"),
        Method::ResourcesRead => Some("uri"),
        // The Tasks extension: `Mcp-Name` mirrors the task's id.
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
        _ => None,
    }
}

/// Checks a modern message's headers against its body. `request` is false for
/// notifications. Returns the error to answer with (status 400).
pub(crate) fn check_modern(
    headers: &HeaderMap,
    method: &str,
    p: &Peek<'_>,
    request: bool,
) -> Result<(), ErrorObject> {
    let Some(header) = headers.get(PROTOCOL_VERSION) else {
        return Err(mismatch("missing MCP-Protocol-Version header".into()));
    };
    let header = header.to_str().unwrap_or("").trim();
    match &p.version {
        Some(v) if v != header => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {header:?} does not match params._meta version {v:?}"
            )));
        }
        Some(_) => {}
        None if request => {
            return Err(ErrorObject::invalid_params(format!(
                "params._meta with \"{}\" is required (2026-07-28)",
                meta::PROTOCOL_VERSION
            )));
        }
        None => {}
    }
    if request && !p.has_capabilities {
        return Err(ErrorObject::invalid_params(format!(
            "params._meta must include \"{}\"",
            meta::CLIENT_CAPABILITIES
        )));
    }
    match headers.get(METHOD).map(decode) {
        None => return Err(mismatch("missing Mcp-Method header".into())),
        Some(Some(m)) if m == method => {}
        Some(m) => {
            return Err(mismatch(format!(
                "Mcp-Method header {:?} does not match method {method:?}",
                m.unwrap_or_default()
            )));
        }
    }
    let Some(member) = named_member(method) else {
        return Ok(());
    };
    let body = match member {
        "name" => &p.name,
        "uri" => &p.uri,
        _ => &p.task_id,
    };
    match (headers.get(NAME).map(decode), body) {
        (None, _) => {
            return Err(mismatch(format!(
                "missing Mcp-Name header (params.{member} of {method})"
            )));
        }
        (Some(Some(h)), Some(b)) if h == *b => {}
        (Some(h), b) => {
            return Err(mismatch(format!(
                "Mcp-Name header {:?} does not match params.{member} {:?}",
                h.unwrap_or_default(),
                b.as_deref().unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// Visits every property reachable from the root through `properties` only, with the
/// argument value at that place.
/// The `Mcp-Param-*` headers of a modern `tools/call`: each argument the tool mirrors
/// (`params`, compiled at registration) must come with its header, matching it, and no
/// header may come for an argument that is absent.
pub(crate) fn check_param_headers(
    headers: &HeaderMap,
    params: &ParamHeaders,
    args: Option<&Value>,
) -> Result<(), ErrorObject> {
    let null = Value::Null;
    let args = args.unwrap_or(&null);
    for p in params {
        let name = p.name();
        let Ok(header) = HeaderName::from_bytes(p.header().as_bytes()) else {
            continue;
        };
        match (headers.get(&header).map(decode), p.argument(args)) {
            (None, None) => {}
            (None, Some(_)) => return Err(mismatch(format!("missing Mcp-Param-{name} header"))),
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header sent for an argument that is absent"
                )));
            }
            (Some(Some(h)), Some(v)) if p.matches(&h, v) => {}
            (Some(_), Some(v)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header does not match the argument ({v})"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn meta() -> Value {
        json!({meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {}})
    }

    fn code_of(r: Result<(), ErrorObject>) -> Option<i64> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn decoding() {
        let check = |v: &str, want: Option<&str>| {
            assert_eq!(
                decode(&HeaderValue::from_str(v).unwrap()).as_deref(),
                want,
                "{v}"
            );
        };
        check("add", Some("add"));
        check("=?base64?w6ljaG8=?=", Some("écho"));
        check("=?base64?IGxlYWRpbmc=?=", Some(" leading"));
        check("=?base64?***?=", None);
        check("=?base64?/w==?=", None);
    }

    #[test]
    fn peeking() {
        let p = raw(json!({"name": "add", "arguments": {"a": 1}, "_meta": meta()}));
        let pk = peek(Some(&p));
        assert!(pk.has_meta && pk.has_capabilities);
        assert_eq!(pk.version.as_deref(), Some("2026-07-28"));
        assert_eq!(pk.name.as_deref(), Some("add"));
        let legacy = raw(json!({"name": "add"}));
        assert!(!peek(Some(&legacy)).has_meta);
        let odd = raw(json!({"_meta": 5, "name": 3}));
        let pk = peek(Some(&odd));
        assert!(!pk.has_meta && pk.version.is_none());
        assert!(peek(None).version.is_none());
    }

    #[test]
    fn header_versions() {
        assert_eq!(header_version(&HeaderMap::new()), HeaderVersion::Absent);
        let h = headers(&[("mcp-protocol-version", "2025-06-18")]);
        assert_eq!(
            header_version(&h),
            HeaderVersion::Known(ProtocolVersion::V2025_06_18)
        );
        let h = headers(&[("mcp-protocol-version", "1999-01-01")]);
        assert_eq!(header_version(&h), HeaderVersion::Unknown("1999-01-01"));
    }

    #[test]
    fn modern_rules() {
        let body = raw(json!({"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta()}));
        let p = peek(Some(&body));
        let full = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
        ];
        let check = |pairs: &[(&str, &str)], want: Option<i64>| {
            assert_eq!(
                code_of(check_modern(&headers(pairs), "tools/call", &p, true)),
                want,
                "{pairs:?}"
            );
        };
        check(&full, None);
        check(&full[1..], Some(-32020));
        check(&[full[0], full[2]], Some(-32020));
        check(&full[..2], Some(-32020));
        check(&[full[0], full[1], ("mcp-name", "ADD")], Some(-32020));
        check(
            &[("mcp-protocol-version", "2025-11-25"), full[1], full[2]],
            Some(-32020),
        );
        check(
            &[full[0], ("mcp-method", "tools/list"), full[2]],
            Some(-32020),
        );
        check(&[full[0], full[1], ("mcp-name", "=?base64?YWRk?=")], None);
    }

    #[test]
    fn missing_meta_is_invalid_params() {
        let body = raw(json!({}));
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]);
        let r = check_modern(&h, "tools/list", &peek(Some(&body)), true);
        assert_eq!(code_of(r), Some(-32602));
        let no_caps = raw(json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}));
        let r = check_modern(&h, "tools/list", &peek(Some(&no_caps)), true);
        assert_eq!(code_of(r), Some(-32602));
        // Notifications carry no _meta.
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "notifications/x"),
        ]);
        assert_eq!(
            code_of(check_modern(&h, "notifications/x", &peek(None), false)),
            None
        );
    }

    #[test]
    fn param_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "inner": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}}
        }});
        let check = |args: Value, pairs: &[(&str, &str)], ok: bool| {
            let params = ParamHeaders::compile(&schema).unwrap();
            let r = check_param_headers(&headers(pairs), &params, Some(&args));
            assert_eq!(r.is_ok(), ok, "{args:?} {pairs:?}");
        };
        check(json!({}), &[], true);
        check(json!({"region": "eu"}), &[("mcp-param-region", "eu")], true);
        check(json!({"region": "eu"}), &[], false);
        check(
            json!({"region": "eu"}),
            &[("mcp-param-region", "us")],
            false,
        );
        check(json!({}), &[("mcp-param-region", "us")], false);
        check(json!({"count": 7}), &[("mcp-param-count", "007")], true);
        check(json!({"count": 7}), &[("mcp-param-count", "8")], false);
        check(json!({"dry": true}), &[("mcp-param-dry", "true")], true);
        check(json!({"dry": false}), &[("mcp-param-dry", "true")], false);
        check(
            json!({"inner": {"tenant": "ü"}}),
            &[("mcp-param-tenant", "=?base64?w7w=?=")],
            true,
        );
    }
}
