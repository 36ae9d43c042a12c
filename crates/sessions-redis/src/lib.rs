//! A Redis [`SessionStore`] for toolwright's Streamable HTTP transport: replicas that share
//! one Redis serve each other's legacy sessions (`--session-store redis://host:port/db`).
//!
//! What lives where (one Redis, no cluster mode):
//!
//! - `tw:s:<session>`: a hash with the [`SessionRecord`] as JSON (`r`), the count of POST
//!   streams (`streams`) and the last event number of each stream (`seq:<n>`). Its TTL is
//!   the idle timeout, pushed back by every request ([`SessionStore::touch`]).
//! - `tw:e:<session>:<n>`: a Redis stream, the event log of stream `n`; entry `<seq>-1`
//!   holds the message (`m`) or marks the end (`e`). Trimmed to the newest `keep` entries;
//!   it expires with the session.
//! - channel `tw:bus`: `e <stream> <session>` after appends, `c <session>` after a DELETE,
//!   `r <node> <session> <message>` for a client's answer to a request sent by replica
//!   `node`. Every replica hears every message (one subscription each).
//! - `tw:x:<digest>`: a token the gateway exchanged for an upstream, under a SHA-256 digest
//!   of its subject, audience and scope, until shortly before it expires.
//!
//! Appends, updates and deletes run as Lua scripts, so each is atomic. The connection is
//! made on first use and made again after an error, so a Redis that went away and came
//! back is used again without a restart; the subscription reconnects on its own.
//!
//! Layout: this file holds the store (its keys, Lua scripts and the [`SessionStore`]
//! implementation); [`limits`] holds [`RedisLimits`], the `limits:` buckets and in-flight
//! counts shared by replicas (`tw:l:*` keys); [`tasks`] holds [`RedisTasks`], tasks copied for
//! every replica's `tasks/get` (`tw:t:*` keys); [`values`] holds [`RedisValues`], values with
//! a time to live (the gateway's exchanged tokens, `tw:x:<digest>`); [`error`] holds the error of
//! [`RedisStore::open`].

pub mod error;
pub mod limits;
pub mod tasks;
pub mod values;

pub use error::Error;
pub use limits::RedisLimits;
use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, Client, RedisError};
use std::sync::Mutex;
use std::time::Duration;
pub use tasks::RedisTasks;
use tokio::sync::mpsc;
use toolwright_http::store::{
    Append, BusMessage, SessionRecord, SessionStore, StoreError, StoreFuture, StoredEvent,
};
pub use values::RedisValues;

const BUS: &str = "tw:bus";

/// One entry of an event log as XRANGE returns it: its id and its fields.
type Entry = (String, Vec<(String, Vec<u8>)>);

const APPEND: &str = r"
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
local field = 'seq:' .. ARGV[5]
local seq = tonumber(ARGV[1])
if seq == 0 then
  seq = redis.call('HINCRBY', KEYS[1], field, 1)
else
  local last = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  if seq <= last then return 0 end
  redis.call('HSET', KEYS[1], field, seq)
end
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[4], seq .. '-1', ARGV[2], ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return seq
";

const TOUCH: &str = r"
local r = redis.call('HGET', KEYS[1], 'r')
if r then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return r
";

const UPDATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[1])
return 1
";

const NEXT_STREAM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HINCRBY', KEYS[1], 'streams', 1)
";

const DELETE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = tonumber(redis.call('HGET', KEYS[1], 'streams') or '0')
redis.call('DEL', KEYS[1])
for i = 0, n do redis.call('DEL', ARGV[1] .. i) end
redis.call('PUBLISH', KEYS[2], 'c ' .. ARGV[2])
return 1
";

/// Legacy sessions kept in Redis.
pub struct RedisStore {
    client: Client,
    conn: Mutex<Option<MultiplexedConnection>>,
    timeout: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field(
                "server",
                &self.client.get_connection_info().addr().to_string(),
            )
            .finish()
    }
}

fn session_key(id: &str) -> String {
    format!("tw:s:{id}")
}

