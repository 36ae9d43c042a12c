//! Which URLs the browser may load: the scheme, and the class of every address the host
//! resolves to.
//!
//! The page the caller names must be `http` or `https`. Its host is resolved here (an IP
//! literal is taken as is; `localhost` and `*.localhost` are loopback without asking DNS,
//! as Chromium treats them) and every address must be admitted: public addresses always,
//! loopback unless the operator turned it off, everything else (private, link-local,
//! unspecified, shared, documentation, multicast, reserved) only when the operator allowed
//! private addresses. The address classes, that decision and the resolution that applies it
//! are in `toolwright_net` ([`toolwright_net::resolve_checked`]).
//!
//! The browser's own connections are policed by `proxy`, which applies the same [`Policy`]
//! where the socket is opened; [`RequestChecker`] refuses early, without DNS, what can be
//! read from a request's URL. A page that is not itself on loopback may not load loopback
//! URLs, so a public page cannot pull the local machine's services into a screenshot.

use super::error::Refusal;
use std::net::{IpAddr, Ipv4Addr};
pub(crate) use toolwright_net::{AddrClass, AddressPolicy, Classified, classify, is_localhost};
use toolwright_net::{Error as NetError, SystemResolver};
use url::{Host, Url};

/// Whether loopback addresses may be loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loopback {
    /// Yes.
    Allowed,
    /// No: the operator turned loopback off.
    Disabled,
    /// No: the page being captured is not on loopback itself.
    NotFromPublicPage,
}

/// What may be loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Private, link-local, reserved… addresses are allowed.
    pub allow_private: bool,
    /// Loopback addresses.
    pub loopback: Loopback,
}

impl Policy {
    /// The policy for the requests of a page whose own host was (`true`) or was not on
    /// loopback.
    pub fn for_page(self, page_on_loopback: bool) -> Policy {
        match self.loopback {
            Loopback::Allowed if !page_on_loopback => Policy {
                loopback: Loopback::NotFromPublicPage,
                ..self
            },
            _ => self,
        }
    }

    /// The address classes this policy admits, as `toolwright_net` applies them.
    pub fn address_policy(&self) -> AddressPolicy {
        AddressPolicy {
            allow_private: self.allow_private,
            allow_loopback: self.loopback == Loopback::Allowed,
        }
    }

    /// `None` when the address may be loaded; otherwise what to tell the caller.
    pub fn refuses(&self, ip: IpAddr) -> Option<(Classified, &'static str)> {
        let c = self.address_policy().refuses(ip)?;
        Some((c, self.hint(c.class)))
    }

    /// What the caller is told about a refused address of class `class`.
    fn hint(&self, class: AddrClass) -> &'static str {
        match class {
            AddrClass::Loopback => match self.loopback {
                Loopback::Disabled | Loopback::Allowed => {
                    "this server refuses loopback pages: it was started with --screenshot-no-loopback, or serves HTTP beyond loopback without --screenshot-allow-loopback"
                }
                Loopback::NotFromPublicPage => {
                    "only pages that are themselves on loopback may load loopback addresses"
                }
            },
            AddrClass::Unspecified => {
                "it reaches the local machine; it needs --screenshot-allow-private and loopback allowed"
            }
            _ => "the server allows non-public addresses only with --screenshot-allow-private",
        }
    }
}

/// Where a URL's host points, before DNS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An IP literal.
    Ip(IpAddr),
    /// `localhost` or a name under `.localhost`: loopback, whatever DNS says.
    Localhost,
    /// A name to resolve, with the port to resolve it for.
    Name(String, u16),
}

/// What a URL is, once its scheme and host were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `http` or `https`, with where the host points.
    Web(Target),
    /// `data:` and `blob:`: no network (only accepted for a page's own requests).
    Local,
}

/// Parses a URL and reads its scheme and host; `page` is true for the URL the caller asked
/// for, which must be `http` or `https`.
pub(crate) fn parse(text: &str, page: bool) -> Result<(Url, Kind), Refusal> {
    let url = Url::parse(text.trim()).map_err(|e| Refusal::Unparsable {
        url: text.to_owned(),
        reason: e.to_string(),
    })?;
    match url.scheme() {
        "http" | "https" => {}
        "ws" | "wss" if !page => {}
        "data" | "blob" if !page => return Ok((url, Kind::Local)),
        other => {
            return Err(Refusal::Scheme {
                url: url.to_string(),
                scheme: other.to_owned(),
            });
        }
    }
    let target = match url.host() {
        None => {
            return Err(Refusal::NoHost {
                url: url.to_string(),
            });
        }
        Some(Host::Ipv4(ip)) => Target::Ip(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Target::Ip(IpAddr::V6(ip)),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            if is_localhost(&d) {
                Target::Localhost
            } else {
                Target::Name(d, url.port_or_known_default().unwrap_or(80))
            }
        }
    };
    Ok((url, Kind::Web(target)))
}

