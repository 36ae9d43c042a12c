//! HTTP-backed tools: one request per call, each argument encoded for where it lands.
//!
//! - `uri`: the URL template (scheme, host and port literal; placeholders in the path as
//!   one segment's text, in the query as a component) and `query:`.
//! - `encode`: percent-encoding, header value checks, filling a template's pieces.
//! - `body`: the JSON body, built as a value and written by serde_json.
//! - `connect`: the connector that applies the address policy where the socket is opened
//!   (resolve once, check every address, connect to a checked one; TLS with rustls).
//! - `redirect`: which redirects are followed, and how the method changes.
//!
//! Secrets are marked where they enter, where `${VAR}` is filled in (`encode::Filled`), and
//! never appear in an error, a log line or a span: errors name the header, never its value;
//! a URL is shown with each path segment that holds a secret `REDACTED` and no query. They
//! never follow a redirect that leaves the tool's origin: such headers are not sent on,
//! and a 307 or 308 that would send a body holding one again is refused.

mod body;
mod connect;
mod encode;
mod redirect;
#[cfg(test)]
mod tests;
mod uri;

use crate::error::{Problem, RunError, Seg, Stream};
use crate::{Output, RunContext};
use body::BodyTemplate;
use bytes::Bytes;
use connect::{ConnectError, PolicedConnector};
use encode::Env;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use redirect::RedirectRules;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use toolwright_net::AddressPolicy;
use toolwright_toolfile::fill::Source;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::HttpSpec;
use toolwright_toolfile::template::Template;
use uri::UrlTemplate;

/// The default cap of a response body.
const DEFAULT_MAX_RESPONSE: u64 = 4 << 20;
/// How much of a failed response's body goes into the error.
const BODY_HEAD: usize = 1024;

/// Headers the client writes itself, from the URL and the body: an author may not set
/// them (a second `Content-Length` or `Host` is how requests get smuggled).
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// A request header.
#[derive(Debug)]
struct HeaderTemplate {
    name: HeaderName,
    value: Template,
}

/// A compiled `http:`.
#[derive(Debug)]
pub struct HttpAction {
    method: Method,
    url: UrlTemplate,
    headers: Vec<HeaderTemplate>,
    body: Option<BodyTemplate>,
    redirects: RedirectRules,
    max_response: u64,
    args: BTreeSet<String>,
    /// Boxed: hyper-util's pooled client is large.
    client: Box<Client<PolicedConnector, Full<Bytes>>>,
}

/// A request, filled in for one call.
struct Prepared {
    url: String,
    /// The URL as spans, logs and errors may show it (see [`UrlTemplate::public`]).
    public_url: String,
    /// Each header, and whether its value came (partly) from `${VAR}`.
    headers: Vec<(HeaderName, HeaderValue, bool)>,
    body: Option<Bytes>,
    /// Some of the body came from `${VAR}`: it is never sent to another origin.
    body_secret: bool,
}

impl Prepared {
    /// Adds the call's `traceparent` and `tracestate`, unless the tool sends its own.
    fn add_trace(&mut self, parent: &str, state: Option<&str>) {
        let pairs = [("traceparent", Some(parent)), ("tracestate", state)];
        for (name, value) in pairs {
            let name = HeaderName::from_static(name);
            let Some(Ok(value)) = value.map(HeaderValue::from_str) else {
                continue;
            };
            if !self.headers.iter().any(|(n, ..)| *n == name) {
                self.headers.push((name, value, false));
            }
        }
    }
}

impl HttpAction {
    /// Compiles `http:`; problems are reported under `http`.
    ///
    /// # Errors
    ///
    /// A [`Problem`] for anything that cannot run safely.
    pub fn compile(spec: &HttpSpec, input: &InputInfo) -> Result<HttpAction, Problem> {
        Self::compile_inner(spec, input).map_err(|p| p.under("http"))
    }

