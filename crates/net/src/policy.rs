//! Which address classes an outgoing connection may reach ([`AddressPolicy`]), and the
//! names that are loopback without asking DNS ([`is_localhost`]).

use crate::addr::{AddrClass, Classified, classify};
use std::net::IpAddr;

/// Which address classes may be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Private, link-local, reserved… addresses may be reached.
    pub allow_private: bool,
    /// Loopback addresses may be reached.
    pub allow_loopback: bool,
}

impl AddressPolicy {
    /// Every address may be reached: for connections whose target the operator named
    /// (an MCP server's URL, a collector), where the policy only sorts addresses.
    pub const ANY: AddressPolicy = AddressPolicy {
        allow_private: true,
        allow_loopback: true,
    };

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
            (AddressPolicy::ANY, "0.0.0.0", true),
            (AddressPolicy::ANY, "fe80::1", true),
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
}
