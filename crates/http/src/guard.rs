//! The checks every request passes before it reaches MCP: `Host` (DNS rebinding), `Origin`
//! (cross-site requests), and the bearer token (`bearer.rs`); plus the Protected Resource
//! Metadata document (RFC 9728) that tells clients where to get a token.

use crate::bearer::Bearer;
use crate::config::HttpConfig;
use crate::error::Error;
use http::header::{HOST, ORIGIN};
use http::{HeaderMap, Uri};
use std::net::SocketAddr;
use std::sync::Arc;
use toolwright_auth::{Identity, Validator};

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Why a request was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No `Host` header (HTTP/1.1 requires one): 400.
    MissingHost,
    /// More than one `Host` header (RFC 9112 §3.2): 400.
    DuplicateHost,
    /// `Host` is not an allowed name: 403.
    ForeignHost,
    /// An absolute-form request target (`POST http://name/mcp`) whose authority is not an
    /// allowed name: 421 (the request is meant for another server).
    ForeignTarget,
    /// An absolute-form request target whose authority is not the `Host` header: 400.
    TargetNotHost,
    /// More than one `Origin` header: 403.
    DuplicateOrigin,
    /// `Origin` is present and not allowed (or is not one origin): 403.
    ForeignOrigin,
    /// No bearer token: 401.
    NoToken,
    /// A bearer token that is not the right one: 401 with `error="invalid_token"`.
    BadToken,
    /// A valid access token without a scope the endpoint requires: 403 with
    /// `error="insufficient_scope"` and the scopes needed (the MCP step-up flow).
    InsufficientScope,
    /// The token could not be checked (the authorization server's keys could not be
    /// fetched): 503.
    IssuerUnavailable,
}

/// A `host[:port]` allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

/// The request checks, built once from the settings.
#[derive(Debug)]
pub(crate) struct Guard {
    any_host: bool,
    hosts: Vec<HostRule>,
    any_origin: bool,
    origins: Vec<String>,
    bearer: Bearer,
}

/// Splits `host[:port]` (IPv6 literals keep their brackets).
fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    let s = s.trim();
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &s[..end + 2];
        match &rest[end + 1..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() || host.contains(['/', '@', ' ']) {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some((host, port))
}

/// True when two `host[:port]` authorities name the same host and port (a missing port
/// being `default_port`).
fn same_authority(a: &str, b: &str, default_port: u16) -> bool {
    match (split_host_port(a), split_host_port(b)) {
        (Some((ha, pa)), Some((hb, pb))) => {
            ha.eq_ignore_ascii_case(hb) && pa.unwrap_or(default_port) == pb.unwrap_or(default_port)
        }
        _ => false,
    }
}

/// `scheme://host[:port]` in lowercase without a trailing slash, or `None` if malformed.
fn normalize_origin(s: &str) -> Option<(String, String, Option<u16>)> {
    let s = s.trim().trim_end_matches('/');
    let (scheme, rest) = s.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "http" | "https") {
        return Some((scheme, rest.to_ascii_lowercase(), None));
    }
    let (host, port) = split_host_port(rest)?;
    Some((scheme, host.to_ascii_lowercase(), port))
}

