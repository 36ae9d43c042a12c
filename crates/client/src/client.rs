//! [`Client`]: connect to a server over stdio or HTTP, detect its era, list its tools and
//! call them, one request at a time, as a command-line client does. It is a [`Peer`]
//! that declares no client capabilities but elicitation when asked to answer it (other
//! requests from the server are refused with -32601), and opens no notification streams
//! but the one elicitation may come on. A modern `input_required` result is answered the
//! same way and the call retried, the server's `requestState` echoed unchanged.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolwright_protocol::{
    CallToolResult, Implementation, ProtocolVersion, ServerCapabilities, Tool,
};

use crate::{Authorizer, Call, ClientError, ElicitAnswer, NoHandler, Peer, PeerOptions, TlsRoots};

/// How many `input_required` rounds one call answers before giving up.
const MAX_INPUT_ROUNDS: usize = 16;

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
    /// A Streamable HTTP endpoint (`http://…` or `https://…`).
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
#[derive(Clone)]
pub struct ConnectOptions {
    /// Which era to speak.
    pub era: EraChoice,
    /// How long to wait for any one answer.
    pub request_timeout: Duration,
    /// How long to wait for the answer to the era probe before assuming a legacy server.
    pub probe_timeout: Duration,
    /// Who this client says it is.
    pub client_info: Implementation,
    /// HTTP: what authorizes each request (its `Authorization` header, and what to do
    /// when the server refuses it); `None` sends none. A fixed token is a
    /// [`BearerToken`](crate::BearerToken).
    pub auth: Option<Arc<dyn Authorizer>>,
    /// How [`Client`] answers the server's elicitation requests; with `None` it declares
    /// no elicitation capability.
    pub elicit: Option<ElicitAnswer>,
    /// HTTP: what an `https://` server's certificate (and its OAuth servers') is checked
    /// against [default: the webpki roots].
    pub tls: TlsRoots,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("era", &self.era)
            .field("request_timeout", &self.request_timeout)
            .field("probe_timeout", &self.probe_timeout)
            .field("client_info", &self.client_info)
            .field("auth", &self.auth.as_ref().map(|_| "…"))
            .field("elicit", &self.elicit)
            .field("tls", &self.tls)
            .finish()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            era: EraChoice::Auto,
            request_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(5),
            client_info: Implementation::new("toolwright", env!("CARGO_PKG_VERSION")),
            auth: None,
            elicit: None,
            tls: TlsRoots::default(),
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

/// A connection to one MCP server, in whichever era it speaks.
pub struct Client {
    peer: Peer,
    /// Answers the server's requests, and the `inputRequests` of `input_required` results.
    handler: Arc<dyn crate::PeerHandler>,
    server_info: Option<Implementation>,
    capabilities: Option<ServerCapabilities>,
}

impl Client {
    /// Connects, detecting the server's era unless `options.era` fixes it.
    ///
    /// # Errors
    ///
    /// When the server cannot be started or reached, or shares no version with this client.
    pub async fn connect(target: Target, options: ConnectOptions) -> Result<Client, ClientError> {
        let elicit = options.elicit;
        let mut options = PeerOptions {
            connect: options,
            listen: false,
            ..PeerOptions::default()
        };
        let handler: Arc<dyn crate::PeerHandler> = match elicit {
            Some(answer) => {
                // Some servers send it on the GET stream rather than the call's own.
                options.listen = true;
                options.capabilities.elicitation = Some(serde_json::json!({}));
                Arc::new(answer)
            }
            None => Arc::new(NoHandler),
        };
        let peer = Peer::connect(target, options, Arc::clone(&handler)).await?;
        Ok(Client {
            handler,
            server_info: peer.server_info(),
            capabilities: peer.capabilities(),
            peer,
        })
    }

    /// The era the server speaks.
    pub fn era(&self) -> Era {
        self.peer.era()
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.peer.protocol_version()
    }

    /// Who the server says it is (unverified).
    pub fn server_info(&self) -> Option<&Implementation> {
        self.server_info.as_ref()
    }

    /// What the server says it can do.
    pub fn capabilities(&self) -> Option<&ServerCapabilities> {
        self.capabilities.as_ref()
    }

    /// The connection, for the requests other modules make.
    pub(crate) fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The target this client is connected to.
    pub fn target(&self) -> &Target {
        self.peer.target()
    }

    /// Every tool, following `nextCursor` to the last page, exactly as sent.
    ///
    /// # Errors
    ///
    /// When a request fails or a page is not a `tools/list` result.
    pub async fn list_tools_raw(&mut self) -> Result<Vec<Value>, ClientError> {
        self.peer.list_all("tools/list", "tools").await
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
        let mut headers = Vec::new();
        if self.era() == Era::Modern
            && matches!(self.peer.target(), Target::Http { .. })
            && let Some(def) = definition
        {
            let params = def
                .param_headers()
                .map_err(|source| ClientError::InvalidHeaderParam {
                    tool: name.to_owned(),
                    source: Box::new(source),
                })?;
            headers = params
                .headers(&arguments)
                .map_err(|source| ClientError::HeaderArgument {
                    tool: name.to_owned(),
                    source: Box::new(source),
                })?;
        }
        let mut params = json!({"name": name, "arguments": arguments});
        let mut rounds = 0;
        let raw = loop {
            let call = Call {
                name: Some(name.to_owned()),
                headers: headers.clone(),
                ..Call::new("tools/call", params.clone())
            };
            let raw = self.peer.request(call).await?;
            if raw.get("resultType").and_then(Value::as_str) != Some("input_required") {
                break raw;
            }
            if rounds == MAX_INPUT_ROUNDS {
                return Err(ClientError::InputRounds {
                    method: "tools/call".to_owned(),
                    rounds,
                });
            }
            rounds += 1;
            // A fresh request (a new JSON-RPC id) carrying the answers, and the server's
            // `requestState` exactly as sent, only when it sent one.
            let answers = self.answer_inputs(&raw).await?;
            params =
                json!({"name": name, "arguments": params["arguments"], "inputResponses": answers});
            if let Some(state) = raw.get("requestState") {
                params["requestState"] = state.clone();
            }
        };
        let result = serde_json::from_value(raw.clone()).map_err(|e| ClientError::Malformed {
            what: "tools/call result".into(),
            detail: e.to_string(),
        })?;
        Ok(ToolCall { raw, result })
    }

    /// The `inputResponses` for an `input_required` result: each of its `inputRequests`
    /// answered by this client's handler (elicitation with `--elicit`), under its key.
    async fn answer_inputs(&self, raw: &Value) -> Result<Value, ClientError> {
        let mut answers = serde_json::Map::new();
        let requests = raw
            .get("inputRequests")
            .and_then(Value::as_object)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| ClientError::InputRequired {
                method: "tools/call".to_owned(),
                wanted: "no inputRequests, so nothing to answer".to_owned(),
            })?;
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            match self.handler.request(method.to_owned(), params).await {
                Ok(answer) => {
                    answers.insert(key.clone(), answer);
                }
                Err(_) => {
                    return Err(ClientError::InputRequired {
                        method: "tools/call".to_owned(),
                        wanted: if method.is_empty() {
                            "a malformed request"
                        } else {
                            method
                        }
                        .to_owned(),
                    });
                }
            }
        }
        Ok(Value::Object(answers))
    }

    /// Ends the connection: a stdio server gets EOF (and is killed if it lingers); a
    /// legacy HTTP session is deleted.
    pub async fn close(self) {
        self.peer.close().await;
    }
}

#[cfg(test)]
mod tests;
