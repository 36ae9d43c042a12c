//! One suite, two stores: every test runs against `MemoryStore` and against
//! `RedisStore` on a real `redis-server` of its own; and `RedisLimits`, the limits' counts
//! in Redis, on one.

#[path = "support/redis_server.rs"]
mod redis_server;

use redis_server::RedisServer;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;
use toolwright_http::store::{Append, BusMessage, SessionRecord, StoreError, StoredEvent};
use toolwright_http::{MemoryStore, SessionStore};
use toolwright_sessions_redis::{Error, RedisStore};

const IDLE: Duration = Duration::from_secs(60);

fn record() -> SessionRecord {
    SessionRecord {
        version: "2025-11-25".into(),
        client_capabilities: serde_json::json!({"elicitation": {}}),
        client_info: serde_json::json!({"name": "t", "version": "1"}),
        initialized: false,
        log_level: "debug".into(),
        roots_generation: 0,
        caller: None,
    }
}

fn msg(stream: u32, seq: Option<u64>, text: &str) -> Append {
    Append {
        session: "s1".into(),
        stream,
        seq,
        line: Some(text.as_bytes().to_vec()),
    }
}

fn lines(events: &[StoredEvent]) -> Vec<(u64, Option<String>)> {
    events
        .iter()
        .map(|e| {
            let line = e
                .line
                .as_ref()
                .map(|l| String::from_utf8_lossy(l).into_owned());
            (e.seq, line)
        })
        .collect()
}

/// Waits until `rx` hears the store: probes are forwarded until one arrives.
async fn subscribed(store: &dyn SessionStore, node: u32, rx: &mut UnboundedReceiver<BusMessage>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        store.forward(node, "probe", b"x").await.expect("forward");
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
            while rx.try_recv().is_ok() {}
            return;
        }
        assert!(Instant::now() < deadline, "the subscription never came up");
    }
}

async fn heard(rx: &mut UnboundedReceiver<BusMessage>) -> BusMessage {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a bus message in time")
        .expect("the bus is open")
}

async fn records(store: Arc<dyn SessionStore>) {
    let rec = record();
    assert_eq!(store.touch("s1", IDLE).await.unwrap(), None);
    assert!(!store.update("s1", &rec).await.unwrap(), "no such session");
    store.create("s1", &rec, IDLE).await.unwrap();
    assert_eq!(store.touch("s1", IDLE).await.unwrap(), Some(rec.clone()));
    let mut changed = rec.clone();
    changed.initialized = true;
    changed.log_level = "warning".into();
    changed.roots_generation = 2;
    assert!(store.update("s1", &changed).await.unwrap());
    assert_eq!(store.touch("s1", IDLE).await.unwrap(), Some(changed));
    assert!(store.delete("s1").await.unwrap());
    assert!(!store.delete("s1").await.unwrap());
    assert_eq!(store.touch("s1", IDLE).await.unwrap(), None);
    assert_eq!(store.next_stream("s1").await.unwrap(), None);
}

async fn idle_sessions_expire_unless_touched(store: Arc<dyn SessionStore>) {
    let short = Duration::from_millis(300);
    store.create("s1", &record(), short).await.unwrap();
    store.create("s2", &record(), short).await.unwrap();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(store.touch("s2", short).await.unwrap().is_some());
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(store.touch("s1", short).await.unwrap(), None, "expired");
    assert_eq!(store.next_stream("s1").await.unwrap(), None);
}

async fn logs_number_bound_and_end(store: Arc<dyn SessionStore>) {
    store.create("s1", &record(), IDLE).await.unwrap();
    assert_eq!(store.next_stream("s1").await.unwrap(), Some(1));
    assert_eq!(store.next_stream("s1").await.unwrap(), Some(2));
    // Stream 1: numbered by its writer; a number already used is ignored.
    let mut batch: Vec<Append> = (1..=5).map(|n| msg(1, Some(n), &format!("m{n}"))).collect();
    batch.push(msg(1, Some(3), "again"));
    batch.push(Append {
        line: None,
        ..msg(1, Some(6), "")
    });
    store.append(&batch, 4).await.unwrap();
    let got = store.read("s1", 1, 0, 100).await.unwrap();
    assert_eq!(
        lines(&got),
        vec![
            (3, Some("m3".into())),
            (4, Some("m4".into())),
            (5, Some("m5".into())),
            (6, None)
        ],
        "the newest 4 kept, the end marked"
    );
    let after4 = store.read("s1", 1, 4, 100).await.unwrap();
    assert_eq!(lines(&after4)[0], (5, Some("m5".into())));
    assert_eq!(store.read("s1", 1, 3, 1).await.unwrap().len(), 1, "limit");
    // Stream 0: numbered by the store, whoever writes.
    store
        .append(&[msg(0, None, "a"), msg(0, None, "b")], 10)
        .await
        .unwrap();
    store.append(&[msg(0, None, "c")], 10).await.unwrap();
    let zero = store.read("s1", 0, 1, 100).await.unwrap();
    assert_eq!(
        lines(&zero),
        vec![(2, Some("b".into())), (3, Some("c".into()))]
    );
    assert!(store.read("s1", 7, 0, 100).await.unwrap().is_empty());
    // A session that is gone takes its logs with it and gets no more.
    assert!(store.delete("s1").await.unwrap());
    store.append(&[msg(0, None, "late")], 10).await.unwrap();
    assert!(store.read("s1", 0, 0, 100).await.unwrap().is_empty());
    assert!(store.read("s1", 1, 0, 100).await.unwrap().is_empty());
}