fn log_key(id: &str, stream: u32) -> String {
    format!("tw:e:{id}:{stream}")
}

fn unavailable(e: RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl RedisStore {
    /// A store on the Redis at `url` (`redis://host:port/db`, `redis+unix:///path`).
    /// Nothing connects yet: the first operation does.
    pub fn open(url: &str) -> Result<RedisStore, Error> {
        let client = Client::open(url).map_err(|source| Error::Url {
            url: url.to_owned(),
            source,
        })?;
        Ok(RedisStore {
            client,
            conn: Mutex::new(None),
            timeout: Duration::from_secs(2),
        })
    }

    /// Gives up on a connection that does not answer within `timeout` (default 2 s): the
    /// operation fails with [`StoreError::Timeout`] and the next one connects again, so a
    /// Redis that hung (or a link that died silently) is not waited on forever.
    pub fn with_timeout(mut self, timeout: Duration) -> RedisStore {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Runs `f` on the connection within the timeout.
    async fn within<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, RedisError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(|e| self.failed(e)),
            Err(_) => {
                self.forget();
                Err(StoreError::Timeout)
            }
        }
    }

    fn forget(&self) {
        *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn conn(&self) -> Result<MultiplexedConnection, StoreError> {
        let have = self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(c) = have {
            return Ok(c);
        }
        let c = match tokio::time::timeout(
            self.timeout,
            self.client.get_multiplexed_async_connection(),
        )
        .await
        {
            Ok(c) => c.map_err(unavailable)?,
            Err(_) => return Err(StoreError::Timeout),
        };
        *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        Ok(c)
    }

    /// Forgets a connection that failed, so the next operation makes a new one.
    fn failed(&self, e: RedisError) -> StoreError {
        // A connection that failed once is not trusted again: the next operation makes a
        // new one (cheap next to a Redis round trip, and how a restarted Redis is found).
        self.forget();
        unavailable(e)
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut c = self.conn().await?;
        self.within(cmd.query_async(&mut c)).await
    }

    async fn script<T: redis::FromRedisValue>(
        &self,
        body: &str,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, StoreError> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(body).arg(keys.len()).arg(keys);
        for a in args {
            cmd.arg(*a);
        }
        self.run(&cmd).await
    }
}

fn parse_bus(payload: &[u8]) -> Option<BusMessage> {
    let mut parts = payload.splitn(4, |b| *b == b' ');
    let kind = parts.next()?;
    let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_owned);
    match kind {
        b"e" => {
            let stream = text(parts.next()?)?.parse().ok()?;
            let session = text(parts.next()?)?;
            Some(BusMessage::Event { session, stream })
        }
        b"c" => Some(BusMessage::Closed {
            session: text(parts.next()?)?,
        }),
        b"r" => {
            let node = text(parts.next()?)?.parse().ok()?;
            let session = text(parts.next()?)?;
            let line = parts.next()?.to_vec();
            Some(BusMessage::Response {
                node,
                session,
                line,
            })
        }
        _ => None,
    }
}

fn record_json(record: &SessionRecord) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(record).map_err(|e| StoreError::Unavailable(e.to_string()))
}

