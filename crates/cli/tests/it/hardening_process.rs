//! A declared command's process tree ends with its call on every path, and its paths stay
//! beneath the roots: cancellation, the server's `--call-timeout`, children that leave the
//! group with `setsid` (mid-call or after the program exits), the server's own exit; the
//! client's roots narrowing `{name:path}` and `cwd`; a `{name:path}` whose file is swapped
//! for a symbolic link while calls run.

use crate::util::Server;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const V: &str = "2025-11-25";

fn serve(dir: &Path, yaml: &str, extra: &[&str]) -> Server {
    let cfg = dir.join("tools.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let mut args = vec![
        "--config",
        cfg.to_str().unwrap(),
        "--root",
        dir.to_str().unwrap(),
        "--no-watch",
    ];
    args.extend_from_slice(extra);
    Server::start(&args).handshake(V)
}

/// The pids written to `file`, one a line, once it holds `n` of them (waits up to 10 s).
fn pids(file: &Path, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got: Vec<u32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {got:?}, want {n} pids",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Running (or stopped), not a zombie and not gone.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|st| {
            let state = st
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start())
                .unwrap_or("");
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

/// Asserts every pid is gone; a SIGKILL takes effect soon but not at once, so this looks
/// again for up to 5 s before failing.
fn assert_gone(pids: &[u32], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            for &p in &left {
                // Not to leave them behind after the test.
                let _ = std::process::Command::new("kill")
                    .args(["-9", &p.to_string()])
                    .status();
            }
            panic!("{what}: processes {left:?} outlived their call");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three background sleepers, their pids and the shell's in `pids`, then waiting for them.
const HANG: &str = r#"tools:
  - name: hang
    description: Start three sleepers, note their pids, wait.
    inputSchema: {type: object}
    command: [/bin/sh, -c, "sleep 1000 & echo $! >> pids; sleep 1000 & echo $! >> pids; sleep 1000 & echo $! >> pids; echo $$ >> pids; wait"]
"#;

#[test]
fn a_cancelled_call_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), HANG, &[]);
    let file = dir.path().join("pids");
    // The race lost about one time in two before: a few rounds see both outcomes.
    for round in 0..6 {
        let _ = std::fs::remove_file(&file);
        let id = s.next_id();
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hang", "arguments": {}}}));
        let started = pids(&file, 4);
        s.notify(
            "notifications/cancelled",
            json!({"requestId": id, "reason": "test"}),
        );
        assert_gone(&started, &format!("cancelled call, round {round}"));
        // No reply to a cancelled request is required; whatever comes is not waited for.
        s.drain(Duration::from_millis(50));
    }
    s.assert_alive();
}

#[test]
fn the_servers_call_timeout_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), HANG, &["--call-timeout", "1"]);
    let r = s.request("tools/call", json!({"name": "hang", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32001, "{r}");
    let started = pids(&dir.path().join("pids"), 4);
    assert_gone(&started, "--call-timeout");
    s.assert_alive();
}

#[test]
fn children_that_leave_the_session_end_with_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(
        dir.path(),
        r#"tools:
  - name: daemon
    description: A sleeper in its own session whose parent exits mid-call, then one left running after the program exits.
    inputSchema: {type: object}
    command: [/bin/sh, -c, "(setsid sleep 1000 > /dev/null 2>&1 & echo $! >> pids); setsid sleep 1000 & echo $! >> pids; echo done"]
  - name: quick
    description: Print ok.
    inputSchema: {type: object}
    command: [echo, ok]
"#,
        &[],
    );
    let file = dir.path().join("pids");
    for round in 0..3 {
        let _ = std::fs::remove_file(&file);
        let r = s.request("tools/call", json!({"name": "daemon", "arguments": {}}));
        assert_eq!(r["result"]["content"][0]["text"], "done\n", "{r}");
        assert_gone(&pids(&file, 2), &format!("setsid, round {round}"));
    }
    // Calls after them are unaffected.
    let r = s.request("tools/call", json!({"name": "quick", "arguments": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "ok\n", "{r}");
    s.assert_alive();
}

#[test]
fn the_servers_exit_ends_running_calls() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), HANG, &[]);
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hang", "arguments": {}}}));
    let started = pids(&dir.path().join("pids"), 4);
    s.close_stdin();
    assert!(
        s.wait_exit(Duration::from_secs(20)).is_some(),
        "the server exits"
    );
    assert_gone(&started, "server exit");
}

/// A call's first text, or the error's message.
fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"]
        .as_str()
        .map_or_else(|| r.to_string(), str::to_owned)
}

