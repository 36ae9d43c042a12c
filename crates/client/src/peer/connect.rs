//! Opening a connection and finding its era (the one implementation of detection, which
//! [`Client`](crate::Client) uses through its [`Peer`](super::Peer)), then the
//! background streams that carry list changes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolwright_jsonrpc::code;
use toolwright_protocol::ProtocolVersion;
use toolwright_protocol::meta::SERVER_INFO;

use super::http::{HttpLink, get_stream};
use super::route::{Inner, Link, Send};
use super::stdio::{StdioLink, read};
use super::{Call, PeerHandler, PeerOptions};
use crate::http::Endpoint;
use crate::{ClientError, Era, EraChoice, Target};

/// Starts the server (stdio) or parses its URL (HTTP); nothing is sent yet.
fn open(
    target: &Target,
    options: &PeerOptions,
    handler: &Arc<dyn PeerHandler>,
) -> Result<Arc<Inner>, ClientError> {
    let new = |link| Inner::new(target.clone(), options.clone(), Arc::clone(handler), link);
    Ok(match target {
        Target::Stdio { program, args } => {
            let (link, stdout) = StdioLink::spawn(program, args, options)?;
            let inner = Arc::new(new(Link::Stdio(Box::new(link))));
            tokio::spawn(read(Arc::downgrade(&inner), stdout));
            inner
        }
        Target::Http { url } => Arc::new(new(Link::Http(HttpLink::new(Endpoint::parse(
            url,
            &options.connect.tls,
        )?)))),
    })
}

/// What the answer to the era probe says.
#[derive(Debug, PartialEq)]
enum Probe {
    /// A modern server (it answered, or gave an error only a modern server gives).
    Modern,
    /// A legacy server: perform the handshake on this connection.
    Legacy,
    /// A stdio server that exited on the probe: start it again, legacy.
    Restart,
}