fn origin_string(scheme: &str, host: &str, port: Option<u16>) -> String {
    match port {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

impl Guard {
    /// The checks of `config` for a server bound to `bound`; `validator` is the one built
    /// for [`HttpConfig::jwt`].
    pub(crate) fn new(
        config: &HttpConfig,
        bound: SocketAddr,
        validator: Option<Validator>,
    ) -> Result<Guard, Error> {
        let mut hosts: Vec<HostRule> = LOOPBACK_NAMES
            .iter()
            .map(|h| HostRule {
                host: (*h).to_owned(),
                port: None,
            })
            .collect();
        if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
            let host = match bound {
                SocketAddr::V4(a) => a.ip().to_string(),
                SocketAddr::V6(a) => format!("[{}]", a.ip()),
            };
            hosts.push(HostRule { host, port: None });
        }
        let mut any_host = false;
        for h in &config.allowed_hosts {
            if h.trim() == "*" {
                any_host = true;
                continue;
            }
            let (host, port) = split_host_port(h).ok_or_else(|| {
                Error::config(
                    "--allowed-host",
                    format!("{h:?} is not of the form name[:port]"),
                )
            })?;
            hosts.push(HostRule {
                host: host.to_ascii_lowercase(),
                port,
            });
        }
        let mut any_origin = false;
        let mut origins = Vec::new();
        for o in &config.allowed_origins {
            if o.trim() == "*" {
                any_origin = true;
                continue;
            }
            let (scheme, host, port) = normalize_origin(o).ok_or_else(|| {
                Error::config(
                    "--allowed-origin",
                    format!("{o:?} is not of the form scheme://host[:port]"),
                )
            })?;
            origins.push(origin_string(&scheme, &host, port));
        }
        Ok(Guard {
            any_host,
            hosts,
            any_origin,
            origins,
            bearer: Bearer::new(config, validator)?,
        })
    }

    /// True when requests need a bearer token.
    pub(crate) fn requires_token(&self) -> bool {
        self.bearer.required()
    }

    /// The scopes every request needs.
    pub(crate) fn scopes(&self) -> &[String] {
        self.bearer.scopes()
    }

    /// The bearer-token check: `Ok(Some)` is the identity a JWT access token verified.
    pub(crate) async fn check_token(
        &self,
        headers: &HeaderMap,
    ) -> Result<Option<Arc<Identity>>, Refusal> {
        self.bearer.check(headers).await
    }

    /// The token of a request whose `identity` an authorization server's token verified
    /// (not an API key's), for tools that exchange it.
    pub(crate) fn subject_token(
        &self,
        headers: &HeaderMap,
        identity: &Arc<Identity>,
    ) -> Option<toolwright_server::SubjectToken> {
        self.bearer.subject_token(headers, identity)
    }

    /// The `Host` and `Origin` checks, applied to every request: exactly one `Host` (when
    /// any), allowed; an absolute-form target's authority allowed and the same as `Host`; at
    /// most one `Origin`, allowed.
    pub(crate) fn check_site(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            return Err(Refusal::DuplicateHost);
        }
        if let Some(authority) = uri.authority() {
            // RFC 9112 §3.2.2: the target's authority is the one that counts, so it passes
            // the same check; a `Host` that names something else is refused outright.
            let target = authority.as_str();
            if !self.any_host && !self.host_allowed(target) {
                return Err(Refusal::ForeignTarget);
            }
            if let Some(h) = host {
                let default_port = if uri.scheme_str() == Some("https") {
                    443
                } else {
                    80
                };
                let same = h
                    .to_str()
                    .ok()
                    .is_some_and(|h| same_authority(h, target, default_port));
                if !same {
                    return Err(Refusal::TargetNotHost);
                }
            }
        } else if !self.any_host {
            let host = host.ok_or(Refusal::MissingHost)?;
            let host = host.to_str().map_err(|_| Refusal::ForeignHost)?;
            if !self.host_allowed(host) {
                return Err(Refusal::ForeignHost);
            }
        }
        let mut origins = headers.get_all(ORIGIN).iter();
        if let Some(origin) = origins.next() {
            if origins.next().is_some() {
                return Err(Refusal::DuplicateOrigin);
            }
            if !self.any_origin {
                let origin = origin.to_str().map_err(|_| Refusal::ForeignOrigin)?;
                if !self.origin_allowed(origin) {
                    return Err(Refusal::ForeignOrigin);
                }
            }
        }
        Ok(())
    }

    fn host_allowed(&self, value: &str) -> bool {
        let Some((host, port)) = split_host_port(value) else {
            return false;
        };
        self.hosts
            .iter()
            .any(|r| r.host.eq_ignore_ascii_case(host) && (r.port.is_none() || r.port == port))
    }

    pub(crate) fn origin_allowed(&self, value: &str) -> bool {
        if self.any_origin {
            return true;
        }
        // One serialized origin: a list (`a b`, `a,b`) is not one.
        if value.trim().contains([',', ' ', '\t']) {
            return false;
        }
        let Some((scheme, host, port)) = normalize_origin(value) else {
            return false;
        };
        if matches!(scheme.as_str(), "http" | "https") && LOOPBACK_NAMES.contains(&host.as_str()) {
            return true;
        }
        let s = origin_string(&scheme, &host, port);
        self.origins.contains(&s)
    }
}

/// The parts of an absolute `http(s)` URL this crate needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitUrl {
    /// `scheme://authority`.
    pub origin: String,
    /// The path, `""` or starting with `/`, without query or fragment.
    pub path: String,
}

pub(crate) fn split_url(url: &str) -> Option<SplitUrl> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.is_empty() {
        return None;
    }
    let tail = &rest[end..];
    let path = tail.split(['?', '#']).next().unwrap_or("");
    Some(SplitUrl {
        origin: format!("{scheme}://{authority}"),
        path: path.trim_end_matches('/').to_owned(),
    })
}

/// Where the Protected Resource Metadata of `resource` lives (RFC 9728 §3.1: the
/// well-known segment goes between the authority and the path).
pub(crate) fn metadata_url(resource: &SplitUrl) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource{}",
        resource.origin, resource.path
    )
}

