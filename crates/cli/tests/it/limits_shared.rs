//! One budget kept by three replicas: deploy/run.sh's three `toolwright serve --http
//! --session-store redis://…` behind nginx (round-robin, no affinity), with `limits:` in
//! their tool file. Calls spread over the replicas draw on one bucket in Redis; without it
//! each replica would allow its own. Behind nginx, a client counts as the address nginx's
//! X-Forwarded-For names.
//!
//! Needs redis-server and nginx; under `CI` they must be there, elsewhere the test is
//! skipped, with a message, when one is missing.

use crate::http_client::{Conn, Resp};
use crate::http_deploy::{Deploy, installed};
use crate::limits::{call_on, call_with, refusal};
use crate::util::{bin, repo_root};
use serde_json::json;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

const CONFIG: &str = r#"builtins: [add]
limits:
  tools:
    add: {calls_per_minute: 6}
"#;

#[test]
fn three_replicas_on_redis_keep_one_budget() {
    if !(installed("redis-server", "shared limits test")
        && installed("nginx", "shared limits test"))
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limits.yaml");
    std::fs::write(&file, CONFIG).unwrap();
    let mut child = Command::new(repo_root().join("deploy/run.sh"))
        .arg("--bin")
        .arg(bin())
        .args(["--", "--config", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run deploy/run.sh");
    let out = child.stdout.take().unwrap();
    let deploy = Deploy(child);
    let mut url = String::new();
    let mut replicas = 0;
    for line in BufReader::new(out).lines() {
        let line = line.expect("read deploy/run.sh's output");
        if let Some(u) = line.strip_prefix("url=") {
            url = u.to_owned();
        } else if line.starts_with("replica=") {
            replicas += 1;
        } else if line == "ready" {
            break;
        }
    }
    assert!(
        !url.is_empty() && replicas == 3,
        "deploy/run.sh did not start"
    );
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();

    // Six a minute, a burst of six, for the one caller behind nginx (its address), over
    // twelve calls on fresh connections, so nginx spreads them.
    let mut answered: Vec<Resp> = Vec::new();
    for _ in 0..12 {
        let mut conn = Conn::open(addr);
        answered.push(call_on(&mut conn, None, "add", json!({"a": 1, "b": 2})));
    }
    let upstreams: BTreeSet<String> = answered
        .iter()
        .filter_map(|r| r.header("x-upstream").map(str::to_owned))
        .collect();
    assert_eq!(
        upstreams.len(),
        3,
        "nginx did not spread the calls: {upstreams:?}"
    );
    let allowed = answered
        .iter()
        .filter(|r| r.json()["result"]["isError"] != true)
        .count();
    assert_eq!(allowed, 6, "one budget of six, whichever replica answers");
    for r in answered
        .iter()
        .filter(|r| r.json()["result"]["isError"] == true)
    {
        let text = refusal(r);
        assert!(text.starts_with("rate limited: retry after "), "{text}");
        let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=10).contains(&secs), "{secs}");
    }
    // Refused on more than one replica: the count is not any one replica's.
    let refused_on: BTreeSet<&str> = answered
        .iter()
        .filter(|r| r.json()["result"]["isError"] == true)
        .filter_map(|r| r.header("x-upstream"))
        .collect();
    assert!(refused_on.len() >= 2, "{refused_on:?}");

    // Each client counts as itself, not as nginx: nginx adds the address it saw to
    // X-Forwarded-For and the replicas believe it (--trusted-proxy 127.0.0.1 in
    // deploy/run.sh). Here every client shares nginx's loopback address, so a client's own
    // entry stands for the remote address nginx would have written; such a client has its
    // budget of six, on every replica, while the first is still out of calls.
    let mut other = Vec::new();
    for _ in 0..8 {
        let mut conn = Conn::open(addr);
        let xff = [("x-forwarded-for", "203.0.113.9")];
        other.push(call_with(&mut conn, &xff, "add", json!({"a": 2, "b": 2})));
    }
    let allowed = other
        .iter()
        .filter(|r| r.json()["result"]["isError"] != true)
        .count();
    assert_eq!(allowed, 6, "a budget of its own");
    let mut conn = Conn::open(addr);
    let r = call_on(&mut conn, None, "add", json!({"a": 1, "b": 2}));
    assert!(refusal(&r).starts_with("rate limited"));
    drop(deploy);
}
