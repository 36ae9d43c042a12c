//! The URLs this crate fetches: an issuer or a `jwks_uri` checked once (absolute, `https`
//! or `http` to this machine, no user info), and where an issuer's metadata is looked for.

use crate::error::Error;
use hyper::Uri;
use toolwright_net::{AddrClass, classify, is_localhost};

/// A checked `http(s)` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpUrl {
    /// `scheme://authority`, as given.
    pub origin: String,
    /// The path without its trailing `/` (`""` for the root), as given.
    pub path: String,
    /// The query, with its `?` (`""` when none).
    pub query: String,
}

/// Whether `host` (as a URL writes it: IPv6 in brackets) is this machine.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    is_localhost(bare)
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| classify(ip).class == AddrClass::Loopback)
}

/// Checks `url` (`what` names it in errors): absolute, `https` (OAuth 2.1 §1.5) or `http`
/// to a loopback host, with a host and no user info; an issuer (`issuer`) has no query or
/// fragment either (RFC 8414 §2).
pub(crate) fn check(what: &'static str, url: &str, issuer: bool) -> Result<HttpUrl, Error> {
    let bad = |reason| Error::BadUrl {
        what,
        url: url.to_owned(),
        reason,
    };
    if url.contains('#') || (issuer && url.contains('?')) {
        return Err(bad(if issuer {
            "an issuer has no query or fragment"
        } else {
            "a URL fetched has no fragment"
        }));
    }
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let authority = uri
        .authority()
        .ok_or(bad("not an absolute URL (scheme://host/...)"))?;
    if authority.as_str().contains('@') {
        return Err(bad("a URL with user info is not accepted"));
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(bad("the URL has no host"));
    }
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if is_loopback(host) => {}
        Some("http") => {
            return Err(bad(
                "plain http:// is accepted only to this machine (localhost); use https://",
            ));
        }
        _ => return Err(bad("an http(s) URL is needed")),
    }
    let scheme = uri.scheme_str().unwrap_or("https");
    Ok(HttpUrl {
        origin: format!("{scheme}://{}", authority.as_str()),
        path: uri.path().trim_end_matches('/').to_owned(),
        query: uri.query().map(|q| format!("?{q}")).unwrap_or_default(),
    })
}

/// Where an issuer's metadata is looked for, as paths on the issuer's origin, in the order
/// of the MCP authorization spec: RFC 8414 with the issuer's path (`issuer_path`, without
/// its trailing `/`) inserted after the well-known segment (§3.1), then OpenID Connect
/// Discovery path-inserted, then OpenID path-appended; for an issuer without a path,
/// RFC 8414 then OpenID. The MCP client looks in the same places.
pub fn metadata_paths(issuer_path: &str) -> Vec<String> {
    let path = issuer_path.trim_end_matches('/');
    let mut paths = vec![
        format!("/.well-known/oauth-authorization-server{path}"),
        format!("/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        paths.push(format!("{path}/.well-known/openid-configuration"));
    }
    paths
}

/// [`metadata_paths`] on the issuer's origin.
pub(crate) fn metadata_urls(issuer: &HttpUrl) -> Vec<String> {
    metadata_paths(&issuer.path)
        .into_iter()
        .map(|p| format!("{}{p}", issuer.origin))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_testkit::table;

    #[test]
    fn urls_are_checked() {
        table! { |url: &str, issuer: bool, ok: bool| assert_eq!(check("issuer", url, issuer).is_ok(), ok, "{url}");
            ("https://auth.example.com", true, true);
            ("https://auth.example.com/tenant/", true, true);
            ("http://127.0.0.1:9000", true, true);
            ("http://localhost:9000/realms/x", true, true);
            ("http://[::1]:9000", true, true);
            ("http://auth.example.com", true, false);
            ("http://10.0.0.1", true, false);
            ("ftp://auth.example.com", true, false);
            ("auth.example.com", true, false);
            ("/relative", true, false);
            ("https://user@auth.example.com", true, false);
            ("https://auth.example.com?x=1", true, false);
            ("https://auth.example.com/jwks?x=1", false, true);
            ("https://auth.example.com/#frag", false, false);
        }
    }

    #[test]
    fn metadata_is_looked_for_where_the_spec_says() {
        let at = |issuer: &str| metadata_urls(&check("issuer", issuer, true).unwrap());
        assert_eq!(
            at("https://auth.example.com/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            at("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }
}