    fn compile_inner(spec: &HttpSpec, input: &InputInfo) -> Result<HttpAction, Problem> {
        let method = compile_method(spec.method.as_deref())?;
        let url = UrlTemplate::compile(&spec.url, &spec.query, input)?;
        let mut headers = Vec::new();
        for (name, value) in &spec.headers {
            headers.push(compile_header(name, value, input)?);
        }
        let body = spec
            .body
            .as_ref()
            .map(|b| BodyTemplate::compile(b, input))
            .transpose()?;
        let redirects = RedirectRules::compile(spec.redirects.as_ref())?;
        let mut args: BTreeSet<String> = url.args().map(str::to_owned).collect();
        args.extend(
            headers
                .iter()
                .flat_map(|h| h.value.args().map(|a| a.name.clone())),
        );
        if let Some(b) = &body {
            let mut names = Vec::new();
            b.args(&mut names);
            args.extend(names);
        }
        let policy = AddressPolicy {
            allow_private: spec.allow_private,
            allow_loopback: spec.allow_loopback.unwrap_or(true),
        };
        let client = toolwright_net::pooled(PolicedConnector::new(policy));
        Ok(HttpAction {
            method,
            url,
            headers,
            body,
            redirects,
            max_response: spec.max_response.map_or(DEFAULT_MAX_RESPONSE, |b| b.0),
            args,
            client: Box::new(client),
        })
    }

    /// The arguments the action names.
    pub fn args_used(&self) -> BTreeSet<String> {
        self.args.clone()
    }

