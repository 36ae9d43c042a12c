//! Which URLs the browser may load: the scheme, and the class of every address the host
//! resolves to.
//!
//! The page the caller names must be `http` or `https`. Its host is resolved here (an IP
//! literal is taken as is; `localhost` and `*.localhost` are loopback without asking DNS,
//! as Chromium treats them) and every address must be admitted: public addresses always,
//! loopback unless the operator turned it off, everything else (private, link-local,
//! unspecified, shared, documentation, multicast, reserved) only when the operator allowed
//! private addresses. The same check runs on every request the page makes (redirects,
//! subresources, frames, workers); a page that is not itself on loopback may not load
//! loopback URLs, so a public page cannot pull the local machine's services into a
//! screenshot.

use super::error::Refusal;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// The coarse kind of an address, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrClass {
    /// Routable on the internet.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918, shared address space, unique-local and site-local IPv6.
    Private,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 0.0.0.0/8 and `::`: connecting there reaches the local machine.
    Unspecified,
    /// Documentation, benchmarking, multicast, broadcast and other reserved ranges.
    Reserved,
}

/// An address's class and the range it fell in (for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Classified {
    pub class: AddrClass,
    pub range: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

/// Non-public IPv4 ranges: network, prefix length, class, name.
const V4_RANGES: &[(u32, u32, AddrClass, &str)] = &[
    (
        v4(0, 0, 0, 0),
        8,
        AddrClass::Unspecified,
        "0.0.0.0/8 (this host)",
    ),
    (
        v4(10, 0, 0, 0),
        8,
        AddrClass::Private,
        "10.0.0.0/8 (private)",
    ),
    (
        v4(100, 64, 0, 0),
        10,
        AddrClass::Private,
        "100.64.0.0/10 (shared address space)",
    ),
    (
        v4(127, 0, 0, 0),
        8,
        AddrClass::Loopback,
        "127.0.0.0/8 (loopback)",
    ),
    (
        v4(169, 254, 0, 0),
        16,
        AddrClass::LinkLocal,
        "169.254.0.0/16 (link-local)",
    ),
    (
        v4(172, 16, 0, 0),
        12,
        AddrClass::Private,
        "172.16.0.0/12 (private)",
    ),
    (
        v4(192, 0, 0, 0),
        24,
        AddrClass::Reserved,
        "192.0.0.0/24 (IETF protocol assignments)",
    ),
    (
        v4(192, 0, 2, 0),
        24,
        AddrClass::Reserved,
        "192.0.2.0/24 (documentation)",
    ),
    (
        v4(192, 88, 99, 0),
        24,
        AddrClass::Reserved,
        "192.88.99.0/24 (6to4 relay)",
    ),
    (
        v4(192, 168, 0, 0),
        16,
        AddrClass::Private,
        "192.168.0.0/16 (private)",
    ),
    (
        v4(198, 18, 0, 0),
        15,
        AddrClass::Reserved,
        "198.18.0.0/15 (benchmarking)",
    ),
    (
        v4(198, 51, 100, 0),
        24,
        AddrClass::Reserved,
        "198.51.100.0/24 (documentation)",
    ),
    (
        v4(203, 0, 113, 0),
        24,
        AddrClass::Reserved,
        "203.0.113.0/24 (documentation)",
    ),
    (
        v4(224, 0, 0, 0),
        4,
        AddrClass::Reserved,
        "224.0.0.0/4 (multicast)",
    ),
    (
        v4(240, 0, 0, 0),
        4,
        AddrClass::Reserved,
        "240.0.0.0/4 (reserved, broadcast)",
    ),
];

