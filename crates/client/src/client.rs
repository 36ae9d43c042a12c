//! [`Client`]: connect to a server over stdio or HTTP, detect its era, list its tools and
//! call them.

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};
use toolwright_jsonrpc::{ErrorObject, RequestId, Response, code};
use toolwright_protocol::headers::encode_value;
use toolwright_protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, SERVER_INFO};
use toolwright_protocol::{
    CallToolResult, Implementation, ProtocolVersion, ServerCapabilities, Tool,
};

use crate::ClientError;
use crate::envelope;
use crate::http::{Answer, Endpoint, Reply, exchange};
use crate::stdio::StdioTransport;

/// The most pages of `tools/list` followed before giving up on a server.
const MAX_PAGES: usize = 10_000;

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command to start; the server speaks on its stdin and stdout.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint (`http://…`).
    Http {
        /// The URL.
        url: String,
    },
}

impl Target {
    /// A stdio target from a command line (program first).
    ///
    /// # Panics
    ///
    /// When `argv` is empty.
    pub fn command<S: AsRef<str>>(argv: &[S]) -> Target {
        let (program, args) = argv.split_first().expect("a command has a program");
        Target::Stdio {
            program: program.as_ref().to_owned(),
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
        }
    }

    /// The target as a person would write it.
    pub fn describe(&self) -> String {
        match self {
            Target::Stdio { program, args } => std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Target::Http { url } => url.clone(),
        }
    }
}

/// The two protocol eras.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 and later: stateless, `_meta` on every request.
    Modern,
    /// Up to 2025-11-25: the `initialize` handshake (and sessions over HTTP).
    Legacy,
}

impl Era {
    /// `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// Which era to speak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EraChoice {
    /// Detect it: probe with a modern request, fall back to `initialize`.
    #[default]
    Auto,
    /// Modern only.
    Modern,
    /// Legacy only (`initialize` straight away).
    Legacy,
}

/// How to connect.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Which era to speak.
    pub era: EraChoice,
    /// How long to wait for any one answer.
    pub request_timeout: Duration,
    /// How long to wait for the answer to the era probe before assuming a legacy server.
    pub probe_timeout: Duration,
    /// Who this client says it is.
    pub client_info: Implementation,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            era: EraChoice::Auto,
            request_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(5),
            client_info: Implementation::new("toolwright", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// The outcome of `tools/call`: the result as sent, and parsed.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The `result` object exactly as the server sent it.
    pub raw: Value,
    /// The same, parsed.
    pub result: CallToolResult,
}

enum Transport {
    Stdio(StdioTransport),
    Http {
        endpoint: Endpoint,
        session_id: Option<String>,
    },
}

/// A connection to one MCP server, in whichever era it speaks.
pub struct Client {
    transport: Transport,
    target: Target,
    era: Era,
    version: ProtocolVersion,
    server_info: Option<Implementation>,
    capabilities: Option<ServerCapabilities>,
    next_id: i64,
    options: ConnectOptions,
}

/// Whether an error to the modern probe shows a modern server: a version it does not
/// support, a missing capability, a header mismatch, or invalid params that name `_meta`.
fn is_modern_error(code: i64, message: &str, data: Option<&Value>) -> bool {
    match code {
        code::UNSUPPORTED_PROTOCOL_VERSION
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::HEADER_MISMATCH => true,
        code::INVALID_PARAMS => {
            message.contains("_meta") || data.is_some_and(|d| d.to_string().contains("_meta"))
        }
        _ => false,
    }
}

impl Client {
    /// Connects, detecting the server's era unless `options.era` fixes it.
    ///
    /// # Errors
    ///
    /// When the server cannot be started or reached, or shares no version with this client.
    pub async fn connect(target: Target, options: ConnectOptions) -> Result<Client, ClientError> {
        let transport = open(&target)?;
        let mut client = Client {
            transport,
            target,
            era: Era::Modern,
            version: ProtocolVersion::LATEST,
            server_info: None,
            capabilities: None,
            next_id: 0,
            options,
        };
        match client.options.era {
            EraChoice::Modern => client.discover(client.options.request_timeout).await?,
            EraChoice::Legacy => client.initialize().await?,
            EraChoice::Auto => client.detect().await?,
        }
        Ok(client)
    }