    /// The method, upper case.
    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    /// Sends the request with `args` (already valid against `inputSchema`).
    ///
    /// # Errors
    ///
    /// [`RunError`] for every failure.
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
    ) -> Result<Output, RunError> {
        self.run_with_env(args, ctx, &|v| std::env::var(v).ok())
            .await
    }

    /// [`HttpAction::run`] with `${VAR}` read from `env`.
    pub(crate) async fn run_with_env(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
        env: Env<'_>,
    ) -> Result<Output, RunError> {
        let mut prepared = self.prepare(args, env)?;
        // The request's CLIENT span, when spans are exported: its id is the traceparent.
        let span = ctx.observed.as_ref().and_then(|(t, parent)| {
            Some((
                t,
                t.http_request(span_request(&self.method, &prepared.public_url, parent)?)?,
            ))
        });
        match (&span, &ctx.trace) {
            (Some((_, s)), _) => {
                let c = s.context();
                prepared.add_trace(&c.traceparent(), c.state.as_deref());
            }
            (None, Some((parent, state))) => prepared.add_trace(parent, state.as_deref()),
            (None, None) => {}
        }
        tracing::debug!(target: "toolwright::declared", method = %self.method, origin = %self.url.origin, "HTTP request");
        let out = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => Err(RunError::Cancelled),
            r = tokio::time::timeout(ctx.timeout, self.exchange(prepared)) => {
                r.unwrap_or(Err(RunError::Timeout(ctx.timeout)))
            }
        };
        if let Some((t, s)) = span {
            let (status, error) = match &out {
                Ok(o) => (o.meta.get("status").and_then(Value::as_u64), None),
                Err(RunError::Status { status, .. }) => (Some(u64::from(*status)), None),
                Err(e) => (None, Some(error_type(e))),
            };
            s.finish(t, status.and_then(|n| u16::try_from(n).ok()), error);
        }
        out
    }

    /// Fills the URL, headers and body in.
    fn prepare(&self, args: &Map<String, Value>, env: Env<'_>) -> Result<Prepared, RunError> {
        let url = self.url.render(args, env)?;
        let mut headers = Vec::with_capacity(self.headers.len());
        for h in &self.headers {
            let name = h.name.as_str();
            let filled = encode::fill(h.value.parts(), args, env, &mut encode::HeaderPiece(name))?;
            let Some(filled) = filled else { continue };
            let mut value =
                HeaderValue::from_bytes(filled.text.as_bytes()).map_err(|_| RunError::Header {
                    header: name.to_owned(),
                    reason: "the value holds a control character; refused".into(),
                })?;
            value.set_sensitive(filled.secret);
            headers.push((h.name.clone(), value, filled.secret));
        }
        let mut body_secret = false;
        let body = match &self.body {
            None => None,
            Some(b) => match b.build(args, env, &mut body_secret)? {
                None => None,
                Some(v) => Some(Bytes::from(
                    serde_json::to_vec(&v).map_err(|e| RunError::Http(e.to_string()))?,
                )),
            },
        };
        if body.is_some() && !headers.iter().any(|(n, ..)| n == header::CONTENT_TYPE) {
            headers.push((
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
                false,
            ));
        }
        Ok(Prepared {
            public_url: self.url.public(&url),
            url: url.text,
            headers,
            body,
            body_secret,
        })
    }

    /// Sends the request, following the redirects allowed, and reads the answer.
    async fn exchange(&self, p: Prepared) -> Result<Output, RunError> {
        let Prepared {
            url: first,
            mut headers,
            mut body,
            body_secret,
            ..
        } = p;
        let mut at =
            url::Url::parse(&first).map_err(|e| RunError::Http(format!("bad URL: {e}")))?;
        let mut target = first;
        let mut method = self.method.clone();
        let mut hops = 0;
        loop {
            let uri: hyper::Uri = target
                .parse()
                .map_err(|e| RunError::Http(format!("bad URL: {e}")))?;
            let mut req = Request::builder()
                .method(method.clone())
                .uri(uri)
                .body(Full::new(body.clone().unwrap_or_default()))
                .map_err(|e| RunError::Http(format!("could not build the request: {e}")))?;
            for (n, v, _) in &headers {
                req.headers_mut().append(n.clone(), v.clone());
            }
            let resp = self.client.request(req).await.map_err(client_error)?;
            let status = resp.status().as_u16();
            let location = resp.headers().get(header::LOCATION).cloned();
            if let (true, Some(location)) = (redirect::is_redirect(status), location)
                && self.redirects.max > 0
            {
                if hops == self.redirects.max {
                    return Err(RunError::Http(format!(
                        "stopped after {hops} redirects (http.redirects.max)"
                    )));
                }
                let location = location.to_str().map_err(|_| {
                    RunError::Http("the server redirected to a location that is not text".into())
                })?;
                let (next, same_origin) = self.redirects.follow(&at, location)?;
                let (next_method, keep_body) = redirect::next_method(status, &method);
                if !same_origin && keep_body && body_secret && body.is_some() {
                    // A 307 or 308 sends the body again: a secret in it would go to a host
                    // the author listed for redirects, not for the secret.
                    return Err(RunError::Refused(format!(
                        "the server redirected ({status}) to {}, another origin, and a {status} sends the request body again; the body holds a value of the server's environment (${{VAR}}), which goes only to the tool's own origin",
                        next.origin().ascii_serialization()
                    )));
                }
                if !keep_body {
                    body = None;
                    headers.retain(|(n, ..)| n != header::CONTENT_TYPE);
                }
                if !same_origin {
                    headers.retain(|(n, _, secret)| !secret && !is_credential(n));
                }
                drop(resp);
                target = next.as_str().to_owned();
                at = next;
                method = next_method;
                hops += 1;
                continue;
            }
            return self.read_response(resp, status).await;
        }
    }

    /// The output of a final (not redirected) response: its body within the cap (refused at
    /// once when `Content-Length` says it is over), or the call's failure with the head of
    /// the body when the status is not 2xx.
    async fn read_response(
        &self,
        resp: http::Response<hyper::body::Incoming>,
        status: u16,
    ) -> Result<Output, RunError> {
        let ok = (200..300).contains(&status);
        let limit = if ok {
            self.max_response
        } else {
            self.max_response.min(BODY_HEAD as u64)
        };
        let declared = resp
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if ok && declared.is_some_and(|n| n > limit) {
            // Refused before reading any of it.
            return Err(RunError::TooLarge {
                stream: Stream::Body,
                limit,
            });
        }
        let bytes = read_capped(resp.into_body(), limit, ok).await?;
        if !ok {
            let head = &bytes[..bytes.len().min(BODY_HEAD)];
            return Err(RunError::Status {
                status,
                body_head: String::from_utf8_lossy(head).into_owned(),
            });
        }
        let mut meta = Map::new();
        meta.insert("status".into(), Value::from(status));
        Ok(Output { bytes, meta })
    }
}