/// Whether an error to the modern probe shows a modern server: a version it does not
/// support, a missing capability, a header mismatch, or invalid params that name `_meta`.
pub(super) fn is_modern_error(code: i64, message: &str, data: Option<&Value>) -> bool {
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

/// Reads the outcome of the `server/discover` probe, as the spec advises: a result, or
/// an error only a modern server gives, means modern (but one that does not speak our
/// modern version is used in a legacy version it lists); anything else (another error,
/// an HTTP 4xx, silence until the probe timeout) means legacy.
fn classify(probe: Result<(), ClientError>, stdio: bool) -> Result<Probe, ClientError> {
    match probe {
        Ok(()) => Ok(Probe::Modern),
        Err(ClientError::Rpc {
            code,
            message,
            data,
            ..
        }) if is_modern_error(code, &message, data.as_deref()) => {
            if code != code::UNSUPPORTED_PROTOCOL_VERSION {
                return Ok(Probe::Modern); // later requests will say what is missing
            }
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
            if supported
                .iter()
                .filter_map(|v| ProtocolVersion::parse(v))
                .any(|v| !v.is_modern())
            {
                Ok(Probe::Legacy)
            } else {
                Err(ClientError::NoCommonVersion { supported })
            }
        }
        Err(ClientError::Rpc { .. } | ClientError::Timeout { .. } | ClientError::Http { .. }) => {
            Ok(Probe::Legacy)
        }
        Err(ClientError::Closed { .. }) if stdio => Ok(Probe::Restart),
        Err(e) => Err(e),
    }
}

/// Connects and detects the era (unless `options` fix it), then starts the background
/// streams.
pub(super) async fn connect(
    target: Target,
    options: PeerOptions,
    handler: Arc<dyn PeerHandler>,
) -> Result<Arc<Inner>, ClientError> {
    let mut inner = open(&target, &options, &handler)?;
    let request_timeout = options.connect.request_timeout;
    match options.connect.era {
        EraChoice::Modern => {
            if let Discovered::NotModern { detail } = discover(&inner, request_timeout).await? {
                return Err(ClientError::Malformed {
                    what: "server/discover result".to_owned(),
                    detail,
                });
            }
        }
        EraChoice::Legacy => initialize(&inner).await?,
        EraChoice::Auto => {
            let probe = discover(&inner, options.connect.probe_timeout).await;
            let timed_out = matches!(probe, Err(ClientError::Timeout { .. }));
            let probe = match probe {
                // A result that is not a modern server's (e.g. `{}`): a legacy server
                // answering an unknown method loosely.
                Ok(Discovered::NotModern { .. }) => Ok(Probe::Legacy),
                probe => classify(probe.map(|_| ()), matches!(target, Target::Stdio { .. })),
            };
            match probe? {
                Probe::Modern => {}
                Probe::Legacy if timed_out => late_modern(&inner, request_timeout).await?,
                Probe::Legacy => initialize(&inner).await?,
                Probe::Restart => {
                    inner.close().await;
                    inner = open(&target, &options, &handler)?;
                    initialize(&inner).await?;
                }
            }
        }
    }
    inner.mark_connected();
    if options.listen && !inner.dead.is_cancelled() {
        start_streams(&inner);
    }
    Ok(inner)
}

/// The handshake after a probe that went unanswered. A server too slow to answer the probe
/// in time (a cold `npx`, a loaded machine) may still be modern, and its refusal of the
/// handshake with an error only a modern server gives says so: it is then asked
/// `server/discover` again, given the full request timeout.
async fn late_modern(inner: &Arc<Inner>, timeout: Duration) -> Result<(), ClientError> {
    match initialize(inner).await {
        Err(ClientError::Rpc {
            code,
            ref message,
            ref data,
            ..
        }) if is_modern_error(code, message, data.as_deref()) => {
            match discover(inner, timeout).await? {
                Discovered::Modern => Ok(()),
                Discovered::NotModern { detail } => Err(ClientError::Malformed {
                    what: "server/discover result".to_owned(),
                    detail,
                }),
            }
        }
        handshake => handshake,
    }
}

/// Why a `server/discover` result is not one to speak the modern era with, if it is not:
/// it must be an object whose `supportedVersions` lists a modern version we speak.
pub(super) fn not_modern(result: &Value) -> Option<String> {
    let Some(versions) = result.get("supportedVersions") else {
        return Some("it has no supportedVersions".to_owned());
    };
    let Some(versions) = versions.as_array() else {
        return Some(format!("supportedVersions is {versions}, not an array"));
    };
    let ours = versions
        .iter()
        .filter_map(Value::as_str)
        .filter_map(ProtocolVersion::parse)
        .any(ProtocolVersion::is_modern);
    (!ours).then(|| {
        format!(
            "supportedVersions {} names no modern version this client speaks",
            Value::Array(versions.clone())
        )
    })
}

/// What `server/discover` found.
enum Discovered {
    /// A modern server this client speaks with.
    Modern,
    /// The server answered, but not as a modern server we can speak with.
    NotModern {
        /// Why not.
        detail: String,
    },
}

/// `server/discover`: the modern era's (optional) first request.
async fn discover(inner: &Arc<Inner>, timeout: Duration) -> Result<Discovered, ClientError> {
    {
        let mut s = inner.state.write();
        s.era = Era::Modern;
        s.version = ProtocolVersion::LATEST;
    }
    let how = Send {
        timeout: Some(timeout),
        cancel_upstream: false,
    };
    let call = Call::new("server/discover", json!({}));
    let result = match inner.request(&call, how).await {
        // A server that refuses our version while listing it among those it supports
        // (a transient refusal, or one that wants the choice confirmed) gets one retry.
        Err(ClientError::Rpc { code, data, .. })
            if code == code::UNSUPPORTED_PROTOCOL_VERSION && lists_latest(data.as_deref()) =>
        {
            inner.request(&call, how).await?
        }
        result => result?,
    };
    if let Some(detail) = not_modern(&result) {
        return Ok(Discovered::NotModern { detail });
    }
    let mut s = inner.state.write();
    s.server_info = result
        .get("_meta")
        .and_then(|m| m.get(SERVER_INFO))
        .and_then(|i| serde_json::from_value(i.clone()).ok());
    s.capabilities = result
        .get("capabilities")
        .and_then(|c| serde_json::from_value(c.clone()).ok());
    Ok(Discovered::Modern)
}

/// Whether an UnsupportedProtocolVersion error's `data.supported` lists our modern
/// version.
fn lists_latest(data: Option<&Value>) -> bool {
    data.and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter()
                .any(|v| v.as_str() == Some(ProtocolVersion::LATEST.as_str()))
        })
}

/// The legacy handshake: `initialize` (declaring our capabilities), then
/// `notifications/initialized`.
pub(super) async fn initialize(inner: &Arc<Inner>) -> Result<(), ClientError> {
    {
        let mut s = inner.state.write();
        s.era = Era::Legacy;
        s.version = ProtocolVersion::LATEST_LEGACY;
        s.session_id = None;
    }
    let params = json!({
        "protocolVersion": ProtocolVersion::LATEST_LEGACY.as_str(),
        "capabilities": inner.options.capabilities,
        "clientInfo": inner.options.connect.client_info,
    });
    let how = Send::timeout(inner.options.connect.request_timeout);
    let result = inner.request(&Call::new("initialize", params), how).await?;
    let offered = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let version = match ProtocolVersion::parse(&offered) {
        Some(v) if !v.is_modern() => v,
        _ => {
            return Err(ClientError::NoCommonVersion {
                supported: vec![offered],
            });
        }
    };
    {
        let mut s = inner.state.write();
        s.version = version;
        s.server_info = result
            .get("serverInfo")
            .and_then(|i| serde_json::from_value(i.clone()).ok());
        s.capabilities = result
            .get("capabilities")
            .and_then(|c| serde_json::from_value(c.clone()).ok());
    }
    inner.notify("notifications/initialized", json!({})).await
}