    async fn detect(&mut self) -> Result<(), ClientError> {
        let probe = self.discover(self.options.probe_timeout).await;
        match probe {
            Ok(()) => return Ok(()),
            Err(ClientError::Rpc {
                code,
                message,
                data,
                ..
            }) if is_modern_error(code, &message, data.as_deref()) => {
                if code != code::UNSUPPORTED_PROTOCOL_VERSION {
                    return Ok(()); // modern; later requests will say what is missing
                }
                // A modern server that does not speak our modern version: a legacy one it
                // lists will do.
                let supported: Vec<String> = data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                if !supported
                    .iter()
                    .filter_map(|v| ProtocolVersion::parse(v))
                    .any(|v| !v.is_modern())
                {
                    return Err(ClientError::NoCommonVersion { supported });
                }
            }
            Err(
                ClientError::Rpc { .. } | ClientError::Timeout { .. } | ClientError::Http { .. },
            ) => {}
            Err(ClientError::Closed { .. }) if matches!(self.transport, Transport::Stdio(_)) => {
                // The server gave up on an unknown first message: start it again, legacy.
                let old = std::mem::replace(&mut self.transport, open(&self.target)?);
                if let Transport::Stdio(s) = old {
                    s.close(Duration::from_millis(100)).await;
                }
            }
            Err(e) => return Err(e),
        }
        self.initialize().await
    }