/// What an HTTP client span records of a request to `url` (the [public](UrlTemplate::public)
/// URL: path segments holding a secret already `REDACTED`): `url.full` without its query,
/// fragment or credentials (a query may carry a secret), and the server's address and port.
fn span_request(
    method: &Method,
    url: &str,
    parent: &toolwright_server::telemetry::SpanContext,
) -> Option<toolwright_server::telemetry::HttpRequest> {
    let mut u = url::Url::parse(url).ok()?;
    u.set_query(None);
    u.set_fragment(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    Some(toolwright_server::telemetry::HttpRequest {
        method: method.as_str().to_owned(),
        peer: toolwright_server::telemetry::Peer {
            address: u.host_str()?.to_owned(),
            port: u.port_or_known_default(),
        },
        url: u.into(),
        parent: Some(parent.clone()),
    })
}

/// The HTTP conventions' `error.type` of a request that got no response.
fn error_type(e: &RunError) -> &'static str {
    match e {
        RunError::Timeout(_) => "timeout",
        RunError::Cancelled => "cancelled",
        RunError::TooLarge { .. } => "response_too_large",
        RunError::Refused(_) => "refused",
        _ => "_OTHER",
    }
}

/// Headers that carry credentials, not sent on to another origin.
fn is_credential(name: &HeaderName) -> bool {
    *name == header::AUTHORIZATION
        || *name == header::COOKIE
        || *name == header::PROXY_AUTHORIZATION
}

/// Reads a body up to `limit` bytes: past it, fails (`fail`) or keeps the first `limit`.
async fn read_capped(
    mut body: hyper::body::Incoming,
    limit: u64,
    fail: bool,
) -> Result<Vec<u8>, RunError> {
    let too_large = || RunError::TooLarge {
        stream: Stream::Body,
        limit,
    };
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| RunError::Http(format!("reading the response failed: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let room = usize::try_from(limit).unwrap_or(usize::MAX) - out.len();
        if data.len() > room {
            if fail {
                return Err(too_large());
            }
            out.extend_from_slice(&data[..room]);
            break;
        }
        out.extend_from_slice(&data);
    }
    Ok(out)
}

/// A client error as a call error: a refusal by the policy, or what failed (no header
/// value is ever part of these).
fn client_error(e: hyper_util::client::legacy::Error) -> RunError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut chain = Vec::new();
    while let Some(s) = source {
        if let Some(c) = s.downcast_ref::<ConnectError>() {
            return match c {
                ConnectError::Refused(m) => RunError::Refused(m.clone()),
                ConnectError::Failed(m) => RunError::Http(m.clone()),
            };
        }
        chain.push(s.to_string());
        source = s.source();
    }
    RunError::Http(format!("the request failed: {}", chain.join(": ")))
}

fn compile_method(method: Option<&str>) -> Result<Method, Problem> {
    let text = method.unwrap_or("GET").to_ascii_uppercase();
    let bad = |why: &str| Problem::new(["method"], format!("{text:?} {why}"));
    if text.is_empty() {
        return Err(bad("is not an HTTP method"));
    }
    let m = Method::from_bytes(text.as_bytes())
        .map_err(|_| bad("is not an HTTP method (a token: letters, digits, !#$%&'*+-.^_`|~)"))?;
    if m == Method::CONNECT {
        return Err(bad("opens a tunnel, which a tool does not do"));
    }
    Ok(m)
}

fn compile_header(name: &str, value: &str, input: &InputInfo) -> Result<HeaderTemplate, Problem> {
    let at = [Seg::from("headers"), Seg::from(name)];
    let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        Problem::new(
            at.clone(),
            format!(
                "{name:?} is not an HTTP header name (a token: letters, digits, !#$%&'*+-.^_`|~)"
            ),
        )
    })?;
    if RESERVED_HEADERS.contains(&header.as_str()) {
        return Err(Problem::new(
            at,
            format!("{name} is written by the client from the URL and the body; it cannot be set"),
        ));
    }
    let t = Template::parse(value).map_err(|e| Problem::new(at.clone(), e.to_string()))?;
    input.check_template(&t, &at)?;
    if let Some(a) = t.args().find(|a| a.spread) {
        return Err(Problem::new(
            at,
            format!("{{{}...}} is for argv only", a.name),
        ));
    }
    // The author's own text must be sendable too.
    for part in t.parts() {
        if let toolwright_toolfile::template::Part::Literal(l) = part {
            encode::check_header_piece(name, Source::Literal, l)
                .map_err(|e| Problem::new(at.clone(), e.to_string()))?;
        }
    }
    Ok(HeaderTemplate {
        name: header,
        value: t,
    })
}
