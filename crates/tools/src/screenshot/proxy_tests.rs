//! Tests of the policy proxy, with a scripted resolver standing in for DNS.

use super::*;
use crate::screenshot::policy::Loopback;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolwright_net::Resolution;

const LOCAL_PAGE: Policy = Policy {
    allow_private: false,
    loopback: Loopback::Allowed,
};

/// Answers each lookup with the next list (the last one again when they run out).
struct Scripted {
    answers: Mutex<VecDeque<Vec<IpAddr>>>,
    calls: AtomicUsize,
}

impl Scripted {
    fn new(answers: &[&[&str]]) -> Arc<Scripted> {
        let answers = answers
            .iter()
            .map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect())
            .collect();
        Arc::new(Scripted {
            answers: Mutex::new(answers),
            calls: AtomicUsize::new(0),
        })
    }
}

impl Resolve for Scripted {
    fn resolve(&self, _name: &str, _port: u16) -> Resolution {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock();
        let next = if answers.len() > 1 {
            answers.pop_front().unwrap()
        } else {
            answers.front().cloned().unwrap_or_default()
        };
        Box::pin(async move { Ok(next) })
    }
}

/// A target on 127.0.0.1 that records the first line of every connection and answers
/// like an HTTP server (or echoes, after a CONNECT).
async fn target() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                log.lock()
                    .push(text.lines().next().unwrap_or("").to_owned());
                if text.starts_with("GET ") {
                    let body = "ok";
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(reply.as_bytes()).await;
                } else {
                    let _ = s.write_all(&buf[..n]).await;
                }
            });
        }
    });
    (port, seen)
}

/// Sends `head` and reads one response head (and its body, when it has a length).
async fn exchange(conn: &mut TcpStream, head: &str) -> String {
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        got.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let len = text
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    conn.read_exact(&mut body).await.unwrap();
    text + &String::from_utf8_lossy(&body)
}

async fn proxy(rules: Rules, guarded: Vec<u16>, resolver: Arc<dyn Resolve>) -> Proxy {
    Proxy::start(rules, guarded, resolver).await.unwrap()
}

#[tokio::test]
async fn a_name_is_resolved_once_per_request_and_the_checked_address_used() {
    // DNS rebinding: loopback for the first answer, private for the second.
    let (port, seen) = target().await;
    let dns = Scripted::new(&[&["127.0.0.1"], &["10.0.0.7"]]);
    let p = proxy(Rules::Policy(LOCAL_PAGE), vec![], dns.clone()).await;
    let mut c = TcpStream::connect(p.addr()).await.unwrap();
    let head = format!("CONNECT rebind.test:{port} HTTP/1.1\r\nHost: rebind.test:{port}\r\n\r\n");
    let r = exchange(&mut c, &head).await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    c.write_all(b"hello").await.unwrap();
    let mut echo = [0u8; 5];
    c.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"hello", "the tunnel reaches the checked address");

    let mut c = TcpStream::connect(p.addr()).await.unwrap();
    let r = exchange(&mut c, &head).await;
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("rebind.test (10.0.0.7) is in 10.0.0.0/8"),
        "{r}"
    );
    assert_eq!(
        dns.calls.load(Ordering::SeqCst),
        2,
        "one lookup per request"
    );
    assert_eq!(
        seen.lock().len(),
        1,
        "the refused request made no connection"
    );
    let (attempts, refused, total) = p.attempts();
    assert_eq!((refused, total), (1, 2));
    assert!(matches!(attempts[0].outcome, Outcome::Connected(a) if a.port() == port));
    assert_eq!(attempts[1].authority, format!("rebind.test:{port}"));
}

#[tokio::test]
async fn every_address_of_a_name_is_checked() {
    let (port, seen) = target().await;
    let dns = Scripted::new(&[&["127.0.0.1", "::ffff:0:a00:1"]]);
    let p = proxy(Rules::Policy(LOCAL_PAGE), vec![], dns).await;
    let mut c = TcpStream::connect(p.addr()).await.unwrap();
    let r = exchange(&mut c, &format!("CONNECT two.test:{port} HTTP/1.1\r\n\r\n")).await;
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("10.0.0.0/8"),
        "{r}"
    );
    let r = exchange(
        &mut c,
        &format!("GET http://two.test:{port}/x HTTP/1.1\r\nHost: two.test\r\n\r\n"),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(seen.lock().is_empty(), "{:?}", seen.lock());
}

#[tokio::test]
async fn each_request_of_a_kept_alive_connection_is_checked() {
    let (port, seen) = target().await;
    let p = proxy(Rules::Policy(LOCAL_PAGE), vec![], Scripted::new(&[])).await;
    let mut c = TcpStream::connect(p.addr()).await.unwrap();
    let r = exchange(
        &mut c,
        &format!("GET http://127.0.0.1:{port}/a?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("ok"), "{r}");
    // The same connection, now for a refused host (a redirect, say).
    let r = exchange(
        &mut c,
        "GET http://10.0.0.7/b HTTP/1.1\r\nHost: 10.0.0.7\r\n\r\n",
    )
    .await;
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("http://10.0.0.7/b is refused"),
        "{r}"
    );
    let r = exchange(
        &mut c,
        "GET http://[64:ff9b::a00:1]/c HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .await;
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("10.0.0.0/8"),
        "{r}"
    );
    // Forwarded in origin form, to the one admitted host.
    assert_eq!(
        seen.lock().first().map(String::as_str),
        Some("GET /a?q=1 HTTP/1.1")
    );
}

#[tokio::test]
async fn guarded_ports_and_the_refuse_all_proxy() {
    let (port, seen) = target().await;
    let dns = Scripted::new(&[&["127.0.0.1"]]);
    let p = proxy(Rules::Policy(LOCAL_PAGE), vec![port], dns.clone()).await;
    for authority in [
        format!("127.0.0.1:{port}"),
        format!("0.0.0.0:{port}"),
        format!("localhost:{port}"),
    ] {
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        let r = exchange(&mut c, &format!("CONNECT {authority} HTTP/1.1\r\n\r\n")).await;
        assert!(r.starts_with("HTTP/1.1 403"), "{authority}: {r}");
    }
    let all = proxy(Rules::RefuseAll, vec![], dns.clone()).await;
    let mut c = TcpStream::connect(all.addr()).await.unwrap();
    let r = exchange(&mut c, "CONNECT accounts.google.com:443 HTTP/1.1\r\n\r\n").await;
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("the browser's own connections"),
        "{r}"
    );
    let r = exchange(
        &mut c,
        &format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    assert_eq!(dns.calls.load(Ordering::SeqCst), 0, "nothing was resolved");
    assert!(seen.lock().is_empty());
    assert_eq!(all.attempts().1, 2);
}

#[tokio::test]
async fn unreachable_targets_are_named_like_chromium_names_them() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = proxy(Rules::Policy(LOCAL_PAGE), vec![], Scripted::new(&[])).await;
    let mut c = TcpStream::connect(p.addr()).await.unwrap();
    let r = exchange(
        &mut c,
        &format!("CONNECT 127.0.0.1:{closed} HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(
        r.starts_with("HTTP/1.1 502") && r.contains("net::ERR_CONNECTION_REFUSED"),
        "{r}"
    );
}
