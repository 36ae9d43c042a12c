//! Where metadata is looked for (RFC 9728, RFC 8414, OpenID Connect Discovery, as the MCP
//! authorization spec orders them), what a `WWW-Authenticate` challenge says, and which
//! scope to ask for.

use std::collections::BTreeMap;

use serde_json::Value;
use url::Url;

/// The parameters of a `Bearer` challenge (RFC 6750 §3), names lower-cased.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    pub params: BTreeMap<String, String>,
}

impl BearerChallenge {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

/// The first `Bearer` or `DPoP` challenge (RFC 9449 §7.1, the same parameters) among the
/// header values (RFC 9110 §11.6.1 syntax: a scheme, then `name=token` or `name="quoted"`
/// pairs separated by commas; several challenges may share one value).
pub(crate) fn bearer_challenge(values: &[String]) -> Option<BearerChallenge> {
    values.iter().find_map(|v| parse_challenges(v))
}

fn parse_challenges(value: &str) -> Option<BearerChallenge> {
    let mut rest = value.trim();
    let mut current: Option<(String, BearerChallenge)> = None;
    let mut found = None;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            break;
        }
        // A token: a scheme, or a parameter's name.
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if let Some(v) = after.strip_prefix('=')
            && !v.starts_with('=')
        {
            let v = v.trim_start();
            let (val, remaining) = if let Some(q) = v.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = q.char_indices();
                let mut close = q.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => {
                            close = i + 1;
                            break;
                        }
                        _ => out.push(c),
                    }
                }
                (out, &q[close.min(q.len())..])
            } else {
                let e = v.find([',', ' ', '\t']).unwrap_or(v.len());
                (v[..e].to_owned(), &v[e..])
            };
            if let Some((_, ch)) = current.as_mut() {
                ch.params.insert(token.to_ascii_lowercase(), val);
            }
            rest = remaining;
        } else {
            // A new scheme (or a token68, which Bearer challenges do not use).
            if let Some((scheme, ch)) = current.take()
                && token_scheme(&scheme)
                && found.is_none()
            {
                found = Some(ch);
            }
            current = Some((token.to_owned(), BearerChallenge::default()));
            rest = after;
        }
    }
    if let Some((scheme, ch)) = current
        && token_scheme(&scheme)
        && found.is_none()
    {
        found = Some(ch);
    }
    found
}

/// The schemes of access token challenges: `Bearer`, and `DPoP` for sender-constrained
/// tokens.
fn token_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop")
}

/// RFC 9728 §3.1: the well-known protected resource metadata URLs for a resource, the
/// path-based one first, then the root one.
pub(crate) fn resource_metadata_urls(resource: &Url) -> Vec<Url> {
    well_known(resource, "oauth-protected-resource")
}

fn well_known(url: &Url, name: &str) -> Vec<Url> {
    let mut base = url.clone();
    base.set_query(None);
    base.set_fragment(None);
    let path = url.path().trim_end_matches('/').to_owned();
    let mut out = Vec::new();
    if !path.is_empty() {
        let mut u = base.clone();
        u.set_path(&format!("/.well-known/{name}{path}"));
        out.push(u);
    }
    let mut u = base;
    u.set_path(&format!("/.well-known/{name}"));
    out.push(u);
    out
}

/// The MCP spec's order for an issuer's metadata: with a path, RFC 8414 path-inserted,
/// OpenID path-inserted, OpenID path-appended; without one, RFC 8414 then OpenID (the
/// places a protected resource looks too: [`toolwright_auth::metadata_paths`]).
pub(crate) fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let mut base = issuer.clone();
    base.set_query(None);
    base.set_fragment(None);
    toolwright_auth::metadata_paths(issuer.path())
        .into_iter()
        .map(|p| {
            let mut u = base.clone();
            u.set_path(&p);
            u
        })
        .collect()
}

/// The canonical resource URI of an MCP endpoint (RFC 8707, as the spec writes it): no
/// fragment, no query.
pub(crate) fn canonical_resource(url: &Url) -> Url {
    let mut u = url.clone();
    u.set_fragment(None);
    u.set_query(None);
    u
}

/// Whether protected resource metadata's `resource` may stand for the endpoint: the same
/// origin, and the endpoint's path at or below the metadata's (RFC 9728 §3.3 wants
/// equality with the URL the metadata was derived from; the MCP spec lets a server name a
/// parent of its endpoint).
pub(crate) fn resource_matches(advertised: &str, endpoint: &Url) -> bool {
    let Ok(adv) = Url::parse(advertised) else {
        return false;
    };
    if adv.origin() != endpoint.origin() {
        return false;
    }
    let a = adv.path().trim_end_matches('/');
    let e = endpoint.path().trim_end_matches('/');
    e == a || e.starts_with(&format!("{a}/"))
}

/// The scope to ask for, in the spec's order: the challenge's `scope`, else the
/// protected resource metadata's `scopes_supported`, else none (the parameter omitted).
pub(crate) fn choose_scope(
    challenge: Option<&str>,
    resource_metadata: Option<&Value>,
) -> Option<String> {
    if let Some(s) = challenge.map(str::trim).filter(|s| !s.is_empty()) {
        return Some(s.to_owned());
    }
    let list = resource_metadata?.get("scopes_supported")?.as_array()?;
    let scopes: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The union of two space-separated scope lists, in first-seen order (a step-up keeps
/// what was already granted).
pub(crate) fn union_scopes(had: Option<&str>, wanted: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in had
        .unwrap_or("")
        .split_whitespace()
        .chain(wanted.split_whitespace())
    {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.join(" ")
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
