//! Discovery before connecting (SEP-2127 and MCP's server-card extension): the Server Card
//! at `<MCP path>/server-card` (`/mcp/server-card`), served as
//! `application/mcp-server-card+json`, and the AI Catalog at `/.well-known/ai-catalog.json`,
//! whose one entry points at the card.
//!
//! The card is built from what the server says of itself once connected, so the two cannot
//! drift: `version`, `title` and `description` from its `serverInfo`, the remote's
//! `supportedProtocolVersions` from `server/discover`'s `supportedVersions`, its
//! capabilities (under `_meta`, `io.toolwright/capabilities`, the card having no field for
//! them), and the canonical URL of the endpoint (`--resource-url`, or the bound address).
//! With bearer authentication on, the remote names the `Authorization` header as required
//! and secret, and `_meta` (`io.toolwright/authorization`) the Protected Resource Metadata
//! URL and scopes. Both documents are rebuilt per request (the capabilities follow the
//! catalog), carry a strong `ETag` (a digest of their bytes), and answer a matching
//! `If-None-Match` with 304. They are public metadata: no token is asked, but the Host and
//! Origin checks of every request apply.

use crate::body::Body;
use crate::respond::{refuse, respond};
use bytes::Bytes;
use http::header::{
    ALLOW, CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue, IF_NONE_MATCH,
};
use http::{Method, Response, StatusCode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toolwright_server::Server;

/// The media type of a Server Card.
pub const CARD_TYPE: &str = "application/mcp-server-card+json";
/// The media type of an AI Catalog.
pub const CATALOG_TYPE: &str = "application/ai-catalog+json";
/// Where the AI Catalog is served.
pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";
/// What the card's path adds to the MCP endpoint's.
pub const CARD_SUFFIX: &str = "/server-card";
/// The `$schema` of the cards this server writes.
pub const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";

/// The longest `description` and `title` a card may carry (the card's schema).
const MAX_TEXT: usize = 100;

/// Which discovery document a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Document {
    Card,
    Catalog,
}

/// What the discovery documents say beyond the server's identity, fixed when the listener
/// binds.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The card's path on this server (`/mcp/server-card`).
    card_path: String,
    /// The MCP endpoint's canonical URL.
    endpoint: String,
    /// Bearer authentication: the Protected Resource Metadata URL and the scopes required.
    auth: Option<(String, Vec<String>)>,
}

impl Discovery {
    /// The documents of an endpoint served at `path` whose canonical URL is `endpoint`.
    pub(crate) fn new(path: &str, endpoint: &str, auth: Option<(String, Vec<String>)>) -> Self {
        Discovery {
            card_path: format!("{}{CARD_SUFFIX}", path.trim_end_matches('/')),
            endpoint: endpoint.to_owned(),
            auth,
        }
    }

    /// The document served at `path`, if any.
    pub(crate) fn document(&self, path: &str) -> Option<Document> {
        if path == self.card_path {
            Some(Document::Card)
        } else if path == CATALOG_PATH {
            Some(Document::Catalog)
        } else {
            None
        }
    }

    /// The card's URL, as the catalog gives it.
    fn card_url(&self) -> String {
        format!("{}{CARD_SUFFIX}", self.endpoint.trim_end_matches('/'))
    }

    /// The Server Card of `server`.
    pub(crate) fn card(&self, server: &Server) -> Value {
        let info = server.info();
        let mut remote = json!({
            "type": "streamable-http",
            "url": self.endpoint,
            "supportedProtocolVersions": Server::supported_versions(),
        });
        let mut meta = Map::new();
        meta.insert(
            "io.toolwright/capabilities".into(),
            serde_json::to_value(server.capabilities()).expect("capabilities serialize"),
        );
        if let Some((metadata_url, scopes)) = &self.auth {
            remote["headers"] = json!([{
                "name": "Authorization",
                "description": "A bearer token from the authorization server that the \
                                Protected Resource Metadata names",
                "isRequired": true,
                "isSecret": true,
                "value": "Bearer {token}",
                "variables": {"token": {"description": "The access token", "isRequired": true, "isSecret": true}}
            }]);
            meta.insert(
                "io.toolwright/authorization".into(),
                json!({"scheme": "bearer", "resourceMetadata": metadata_url, "scopes": scopes}),
            );
        }
        let title = info.title.as_deref().unwrap_or(&info.name);
        let description = info
            .description
            .clone()
            .unwrap_or_else(|| format!("The MCP server {title}, version {}", info.version));
        let mut card = json!({
            "$schema": CARD_SCHEMA,
            "name": self.card_name(&info.name),
            "version": info.version,
            "description": clip(&description),
            "title": clip(title),
            "remotes": [remote],
            "_meta": meta,
        });
        if let Some(url) = &info.website_url {
            card["websiteUrl"] = json!(url);
        }
        if let Some(icons) = &info.icons {
            card["icons"] = serde_json::to_value(icons).expect("icons serialize");
        }
        card
    }