/// Non-public IPv6 ranges (those that embed an IPv4 address are handled before these).
const V6_RANGES: &[(u128, u32, AddrClass, &str)] = &[
    (0, 128, AddrClass::Unspecified, ":: (unspecified)"),
    (1, 128, AddrClass::Loopback, "::1 (loopback)"),
    (
        0,
        96,
        AddrClass::Reserved,
        "::/96 (IPv4-compatible, deprecated)",
    ),
    (
        0x0064_ff9b_0001 << 80,
        48,
        AddrClass::Reserved,
        "64:ff9b:1::/48 (local NAT64)",
    ),
    (0x0100 << 112, 64, AddrClass::Reserved, "100::/64 (discard)"),
    (
        0x2001 << 112,
        23,
        AddrClass::Reserved,
        "2001::/23 (IETF protocol assignments)",
    ),
    (
        0x2001_0db8 << 96,
        32,
        AddrClass::Reserved,
        "2001:db8::/32 (documentation)",
    ),
    (
        0xfc00 << 112,
        7,
        AddrClass::Private,
        "fc00::/7 (unique local)",
    ),
    (
        0xfe80 << 112,
        10,
        AddrClass::LinkLocal,
        "fe80::/10 (link-local)",
    ),
    (
        0xfec0 << 112,
        10,
        AddrClass::Private,
        "fec0::/10 (site-local)",
    ),
    (
        0xff00 << 112,
        8,
        AddrClass::Reserved,
        "ff00::/8 (multicast)",
    ),
];

const PUBLIC: Classified = Classified {
    class: AddrClass::Public,
    range: "public",
};

fn classify_v4(ip: Ipv4Addr) -> Classified {
    let bits = u32::from(ip);
    for &(net, len, class, range) in V4_RANGES {
        if bits >> (32 - len) == net >> (32 - len) {
            return Classified { class, range };
        }
    }
    PUBLIC
}

fn classify_v6(ip: Ipv6Addr) -> Classified {
    let bits = u128::from(ip);
    // Addresses that carry an IPv4 address reach that address: judge it instead.
    if bits >> 32 == 0xffff {
        return classify_v4(Ipv4Addr::from(bits as u32)); // ::ffff:a.b.c.d (mapped)
    }
    if bits >> 32 == 0x0064_ff9b << 64 {
        return classify_v4(Ipv4Addr::from(bits as u32)); // 64:ff9b::a.b.c.d (NAT64)
    }
    if bits >> 112 == 0x2002 {
        return classify_v4(Ipv4Addr::from((bits >> 80) as u32)); // 2002:AABB:CCDD:: (6to4)
    }
    for &(net, len, class, range) in V6_RANGES {
        if bits >> (128 - len) == net >> (128 - len) {
            return Classified { class, range };
        }
    }
    PUBLIC
}

/// The class of an address.
pub(crate) fn classify(ip: IpAddr) -> Classified {
    match ip {
        IpAddr::V4(v) => classify_v4(v),
        IpAddr::V6(v) => classify_v6(v),
    }
}

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

    /// `None` when the address may be loaded; otherwise what to tell the caller.
    pub fn refuses(&self, ip: IpAddr) -> Option<(Classified, &'static str)> {
        let c = classify(ip);
        let hint = match c.class {
            AddrClass::Public => return None,
            AddrClass::Loopback => match self.loopback {
                Loopback::Allowed => return None,
                Loopback::Disabled => "the server was started with --screenshot-no-loopback",
                Loopback::NotFromPublicPage => {
                    "only pages that are themselves on loopback may load loopback addresses"
                }
            },
            AddrClass::Unspecified if self.allow_private && self.loopback == Loopback::Allowed => {
                return None;
            }
            AddrClass::Unspecified => {
                "it reaches the local machine; it needs --screenshot-allow-private and loopback allowed"
            }
            _ if self.allow_private => return None,
            _ => "the server allows non-public addresses only with --screenshot-allow-private",
        };
        Some((c, hint))
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
            if d == "localhost" || d.ends_with(".localhost") {
                Target::Localhost
            } else {
                Target::Name(d, url.port_or_known_default().unwrap_or(80))
            }
        }
    };
    Ok((url, Kind::Web(target)))
}

