//! The class of an IP address: every block of the IANA IPv4 and IPv6 Special-Purpose
//! Address Registries (as updated in 2024–2025), plus multicast, site-local and the
//! deprecated IPv4-compatible form, each named for messages.
//!
//! Addresses that carry an IPv4 address reach it, so they are judged by it: IPv4-mapped
//! (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`), the well-known NAT64 prefix
//! (`64:ff9b::/96`), 6to4 (`2002::/16`, the IPv4 in bits 16–47) and Teredo (`2001::/32`:
//! both the server's IPv4 and the client's, stored bit-inverted, must be public).
//!
//! The registries mark a few blocks "globally reachable" (anycast services, AS112, AMT,
//! ORCHIDv2, drone tags): none of them serves web pages, so they are refused like the rest
//! of the registries unless the operator allows non-public addresses. The most specific
//! block wins (`192.0.0.9/32` inside `192.0.0.0/24`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The coarse kind of an address, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    /// Routable on the internet.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// Private-use, shared address space, unique-local, site-local, local-use NAT64.
    Private,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 0.0.0.0/8 and `::`: connecting there reaches the local machine.
    Unspecified,
    /// Documentation, benchmarking, multicast, broadcast, protocol assignments and every
    /// other special-purpose block.
    Reserved,
}

/// An address's class and the block it fell in (for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// The class.
    pub class: AddrClass,
    /// The block, such as `10.0.0.0/8 (private)`, or `public`.
    pub range: &'static str,
}

use AddrClass::{LinkLocal, Loopback, Private, Reserved, Unspecified};

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

const fn v6(segments: [u16; 8]) -> u128 {
    let mut bits = 0u128;
    let mut i = 0;
    while i < 8 {
        bits = (bits << 16) | segments[i] as u128;
        i += 1;
    }
    bits
}

/// Non-public IPv4 blocks: network, prefix length, class, name.
const V4_BLOCKS: &[(u32, u32, AddrClass, &str)] = &[
    (v4(0, 0, 0, 0), 8, Unspecified, "0.0.0.0/8 (this network)"),
    (
        v4(0, 0, 0, 0),
        32,
        Unspecified,
        "0.0.0.0/32 (this host on this network)",
    ),
    (v4(10, 0, 0, 0), 8, Private, "10.0.0.0/8 (private)"),
    (
        v4(100, 64, 0, 0),
        10,
        Private,
        "100.64.0.0/10 (shared address space)",
    ),
    (v4(127, 0, 0, 0), 8, Loopback, "127.0.0.0/8 (loopback)"),
    (
        v4(169, 254, 0, 0),
        16,
        LinkLocal,
        "169.254.0.0/16 (link-local)",
    ),
    (v4(172, 16, 0, 0), 12, Private, "172.16.0.0/12 (private)"),
    (
        v4(192, 0, 0, 0),
        24,
        Reserved,
        "192.0.0.0/24 (IETF protocol assignments)",
    ),
    (
        v4(192, 0, 0, 0),
        29,
        Reserved,
        "192.0.0.0/29 (IPv4 service continuity prefix)",
    ),
    (
        v4(192, 0, 0, 8),
        32,
        Reserved,
        "192.0.0.8/32 (IPv4 dummy address)",
    ),
    (
        v4(192, 0, 0, 9),
        32,
        Reserved,
        "192.0.0.9/32 (Port Control Protocol anycast)",
    ),
    (
        v4(192, 0, 0, 10),
        32,
        Reserved,
        "192.0.0.10/32 (TURN anycast)",
    ),
    (
        v4(192, 0, 0, 170),
        32,
        Reserved,
        "192.0.0.170/32 (NAT64/DNS64 discovery)",
    ),
    (
        v4(192, 0, 0, 171),
        32,
        Reserved,
        "192.0.0.171/32 (NAT64/DNS64 discovery)",
    ),
    (
        v4(192, 0, 2, 0),
        24,
        Reserved,
        "192.0.2.0/24 (documentation)",
    ),
    (
        v4(192, 31, 196, 0),
        24,
        Reserved,
        "192.31.196.0/24 (AS112-v4)",
    ),
    (v4(192, 52, 193, 0), 24, Reserved, "192.52.193.0/24 (AMT)"),
    (
        v4(192, 88, 99, 0),
        24,
        Reserved,
        "192.88.99.0/24 (deprecated 6to4 relay anycast)",
    ),
    (v4(192, 168, 0, 0), 16, Private, "192.168.0.0/16 (private)"),
    (
        v4(192, 175, 48, 0),
        24,
        Reserved,
        "192.175.48.0/24 (direct delegation AS112 service)",
    ),
    (
        v4(198, 18, 0, 0),
        15,
        Reserved,
        "198.18.0.0/15 (benchmarking)",
    ),
    (
        v4(198, 51, 100, 0),
        24,
        Reserved,
        "198.51.100.0/24 (documentation)",
    ),
    (
        v4(203, 0, 113, 0),
        24,
        Reserved,
        "203.0.113.0/24 (documentation)",
    ),
    (v4(224, 0, 0, 0), 4, Reserved, "224.0.0.0/4 (multicast)"),
    (v4(240, 0, 0, 0), 4, Reserved, "240.0.0.0/4 (reserved)"),
    (
        v4(255, 255, 255, 255),
        32,
        Reserved,
        "255.255.255.255/32 (limited broadcast)",
    ),
];