    /// `server/discover`: the modern era's (optional) first request.
    async fn discover(&mut self, timeout: Duration) -> Result<(), ClientError> {
        self.era = Era::Modern;
        self.version = ProtocolVersion::LATEST;
        let result = self
            .rpc("server/discover", json!({}), None, &[], timeout)
            .await?;
        self.server_info = result
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO))
            .and_then(|i| serde_json::from_value(i.clone()).ok());
        self.capabilities = result
            .get("capabilities")
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        Ok(())
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn initialize(&mut self) -> Result<(), ClientError> {
        self.era = Era::Legacy;
        self.version = ProtocolVersion::LATEST_LEGACY;
        if let Transport::Http { session_id, .. } = &mut self.transport {
            *session_id = None;
        }
        let params = json!({
            "protocolVersion": ProtocolVersion::LATEST_LEGACY.as_str(),
            "capabilities": {},
            "clientInfo": self.options.client_info,
        });
        let timeout = self.options.request_timeout;
        let result = self.rpc("initialize", params, None, &[], timeout).await?;
        let offered = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match ProtocolVersion::parse(&offered) {
            Some(v) if !v.is_modern() => self.version = v,
            _ => {
                return Err(ClientError::NoCommonVersion {
                    supported: vec![offered],
                });
            }
        }
        self.server_info = result
            .get("serverInfo")
            .and_then(|i| serde_json::from_value(i.clone()).ok());
        self.capabilities = result
            .get("capabilities")
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        self.notify("notifications/initialized", json!({})).await
    }

    /// The era the server speaks.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// Who the server says it is (unverified).
    pub fn server_info(&self) -> Option<&Implementation> {
        self.server_info.as_ref()
    }

    /// What the server says it can do.
    pub fn capabilities(&self) -> Option<&ServerCapabilities> {
        self.capabilities.as_ref()
    }

    /// The target this client is connected to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Every tool, following `nextCursor` to the last page, exactly as sent.
    ///
    /// # Errors
    ///
    /// When a request fails or a page is not a `tools/list` result.
    pub async fn list_tools_raw(&mut self) -> Result<Vec<Value>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let timeout = self.options.request_timeout;
            let result = self.rpc("tools/list", params, None, &[], timeout).await?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Malformed {
                    what: "tools/list result".into(),
                    detail: "it has no \"tools\" array".into(),
                })?;
            tools.extend(page.iter().cloned());
            match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(tools),
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(ClientError::Malformed {
                            what: "tools/list result".into(),
                            detail: format!("nextCursor {next:?} came back again; the pages loop"),
                        });
                    }
                    cursor = Some(next.clone());
                }
                Some(other) => {
                    return Err(ClientError::Malformed {
                        what: "tools/list result".into(),
                        detail: format!("nextCursor is {other}, not a string"),
                    });
                }
            }
        }
        Err(ClientError::Malformed {
            what: "tools/list result".into(),
            detail: format!("more than {MAX_PAGES} pages"),
        })
    }

    /// Every tool, parsed.
    ///
    /// # Errors
    ///
    /// As [`list_tools_raw`](Self::list_tools_raw), and when a definition does not parse.
    pub async fn list_tools(&mut self) -> Result<Vec<Tool>, ClientError> {
        self.list_tools_raw()
            .await?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                serde_json::from_value(v).map_err(|e| ClientError::Malformed {
                    what: format!("tool definition #{i}"),
                    detail: e.to_string(),
                })
            })
            .collect()
    }

    /// Calls a tool. Give its definition when known: over modern HTTP its `x-mcp-header`
    /// parameters are mirrored into `Mcp-Param-*` headers.
    ///
    /// # Errors
    ///
    /// When the request fails, the server answers with a JSON-RPC error, asks for input, or
    /// sends a result that is not a `CallToolResult`.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        definition: Option<&Tool>,
    ) -> Result<ToolCall, ClientError> {
        let mut extra = Vec::new();
        if self.era == Era::Modern
            && matches!(self.transport, Transport::Http { .. })
            && let Some(def) = definition
        {
            let params = def
                .param_headers()
                .map_err(|source| ClientError::InvalidHeaderParam {
                    tool: name.to_owned(),
                    source: Box::new(source),
                })?;
            extra = params
                .headers(&arguments)
                .map_err(|source| ClientError::HeaderArgument {
                    tool: name.to_owned(),
                    source: Box::new(source),
                })?;
        }
        let params = json!({"name": name, "arguments": arguments});
        let timeout = self.options.request_timeout;
        let raw = self
            .rpc("tools/call", params, Some(name), &extra, timeout)
            .await?;
        let result = serde_json::from_value(raw.clone()).map_err(|e| ClientError::Malformed {
            what: "tools/call result".into(),
            detail: e.to_string(),
        })?;
        Ok(ToolCall { raw, result })
    }

    /// Ends the connection: a stdio server gets EOF (and is killed if it lingers); a
    /// legacy HTTP session is deleted.
    pub async fn close(self) {
        match self.transport {
            Transport::Stdio(s) => s.close(Duration::from_secs(2)).await,
            Transport::Http {
                endpoint,
                session_id: Some(id),
            } => {
                let headers = vec![
                    ("Mcp-Session-Id".to_owned(), id),
                    (
                        "MCP-Protocol-Version".to_owned(),
                        self.version.as_str().to_owned(),
                    ),
                ];
                let _ = exchange(
                    &endpoint,
                    Method::DELETE,
                    None,
                    None,
                    &headers,
                    "DELETE",
                    Duration::from_secs(2),
                )
                .await;
            }
            Transport::Http { .. } => {}
        }
    }

    fn meta(&self) -> Value {
        json!({
            PROTOCOL_VERSION: self.version.as_str(),
            CLIENT_CAPABILITIES: {},
            CLIENT_INFO: self.options.client_info,
        })
    }

    /// Sends a notification.
    async fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let line = envelope::notification(method, &params);
        match &mut self.transport {
            Transport::Stdio(s) => s.send(&line, method).await,
            Transport::Http { .. } => {
                let headers = self.http_headers(method, None, &[]);
                let Transport::Http { endpoint, .. } = &self.transport else {
                    unreachable!()
                };
                let reply = exchange(
                    endpoint,
                    Method::POST,
                    Some(&line),
                    None,
                    &headers,
                    method,
                    self.options.request_timeout,
                )
                .await?;
                if reply.status >= 400 {
                    return Err(http_error(method, &reply));
                }
                Ok(())
            }
        }
    }

    /// Sends a request and returns its `result`.
    async fn rpc(
        &mut self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
        extra: &[(String, String)],
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        if self.era == Era::Modern {
            let meta = self.meta();
            match params.get_mut("_meta").and_then(Value::as_object_mut) {
                Some(m) => m.extend(meta.as_object().cloned().unwrap_or_default()),
                None => params["_meta"] = meta,
            }
        }
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        let line = envelope::request(&id, method, &params);
        let outcome = match &mut self.transport {
            Transport::Stdio(s) => s.request(&id, &line, method, timeout).await?.outcome,
            Transport::Http { .. } => {
                let mut reply = self.post(&line, &id, method, name, extra, timeout).await?;
                if reply.status == 404
                    && self.era == Era::Legacy
                    && method != "initialize"
                    && matches!(
                        self.transport,
                        Transport::Http {
                            session_id: Some(_),
                            ..
                        }
                    )
                {
                    // The session expired: open a new one and try once more.
                    Box::pin(self.initialize()).await?;
                    reply = self.post(&line, &id, method, name, extra, timeout).await?;
                }
                match reply.answer {
                    Some(Answer::Response(r)) => r.outcome,
                    Some(Answer::Error(e)) => Err(e),
                    None => return Err(http_error(method, &reply)),
                }
            }
        };
        let raw = outcome.map_err(|e| rpc_error(method, e))?;
        let result: Value =
            serde_json::from_str(raw.get()).map_err(|e| ClientError::Malformed {
                what: format!("{method} result"),
                detail: e.to_string(),
            })?;
        if !result.is_object() {
            return Err(ClientError::Malformed {
                what: format!("{method} result"),
                detail: format!("it is {result}, not an object"),
            });
        }
        if self.era == Era::Modern {
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => {}
                Some("input_required") => {
                    return Err(ClientError::InputRequired {
                        method: method.to_owned(),
                    });
                }
                Some(other) => {
                    return Err(ClientError::Malformed {
                        what: format!("{method} result"),
                        detail: format!("unknown resultType {other:?}"),
                    });
                }
            }
        }
        Ok(result)
    }

    /// POSTs a request with the headers of the era; remembers a new session id.
    async fn post(
        &mut self,
        line: &[u8],
        id: &RequestId,
        method: &str,
        name: Option<&str>,
        extra: &[(String, String)],
        timeout: Duration,
    ) -> Result<Reply, ClientError> {
        let headers = self.http_headers(method, name, extra);
        let Transport::Http {
            endpoint,
            session_id,
        } = &mut self.transport
        else {
            unreachable!("post is only called on HTTP transports")
        };
        let reply = exchange(
            endpoint,
            Method::POST,
            Some(line),
            Some(id),
            &headers,
            method,
            timeout,
        )
        .await?;
        if method == "initialize"
            && let Some(id) = &reply.session_id
        {
            *session_id = Some(id.clone());
        }
        Ok(reply)
    }

    fn http_headers(
        &self,
        method: &str,
        name: Option<&str>,
        extra: &[(String, String)],
    ) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        match self.era {
            Era::Modern => {
                headers.push((
                    "MCP-Protocol-Version".to_owned(),
                    self.version.as_str().to_owned(),
                ));
                headers.push(("Mcp-Method".to_owned(), method.to_owned()));
                if let Some(n) = name {
                    headers.push(("Mcp-Name".to_owned(), encode_value(n).into_owned()));
                }
            }
            Era::Legacy => {
                if let Transport::Http {
                    session_id: Some(id),
                    ..
                } = &self.transport
                {
                    headers.push(("Mcp-Session-Id".to_owned(), id.clone()));
                }
                if method != "initialize" {
                    headers.push((
                        "MCP-Protocol-Version".to_owned(),
                        self.version.as_str().to_owned(),
                    ));
                }
            }
        }
        headers.extend(extra.iter().cloned());
        headers
    }
}

fn open(target: &Target) -> Result<Transport, ClientError> {
    Ok(match target {
        Target::Stdio { program, args } => Transport::Stdio(StdioTransport::spawn(program, args)?),
        Target::Http { url } => Transport::Http {
            endpoint: Endpoint::parse(url)?,
            session_id: None,
        },
    })
}

/// The error a JSON-RPC `error` object reports for `method`.
fn rpc_error(method: &str, err: ErrorObject) -> ClientError {
    ClientError::Rpc {
        method: method.to_owned(),
        code: err.code,
        message: err.message,
        data: err.data.map(Box::new),
    }
}

/// An HTTP answer without a JSON-RPC response: its JSON-RPC error if there is one (e.g. a
/// 400 with an id-less error), else the status and the start of the body.
fn http_error(method: &str, reply: &Reply) -> ClientError {
    match &reply.answer {
        Some(
            Answer::Error(e)
            | Answer::Response(Response {
                outcome: Err(e), ..
            }),
        ) => rpc_error(method, e.clone()),
        _ => ClientError::Http {
            method: method.to_owned(),
            status: reply.status,
            body: reply.text.clone(),
        },
    }
}

#[cfg(test)]
mod tests;
