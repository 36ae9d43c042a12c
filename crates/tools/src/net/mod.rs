//! Which addresses an outgoing connection may reach: the one address policy that
//! `take_screenshot` and declared HTTP tools (`toolwright-declared`) both apply where they
//! open a socket.
//!
//! - [`classify`] names the block of the IANA special-purpose registries an address falls
//!   in (addresses that embed an IPv4 address are judged by it).
//! - [`AddressPolicy`] decides: public addresses always, loopback unless turned off,
//!   everything else (private, link-local, unspecified, shared, documentation, multicast,
//!   reserved) only when non-public addresses are allowed; an unspecified address reaches
//!   the local machine, so it needs both.
//! - [`is_localhost`] and [`resolve`]: `localhost` and `*.localhost` are loopback without
//!   asking DNS (as browsers treat them); an IP literal is taken as is.
//!
//! Callers resolve a name once, check every address it gave, and connect to an address
//! they checked, never resolving again, so DNS rebinding cannot change the answer.

mod addr;

pub use addr::{AddrClass, Classified, classify};
use std::io;
use std::net::{IpAddr, Ipv4Addr};

/// Which address classes may be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Private, link-local, reserved… addresses may be reached.
    pub allow_private: bool,
    /// Loopback addresses may be reached.
    pub allow_loopback: bool,
}

impl AddressPolicy {
    /// `None` when `ip` may be reached; otherwise its class and block, for the message.
    pub fn refuses(&self, ip: IpAddr) -> Option<Classified> {
        let c = classify(ip);
        let allowed = match c.class {
            AddrClass::Public => true,
            AddrClass::Loopback => self.allow_loopback,
            AddrClass::Unspecified => self.allow_private && self.allow_loopback,
            AddrClass::Private | AddrClass::LinkLocal | AddrClass::Reserved => self.allow_private,
        };
        (!allowed).then_some(c)
    }
}

/// Whether a host name is `localhost` or under `.localhost` (any case, a trailing dot
/// allowed): loopback whatever DNS says.
pub fn is_localhost(name: &str) -> bool {
    let d = name.trim_end_matches('.');
    d.eq_ignore_ascii_case("localhost")
        || (d.len() > 10 && d[d.len() - 10..].eq_ignore_ascii_case(".localhost"))
}

/// The addresses a URL's host reaches: an IP literal (IPv6 with or without brackets) as
/// is, `localhost` as 127.0.0.1, any other name from the system resolver (once).
///
/// # Errors
///
/// What the resolver said, or [`io::ErrorKind::NotFound`] when it found no address.
pub async fn resolve(host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    if is_localhost(bare) {
        return Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }
    let ips: Vec<IpAddr> = tokio::net::lookup_host((bare, port))
        .await?
        .map(|sa| sa.ip())
        .collect();
    if ips.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses"));
    }
    Ok(ips)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let default = AddressPolicy {
            allow_private: false,
            allow_loopback: true,
        };
        let no_loop = AddressPolicy {
            allow_loopback: false,
            ..default
        };
        let private = AddressPolicy {
            allow_private: true,
            ..default
        };
        let cases = [
            (default, "8.8.8.8", true),
            (default, "127.0.0.1", true),
            (default, "::1", true),
            (default, "::ffff:127.0.0.1", true),
            (default, "10.0.0.1", false),
            (default, "::ffff:10.0.0.1", false),
            (default, "169.254.169.254", false),
            (default, "0.0.0.0", false),
            (no_loop, "127.0.0.1", false),
            (no_loop, "::1", false),
            (no_loop, "8.8.8.8", true),
            (private, "10.0.0.1", true),
            (private, "0.0.0.0", true),
            (
                AddressPolicy {
                    allow_loopback: false,
                    ..private
                },
                "0.0.0.0",
                false,
            ),
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
    fn localhost_names() {
        for (name, want) in [
            ("localhost", true),
            ("LocalHost.", true),
            ("app.localhost", true),
            ("localhost.example", false),
            ("notlocalhost", false),
            ("xlocalhost", false),
        ] {
            assert_eq!(is_localhost(name), want, "{name}");
        }
    }

    #[tokio::test]
    async fn resolves_literals_without_dns() {
        assert_eq!(
            resolve("[::1]", 80).await.unwrap(),
            vec!["::1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            resolve("localhost", 80).await.unwrap(),
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
        );
        assert_eq!(
            resolve("10.1.2.3", 80).await.unwrap(),
            vec!["10.1.2.3".parse::<IpAddr>().unwrap()]
        );
    }
}