/// A URL that passed the policy.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    /// The URL, normalized as browsers do.
    pub url: Url,
    /// Every address the host reaches is loopback.
    pub on_loopback: bool,
}

/// Checks a URL: scheme, host, and every address the host resolves to.
pub(crate) async fn check(policy: &Policy, text: &str, page: bool) -> Result<Admitted, Refusal> {
    let (url, kind) = parse(text, page)?;
    let target = match kind {
        Kind::Local => {
            return Ok(Admitted {
                url,
                on_loopback: false,
            });
        }
        Kind::Web(t) => t,
    };
    let host = url.host_str().unwrap_or_default().to_owned();
    let (name, port) = match target {
        Target::Ip(ip) => (ip.to_string(), url.port_or_known_default().unwrap_or(80)),
        Target::Localhost => ("localhost".to_owned(), 80),
        Target::Name(name, port) => (name, port),
    };
    let addrs =
        toolwright_net::resolve_checked(&SystemResolver, &policy.address_policy(), &name, port)
            .await
            .map_err(|e| net_refusal(policy, url.as_str(), &host, e))?;
    let on_loopback = addrs
        .iter()
        .all(|a| classify(a.ip()).class == AddrClass::Loopback);
    Ok(Admitted { url, on_loopback })
}

/// The refusal for what [`toolwright_net::resolve_checked`] said about `host`, worded for
/// `url`.
pub(crate) fn net_refusal(policy: &Policy, url: &str, host: &str, e: NetError) -> Refusal {
    match e {
        NetError::Refused { ip, class, .. } => Refusal::Address {
            url: url.to_owned(),
            host: host.to_owned(),
            ip,
            range: class.range,
            hint: policy.hint(class.class),
        },
        NetError::Unresolvable { host: name, source } => Refusal::Unresolvable {
            url: url.to_owned(),
            host: toolwright_net::resolve::bare_host(&name),
            reason: source.to_string(),
        },
        other => Refusal::Unresolvable {
            url: url.to_owned(),
            host: host.to_owned(),
            reason: other.to_string(),
        },
    }
}

/// The refusal for `ip`, if the policy refuses it, worded for `url` and `host`.
pub(crate) fn refusal(policy: &Policy, url: &str, host: &str, ip: IpAddr) -> Option<Refusal> {
    let (c, hint) = policy.refuses(ip)?;
    Some(Refusal::Address {
        url: url.to_owned(),
        host: host.to_owned(),
        ip,
        range: c.range,
        hint,
    })
}

/// Checks the URLs of one page's requests as the browser sends them (the `Fetch` domain),
/// without DNS: schemes, IP literals and `localhost`. A name is left to the proxy, which
/// resolves it once and connects to the address it checked; refusing what can be refused
/// here gives the caller the whole URL (the proxy sees only `host:port` of an `https`
/// request) and lets a refused main document end the call.
#[derive(Debug)]
pub(crate) struct RequestChecker {
    policy: Policy,
}

impl RequestChecker {
    /// A checker for the requests of a page under `policy` (already adjusted for the page).
    pub fn new(policy: Policy) -> Self {
        RequestChecker { policy }
    }