    /// The card's `name`: the server's own when it is already `namespace/name`, else the
    /// server's name under the reversed host of the endpoint (`com.example/toolwright` for
    /// `https://example.com/mcp`; an IP address stays as it is).
    fn card_name(&self, name: &str) -> String {
        let safe = |s: &str, extra: &[char]| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || extra.contains(&c) {
                        c
                    } else {
                        '-'
                    }
                })
                .collect()
        };
        if let Some((ns, n)) = name.split_once('/')
            && !n.contains('/')
            && !ns.is_empty()
            && !n.is_empty()
        {
            return format!("{}/{}", safe(ns, &['.', '-']), safe(n, &['.', '_', '-']));
        }
        format!(
            "{}/{}",
            safe(&self.namespace(), &['.', '-']),
            safe(name, &['.', '_', '-'])
        )
    }

    fn namespace(&self) -> String {
        let host = host_of(&self.endpoint);
        if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            return host.trim_matches(['[', ']']).replace(':', "-");
        }
        host.rsplit('.').collect::<Vec<_>>().join(".")
    }

    /// The AI Catalog: one entry, this server's card.
    pub(crate) fn catalog(&self, server: &Server) -> Value {
        let host = host_of(&self.endpoint);
        let name = self.card_name(&server.info().name);
        let short = name.rsplit('/').next().unwrap_or(&name);
        json!({
            "specVersion": "1.0",
            "entries": [{
                "identifier": format!("urn:air:{host}:mcp:{short}"),
                "type": CARD_TYPE,
                "url": self.card_url(),
            }]
        })
    }

    /// Answers a request for `which`.
    pub(crate) fn serve(
        &self,
        server: &Server,
        which: Document,
        method: &Method,
        headers: &HeaderMap,
    ) -> Response<Body> {
        match *method {
            Method::GET | Method::HEAD => {}
            Method::OPTIONS => return preflight(),
            _ => {
                let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, None, "use GET");
                r.headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
                return r;
            }
        }
        let (doc, media) = match which {
            Document::Card => (self.card(server), CARD_TYPE),
            Document::Catalog => (self.catalog(server), CATALOG_TYPE),
        };
        let bytes = Bytes::from(serde_json::to_vec(&doc).expect("documents serialize"));
        let etag = entity_tag(&bytes);
        let unchanged = headers
            .get_all(IF_NONE_MATCH)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| none_match_hits(v, &etag)));
        let mut r = if unchanged {
            respond(StatusCode::NOT_MODIFIED, Body::Empty)
        } else {
            let mut r = respond(StatusCode::OK, Body::Full(Some(bytes)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(media));
            r
        };
        let h = r.headers_mut();
        h.insert(
            ETAG,
            HeaderValue::from_str(&etag).expect("hex in quotes is a valid header"),
        );
        h.insert(
            CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=3600"),
        );
        cors(h);
        r
    }
}

/// A strong entity tag: the first 128 bits of the SHA-256 of the bytes, in hex, quoted.
fn entity_tag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("\"{}\"", data_encoding::HEXLOWER.encode(&digest[..16]))
}

/// Whether an `If-None-Match` value names `etag` (weak comparison, as RFC 9110 §13.1.2
/// asks for this header; `*` names any).
fn none_match_hits(value: &str, etag: &str) -> bool {
    value
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// The host of an absolute URL (without the port).
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.starts_with('[') {
        return authority
            .split_once(']')
            .map_or(authority.to_owned(), |(h, _)| format!("{h}]"));
    }
    authority
        .split(':')
        .next()
        .unwrap_or(authority)
        .to_ascii_lowercase()
}

/// At most [`MAX_TEXT`] characters, as the card's schema asks.
fn clip(text: &str) -> String {
    text.chars().take(MAX_TEXT).collect()
}

/// The CORS headers the server-card extension asks for: public, read-only documents.
fn cors(h: &mut HeaderMap) {
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("GET, HEAD"),
    );
    h.insert(
        "access-control-allow-headers",
        HeaderValue::from_static("Content-Type, If-None-Match"),
    );
    h.insert(
        "access-control-expose-headers",
        HeaderValue::from_static("ETag"),
    );
}

fn preflight() -> Response<Body> {
    let mut r = respond(StatusCode::NO_CONTENT, Body::Empty);
    cors(r.headers_mut());
    r.headers_mut()
        .insert("access-control-max-age", HeaderValue::from_static("600"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discovery(endpoint: &str) -> Discovery {
        Discovery::new("/mcp", endpoint, None)
    }

    #[test]
    fn paths() {
        let d = discovery("http://127.0.0.1:1/mcp");
        assert_eq!(d.document("/mcp/server-card"), Some(Document::Card));
        assert_eq!(
            d.document("/.well-known/ai-catalog.json"),
            Some(Document::Catalog)
        );
        assert_eq!(d.document("/mcp"), None);
        assert_eq!(d.card_url(), "http://127.0.0.1:1/mcp/server-card");
    }

    #[test]
    fn names() {
        let cases = [
            (
                "https://mcp.example.com/mcp",
                "toolwright",
                "com.example.mcp/toolwright",
            ),
            (
                "http://127.0.0.1:8080/mcp",
                "toolwright",
                "127.0.0.1/toolwright",
            ),
            ("http://[::1]:8080/mcp", "tw", "--1/tw"),
            (
                "https://example.com/mcp",
                "org.acme/weather",
                "org.acme/weather",
            ),
            (
                "https://example.com/mcp",
                "my server",
                "com.example/my-server",
            ),
        ];
        for (endpoint, name, want) in cases {
            assert_eq!(
                discovery(endpoint).card_name(name),
                want,
                "{endpoint} {name}"
            );
        }
    }

    #[test]
    fn if_none_match() {
        let tag = entity_tag(b"card");
        assert!(none_match_hits(&tag, &tag));
        assert!(none_match_hits(&format!("\"x\", W/{tag}"), &tag));
        assert!(none_match_hits("*", &tag));
        assert!(!none_match_hits("\"other\"", &tag));
        assert_ne!(entity_tag(b"card"), entity_tag(b"card2"));
    }

    #[test]
    fn clipping() {
        assert_eq!(clip(&"x".repeat(150)).len(), 100);
        assert_eq!(clip("short"), "short");
    }
}