/// A declared call from a legacy client with roots; the server's `roots/list` is answered
/// with `roots`.
fn call_with_roots(s: &mut Server, name: &str, args: Value, roots: &Value) -> Value {
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}}));
    loop {
        let m = s.recv();
        if m["method"] == "roots/list" {
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {"roots": roots}}));
            continue;
        }
        if m.get("id") == Some(&json!(id)) {
            return m;
        }
    }
}

#[test]
fn client_roots_narrow_declared_paths_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("allowed")).unwrap();
    std::fs::write(base.join("allowed/in.txt"), "inside\n").unwrap();
    std::fs::write(base.join("secret.txt"), "server root only\n").unwrap();
    let cfg = base.join("tools.yaml");
    std::fs::write(
        &cfg,
        r#"tools:
  - name: show
    description: Print a file.
    inputSchema: {type: object, properties: {file: {type: string}}, required: [file]}
    command: [cat, "{file:path}"]
  - name: here
    description: Print the working directory.
    inputSchema: {type: object, properties: {dir: {type: string}}}
    command: {argv: [pwd, -P], cwd: "{dir}"}
  - name: home
    description: Print the default working directory.
    inputSchema: {type: object}
    command: [pwd, -P]
"#,
    )
    .unwrap();
    let mut s = Server::start(&[
        "--config",
        cfg.to_str().unwrap(),
        "--root",
        base.to_str().unwrap(),
        "--no-watch",
    ]);
    let init = json!({"protocolVersion": V, "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "t", "version": "0"}});
    assert_eq!(
        s.request("initialize", init)["result"]["protocolVersion"],
        V
    );
    s.notify("notifications/initialized", json!({}));
    let allowed = base.join("allowed");
    let roots = json!([{"uri": format!("file://{}", allowed.display()), "name": "allowed"}]);

    // Inside the client's roots: served, relative paths from its first root.
    let r = call_with_roots(&mut s, "show", json!({"file": "in.txt"}), &roots);
    assert_eq!(text(&r), "inside\n");
    let r = call_with_roots(&mut s, "home", json!({}), &roots);
    assert_eq!(text(&r), format!("{}\n", allowed.display()));
    // Inside the server's root but outside the client's: refused, as search_files refuses.
    for args in [
        json!({"file": base.join("secret.txt")}),
        json!({"file": "../secret.txt"}),
    ] {
        let r = call_with_roots(&mut s, "show", args.clone(), &roots);
        assert_eq!(r["result"]["isError"], true, "{args}: {r}");
        assert!(!text(&r).contains("server root only"), "{args}: {r}");
    }
    for dir in [base.to_str().unwrap(), ".."] {
        let r = call_with_roots(&mut s, "here", json!({"dir": dir}), &roots);
        assert_eq!(r["result"]["isError"], true, "{dir}: {r}");
    }
    s.assert_alive();
}

#[test]
fn a_path_swapped_for_a_link_is_never_read_outside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(base.join("secret"), "OUTSIDE\n").unwrap();
    let cfg = base.join("tools.yaml");
    std::fs::write(
        &cfg,
        r#"tools:
  - name: show
    description: Print a file.
    inputSchema: {type: object, properties: {file: {type: string}}, required: [file]}
    command: [cat, "{file:path}"]
"#,
    )
    .unwrap();
    let mut s = Server::start(&[
        "--config",
        cfg.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--no-watch",
    ])
    .handshake(V);
    std::fs::write(root.join("f"), "inside\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (root, stop) = (root.clone(), stop.clone());
        let secret = base.join("secret");
        std::thread::spawn(move || {
            let mut n = 0u64;
            // About as long a file as a link, each for less than a call takes: a program
            // that re-opened the path it was given would often find the link.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 10_000_000 {
                let _ = std::fs::write(root.join("f.file"), "inside\n");
                let _ = std::fs::rename(root.join("f.file"), root.join("f"));
                std::thread::sleep(Duration::from_micros(300));
                let _ = std::os::unix::fs::symlink(&secret, root.join("f.link"));
                let _ = std::fs::rename(root.join("f.link"), root.join("f"));
                std::thread::sleep(Duration::from_micros(300));
                n += 1;
            }
        })
    };
    let (mut outside, mut inside, mut calls) = (0, 0, 0);
    let until = Instant::now() + Duration::from_secs(20);
    while calls < 8000 && Instant::now() < until {
        let r = s.request(
            "tools/call",
            json!({"name": "show", "arguments": {"file": "f"}}),
        );
        outside += usize::from(text(&r).contains("OUTSIDE"));
        inside += usize::from(text(&r) == "inside\n");
        calls += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(
        outside, 0,
        "{outside} of {calls} calls read a file outside the root"
    );
    // The others were refused (the link was there when the path was opened), or read the
    // file: enough of them did for the race to have been run.
    assert!(inside >= 20, "only {inside} of {calls} calls read the file");
}
