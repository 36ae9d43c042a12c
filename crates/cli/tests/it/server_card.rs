//! Discovery before connecting (SEP-2127): the Server Card at `/mcp/server-card` and the AI
//! Catalog at `/.well-known/ai-catalog.json`, over a real socket: their media types, a card
//! that says what `server/discover` says, strong entity tags and 304, the catalog's entry
//! pointing at the card, the Host check, and what the card says when a token is required.

use crate::http_client::*;
use serde_json::{Value, json};

const CARD: &str = "/mcp/server-card";
const CATALOG: &str = "/.well-known/ai-catalog.json";

fn discover(s: &HttpServer, extra: &[(&str, &str)]) -> Value {
    let mut h = modern_headers("server/discover", None);
    h.extend_from_slice(extra);
    let r = s.post(&h, &modern_request(1, "server/discover", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

#[test]
fn the_card_says_what_discover_says() {
    let s = HttpServer::start(&[]);
    let r = s.send(
        "GET",
        CARD,
        &[("accept", "application/mcp-server-card+json")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/mcp-server-card+json")
    );
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let card = r.json();
    let found = discover(&s, &[]);
    let info = &found["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        card["$schema"],
        "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    );
    let name = card["name"].as_str().unwrap();
    assert_eq!(
        name.split_once('/').map(|(_, n)| n),
        info["name"].as_str(),
        "namespace/name, the name being serverInfo's: {name}"
    );
    assert_eq!(card["version"], info["version"]);
    assert_eq!(card["title"], info["title"]);
    assert_eq!(card["description"], info["description"]);
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["url"], s.url());
    assert_eq!(
        remote["supportedProtocolVersions"], found["supportedVersions"],
        "the versions of server/discover"
    );
    assert_eq!(
        card["_meta"]["io.toolwright/capabilities"],
        found["capabilities"]
    );
    assert!(remote.get("headers").is_none(), "no token, no header");
    assert!(card["_meta"].get("io.toolwright/authorization").is_none());

    // HEAD: the headers of GET, no body.
    let mut c = s.conn();
    c.send("HEAD", CARD, &[], b"");
    let (status, headers) = c.head();
    assert_eq!(status, 200);
    let etag_of = |h: &[(String, String)]| {
        h.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("etag"))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(etag_of(&headers).as_deref(), r.header("etag"));
}

#[test]
fn entity_tags_and_not_modified() {
    let s = HttpServer::start(&[]);
    for path in [CARD, CATALOG] {
        let r = s.send("GET", path, &[], b"");
        assert_eq!(r.status, 200);
        let etag = r.header("etag").expect("an ETag").to_owned();
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
            "a strong tag: {etag}"
        );
        assert_eq!(
            s.send("GET", path, &[], b"").header("etag"),
            Some(etag.as_str()),
            "the same document, the same tag"
        );
        let r = s.send("GET", path, &[("if-none-match", &etag)], b"");
        assert_eq!(r.status, 304, "{path}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("etag"), Some(etag.as_str()));
        let listed = format!("\"other\", W/{etag}");
        let r = s.send("GET", path, &[("if-none-match", &listed)], b"");
        assert_eq!(r.status, 304, "a list, a weak form of the tag");
        let r = s.send("GET", path, &[("if-none-match", "\"stale\"")], b"");
        assert_eq!(r.status, 200, "another tag gets the document");
        assert!(!r.body.is_empty());
        let r = s.send("POST", path, &[("content-type", "application/json")], b"{}");
        assert_eq!(r.status, 405, "{path} is read-only");
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
    }
}

#[test]
fn the_catalog_points_at_the_card() {
    let s = HttpServer::start(&[]);
    let r = s.send("GET", CATALOG, &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/ai-catalog+json")
    );
    let catalog = r.json();
    let entries = catalog["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{catalog}");
    let entry = &entries[0];
    assert_eq!(entry["type"], "application/mcp-server-card+json");
    assert!(
        entry["identifier"]
            .as_str()
            .unwrap()
            .starts_with("urn:air:")
    );
    let url = entry["url"].as_str().unwrap();
    assert_eq!(url, format!("{}/server-card", s.url()));
    // Following it gets the card.
    let path = url.split_once(&s.addr.to_string()).unwrap().1;
    let card = s.send("GET", path, &[], b"");
    assert_eq!(card.status, 200);
    assert_eq!(card.json()["remotes"][0]["url"], s.url());
}

#[test]
fn a_foreign_host_or_origin_is_refused() {
    let s = HttpServer::start(&[]);
    for path in [CARD, CATALOG] {
        let r = s.send("GET", path, &[("host", "evil.example")], b"");
        assert_eq!(r.status, 403, "DNS rebinding protection on {path}");
        assert!(r.header("etag").is_none());
        let r = s.send("GET", path, &[("origin", "https://evil.example")], b"");
        assert_eq!(r.status, 403, "a foreign Origin on {path}");
        let r = s.send("GET", path, &[("host", "localhost")], b"");
        assert_eq!(r.status, 200, "a local Host on {path}");
    }
}

#[test]
fn with_a_token_required_the_card_says_so_and_asks_none() {
    let s = HttpServer::start_with_env(
        &[
            "--auth-token-env",
            "TW_CARD_TOKEN",
            "--authorization-server",
            "https://auth.example",
        ],
        &[("TW_CARD_TOKEN", "card-token")],
    );
    let r = s.send("GET", CARD, &[], b"");
    assert_eq!(r.status, 200, "public metadata: {}", r.text());
    let card = r.json();
    let header = &card["remotes"][0]["headers"][0];
    assert_eq!(header["name"], "Authorization");
    assert_eq!(header["isRequired"], true);
    assert_eq!(header["isSecret"], true);
    let auth = &card["_meta"]["io.toolwright/authorization"];
    assert_eq!(auth["scheme"], "bearer");
    assert_eq!(
        auth["resourceMetadata"],
        format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr)
    );
    assert!(!r.text().contains("card-token"), "no secret on the card");
    // The same card as the token holder sees in discover.
    let found = discover(&s, &[("authorization", "Bearer card-token")]);
    assert_eq!(
        card["remotes"][0]["supportedProtocolVersions"],
        found["supportedVersions"]
    );
    assert_eq!(s.send("GET", CATALOG, &[], b"").status, 200);
}