/// The addresses a target reaches (resolving names with the system resolver).
async fn addresses(url: &Url, target: &Target) -> Result<Vec<IpAddr>, Refusal> {
    match target {
        Target::Ip(ip) => Ok(vec![*ip]),
        Target::Localhost => Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]),
        Target::Name(name, port) => {
            let unresolvable = |reason: String| Refusal::Unresolvable {
                url: url.to_string(),
                host: name.clone(),
                reason,
            };
            let found = tokio::net::lookup_host((name.as_str(), *port))
                .await
                .map_err(|e| unresolvable(e.to_string()))?;
            let ips: Vec<IpAddr> = found.map(|sa| sa.ip()).collect();
            if ips.is_empty() {
                return Err(unresolvable("no addresses".into()));
            }
            Ok(ips)
        }
    }
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
    let ips = addresses(&url, &target).await?;
    for ip in &ips {
        if let Some((c, hint)) = policy.refuses(*ip) {
            let host = url.host_str().unwrap_or_default().to_owned();
            return Err(Refusal::Address {
                url: url.to_string(),
                host,
                ip: *ip,
                range: c.range,
                hint,
            });
        }
    }
    let on_loopback = ips
        .iter()
        .all(|ip| classify(*ip).class == AddrClass::Loopback);
    Ok(Admitted { url, on_loopback })
}

/// A name's addresses, or why it could not be resolved.
type Resolved = Result<Vec<IpAddr>, String>;

/// Checks the requests of one page, remembering the answers for names already resolved.
#[derive(Debug)]
pub(crate) struct RequestChecker {
    policy: Policy,
    cache: tokio::sync::Mutex<HashMap<(String, u16), Resolved>>,
}

impl RequestChecker {
    /// A checker for the requests of a page under `policy` (already adjusted for the page).
    pub fn new(policy: Policy) -> Self {
        RequestChecker {
            policy,
            cache: Default::default(),
        }
    }

    /// The policy it applies.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Checks one request's URL.
    pub async fn check(&self, text: &str) -> Result<(), Refusal> {
        let (url, kind) = parse(text, false)?;
        let target = match kind {
            Kind::Local => return Ok(()),
            Kind::Web(t) => t,
        };
        let ips = match &target {
            Target::Name(name, port) => {
                let key = (name.clone(), *port);
                let cached = self.cache.lock().await.get(&key).cloned();
                let found = match cached {
                    Some(r) => r,
                    None => {
                        let r = addresses(&url, &target).await.map_err(|e| e.to_string());
                        self.cache.lock().await.insert(key, r.clone());
                        r
                    }
                };
                found.map_err(|reason| Refusal::Unresolvable {
                    url: url.to_string(),
                    host: name.clone(),
                    reason,
                })?
            }
            other => addresses(&url, other).await?,
        };
        for ip in ips {
            if let Some((c, hint)) = self.policy.refuses(ip) {
                let host = url.host_str().unwrap_or_default().to_owned();
                return Err(Refusal::Address {
                    url: url.to_string(),
                    host,
                    ip,
                    range: c.range,
                    hint,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> AddrClass {
        classify(s.parse().unwrap()).class
    }

    #[test]
    fn address_classes() {
        use AddrClass::*;
        let cases = [
            ("8.8.8.8", Public),
            ("1.1.1.1", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Private),
            ("10.255.255.255", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.1", Public),
            ("172.15.255.255", Public),
            ("192.168.1.1", Private),
            ("100.64.0.1", Private),
            ("100.128.0.1", Public),
            ("169.254.169.254", LinkLocal),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("192.0.2.5", Reserved),
            ("198.18.0.1", Reserved),
            ("198.20.0.1", Public),
            ("224.0.0.1", Reserved),
            ("255.255.255.255", Reserved),
            ("::", Unspecified),
            ("::1", Loopback),
            ("::ffff:10.0.0.1", Private),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:8.8.8.8", Public),
            ("64:ff9b::a00:1", Private),
            ("2002:a00:1::", Private),
            ("2002:808:808::", Public),
            ("::10.0.0.1", Reserved),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Private),
            ("ff02::1", Reserved),
            ("2001:db8::1", Reserved),
            ("2001::1", Reserved),
            ("2001:4860:4860::8888", Public),
            ("2606:4700::1111", Public),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

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

    #[tokio::test]
    async fn request_checker_applies_page_policy() {
        let checker = RequestChecker::new(DEFAULT.for_page(false));
        assert!(checker.check("http://127.0.0.1/x.png").await.is_err());
        assert!(checker.check("data:image/png;base64,AAAA").await.is_ok());
        assert!(checker.check("file:///etc/passwd").await.is_err());
        let local = RequestChecker::new(DEFAULT.for_page(true));
        assert!(local.check("http://127.0.0.1/x.png").await.is_ok());
        assert!(local.check("http://192.168.0.1/x.png").await.is_err());
    }
}