    /// Checks one request's URL.
    pub fn check(&self, text: &str) -> Result<(), Refusal> {
        let (url, kind) = parse(text, false)?;
        let ip = match kind {
            Kind::Local | Kind::Web(Target::Name(..)) => return Ok(()),
            Kind::Web(Target::Ip(ip)) => ip,
            Kind::Web(Target::Localhost) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        let host = url.host_str().unwrap_or_default();
        match refusal(&self.policy, url.as_str(), host, ip) {
            Some(r) => Err(r),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Policy = Policy {
        allow_private: false,
        loopback: Loopback::Allowed,
    };

    #[test]
    fn policy_decisions() {
        let no_loop = Policy {
            loopback: Loopback::Disabled,
            ..DEFAULT
        };
        let private = Policy {
            allow_private: true,
            ..DEFAULT
        };
        let private_no_loop = Policy {
            allow_private: true,
            loopback: Loopback::Disabled,
        };
        let cases = [
            (DEFAULT, "8.8.8.8", true),
            (DEFAULT, "127.0.0.1", true),
            (DEFAULT, "::1", true),
            (DEFAULT, "10.0.0.1", false),
            (DEFAULT, "169.254.169.254", false),
            (DEFAULT, "0.0.0.0", false),
            (DEFAULT, "fd00::1", false),
            (no_loop, "127.0.0.1", false),
            (no_loop, "8.8.8.8", true),
            (private, "10.0.0.1", true),
            (private, "fe80::1", true),
            (private, "0.0.0.0", true),
            (private_no_loop, "0.0.0.0", false),
            (private_no_loop, "127.0.0.1", false),
            (DEFAULT.for_page(false), "127.0.0.1", false),
            (DEFAULT.for_page(true), "127.0.0.1", true),
            (no_loop.for_page(true), "127.0.0.1", false),
        ];
        for (policy, ip, allowed) in cases {
            assert_eq!(
                policy.refuses(ip.parse().unwrap()).is_none(),
                allowed,
                "{policy:?} {ip}"
            );
        }
    }

    #[test]
    fn parsing() {
        let ip = |s: &str| Kind::Web(Target::Ip(s.parse().unwrap()));
        let cases: [(&str, bool, Option<Kind>); 17] = [
            ("ftp://example.com/", false, None),
            ("http://127.0.0.1:8080/x", true, Some(ip("127.0.0.1"))),
            ("https://[::1]/", true, Some(ip("::1"))),
            ("http://0x7f.1/", true, Some(ip("127.0.0.1"))),
            ("http://2130706433/", true, Some(ip("127.0.0.1"))),
            ("http://[::ffff:a00:1]/", true, Some(ip("::ffff:10.0.0.1"))),
            (
                "http://localhost:3000/",
                true,
                Some(Kind::Web(Target::Localhost)),
            ),
            (
                "http://app.LOCALHOST./",
                true,
                Some(Kind::Web(Target::Localhost)),
            ),
            (
                "https://Example.com/a",
                true,
                Some(Kind::Web(Target::Name("example.com".into(), 443))),
            ),
            ("file:///etc/passwd", true, None),
            ("javascript:alert(1)", true, None),
            ("chrome://settings", true, None),
            ("about:blank", true, None),
            ("data:text/html,hi", true, None),
            ("data:image/png;base64,AAAA", false, Some(Kind::Local)),
            ("ws://127.0.0.1:81/s", false, Some(ip("127.0.0.1"))),
            ("not a url", true, None),
        ];
        for (text, page, want) in cases {
            assert_eq!(parse(text, page).ok().map(|(_, k)| k), want, "{text}");
        }
    }

    #[tokio::test]
    async fn checks_refuse_before_any_connection() {
        let refused = [
            "http://10.0.0.1/",
            "http://[fe80::1]/",
            "http://0.0.0.0:1/",
            "file:///etc/passwd",
        ];
        for url in refused {
            assert!(check(&DEFAULT, url, true).await.is_err(), "{url}");
        }
        let ok = check(&DEFAULT, "http://127.0.0.1:9/", true).await.unwrap();
        assert!(ok.on_loopback);
        let ok = check(&DEFAULT, "http://localhost:9/", true).await.unwrap();
        assert!(ok.on_loopback);
        let err = check(&DEFAULT, "http://10.1.2.3/", true)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("10.0.0.0/8") && err.contains("--screenshot-allow-private"),
            "{err}"
        );
    }

    #[test]
    fn request_checker_applies_page_policy() {
        let checker = RequestChecker::new(DEFAULT.for_page(false));
        assert!(checker.check("http://127.0.0.1/x.png").is_err());
        assert!(checker.check("http://localhost:81/x.png").is_err());
        assert!(checker.check("data:image/png;base64,AAAA").is_ok());
        assert!(checker.check("file:///etc/passwd").is_err());
        // Names are the proxy's to resolve and judge.
        assert!(checker.check("http://intranet.invalid/x.png").is_ok());
        let local = RequestChecker::new(DEFAULT.for_page(true));
        assert!(local.check("http://127.0.0.1/x.png").is_ok());
        assert!(local.check("http://192.168.0.1/x.png").is_err());
        let err = local
            .check("http://[::ffff:0:a00:1]/")
            .unwrap_err()
            .to_string();
        assert!(err.contains("10.0.0.0/8"), "{err}");
    }
}
