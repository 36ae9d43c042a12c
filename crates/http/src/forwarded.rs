//! The client behind trusted reverse proxies: the address a request counts against (its
//! limits, its stream budget, its audit line) when it came through a proxy the operator
//! named (`HttpConfig::trusted_proxies`).
//!
//! Only a connection from a trusted proxy has its `X-Forwarded-For` read; from anyone else
//! the header is ignored, so a client cannot pick the address it is counted as. The list is
//! read from its right end, the hop nearest this server: each entry a trusted proxy wrote
//! about the hop before it. The first entry that is not a trusted proxy is the client. An
//! entry that is not an IP address ends the walk at the last trusted hop, since nothing to
//! its left can be believed; so does a list of nothing but trusted proxies.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::IpAddr;

/// The header every common proxy writes (nginx's `$proxy_add_x_forwarded_for`, HAProxy's
/// `option forwardfor`, the cloud load balancers).
const HEADER: &str = "x-forwarded-for";

/// The address that sent the request: `peer`, or, when `peer` is one of `trusted`, the
/// client its `X-Forwarded-For` names.
pub(crate) fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(&ip.to_canonical()));
    if trusted.is_empty() || !is_trusted(peer) {
        return peer;
    }
    // Several headers are one list, in order (RFC 9110 §5.3).
    let mut hops = headers
        .get_all(HEADER)
        .iter()
        .map(|v| v.to_str().ok())
        .collect::<Vec<_>>();
    hops.reverse();
    let mut last = peer;
    for value in hops {
        let Some(value) = value else { return last };
        for entry in value.rsplit(',') {
            let Some(ip) = parse(entry.trim()) else {
                return last;
            };
            if !is_trusted(ip) {
                return ip.to_canonical();
            }
            last = ip;
        }
    }
    last
}

/// One list entry: an address, maybe with a port (`1.2.3.4:5678`, `[::1]:80`).
fn parse(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse() {
        return Some(ip);
    }
    if let Ok(sa) = entry.parse::<std::net::SocketAddr>() {
        return Some(sa.ip());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(HEADER, v.parse().unwrap());
        }
        h
    }

    fn nets(s: &[&str]) -> Vec<IpNet> {
        s.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_peer_is_believed() {
        let h = headers(&["203.0.113.7"]);
        // No trusted proxies, or a peer that is not one: the header is ignored.
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &[]), ip("127.0.0.1"));
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_ip(ip("192.0.2.1"), &h, &trusted), ip("192.0.2.1"));
        assert_eq!(client_ip(ip("10.1.2.3"), &h, &trusted), ip("203.0.113.7"));
        // A trusted peer without the header is the client itself.
        assert_eq!(
            client_ip(ip("10.1.2.3"), &HeaderMap::new(), &trusted),
            ip("10.1.2.3")
        );
    }

    #[test]
    fn the_rightmost_untrusted_entry_is_the_client() {
        let trusted = nets(&["10.0.0.0/8", "127.0.0.1/32"]);
        // What the client wrote itself (the leftmost) is not believed past a real hop.
        let h = headers(&["198.51.100.9, 203.0.113.7, 10.0.0.5"]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &trusted), ip("203.0.113.7"));
        // Two headers are one list.
        let h = headers(&["198.51.100.9", "203.0.113.7, 10.0.0.5"]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &trusted), ip("203.0.113.7"));
        // Ports and IPv6 forms.
        let h = headers(&["[2001:db8::1]:4711, 10.0.0.5:80"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("2001:db8::1"));
        let h = headers(&["::ffff:203.0.113.8"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("203.0.113.8"));
    }

    #[test]
    fn garbage_stops_at_the_last_trusted_hop() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = headers(&["203.0.113.7, unknown, 10.0.0.5"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.5"));
        let h = headers(&["10.0.0.9, 10.0.0.5"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.9"));
        let h = headers(&[""]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.1"));
    }

    #[test]
    fn a_mapped_peer_is_matched_as_ipv4() {
        let trusted = nets(&["127.0.0.1/32"]);
        let h = headers(&["203.0.113.7"]);
        assert_eq!(
            client_ip(ip("::ffff:127.0.0.1"), &h, &trusted),
            ip("203.0.113.7")
        );
    }
}
