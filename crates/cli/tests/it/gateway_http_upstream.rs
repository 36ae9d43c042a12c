//! The gateway in front of Streamable HTTP upstreams: its requests go over kept
//! connections (counted on this machine's TCP table, not guessed), a restarted upstream is
//! reached again on the next call, and a legacy upstream's GET stream that drops is opened
//! again with `Last-Event-ID`, so that what the upstream said while it was down arrives.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{HttpPeer, available, peers_dir, s, url_in_line};
use crate::util::{Server, bin};

/// The legacy handshake the gateway's client speaks here.
const VERSION: &str = "2025-11-25";

/// Writes a gateway config with the one upstream `up` (`spec`) and starts the gateway on
/// stdio, handshake done.
fn gateway(dir: &Path, spec: Value) -> Server {
    let doc = json!({
        "gateway": {"state_file": s(&dir.join("pins.json"))},
        "servers": {"up": spec},
    });
    let path = dir.join("gw.yaml");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    Server::legacy(VERSION, &["--config", &s(&path)])
}

/// `toolwright serve --http 127.0.0.1:PORT` (0: any free port).
fn upstream(port: u16) -> HttpPeer {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--http", &format!("127.0.0.1:{port}")]);
    HttpPeer::start(cmd, url_in_line)
}

fn port_of(url: &str) -> u16 {
    let rest = url.trim_start_matches("http://");
    let authority = rest.split('/').next().unwrap();
    authority.rsplit(':').next().unwrap().parse().unwrap()
}

/// The TCP sockets on this machine whose far end is port `port` of 127.0.0.1 and whose
/// own port is another: the client ends of connections to the server listening there, in
/// any state (open, or closed and lingering in TIME_WAIT for a minute), so that every
/// connection made recently is counted, not only those still open.
fn connections_to(port: u16) -> usize {
    let far = format!("0100007F:{port:04X}");
    let own = format!(":{port:04X}");
    let text = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    text.lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 2 && fields[2] == far && !fields[1].ends_with(&own)
        })
        .count()
}

fn add(g: &mut Server, a: i64, b: i64) -> Value {
    g.request(
        "tools/call",
        json!({"name": "up__add", "arguments": {"a": a, "b": b}}),
    )
}

fn assert_sum(reply: &Value, want: i64) {
    assert_eq!(
        reply["result"]["structuredContent"]["result"], want,
        "{reply}"
    );
}

/// 50 calls one after another and 4 bursts of 16 at once reach the upstream over a few
/// kept connections (a connection per request would leave 114 behind in TIME_WAIT), and
/// after the upstream is restarted on its port, its kept connections now dead, the next
/// call is answered.
#[test]
fn calls_through_the_gateway_share_kept_connections_to_an_http_upstream() {
    let up = upstream(0);
    let port = port_of(&up.url);
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"url": up.url, "trust": "trusted", "start": "eager"});
    let mut g = gateway(dir.path(), spec);
    let before = connections_to(port);
    for i in 0..50 {
        assert_sum(&add(&mut g, i, 1), i + 1);
    }
    let sequential = connections_to(port);
    assert!(
        sequential <= 4,
        "50 calls one after another left {sequential} connections to the upstream (before them: {before})"
    );
    for round in 0..4 {
        let ids: Vec<i64> = (0..16)
            .map(|i| {
                let id = g.next_id();
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "up__add", "arguments": {"a": round, "b": i}}});
                g.send(&call);
                id
            })
            .collect();
        for (i, id) in ids.iter().enumerate() {
            assert_sum(&g.response_to(&json!(id)), round + i as i64);
        }
    }
    let bursts = connections_to(port);
    assert!(
        bursts <= 16 + 4,
        "4 bursts of 16 calls left {bursts} connections to the upstream"
    );

    drop(up);
    let again = upstream(port);
    assert_eq!(port_of(&again.url), port);
    assert_sum(&add(&mut g, 20, 22), 42);
}

/// `resuming_peer.py` over HTTP (standard library only), recording its GETs in `events`.
fn resuming_peer(events: &Path) -> Option<HttpPeer> {
    let script = peers_dir().join("resuming_peer.py");
    let argv = available("python3", vec!["python3".into(), s(&script)], &[])?;
    let mut cmd = Command::new(&argv[0]);
    cmd.arg(&argv[1]).env("RESUMING_PEER_EVENTS", events);
    Some(HttpPeer::start(cmd, url_in_line))
}

fn tool_names(g: &mut Server) -> Vec<String> {
    g.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A legacy upstream's GET stream drops after its first event, and the upstream removes
/// a tool while no stream is open: the gateway opens the stream again naming that event
/// in `Last-Event-ID`, the upstream replays its `tools/list_changed`, and the gateway's
/// client sees the tool gone. (Without the header the upstream replays nothing, and the
/// gateway would serve the removed tool until something else made it list again.)
#[test]
fn a_dropped_get_stream_is_resumed_from_its_last_event() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.txt");
    let Some(up) = resuming_peer(&events) else {
        return;
    };
    let spec = json!({"url": up.url, "era": "legacy", "trust": "trusted", "start": "eager"});
    let mut g = gateway(dir.path(), spec);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let names = tool_names(&mut g);
        assert!(names.contains(&"up__first".to_owned()), "{names:?}");
        if !names.contains(&"up__second".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway still serves up__second; the upstream saw:\n{}",
            std::fs::read_to_string(&events).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = std::fs::read_to_string(&events).unwrap();
    let gets: Vec<&str> = seen.lines().filter(|l| l.starts_with("GET ")).collect();
    assert_eq!(
        gets.first().copied(),
        Some("GET last-event-id=none"),
        "{seen}"
    );
    assert!(
        gets.contains(&"GET last-event-id=1"),
        "no GET resumed from event 1:\n{seen}"
    );
    let call = g.request("tools/call", json!({"name": "up__first", "arguments": {}}));
    assert_eq!(call["result"]["content"][0]["text"], "first", "{call}");
}