async fn the_bus_wakes_forwards_and_closes(store: Arc<dyn SessionStore>) {
    let mut a = store.subscribe(1);
    let mut b = store.subscribe(2);
    subscribed(&*store, 1, &mut a).await;
    subscribed(&*store, 2, &mut b).await;
    store.create("s1", &record(), IDLE).await.unwrap();
    store.append(&[msg(0, None, "x")], 10).await.unwrap();
    let woken = BusMessage::Event {
        session: "s1".into(),
        stream: 0,
    };
    assert_eq!(heard(&mut a).await, woken);
    assert_eq!(heard(&mut b).await, woken);
    let answer = br#"{"jsonrpc":"2.0","id":8589934593,"result":{"action":"accept"}}"#;
    store.forward(2, "s1", answer).await.unwrap();
    let expected = BusMessage::Response {
        node: 2,
        session: "s1".into(),
        line: answer.to_vec(),
    };
    assert_eq!(
        heard(&mut b).await,
        expected,
        "only the waiting replica hears it"
    );
    store.delete("s1").await.unwrap();
    let closed = BusMessage::Closed {
        session: "s1".into(),
    };
    assert_eq!(
        heard(&mut a).await,
        closed,
        "replica 1 did not hear the answer"
    );
    assert_eq!(heard(&mut b).await, closed);
}

async fn redis_gone_then_back(store: Arc<dyn SessionStore>, server: &mut RedisServer) {
    store.create("s1", &record(), IDLE).await.unwrap();
    server.stop();
    let failed = tokio::time::timeout(Duration::from_secs(5), store.touch("s1", IDLE)).await;
    assert!(
        matches!(failed, Ok(Err(StoreError::Unavailable(_))) | Err(_)),
        "{failed:?}"
    );
    server.restart();
    // The data went with the process (no persistence); the store is usable again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.touch("s1", IDLE).await {
            Ok(found) => {
                assert_eq!(found, None);
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "never recovered: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    store.create("s1", &record(), IDLE).await.unwrap();
    assert!(store.touch("s1", IDLE).await.unwrap().is_some());
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(std::sync::Arc::new(super::MemoryStore::new())).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test]
                async fn $name() {
                    if !super::redis_server::available() {
                        return;
                    }
                    let server = super::RedisServer::start();
                    let store = super::RedisStore::open(&server.url()).unwrap();
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
    };
}

both!(
    records,
    idle_sessions_expire_unless_touched,
    logs_number_bound_and_end,
    the_bus_wakes_forwards_and_closes,
);

#[tokio::test]
async fn redis_recovers_without_a_restart() {
    if !redis_server::available() {
        return;
    }
    let mut server = RedisServer::start();
    let store = RedisStore::open(&server.url()).unwrap();
    redis_gone_then_back(Arc::new(store), &mut server).await;
}

#[tokio::test]
async fn a_redis_that_hangs_times_out_then_answers_again() {
    if !redis_server::available() {
        return;
    }
    let server = RedisServer::start();
    let store = RedisStore::open(&server.url())
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    store.create("s1", &record(), IDLE).await.unwrap();
    server.pause();
    let hung = store.touch("s1", IDLE).await;
    server.resume();
    assert!(matches!(hung, Err(StoreError::Timeout)), "{hung:?}");
    assert_eq!(store.touch("s1", IDLE).await.unwrap(), Some(record()));
}

#[test]
fn bad_urls_are_refused() {
    let e = RedisStore::open("http://nope").unwrap_err();
    assert!(
        matches!(&e, Error::Url { url, .. } if url == "http://nope"),
        "{e}"
    );
    assert!(e.to_string().contains("http://nope"), "{e}");
}

/// `limits:` counted in Redis: the bucket shared by two stores (two replicas), and a slot
/// whose release is lost (a replica that died mid-call) freed once its lease ends.
#[tokio::test]
async fn redis_limits_share_a_bucket_and_end_lost_slots() {
    use toolwright_server::limit::{Admission, Bounds, Counters};
    use toolwright_sessions_redis::RedisLimits;
    if !redis_server::available() {
        return;
    }
    let server = RedisServer::start();
    let replica = || RedisLimits::new(RedisStore::open(&server.url()).unwrap());
    let (a, b) = (replica(), replica());
    let rate = Bounds {
        per_ms: Some(1.0 / 60_000.0),
        burst: 3,
        concurrent: None,
        lease: Duration::from_secs(60),
    };
    let mut allowed = 0;
    for store in [&a, &b, &a, &b, &a] {
        match store.admit("sub:alice\u{1f}add", &rate).await.unwrap() {
            Admission::Allowed(_) => allowed += 1,
            Admission::RateLimited { retry_after } => {
                assert!(retry_after > Duration::from_secs(55), "{retry_after:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(allowed, 3, "one bucket of three for both replicas");

    let cap = Bounds {
        per_ms: None,
        burst: 1,
        concurrent: Some(1),
        lease: Duration::from_millis(300),
    };
    let key = "sub:bob\u{1f}slow";
    let Admission::Allowed(slot) = a.admit(key, &cap).await.unwrap() else {
        panic!("the first call has a slot");
    };
    // Its replica dies: the slot is never given back.
    std::mem::forget(slot);
    assert!(matches!(
        b.admit(key, &cap).await.unwrap(),
        Admission::TooMany { max: 1 }
    ));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let Admission::Allowed(slot) = b.admit(key, &cap).await.unwrap() else {
        panic!("the lease ended, so the slot is free");
    };
    // Given back (in the background) when dropped.
    drop(slot);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match a.admit(key, &cap).await.unwrap() {
            Admission::Allowed(_) => break,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("the slot was not given back: {other:?}"),
        }
    }
}