/// Non-public IPv6 blocks (the forms that embed an IPv4 address are judged before these).
const V6_BLOCKS: &[(u128, u32, AddrClass, &str)] = &[
    (0, 128, Unspecified, "::/128 (unspecified)"),
    (1, 128, Loopback, "::1/128 (loopback)"),
    (0, 96, Reserved, "::/96 (IPv4-compatible, deprecated)"),
    (0, 8, Reserved, "::/8 (reserved by the IETF)"),
    (
        v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]),
        48,
        Private,
        "64:ff9b:1::/48 (local-use NAT64)",
    ),
    (
        v6([0x100, 0, 0, 0, 0, 0, 0, 0]),
        64,
        Reserved,
        "100::/64 (discard-only)",
    ),
    (
        v6([0x100, 0, 0, 1, 0, 0, 0, 0]),
        64,
        Reserved,
        "100:0:0:1::/64 (dummy IPv6 prefix)",
    ),
    (
        v6([0x2001, 0, 0, 0, 0, 0, 0, 0]),
        23,
        Reserved,
        "2001::/23 (IETF protocol assignments)",
    ),
    (
        v6([0x2001, 1, 0, 0, 0, 0, 0, 1]),
        128,
        Reserved,
        "2001:1::1/128 (Port Control Protocol anycast)",
    ),
    (
        v6([0x2001, 1, 0, 0, 0, 0, 0, 2]),
        128,
        Reserved,
        "2001:1::2/128 (TURN anycast)",
    ),
    (
        v6([0x2001, 1, 0, 0, 0, 0, 0, 3]),
        128,
        Reserved,
        "2001:1::3/128 (DNS-SD service registration protocol anycast)",
    ),
    (
        v6([0x2001, 2, 0, 0, 0, 0, 0, 0]),
        48,
        Reserved,
        "2001:2::/48 (benchmarking)",
    ),
    (
        v6([0x2001, 3, 0, 0, 0, 0, 0, 0]),
        32,
        Reserved,
        "2001:3::/32 (AMT)",
    ),
    (
        v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0]),
        48,
        Reserved,
        "2001:4:112::/48 (AS112-v6)",
    ),
    (
        v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0]),
        28,
        Reserved,
        "2001:10::/28 (deprecated ORCHID)",
    ),
    (
        v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0]),
        28,
        Reserved,
        "2001:20::/28 (ORCHIDv2)",
    ),
    (
        v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0]),
        28,
        Reserved,
        "2001:30::/28 (drone remote ID entity tags)",
    ),
    (
        v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]),
        32,
        Reserved,
        "2001:db8::/32 (documentation)",
    ),
    (
        v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0]),
        48,
        Reserved,
        "2620:4f:8000::/48 (direct delegation AS112 service)",
    ),
    (
        v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]),
        20,
        Reserved,
        "3fff::/20 (documentation)",
    ),
    (
        v6([0x5f00, 0, 0, 0, 0, 0, 0, 0]),
        16,
        Reserved,
        "5f00::/16 (segment routing SIDs)",
    ),
    (
        v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]),
        7,
        Private,
        "fc00::/7 (unique local)",
    ),
    (
        v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]),
        10,
        LinkLocal,
        "fe80::/10 (link-local)",
    ),
    (
        v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]),
        10,
        Private,
        "fec0::/10 (site-local, deprecated)",
    ),
    (
        v6([0xff00, 0, 0, 0, 0, 0, 0, 0]),
        8,
        Reserved,
        "ff00::/8 (multicast)",
    ),
];

