//! Stream budgets: how many event streams may be open at once, so that one client cannot
//! take every stream and starve the rest.
//!
//! Two budgets, neither of which can take from the other: **reply** streams (a POST answered
//! with SSE, and the `Last-Event-ID` resumption of such a stream) and **GET** streams (a
//! legacy session's standalone stream, new or resumed). Each has a total cap and a cap per
//! client address; a session has at most one standalone GET stream (409 beyond, in
//! `streams.rs`). A client is its IP address, or its /64 network for IPv6 (one host usually
//! has a whole /64); IPv4-mapped IPv6 addresses count as the IPv4 address.

use crate::body::OnDrop;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

/// Which budget a stream draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// A stream carrying a call's messages and reply.
    Reply,
    /// A legacy session's standalone GET stream.
    Get,
}

impl Budget {
    fn index(self) -> usize {
        match self {
            Budget::Reply => 0,
            Budget::Get => 1,
        }
    }
}

/// Who opened a stream, as the budgets count clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Client(IpAddr);

impl Client {
    /// The client behind a peer address.
    pub(crate) fn of(peer: IpAddr) -> Client {
        match peer.to_canonical() {
            IpAddr::V6(v6) => {
                let s = v6.segments();
                Client(IpAddr::V6(Ipv6Addr::new(
                    s[0], s[1], s[2], s[3], 0, 0, 0, 0,
                )))
            }
            v4 => Client(v4),
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(a) => write!(f, "{a}/64"),
            IpAddr::V4(a) => write!(f, "{a}"),
        }
    }
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The budget's total is reached (503).
    All {
        /// The budget.
        budget: Budget,
        /// Its total cap.
        cap: usize,
    },
    /// This client's share is used up (429).
    Client {
        /// The budget.
        budget: Budget,
        /// The per-client cap.
        cap: usize,
    },
}

#[derive(Debug, Default)]
struct Counts {
    total: [usize; 2],
    by_client: HashMap<Client, [usize; 2]>,
}

/// The open streams, counted per budget and per client.
#[derive(Debug)]
pub(crate) struct Budgets {
    /// `(total, per client)` per budget.
    caps: [(usize, usize); 2],
    counts: Mutex<Counts>,
}

impl Budgets {
    /// Budgets with these `(total, per client)` caps.
    pub(crate) fn new(reply: (usize, usize), get: (usize, usize)) -> Budgets {
        Budgets {
            caps: [reply, get],
            counts: Mutex::default(),
        }
    }

    /// Claims a stream from `budget` for `client`; the guard gives it back.
    pub(crate) fn claim(self: &Arc<Self>, budget: Budget, client: Client) -> Result<OnDrop, Full> {
        let i = budget.index();
        let (total_cap, client_cap) = self.caps[i];
        {
            let mut c = self.counts.lock();
            if c.total[i] >= total_cap {
                return Err(Full::All {
                    budget,
                    cap: total_cap,
                });
            }
            let mine = c.by_client.entry(client).or_default();
            if mine[i] >= client_cap {
                // The cap is at least 1, so the entry already held a stream: nothing to undo.
                return Err(Full::Client {
                    budget,
                    cap: client_cap,
                });
            }
            mine[i] += 1;
            c.total[i] += 1;
        }
        let me = self.clone();
        Ok(OnDrop(Some(Box::new(move || me.release(i, client)))))
    }

    fn release(&self, i: usize, client: Client) {
        let mut c = self.counts.lock();
        c.total[i] = c.total[i].saturating_sub(1);
        if let Some(mine) = c.by_client.get_mut(&client) {
            mine[i] = mine[i].saturating_sub(1);
            if mine == &[0, 0] {
                c.by_client.remove(&client);
            }
        }
    }

    /// Streams open now in `budget` (all clients), for tests.
    #[cfg(test)]
    fn open(&self, budget: Budget) -> usize {
        self.counts.lock().total[budget.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(s: &str) -> Client {
        Client::of(s.parse().unwrap())
    }

    #[test]
    fn clients_are_addresses_or_ipv6_networks() {
        assert_eq!(client("127.0.0.1"), client("::ffff:127.0.0.1"));
        assert_ne!(client("127.0.0.1"), client("127.0.0.2"));
        assert_eq!(client("2001:db8:1:2::1"), client("2001:db8:1:2:ffff::9"));
        assert_ne!(client("2001:db8:1:2::1"), client("2001:db8:1:3::1"));
        assert_eq!(client("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
        assert_eq!(client("10.0.0.1").to_string(), "10.0.0.1");
    }

    #[test]
    fn budgets_are_separate_and_shared_fairly() {
        let b = Arc::new(Budgets::new((3, 2), (2, 1)));
        let (a, c) = (client("127.0.0.1"), client("127.0.0.2"));
        let g1 = b.claim(Budget::Get, a).unwrap();
        assert_eq!(
            b.claim(Budget::Get, a).err(),
            Some(Full::Client {
                budget: Budget::Get,
                cap: 1
            })
        );
        // Another client still gets one; then the total is reached.
        let g2 = b.claim(Budget::Get, c).unwrap();
        assert_eq!(
            b.claim(Budget::Get, client("127.0.0.3")).err(),
            Some(Full::All {
                budget: Budget::Get,
                cap: 2
            })
        );
        // GET streams take nothing from reply streams.
        let r1 = b.claim(Budget::Reply, a).unwrap();
        let r2 = b.claim(Budget::Reply, a).unwrap();
        assert!(matches!(
            b.claim(Budget::Reply, a),
            Err(Full::Client { .. })
        ));
        let r3 = b.claim(Budget::Reply, c).unwrap();
        assert!(matches!(b.claim(Budget::Reply, c), Err(Full::All { .. })));
        drop((r1, r2, r3, g2));
        assert_eq!(b.open(Budget::Reply), 0);
        assert_eq!(b.open(Budget::Get), 1);
        drop(g1);
        assert_eq!(b.open(Budget::Get), 0);
        assert!(
            b.counts.lock().by_client.is_empty(),
            "no entry is left behind"
        );
        assert!(b.claim(Budget::Get, a).is_ok());
    }
}
