//! Resolution with the policy applied: [`resolve_checked`] is the one way a host becomes
//! addresses to connect to, and [`connect`] opens a TCP connection to one of them.
//!
//! A host is resolved once (an IP literal, with or without brackets, is taken as is;
//! `localhost` and `*.localhost` are 127.0.0.1 without asking DNS, as browsers treat
//! them), every address it gave is checked against an [`AddressPolicy`], and one refused
//! address refuses the host. Callers connect only to the addresses returned, never
//! resolving again, so DNS rebinding cannot change the answer between check and use.
//!
//! The lookup itself is a [`Resolve`]: the system resolver ([`SystemResolver`]) in
//! production, a scripted stand-in in tests.

use crate::Error;
use crate::policy::{AddressPolicy, is_localhost};
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use tokio::net::TcpStream;

/// A name's addresses, on their way.
pub type Resolution = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// Looks names up (the system resolver, or a stand-in in tests).
pub trait Resolve: Send + Sync {
    /// The addresses of `name`, which is never an IP literal or a `localhost` name (those
    /// are answered before a lookup), lowercase and without a trailing dot.
    fn resolve(&self, name: &str, port: u16) -> Resolution;
}

/// The system resolver (`getaddrinfo`, on tokio's blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: &str, port: u16) -> Resolution {
        let name = name.to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), port)).await?;
            Ok(found.map(|sa| sa.ip()).collect())
        })
    }
}

/// A host as a URL or `host:port` writes it, without its brackets (an IPv6 literal) or
/// trailing dot, in lowercase.
pub fn bare_host(host: &str) -> String {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.trim_end_matches('.').to_ascii_lowercase()
}

/// The addresses `host` reaches, unchecked: an IP literal as is, `localhost` as
/// 127.0.0.1, any other name from `resolver` (once).
///
/// # Errors
///
/// [`Error::Unresolvable`] with what the resolver said, or [`io::ErrorKind::NotFound`]
/// when it found no address.
pub async fn resolve(resolver: &dyn Resolve, host: &str, port: u16) -> Result<Vec<IpAddr>, Error> {
    let name = bare_host(host);
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    if is_localhost(&name) {
        return Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }
    let unresolvable = |source| Error::Unresolvable {
        host: host.to_owned(),
        source,
    };
    let ips = resolver.resolve(&name, port).await.map_err(unresolvable)?;
    if ips.is_empty() {
        return Err(unresolvable(io::Error::new(
            io::ErrorKind::NotFound,
            "no addresses",
        )));
    }
    Ok(ips)
}

/// The checked addresses to connect to for `host:port`: [`resolve`], then every address
/// judged by `policy`; the first one refused refuses the host (none is returned).
///
/// # Errors
///
/// [`Error::Unresolvable`] as [`resolve`], or [`Error::Refused`] naming the refused
/// address and its block.
pub async fn resolve_checked(
    resolver: &dyn Resolve,
    policy: &AddressPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Error> {
    let ips = resolve(resolver, host, port).await?;
    if let Some((ip, class)) = ips
        .iter()
        .find_map(|ip| policy.refuses(*ip).map(|c| (*ip, c)))
    {
        return Err(Error::Refused {
            host: host.to_owned(),
            ip,
            class,
        });
    }
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

/// A TCP connection (with `TCP_NODELAY`) to the first of `addrs` that answers, tried in
/// order; `host` and the port name the target in the error.
///
/// # Errors
///
/// [`Error::Connect`] with the last address's error.
pub async fn connect(host: &str, addrs: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(e) => last = Some(e),
        }
    }
    let port = addrs.first().map_or(0, SocketAddr::port);
    Err(Error::Connect {
        authority: authority(host, port),
        source: last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")),
    })
}

/// `host:port`, with an IPv6 literal in brackets.
pub fn authority(host: &str, port: u16) -> String {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.contains(':') {
        format!("[{bare}]:{port}")
    } else {
        format!("{bare}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers every name with `10.0.0.7` and `127.0.0.1`, counting the lookups.
    #[derive(Default)]
    struct Scripted(Arc<AtomicUsize>);

    impl Resolve for Scripted {
        fn resolve(&self, _name: &str, _port: u16) -> Resolution {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {
                Ok(vec![
                    "127.0.0.1".parse().unwrap(),
                    "10.0.0.7".parse().unwrap(),
                ])
            })
        }
    }

    #[tokio::test]
    async fn resolves_literals_without_dns() {
        let dns = Scripted::default();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for (host, want) in [
            ("[::1]", "::1"),
            ("::1", "::1"),
            ("localhost", "127.0.0.1"),
            ("App.LocalHost.", "127.0.0.1"),
            ("10.1.2.3", "10.1.2.3"),
        ] {
            assert_eq!(
                resolve(&dns, host, 80).await.unwrap(),
                vec![ip(want)],
                "{host}"
            );
        }
        assert_eq!(dns.0.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn one_refused_address_refuses_the_host() {
        let dns = Scripted::default();
        let default = AddressPolicy {
            allow_private: false,
            allow_loopback: true,
        };
        let e = resolve_checked(&dns, &default, "Example.COM.", 443)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, Error::Refused { host, ip, .. } if host == "Example.COM." && ip.to_string() == "10.0.0.7"),
            "{e:?}"
        );
        assert!(e.to_string().contains("10.0.0.0/8"), "{e}");
        let ok = resolve_checked(&dns, &AddressPolicy::ANY, "example.com", 443)
            .await
            .unwrap();
        assert_eq!(ok.len(), 2);
        assert!(ok.iter().all(|a| a.port() == 443));
        assert_eq!(dns.0.load(Ordering::SeqCst), 2, "one lookup per call");
    }

    #[tokio::test]
    async fn empty_answers_are_unresolvable() {
        struct Empty;
        impl Resolve for Empty {
            fn resolve(&self, _: &str, _: u16) -> Resolution {
                Box::pin(async { Ok(Vec::new()) })
            }
        }
        let e = resolve(&Empty, "nothing.example", 80).await.unwrap_err();
        assert!(matches!(e, Error::Unresolvable { .. }), "{e:?}");
        assert!(e.to_string().contains("no addresses"), "{e}");
    }

    #[tokio::test]
    async fn connects_to_the_first_that_answers() {
        // Bound but not listening: the port stays this test's (a port given back could be
        // taken by another test's listener meanwhile) and refuses every connection.
        let closed = tokio::net::TcpSocket::new_v4().unwrap();
        closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dead = closed.local_addr().unwrap();
        let live = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = live.local_addr().unwrap();
        let tcp = connect("localhost", &[dead, addr]).await.unwrap();
        assert_eq!(tcp.peer_addr().unwrap(), addr);
        let e = connect("localhost", &[dead]).await.unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("localhost:{}", dead.port())),
            "{e}"
        );
        assert_eq!(authority("::1", 8), "[::1]:8");
        assert_eq!(authority("[::1]", 8), "[::1]:8");
    }
}
