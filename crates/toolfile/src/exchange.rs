//! `exchange:` of an HTTP upstream: the caller's access token exchanged for one meant for
//! the upstream (RFC 8693 token exchange), as serde reads it and checked.
//!
//! ```yaml
//! servers:
//!   tickets:
//!     url: https://tickets.internal.example/mcp
//!     exchange:
//!       token_endpoint: https://auth.example.com/oauth/token
//!       audience: https://tickets.internal.example/mcp
//!       scope: tickets:read
//!       client_id: toolwright-gateway
//!       client_secret: ${GATEWAY_CLIENT_SECRET}
//! ```
//!
//! Nothing here sends a request: `toolwright-gateway` does, with these settings.

use crate::error::{Problem, Seg};
use crate::servers::{EraSpec, ServerSpec};
use crate::template::{Part, Template};
use serde::Deserialize;

/// `exchange:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeSpec {
    /// The authorization server's token endpoint (`https://`, or `http://` to this machine).
    pub token_endpoint: String,
    /// The `audience` asked for: the upstream as its authorization server names it.
    pub audience: String,
    /// The `scope` asked for (space-separated), if any.
    #[serde(default)]
    pub scope: Option<String>,
    /// The gateway's client id at the authorization server.
    pub client_id: String,
    /// Its secret, usually `${VAR}` (the gateway's variable); none for a public client.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// How the secret is sent [default: basic].
    #[serde(default)]
    pub client_auth: Option<ClientAuth>,
}

/// How the gateway authenticates to the token endpoint with its secret.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// HTTP Basic (`client_secret_basic`).
    #[default]
    Basic,
    /// In the form (`client_secret_post`).
    Post,
}

/// `exchange:`, checked.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The token endpoint.
    pub token_endpoint: String,
    /// The audience asked for.
    pub audience: String,
    /// The scope asked for, if any.
    pub scope: Option<String>,
    /// The gateway's client id.
    pub client_id: String,
    /// Its secret, a `${VAR}` template filled from the gateway's environment at start.
    pub client_secret: Option<Template>,
    /// How the secret is sent.
    pub client_auth: ClientAuth,
}

/// Checks the `exchange:` of a server whose transport is HTTP (`http`) or not.
pub(crate) fn check(
    spec: &ServerSpec,
    http: bool,
    problems: &mut Vec<Problem>,
) -> Option<Exchange> {
    let x = spec.exchange.as_ref()?;
    let before = problems.len();
    let at = |key: &str| vec![Seg::from("exchange"), Seg::from(key)];
    if !http {
        problems.push(Problem::new(
            ["exchange"],
            "`exchange` is for an HTTP server (`url`): a stdio server gets no caller's token",
        ));
    }
    if spec.era == EraSpec::Legacy {
        problems.push(Problem::new(
            ["exchange"],
            "`exchange` needs a modern (2026-07-28) upstream: a legacy session would be shared by every caller; drop `era: legacy`",
        ));
    }
    if let Some(why) = endpoint_problem(&x.token_endpoint) {
        problems.push(Problem::new(at("token_endpoint"), why));
    }
    for (key, value) in [("audience", &x.audience), ("client_id", &x.client_id)] {
        if value.trim().is_empty() {
            problems.push(Problem::new(at(key), format!("an empty `{key}`")));
        } else if value.chars().any(char::is_control) {
            problems.push(Problem::new(at(key), "holds control characters"));
        }
    }
    if let Some(s) = &x.scope
        && (s.trim().is_empty() || s.chars().any(char::is_control))
    {
        problems.push(Problem::new(
            at("scope"),
            "a scope is space-separated names, not empty, with no control characters",
        ));
    }
    let secret = match &x.client_secret {
        None => {
            if x.client_auth.is_some() {
                problems.push(Problem::new(
                    at("client_auth"),
                    "`client_auth` says how `client_secret` is sent, and there is none",
                ));
            }
            None
        }
        Some(s) => match Template::parse(s) {
            Err(e) => {
                problems.push(Problem::new(
                    at("client_secret"),
                    format!("at byte {}: {}", e.at, e.reason),
                ));
                None
            }
            Ok(t) if t.parts().iter().any(|p| matches!(p, Part::Arg(_))) => {
                problems.push(Problem::new(
                    at("client_secret"),
                    "a secret has no arguments to fill in: write `${VAR}`, the gateway's variable",
                ));
                None
            }
            Ok(t) if t.env_vars().next().is_none() => {
                problems.push(Problem::new(
                    at("client_secret"),
                    "a secret written in the file: put it in a variable and write `${VAR}`",
                ));
                None
            }
            Ok(t) => Some(t),
        },
    };
    (problems.len() == before).then(|| Exchange {
        token_endpoint: x.token_endpoint.clone(),
        audience: x.audience.clone(),
        scope: x.scope.clone(),
        client_id: x.client_id.clone(),
        client_secret: secret,
        client_auth: x.client_auth.unwrap_or_default(),
    })
}

/// What is wrong with a token endpoint: it is `https://`, or `http://` to this machine
/// (OAuth 2.1 §1.5), with a host, no user info and no fragment.
fn endpoint_problem(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let (https, rest) = match (
        lower.strip_prefix("https://"),
        lower.strip_prefix("http://"),
    ) {
        (Some(r), _) => (true, r),
        (None, Some(r)) => (false, r),
        (None, None) => return Some(format!("{url:?} is not an https:// URL")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Some(format!("{url:?} names no host"));
    }
    if authority.contains('@') {
        return Some("a token endpoint with user info is not accepted".into());
    }
    if url.contains('#') || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("a token endpoint holds no fragment, spaces or control characters".into());
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!https && !loopback).then(|| {
        "OAuth over plain http:// is accepted only to this machine (localhost); use https://"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::endpoint_problem;

    #[test]
    fn token_endpoints() {
        table! { |url: &str, want: Option<&str>| {
                let got = endpoint_problem(url);
                match want {
                    None => assert_eq!(got, None, "{url}"),
                    Some(w) => assert!(got.as_deref().is_some_and(|g| g.contains(w)), "{url}: {got:?}"),
                }
            };
            ("https://as.example/token", None);
            ("http://127.0.0.1:8080/token", None);
            ("http://localhost/token", None);
            ("http://[::1]:9/token", None);
            ("http://as.example/token", Some("only to this machine"));
            ("ftp://as.example/token", Some("not an https:// URL"));
            ("https:///token", Some("names no host"));
            ("https://u:p@as.example/token", Some("user info"));
            ("https://as.example/token#x", Some("fragment"));
        }
    }
}