/// Opens what carries list changes: the legacy HTTP GET stream, or a modern
/// `subscriptions/listen` for the lists whose capabilities say `listChanged`. (Legacy
/// stdio notifications need nothing.)
fn start_streams(inner: &Arc<Inner>) {
    let era = inner.era();
    match (&inner.link, era) {
        (Link::Http(_), Era::Legacy) => {
            tokio::spawn(get_stream(Arc::clone(inner)));
        }
        (_, Era::Modern) => {
            let filter = listen_filter(inner);
            if !filter.is_empty() {
                tokio::spawn(listen(Arc::clone(inner), Value::Object(filter)));
            }
        }
        (Link::Stdio(_), Era::Legacy) => {}
    }
}

/// The `notifications` filter of `subscriptions/listen`: what the server can change.
fn listen_filter(inner: &Inner) -> Map<String, Value> {
    let caps = inner.state.read().capabilities.clone().unwrap_or_default();
    let changes = |v: Option<&Value>| {
        v.and_then(|v| v.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let mut filter = Map::new();
    if caps.tools.and_then(|t| t.list_changed).unwrap_or(false) {
        filter.insert("toolsListChanged".into(), Value::Bool(true));
    }
    if changes(caps.prompts.as_ref()) {
        filter.insert("promptsListChanged".into(), Value::Bool(true));
    }
    if changes(caps.resources.as_ref()) {
        filter.insert("resourcesListChanged".into(), Value::Bool(true));
    }
    filter
}

/// Keeps a `subscriptions/listen` request open while the peer lives; its notifications
/// reach the handler through the normal dispatch (the acknowledgement is consumed).
async fn listen(inner: Arc<Inner>, filter: Value) {
    let mut backoff = Backoff::default();
    loop {
        let call = Call::new("subscriptions/listen", json!({"notifications": filter}));
        let how = Send {
            timeout: None,
            cancel_upstream: true,
        };
        let started = std::time::Instant::now();
        tokio::select! {
            _ = inner.request(&call, how) => {}
            () = inner.shutdown.cancelled() => return,
        }
        backoff.lasted(started.elapsed());
        tokio::select! {
            () = tokio::time::sleep(backoff.next()) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// Delays between re-opening a stream: doubling from 250 ms to 30 s, back to the start
/// after a stream that lasted a minute.
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Backoff::FIRST,
        }
    }
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(30);

    /// The delay to wait now.
    pub(super) fn next(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(Backoff::MAX);
        d
    }

    /// A stream lasted `d`: a long one resets the delays.
    pub(super) fn lasted(&mut self, d: Duration) {
        if d >= Duration::from_secs(60) {
            self.next = Backoff::FIRST;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_discover_result_is_modern_only_with_a_version_we_speak() {
        use serde_json::json;
        assert_eq!(
            super::not_modern(&json!({"supportedVersions": ["2026-07-28"], "capabilities": {}})),
            None
        );
        assert_eq!(
            super::not_modern(&json!({"supportedVersions": ["2025-11-25", "2026-07-28"]})),
            None
        );
        for bad in [
            json!({}),
            json!({"supportedVersions": "2026-07-28"}),
            json!({"supportedVersions": ["2025-11-25"]}),
            json!({"supportedVersions": ["2099-01-01"]}),
            json!({"supportedVersions": []}),
        ] {
            assert!(super::not_modern(&bad).is_some(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn modern_errors_are_recognised() {
        assert!(is_modern_error(
            -32022,
            "Unsupported protocol version",
            None
        ));
        assert!(is_modern_error(-32602, "missing params._meta", None));
        assert!(is_modern_error(
            -32602,
            "Invalid params",
            Some(&json!({"missing": "_meta"}))
        ));
        assert!(!is_modern_error(
            -32602,
            "Invalid request parameters",
            Some(&json!(""))
        ));
        assert!(!is_modern_error(-32601, "Method not found", None));
        assert!(!is_modern_error(
            -32000,
            "Bad Request: No valid session ID provided",
            None
        ));
    }

    #[test]
    fn probe_outcomes() {
        let rpc = |code: i64, data: Value| {
            Err(ClientError::Rpc {
                method: "server/discover".into(),
                code,
                message: "m".into(),
                data: Some(Box::new(data)),
            })
        };
        let closed = || {
            Err(ClientError::Closed {
                method: "server/discover".into(),
                stderr: String::new(),
            })
        };
        assert_eq!(classify(Ok(()), true).unwrap(), Probe::Modern);
        assert_eq!(
            classify(rpc(-32601, json!(null)), true).unwrap(),
            Probe::Legacy
        );
        assert_eq!(
            classify(rpc(-32021, json!(null)), true).unwrap(),
            Probe::Modern
        );
        let old = json!({"supported": ["2025-06-18"]});
        assert_eq!(classify(rpc(-32022, old), false).unwrap(), Probe::Legacy);
        let future = json!({"supported": ["2099-01-01"]});
        assert!(classify(rpc(-32022, future), false).is_err());
        assert_eq!(classify(closed(), true).unwrap(), Probe::Restart);
        assert!(classify(closed(), false).is_err());
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let mut b = Backoff::default();
        let first: Vec<u128> = (0..10).map(|_| b.next().as_millis()).collect();
        assert_eq!(first[..3], [250, 500, 1000]);
        assert_eq!(first[9], 30_000);
        b.lasted(Duration::from_secs(61));
        assert_eq!(b.next().as_millis(), 250);
    }
}