const PUBLIC: Classified = Classified {
    class: AddrClass::Public,
    range: "public",
};

/// The longest block of `blocks` that holds `bits` (`width` is 32 or 128).
fn longest<T>(bits: T, blocks: &[(T, u32, AddrClass, &'static str)], width: u32) -> Classified
where
    T: Copy + PartialEq + std::ops::Shr<u32, Output = T>,
{
    let mut best: Option<(u32, Classified)> = None;
    for &(net, len, class, range) in blocks {
        let shift = width - len;
        // A shift by the full width is not allowed; a /0 block would hold everything.
        let holds = len == 0 || (bits >> shift) == (net >> shift);
        if holds && best.is_none_or(|(l, _)| len > l) {
            best = Some((len, Classified { class, range }));
        }
    }
    best.map_or(PUBLIC, |(_, c)| c)
}

fn classify_v4(ip: Ipv4Addr) -> Classified {
    longest(u32::from(ip), V4_BLOCKS, 32)
}

/// The IPv4 address an IPv6 address reaches, when it embeds one that way.
fn embedded_v4(bits: u128) -> Option<Ipv4Addr> {
    let low = Ipv4Addr::from(bits as u32);
    if bits >> 32 == 0xffff {
        return Some(low); // ::ffff:a.b.c.d, IPv4-mapped
    }
    if bits >> 32 == 0xffff_0000 {
        return Some(low); // ::ffff:0:a.b.c.d, IPv4-translated
    }
    if bits >> 32 == v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]) >> 32 {
        return Some(low); // 64:ff9b::a.b.c.d, well-known NAT64
    }
    if bits >> 112 == 0x2002 {
        return Some(Ipv4Addr::from((bits >> 80) as u32)); // 2002:AABB:CCDD::, 6to4
    }
    None
}

fn classify_v6(ip: Ipv6Addr) -> Classified {
    let bits = u128::from(ip);
    if let Some(v4) = embedded_v4(bits) {
        return classify_v4(v4);
    }
    if bits >> 96 == 0x2001_0000 {
        // Teredo: 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, the client's address inverted.
        let server = classify_v4(Ipv4Addr::from((bits >> 64) as u32));
        let client = classify_v4(Ipv4Addr::from(!(bits as u32)));
        return [client, server]
            .into_iter()
            .find(|c| c.class != AddrClass::Public)
            .unwrap_or(PUBLIC);
    }
    longest(bits, V6_BLOCKS, 128)
}

/// The class of an address.
pub fn classify(ip: IpAddr) -> Classified {
    match ip {
        IpAddr::V4(v) => classify_v4(v),
        IpAddr::V6(v) => classify_v6(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> &'static str {
        classify(s.parse().unwrap()).range
    }

    /// Every block, at both edges and just outside them: first, last, before, after.
    #[test]
    fn every_block_at_both_edges() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, &str, &str)] = &[
            // block, first, last, the address before, the address after (its block)
            ("0.0.0.0/8", "0.0.0.1", "0.255.255.255", "-", "1.0.0.0"),
            ("0.0.0.0/32", "0.0.0.0", "0.0.0.0", "-", "0.0.0.1"),
            ("10.0.0.0/8", "10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"),
            ("100.64.0.0/10", "100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"),
            ("127.0.0.0/8", "127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"),
            ("169.254.0.0/16", "169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"),
            ("172.16.0.0/12", "172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"),
            ("192.0.0.0/29", "192.0.0.0", "192.0.0.7", "191.255.255.255", "192.0.0.8"),
            ("192.0.0.8/32", "192.0.0.8", "192.0.0.8", "192.0.0.7", "192.0.0.9"),
            ("192.0.0.9/32", "192.0.0.9", "192.0.0.9", "192.0.0.8", "192.0.0.10"),
            ("192.0.0.10/32", "192.0.0.10", "192.0.0.10", "192.0.0.9", "192.0.0.11"),
            ("192.0.0.0/24", "192.0.0.11", "192.0.0.255", "192.0.0.10", "192.0.1.0"),
            ("192.0.0.170/32", "192.0.0.170", "192.0.0.170", "192.0.0.169", "192.0.0.171"),
            ("192.0.0.171/32", "192.0.0.171", "192.0.0.171", "192.0.0.170", "192.0.0.172"),
            ("192.0.2.0/24", "192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"),
            ("192.31.196.0/24", "192.31.196.0", "192.31.196.255", "192.31.195.255", "192.31.197.0"),
            ("192.52.193.0/24", "192.52.193.0", "192.52.193.255", "192.52.192.255", "192.52.194.0"),
            ("192.88.99.0/24", "192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"),
            ("192.168.0.0/16", "192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"),
            ("192.175.48.0/24", "192.175.48.0", "192.175.48.255", "192.175.47.255", "192.175.49.0"),
            ("198.18.0.0/15", "198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"),
            ("198.51.100.0/24", "198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"),
            ("203.0.113.0/24", "203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"),
            ("224.0.0.0/4", "224.0.0.0", "239.255.255.255", "223.255.255.255", "240.0.0.0"),
            ("240.0.0.0/4", "240.0.0.0", "255.255.255.254", "239.255.255.255", "255.255.255.255"),
            ("255.255.255.255/32", "255.255.255.255", "255.255.255.255", "255.255.255.254", "-"),
            ("::/128", "::", "::", "-", "::1"),
            ("::1/128", "::1", "::1", "::", "::2"),
            ("::/96", "::2", "::ffff:ffff", "::1", "::1:0:0"),
            ("::/8", "::1:0:0", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "-", "100::"),
            ("64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:0:ffff:ffff:ffff:ffff:ffff", "64:ff9b:2::"),
            ("100::/64", "100::", "100::ffff:ffff:ffff:ffff", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "100:0:0:1::"),
            ("100:0:0:1::/64", "100:0:0:1::", "100::1:ffff:ffff:ffff:ffff", "100::ffff:ffff:ffff:ffff", "100:0:0:2::"),
            ("2001::/23", "2001:1::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::"),
            ("2001:1::1/128", "2001:1::1", "2001:1::1", "2001:1::", "2001:1::2"),
            ("2001:1::2/128", "2001:1::2", "2001:1::2", "2001:1::1", "2001:1::3"),
            ("2001:1::3/128", "2001:1::3", "2001:1::3", "2001:1::2", "2001:1::4"),
            ("2001:2::/48", "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", "2001:1:ffff:ffff:ffff:ffff:ffff:ffff", "2001:2:1::"),
            ("2001:3::/32", "2001:3::", "2001:3:ffff:ffff:ffff:ffff:ffff:ffff", "2001:2:ffff:ffff:ffff:ffff:ffff:ffff", "2001:4::"),
            ("2001:4:112::/48", "2001:4:112::", "2001:4:112:ffff:ffff:ffff:ffff:ffff", "2001:4:111:ffff:ffff:ffff:ffff:ffff", "2001:4:113::"),
            ("2001:10::/28", "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:20::"),
            ("2001:20::/28", "2001:20::", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:30::"),
            ("2001:30::/28", "2001:30::", "2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:40::"),
            ("2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"),
            ("2620:4f:8000::/48", "2620:4f:8000::", "2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", "2620:4f:8001::"),
            ("3fff::/20", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::"),
            ("5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "5f01::"),
            ("fc00::/7", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe00::"),
            ("fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::"),
            ("fec0::/10", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::"),
            ("ff00::/8", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "-"),
        ];
        for &(block, first, last, before, after) in cases {
            for ip in [first, last] {
                let got = range(ip);
                assert!(
                    got.starts_with(&format!("{block} ")),
                    "{ip}: {got}, expected {block}"
                );
            }
            for ip in [before, after] {
                if ip != "-" {
                    let got = range(ip);
                    assert!(
                        !got.starts_with(&format!("{block} ")),
                        "{ip} is outside {block}: {got}"
                    );
                }
            }
        }
        // Every block of the tables is in the cases above.
        let named: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let tables = V4_BLOCKS
            .iter()
            .map(|b| b.3)
            .chain(V6_BLOCKS.iter().map(|b| b.3));
        for name in tables {
            let block = name.split(' ').next().unwrap();
            assert!(named.contains(&block), "{block} has no edge cases");
        }
    }

    #[test]
    fn public_neighbours() {
        let public = [
            "1.0.0.0",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.1.0",
            "192.0.3.0",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2000::",
            "2001:200::",
            "2001:4860:4860::8888",
            "2606:4700::1111",
            "2620:4f:7fff::1",
            "3ffe:ffff::1",
            "3fff:1000::",
            "5eff::1",
            "5f01::",
            "fbff::1",
            "fe00::",
            "101::",
        ];
        for ip in public {
            assert_eq!(range(ip), "public", "{ip}");
        }
    }

    #[test]
    fn embedded_ipv4_is_judged_by_the_address_it_reaches() {
        #[rustfmt::skip]
        let cases = [
            // IPv4-mapped, ::ffff:0:0/96
            ("::ffff:0.0.0.0", "0.0.0.0/32 "), ("::ffff:10.0.0.1", "10.0.0.0/8 "),
            ("::ffff:127.0.0.1", "127.0.0.0/8 "), ("::ffff:8.8.8.8", "public"),
            ("::ffff:255.255.255.255", "255.255.255.255/32 "),
            // IPv4-translated, ::ffff:0:0:0/96
            ("::ffff:0:0.0.0.0", "0.0.0.0/32 "), ("::ffff:0:a00:1", "10.0.0.0/8 "),
            ("::ffff:0:127.0.0.1", "127.0.0.0/8 "), ("::ffff:0:8.8.8.8", "public"),
            ("::ffff:0:ffff:ffff", "255.255.255.255/32 "),
            // Well-known NAT64, 64:ff9b::/96
            ("64:ff9b::", "0.0.0.0/32 "), ("64:ff9b::a00:1", "10.0.0.0/8 "),
            ("64:ff9b::169.254.169.254", "169.254.0.0/16 "), ("64:ff9b::808:808", "public"),
            ("64:ff9b::ffff:ffff", "255.255.255.255/32 "),
            // 6to4, 2002::/16: the IPv4 in bits 16-47
            ("2002::", "0.0.0.0/32 "), ("2002:a00:1::", "10.0.0.0/8 "),
            ("2002:7f00:1:ffff:ffff:ffff:ffff:ffff", "127.0.0.0/8 "),
            ("2002:808:808::", "public"), ("2002:ffff:ffff::", "255.255.255.255/32 "),
            // Teredo, 2001::/32: server IPv4, then flags, port, inverted client IPv4
            ("2001:0:808:808:0:0:f5ff:fffe", "10.0.0.0/8 "),   // client 10.0.0.1
            ("2001:0:a00:1:0:0:f7f7:f7f7", "10.0.0.0/8 "),     // server 10.0.0.1, client 8.8.8.8
            ("2001:0:808:808:8000:f227:80ff:fffe", "127.0.0.0/8 "), // client 127.0.0.1
            ("2001:0:808:808:0:0:f7f7:f7f7", "public"),        // both 8.8.8.8
            ("2001::", "255.255.255.255/32 "),                 // client !0, server 0.0.0.0
        ];
        for (ip, want) in cases {
            let got = range(ip);
            assert!(got.starts_with(want), "{ip}: {got}, expected {want}");
        }
    }

    #[test]
    fn classes() {
        use AddrClass::*;
        let cases = [
            ("8.8.8.8", Public),
            ("127.0.0.1", Loopback),
            ("::1", Loopback),
            ("10.0.0.1", Private),
            ("fd12:3456::1", Private),
            ("64:ff9b:1::a00:1", Private),
            ("169.254.169.254", LinkLocal),
            ("fe80::1", LinkLocal),
            ("0.0.0.0", Unspecified),
            ("::", Unspecified),
            ("::ffff:0:0.0.0.0", Unspecified),
            ("224.0.0.1", Reserved),
            ("2001:db8::1", Reserved),
            ("ff02::1", Reserved),
        ];
        for (ip, want) in cases {
            assert_eq!(classify(ip.parse().unwrap()).class, want, "{ip}");
        }
    }
}
