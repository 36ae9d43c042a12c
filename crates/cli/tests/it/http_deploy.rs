//! The deploy example (deploy/run.sh: three replicas behind nginx, round-robin, sessions in
//! Redis) driven by the official TypeScript SDK client in legacy session mode
//! (tests/node/shared_sessions.mjs): progress, elicitation round trips whose answers land on
//! other replicas, list_changed on the GET stream; then the replica holding the GET stream
//! is killed during a call on another one, and the client resumes the GET stream on a
//! surviving replica with `Last-Event-ID`, with no event lost or duplicated.
//!
//! Needs redis-server, nginx and tests/node/node_modules; under `CI` it must run, elsewhere
//! it is skipped, with a message, when one is missing.

use crate::http_node::node_project;
use crate::util::{bin, repo_root};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Whether `program` runs; else the test named `what` is skipped with a message (or fails
/// under CI, where scripts/test.sh installs it).
pub(crate) fn installed(program: &str, what: &str) -> bool {
    let found = Command::new(program)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set: {program} must be installed (scripts/test.sh installs it)"
        );
        eprintln!("SKIPPED {what}: {program} is not installed");
    }
    found
}

/// deploy/run.sh, ended with SIGTERM (so that it stops what it started) when dropped.
pub(crate) struct Deploy(pub(crate) Child);

impl Drop for Deploy {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn ts_sdk_client_survives_the_death_of_its_get_streams_replica() {
    if !(installed("redis-server", "deploy test") && installed("nginx", "deploy test")) {
        return;
    }
    let Some(node_dir) = node_project() else {
        return;
    };
    let mut child = Command::new(repo_root().join("deploy/run.sh"))
        .arg("--bin")
        .arg(bin())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run deploy/run.sh");
    let out = child.stdout.take().unwrap();
    let deploy = Deploy(child);
    let mut url = String::new();
    let mut replicas = Vec::new();
    for line in BufReader::new(out).lines() {
        let line = line.expect("read deploy/run.sh's output");
        if let Some(u) = line.strip_prefix("url=") {
            url = u.to_owned();
        } else if let Some(r) = line.strip_prefix("replica=") {
            let f: Vec<&str> = r.split(' ').collect();
            replicas.push(format!("127.0.0.1:{}={}", f[2], f[1]));
        } else if line == "ready" {
            break;
        }
    }
    assert!(
        !url.is_empty() && replicas.len() == 3,
        "deploy/run.sh did not start"
    );
    let run = Command::new("node")
        .arg(node_dir.join("shared_sessions.mjs"))
        .arg(&url)
        .args(&replicas)
        .current_dir(&node_dir)
        .output()
        .expect("run node");
    drop(deploy);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "node failed: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["progress"], serde_json::json!([1, 2, 3]), "{v}");
    for e in v["elicited"].as_array().unwrap() {
        assert!(
            e["text"].as_str().unwrap_or("").contains("action=accept"),
            "{v}"
        );
    }
    let crossed = v["elicited"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["call"] != e["answer"])
        .count();
    assert!(crossed > 0, "no answer went to another replica: {v}");
    // The long call ran elsewhere and lost nothing.
    assert_ne!(v["longOn"], v["killed"], "{v}");
    let ten: Vec<u64> = (1..=10).collect();
    assert_eq!(v["longSteps"], serde_json::json!(ten), "{v}");
    assert_eq!(v["longResult"]["steps"], 10, "{v}");
    // The GET stream: opened on the replica that was killed, resumed by the client with
    // Last-Event-ID on another; every event exactly once, in order.
    let gets = v["gets"].as_array().unwrap();
    assert!(gets.len() >= 2, "the GET stream was not resumed: {v}");
    assert_eq!(gets[0]["upstream"], v["killed"], "{v}");
    let resumed = &gets[gets.len() - 1];
    assert_ne!(resumed["upstream"], v["killed"], "{v}");
    assert!(resumed["lastEventId"].as_str().is_some(), "{v}");
    let ids: Vec<String> = gets
        .iter()
        .flat_map(|g| g["ids"].as_array().unwrap().iter())
        .filter_map(|i| i.as_str().map(str::to_owned))
        .collect();
    let expected = v["expectedListChanged"].as_u64().unwrap();
    let want: Vec<String> = (1..=expected).map(|n| format!("0-{n}")).collect();
    assert_eq!(ids, want, "{v}");
    assert_eq!(v["listChanged"], expected, "{v}");
}