impl SessionStore for RedisStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = record_json(record)?;
            let key = session_key(id);
            let mut c = self.conn().await?;
            let mut pipe = redis::pipe();
            pipe.atomic()
                .hset(&key, "r", json)
                .ignore()
                .hset(&key, "streams", 0)
                .ignore()
                .pexpire(&key, idle.as_millis() as i64)
                .ignore();
            self.within(pipe.query_async::<()>(&mut c)).await
        })
    }

    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let ms = idle.as_millis().to_string();
            let raw: Option<Vec<u8>> = self
                .script(TOUCH, &[&session_key(id)], &[ms.as_bytes()])
                .await?;
            match raw {
                None => Ok(None),
                Some(b) => serde_json::from_slice(&b)
                    .map(Some)
                    .map_err(|e| StoreError::Unavailable(format!("a stored session: {e}"))),
            }
        })
    }

    fn update<'a>(&'a self, id: &'a str, record: &'a SessionRecord) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let json = record_json(record)?;
            let n: i64 = self.script(UPDATE, &[&session_key(id)], &[&json]).await?;
            Ok(n == 1)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let prefix = format!("tw:e:{id}:");
            let n: i64 = self
                .script(
                    DELETE,
                    &[&session_key(id), BUS],
                    &[prefix.as_bytes(), id.as_bytes()],
                )
                .await?;
            Ok(n == 1)
        })
    }

    fn next_stream<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            let n: i64 = self.script(NEXT_STREAM, &[&session_key(id)], &[]).await?;
            Ok(u32::try_from(n).ok().filter(|n| *n > 0))
        })
    }

    fn append<'a>(&'a self, events: &'a [Append], keep: usize) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if events.is_empty() {
                return Ok(());
            }
            let keep = keep.max(1).to_string();
            let mut pipe = redis::pipe();
            let mut woken: Vec<(&str, u32)> = Vec::new();
            for a in events {
                let seq = a.seq.unwrap_or(0).to_string();
                let (kind, line): (&[u8], &[u8]) = match &a.line {
                    Some(l) => (b"m", l),
                    None => (b"e", b""),
                };
                pipe.cmd("EVAL")
                    .arg(APPEND)
                    .arg(2)
                    .arg(session_key(&a.session))
                    .arg(log_key(&a.session, a.stream))
                    .arg(seq)
                    .arg(kind)
                    .arg(line)
                    .arg(&keep)
                    .arg(a.stream)
                    .ignore();
                if !woken.contains(&(&a.session, a.stream)) {
                    woken.push((&a.session, a.stream));
                }
            }
            for (session, stream) in woken {
                pipe.publish(BUS, format!("e {stream} {session}")).ignore();
            }
            let mut c = self.conn().await?;
            self.within(pipe.query_async::<()>(&mut c)).await
        })
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        stream: u32,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("XRANGE");
            cmd.arg(log_key(id, stream))
                .arg(format!("{}-0", after + 1))
                .arg("+")
                .arg("COUNT")
                .arg(limit.max(1));
            let entries: Vec<Entry> = self.run(&cmd).await?;
            let mut out = Vec::with_capacity(entries.len());
            for (entry, fields) in entries {
                let Some(seq) = entry.split('-').next().and_then(|s| s.parse().ok()) else {
                    continue;
                };
                let Some((kind, value)) = fields.into_iter().next() else {
                    continue;
                };
                out.push(StoredEvent {
                    seq,
                    line: (kind == "m").then_some(value),
                });
            }
            Ok(out)
        })
    }

    fn forward<'a>(&'a self, node: u32, id: &'a str, line: &'a [u8]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut payload = format!("r {node} {id} ").into_bytes();
            payload.extend_from_slice(line);
            let mut c = self.conn().await?;
            self.within(c.publish::<_, _, ()>(BUS, payload)).await
        })
    }

    fn subscribe(&self, node: u32) -> mpsc::UnboundedReceiver<BusMessage> {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = self.client.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt;
            let mut lost = false;
            while !tx.is_closed() {
                let mut sub = match client.get_async_pubsub().await {
                    Ok(s) => s,
                    Err(e) => {
                        if !lost {
                            tracing::warn!("session store subscription lost: {e}");
                            lost = true;
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                        continue;
                    }
                };
                if let Err(e) = sub.subscribe(BUS).await {
                    tracing::warn!("session store subscription refused: {e}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    continue;
                }
                if lost && tx.send(BusMessage::Reconnected).is_err() {
                    return;
                }
                lost = true;
                let mut messages = sub.on_message();
                loop {
                    tokio::select! {
                        m = messages.next() => match m {
                            None => break,
                            Some(m) => {
                                let Some(msg) = parse_bus(m.get_payload_bytes()) else { continue };
                                if let BusMessage::Response { node: to, .. } = &msg
                                    && *to != node
                                {
                                    continue;
                                }
                                if tx.send(msg).is_err() {
                                    return;
                                }
                            }
                        },
                        () = tx.closed() => return,
                    }
                }
            }
        });
        rx
    }
}
