//! Redis's own count of the commands it ran (`INFO commandstats`), read before and after
//! the measured part of an HTTP run, so that the commands a call costs are counted by
//! Redis itself. One plain TCP connection, the inline form of the command, loopback only.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Per command (lower case, e.g. `evalsha`, `hget`): calls and µs Redis spent in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CmdStats(pub BTreeMap<String, (u64, u64)>);

impl CmdStats {
    /// What ran between `before` and `self`, without the `INFO` commands that read them.
    pub fn since(&self, before: &CmdStats) -> CmdStats {
        let mut out = BTreeMap::new();
        for (name, &(calls, usec)) in &self.0 {
            if name == "info" {
                continue;
            }
            let (c0, u0) = before.0.get(name).copied().unwrap_or((0, 0));
            let d = (calls.saturating_sub(c0), usec.saturating_sub(u0));
            if d.0 > 0 {
                out.insert(name.clone(), d);
            }
        }
        CmdStats(out)
    }

    /// Commands in all.
    pub fn calls(&self) -> u64 {
        self.0.values().map(|v| v.0).sum()
    }

    /// µs Redis spent in them (its own `usec` counters).
    pub fn usec(&self) -> u64 {
        self.0.values().map(|v| v.1).sum()
    }
}

/// Parses `host:port` or `redis://host:port[/db]`; the host must be a loopback address.
pub fn parse_addr(s: &str) -> Result<SocketAddr> {
    let hostport = s.strip_prefix("redis://").unwrap_or(s);
    let hostport = hostport.split('/').next().unwrap_or(hostport);
    let addr = hostport
        .to_socket_addrs()
        .with_context(|| format!("--redis {s:?}: want 127.0.0.1:PORT"))?
        .next()
        .ok_or_else(|| anyhow!("--redis {s:?} did not resolve"))?;
    if !addr.ip().is_loopback() {
        bail!("refusing non-loopback Redis {addr}: benchmarks stay on this machine");
    }
    Ok(addr)
}

/// Parses the text of `INFO commandstats` (`cmdstat_get:calls=2,usec=15,...` lines).
/// Subcommands (`cmdstat_client|setname`) are kept under their full name.
pub fn parse(text: &str) -> CmdStats {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, fields)) = line
            .trim()
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let field = |key: &str| {
            fields
                .split(',')
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(calls) = field("calls") {
            out.insert(
                name.to_ascii_lowercase(),
                (calls, field("usec").unwrap_or(0)),
            );
        }
    }
    CmdStats(out)
}

/// Reads one RESP bulk string reply (`$N\r\n` + N bytes + `\r\n`) out of `buf`, if whole.
fn bulk(buf: &[u8]) -> Result<Option<&[u8]>> {
    let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..eol]).context("reply head is not text")?;
    if let Some(err) = head.strip_prefix('-') {
        bail!("Redis answered: {err}");
    }
    let len: usize = head
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow!("unexpected Redis reply {head:?}"))?;
    let start = eol + 2;
    if buf.len() < start + len + 2 {
        return Ok(None);
    }
    Ok(Some(&buf[start..start + len]))
}

/// `INFO commandstats` from the Redis at `addr`.
pub async fn commandstats(addr: SocketAddr) -> Result<CmdStats> {
    let go = async {
        let mut s = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to Redis at {addr}"))?;
        s.write_all(b"INFO commandstats\r\n").await?;
        let mut buf = Vec::with_capacity(8192);
        loop {
            if let Some(body) = bulk(&buf)? {
                let text = std::str::from_utf8(body).context("INFO reply is not text")?;
                return Ok(parse(text));
            }
            if s.read_buf(&mut buf).await? == 0 {
                bail!("Redis closed the connection before answering INFO");
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), go)
        .await
        .map_err(|_| anyhow!("Redis at {addr} did not answer INFO within 10 s"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Commandstats\r\n\
        cmdstat_evalsha:calls=10,usec=150,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_hget:calls=10,usec=20,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_client|setname:calls=3,usec=3,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_info:calls=1,usec=40,usec_per_call=40.00,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn parses_commandstats() {
        let s = parse(INFO);
        assert_eq!(s.0.get("evalsha"), Some(&(10, 150)));
        assert_eq!(s.0.get("client|setname"), Some(&(3, 3)));
        assert_eq!(s.0.len(), 4);
    }

    #[test]
    fn delta_leaves_out_info_and_unchanged() {
        let before = parse(INFO);
        let after = parse(
            "cmdstat_evalsha:calls=30,usec=450\r\ncmdstat_hget:calls=10,usec=20\r\n\
             cmdstat_info:calls=2,usec=80\r\ncmdstat_publish:calls=5,usec=10\r\n",
        );
        let d = after.since(&before);
        assert_eq!(
            d.0.into_iter().collect::<Vec<_>>(),
            vec![("evalsha".into(), (20, 300)), ("publish".into(), (5, 10))]
        );
        let d = after.since(&before);
        assert_eq!((d.calls(), d.usec()), (25, 310));
    }

    #[test]
    fn bulk_replies() {
        assert_eq!(bulk(b"$5\r\nhel").unwrap(), None);
        assert_eq!(bulk(b"$5\r\nhello\r\n").unwrap(), Some(&b"hello"[..]));
        assert!(bulk(b"-ERR unknown command\r\n").is_err());
        assert!(bulk(b"+OK\r\n").is_err());
        assert_eq!(bulk(b"$5").unwrap(), None);
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("redis://127.0.0.1:6379/0").unwrap().port(), 6379);
        assert_eq!(parse_addr("127.0.0.1:7000").unwrap().port(), 7000);
        assert!(parse_addr("10.1.2.3:6379").is_err());
        assert!(parse_addr("nonsense").is_err());
    }
}