/// The Protected Resource Metadata document (`scopes`: `scopes_supported`, when any).
pub(crate) fn metadata_document(
    resource: &str,
    authorization_servers: &[String],
    scopes: &[String],
) -> Vec<u8> {
    let mut doc = serde_json::Map::new();
    doc.insert("resource".into(), resource.into());
    if !authorization_servers.is_empty() {
        doc.insert(
            "authorization_servers".into(),
            authorization_servers.to_vec().into(),
        );
    }
    if !scopes.is_empty() {
        doc.insert("scopes_supported".into(), scopes.to_vec().into());
    }
    doc.insert(
        "bearer_methods_supported".into(),
        serde_json::json!(["header"]),
    );
    serde_json::to_vec(&doc).expect("a JSON map serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn guard(hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        let config = HttpConfig {
            allowed_hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
            allowed_origins: origins.iter().map(|s| (*s).to_owned()).collect(),
            auth_token: token.map(str::to_owned),
            ..HttpConfig::default()
        };
        Guard::new(&config, "127.0.0.1:8080".parse().unwrap(), None).unwrap()
    }

    #[test]
    fn host_port_splitting() {
        let check = |s: &str, want: Option<(&str, Option<u16>)>| {
            assert_eq!(split_host_port(s), want, "{s}");
        };
        check("localhost", Some(("localhost", None)));
        check("LocalHost:8080", Some(("LocalHost", Some(8080))));
        check("[::1]:3000", Some(("[::1]", Some(3000))));
        check("[::1]", Some(("[::1]", None)));
        check("[::1]x", None);
        check("a:b", None);
        check("", None);
        check("evil.com/x", None);
    }

    #[test]
    fn hosts() {
        let g = guard(&["mcp.example.com", "api.example.com:443"], &[], None);
        let check = |host: &str, ok: bool| assert_eq!(g.host_allowed(host), ok, "{host}");
        check("localhost:8080", true);
        check("127.0.0.1", true);
        check("[::1]:1", true);
        check("mcp.example.com:9", true);
        check("api.example.com:443", true);
        check("api.example.com:80", false);
        check("evil.example:8080", false);
        check("127.0.0.2:8080", false);
        let origin_form = Uri::from_static("/mcp");
        assert_eq!(
            g.check_site(&origin_form, &HeaderMap::new()),
            Err(Refusal::MissingHost)
        );
    }

    #[test]
    fn origins() {
        let g = guard(
            &[],
            &["https://app.example.com", "http://tool.example:8000/"],
            None,
        );
        let check = |origin: &str, ok: bool| assert_eq!(g.origin_allowed(origin), ok, "{origin}");
        check("http://localhost:5173", true);
        check("https://127.0.0.1", true);
        check("http://[::1]:80", true);
        check("https://app.example.com", true);
        check("HTTPS://APP.example.com/", true);
        check("http://app.example.com", false);
        check("http://tool.example:8000", true);
        check("http://tool.example:8001", false);
        check("null", false);
        check("file://localhost", false);
        check("http://localhost.evil.com", false);
        // One origin, not a list.
        check("http://localhost:5173 https://evil.example", false);
        check("http://localhost,https://evil.example", false);
        check("http://localhost, http://localhost", false);
        assert!(guard(&[], &["*"], None).origin_allowed("https://anything.example"));
    }

    fn site(g: &Guard, target: &str, pairs: &[(http::HeaderName, &str)]) -> Result<(), Refusal> {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        g.check_site(&target.parse::<Uri>().unwrap(), &h)
    }

    #[test]
    fn site_check_order() {
        let g = guard(&[], &[], None);
        let check =
            |target: &str, pairs: &[(http::HeaderName, &str)], want: Result<(), Refusal>| {
                assert_eq!(site(&g, target, pairs), want, "{target} {pairs:?}");
            };
        let local = || (HOST, "localhost:1");
        check("/mcp", &[local(), (ORIGIN, "http://localhost:2")], Ok(()));
        check(
            "/mcp",
            &[local(), (ORIGIN, "https://evil.example")],
            Err(Refusal::ForeignOrigin),
        );
        check(
            "/mcp",
            &[(HOST, "evil.example"), (ORIGIN, "http://localhost")],
            Err(Refusal::ForeignHost),
        );
        // Duplicates: Host is a 400 (RFC 9112 §3.2), Origin a 403, whatever their order.
        check(
            "/mcp",
            &[local(), (HOST, "evil.example")],
            Err(Refusal::DuplicateHost),
        );
        check("/mcp", &[local(), local()], Err(Refusal::DuplicateHost));
        check(
            "/mcp",
            &[(HOST, "evil.example"), local()],
            Err(Refusal::DuplicateHost),
        );
        let own = || (ORIGIN, "http://localhost:1");
        check(
            "/mcp",
            &[local(), own(), (ORIGIN, "https://evil.example")],
            Err(Refusal::DuplicateOrigin),
        );
        check(
            "/mcp",
            &[local(), own(), own()],
            Err(Refusal::DuplicateOrigin),
        );
        check(
            "/mcp",
            &[
                local(),
                (ORIGIN, "http://localhost:1, https://evil.example"),
            ],
            Err(Refusal::ForeignOrigin),
        );
        // Absolute-form targets: the authority is checked like Host, and must be Host.
        check(
            "http://evil.example/mcp",
            &[local()],
            Err(Refusal::ForeignTarget),
        );
        check("http://evil.example/mcp", &[], Err(Refusal::ForeignTarget));
        check(
            "http://user@localhost:1/mcp",
            &[local()],
            Err(Refusal::ForeignTarget),
        );
        check("http://localhost:1/mcp", &[local()], Ok(()));
        check("http://LOCALHOST:1/mcp", &[local()], Ok(()));
        check("http://localhost:1/mcp", &[], Ok(()));
        check("http://localhost/mcp", &[(HOST, "localhost:80")], Ok(()));
        check("https://localhost/mcp", &[(HOST, "localhost:443")], Ok(()));
        check(
            "http://localhost:2/mcp",
            &[local()],
            Err(Refusal::TargetNotHost),
        );
        check(
            "http://127.0.0.1:1/mcp",
            &[local()],
            Err(Refusal::TargetNotHost),
        );
        let any = guard(&["*"], &[], None);
        assert_eq!(site(&any, "/mcp", &[(HOST, "x.example")]), Ok(()));
        assert_eq!(
            site(&any, "http://y.example/mcp", &[(HOST, "y.example")]),
            Ok(())
        );
        assert_eq!(
            site(&any, "http://y.example/mcp", &[(HOST, "x.example")]),
            Err(Refusal::TargetNotHost)
        );
        assert_eq!(
            site(&any, "/mcp", &[(HOST, "x.example"), (HOST, "x.example")]),
            Err(Refusal::DuplicateHost)
        );
    }

    #[test]
    fn bad_settings_are_errors() {
        let bad = HttpConfig {
            allowed_hosts: vec!["a b".into()],
            ..HttpConfig::default()
        };
        assert!(Guard::new(&bad, "127.0.0.1:1".parse().unwrap(), None).is_err());
        let bad = HttpConfig {
            allowed_origins: vec!["example.com".into()],
            ..HttpConfig::default()
        };
        assert!(Guard::new(&bad, "127.0.0.1:1".parse().unwrap(), None).is_err());
        assert!(guard(&[], &[], Some("s3cret")).requires_token());
        assert!(!guard(&[], &[], None).requires_token());
    }

    #[test]
    fn bound_address_is_an_allowed_host() {
        let g = Guard::new(&HttpConfig::default(), "10.1.2.3:80".parse().unwrap(), None).unwrap();
        assert!(g.host_allowed("10.1.2.3:80"));
        assert!(!g.host_allowed("10.1.2.4:80"));
    }

    #[test]
    fn urls() {
        let u = split_url("https://mcp.example.com/mcp?x=1").unwrap();
        assert_eq!(
            u,
            SplitUrl {
                origin: "https://mcp.example.com".into(),
                path: "/mcp".into()
            }
        );
        assert_eq!(
            metadata_url(&u),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let root = split_url("http://127.0.0.1:9/").unwrap();
        assert_eq!(
            metadata_url(&root),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource"
        );
        assert_eq!(split_url("ftp://x/y"), None);
        assert_eq!(split_url("https:///mcp"), None);
        assert_eq!(split_url("mcp.example.com"), None);
    }

    #[test]
    fn metadata() {
        let doc: serde_json::Value = serde_json::from_slice(&metadata_document(
            "https://a/mcp",
            &["https://auth".into()],
            &[],
        ))
        .unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"resource": "https://a/mcp", "authorization_servers": ["https://auth"], "bearer_methods_supported": ["header"]})
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&metadata_document("https://a/mcp", &[], &[])).unwrap();
        assert!(doc.get("authorization_servers").is_none());
        let doc: serde_json::Value = serde_json::from_slice(&metadata_document(
            "https://a/mcp",
            &["https://auth".into()],
            &["read".into(), "write".into()],
        ))
        .unwrap();
        assert_eq!(
            doc["scopes_supported"],
            serde_json::json!(["read", "write"])
        );
    }
}
