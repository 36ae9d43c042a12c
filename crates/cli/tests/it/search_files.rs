//! `search_files` over the real binary: glob rules, ordering and truncation, the sandbox
//! (`..`, absolute paths, symlinks; client roots are in `client_roots.rs`), unreadable entries, progress and
//! cancellation.

use crate::util::{Server, bin, check_message};
use serde_json::{Value, json};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A temporary directory holding `root/` (the server's root) and `outside/` beside it.
pub(crate) struct Tree {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
}

impl Tree {
    pub(crate) fn new(files: &[&str]) -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(outside.join("secret-dir")).unwrap();
        fs::write(outside.join("secret.py"), "x").unwrap();
        let t = Tree {
            _tmp: tmp,
            root,
            outside,
        };
        for f in files {
            t.touch(f);
        }
        t
    }

    pub(crate) fn touch(&self, rel: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, rel).unwrap();
    }

    pub(crate) fn server(&self) -> Server {
        Server::start_in(&["--root", self.root.to_str().unwrap()], None)
    }
}

pub(crate) fn call(s: &mut Server, args: Value) -> Value {
    let r = s.modern(
        "tools/call",
        json!({"name": "search_files", "arguments": args}),
    );
    assert!(
        r.get("error").is_none(),
        "a tool result, not a protocol error: {r}"
    );
    r["result"].clone()
}

pub(crate) fn ok(s: &mut Server, args: Value) -> Value {
    let r = call(s, args);
    assert_ne!(r["isError"], json!(true), "{r}");
    let sc = r["structuredContent"].clone();
    // The text block is the same JSON.
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, sc);
    sc
}

fn found(s: &mut Server, args: Value) -> Vec<String> {
    serde_json::from_value(ok(s, args)["matches"].clone()).unwrap()
}

pub(crate) fn refused(s: &mut Server, args: Value) -> String {
    let r = call(s, args);
    assert_eq!(r["isError"], json!(true), "{r}");
    r["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn the_definition_keeps_the_seed_interface() {
    let t = Tree::new(&[]);
    let mut s = t.server();
    let r = s.modern("tools/list", json!({}));
    let tool = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_files")
        .unwrap()
        .clone();
    let input = &tool["inputSchema"];
    assert_eq!(input["required"], json!(["directory", "pattern"]));
    assert_eq!(input["properties"]["directory"]["type"], "string");
    assert_eq!(input["properties"]["pattern"]["type"], "string");
    assert_eq!(
        input["properties"]["recursive"],
        json!({"type": "boolean", "description": "Search subdirectories recursively", "default": false})
    );
    let max = &input["properties"]["max_results"];
    assert_eq!(
        (
            &max["type"],
            &max["minimum"],
            &max["maximum"],
            &max["default"]
        ),
        (&json!("integer"), &json!(1), &json!(1000), &json!(100))
    );
    assert_eq!(input["additionalProperties"], false);
    for extra in [
        "include_hidden",
        "respect_gitignore",
        "follow_symlinks",
        "case_sensitive",
        "type",
    ] {
        assert!(
            input["properties"][extra]["default"].is_boolean() || extra == "type",
            "{extra}"
        );
    }
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["destructiveHint"], false);
    assert_eq!(tool["annotations"]["idempotentHint"], true);
    assert_eq!(tool["annotations"]["openWorldHint"], false);
    let desc = tool["description"].as_str().unwrap();
    for needle in [
        "'/'",
        "'**'",
        "sorted",
        "roots",
        "hidden",
        ".gitignore",
        "max_results",
    ] {
        assert!(
            desc.contains(needle),
            "the description documents {needle}: {desc}"
        );
    }
    let out = &tool["outputSchema"];
    assert_eq!(
        out["required"],
        json!([
            "directory",
            "matches",
            "truncated",
            "matched",
            "scanned",
            "skipped"
        ])
    );
}

#[test]
fn names_paths_and_recursion() {
    let t = Tree::new(&[
        "a.py",
        "b.txt",
        "test_1.txt",
        "src/lib.rs",
        "src/x/mod.rs",
        "pkg/src/y.rs",
        "docs/a.py",
    ]);
    let mut s = t.server();
    let cases: &[(Value, &[&str])] = &[
        (json!({"pattern": "*.py"}), &["a.py"]),
        (
            json!({"pattern": "*.py", "recursive": true}),
            &["a.py", "docs/a.py"],
        ),
        (json!({"pattern": "test_*.txt"}), &["test_1.txt"]),
        (json!({"pattern": "src/*.rs"}), &["src/lib.rs"]),
        (
            json!({"pattern": "src/*.rs", "recursive": true}),
            &["pkg/src/y.rs", "src/lib.rs"],
        ),
        (
            json!({"pattern": "src/**/*.rs"}),
            &["src/lib.rs", "src/x/mod.rs"],
        ),
        (
            json!({"pattern": "**/*.rs"}),
            &["pkg/src/y.rs", "src/lib.rs", "src/x/mod.rs"],
        ),
        (
            json!({"pattern": "*.{py,txt}"}),
            &["a.py", "b.txt", "test_1.txt"],
        ),
        (
            json!({"pattern": "src", "recursive": true}),
            &["pkg/src/", "src/"],
        ),
        (
            json!({"pattern": "*", "type": "directory"}),
            &["docs/", "pkg/", "src/"],
        ),
        (
            json!({"pattern": "*.PY", "case_sensitive": false}),
            &["a.py"],
        ),
        (json!({"pattern": "*.PY"}), &[]),
    ];
    for (args, want) in cases {
        let mut a = args.clone();
        a["directory"] = json!(t.root);
        assert_eq!(found(&mut s, a), *want, "{args}");
    }
    // A relative directory starts from the root.
    assert_eq!(
        found(
            &mut s,
            json!({"directory": "src", "pattern": "*.rs", "recursive": true})
        ),
        ["lib.rs", "x/mod.rs"]
    );
    let r = ok(&mut s, json!({"directory": "src", "pattern": "*.rs"}));
    assert_eq!(r["directory"], json!(t.root.join("src")));
}

#[test]
fn the_default_root_is_the_working_directory() {
    let t = Tree::new(&["here.txt"]);
    let mut s = Server::start_in(&[], Some(&t.root));
    assert_eq!(
        found(&mut s, json!({"directory": ".", "pattern": "*.txt"})),
        ["here.txt"]
    );
    assert!(refused(&mut s, json!({"directory": "..", "pattern": "*"})).contains("outside"));
}

#[test]
fn hidden_and_ignored_entries_follow_the_documented_rule() {
    let t = Tree::new(&[
        "a.py",
        ".hidden.py",
        ".cache/c.py",
        "build/b.py",
        "sub/keep.py",
        "sub/skip.log",
    ]);
    fs::write(t.root.join(".gitignore"), "build/\n*.log\n").unwrap();
    let mut s = t.server();
    let base = json!({"directory": t.root, "pattern": "*", "recursive": true, "type": "file"});
    let with = |extra: Value| {
        let mut a = base.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    assert_eq!(found(&mut s, base.clone()), ["a.py", "sub/keep.py"]);
    assert_eq!(
        found(&mut s, with(json!({"include_hidden": true}))),
        [
            ".cache/c.py",
            ".gitignore",
            ".hidden.py",
            "a.py",
            "sub/keep.py"
        ]
    );
    assert_eq!(
        found(&mut s, with(json!({"respect_gitignore": false}))),
        ["a.py", "build/b.py", "sub/keep.py", "sub/skip.log"]
    );
    // The root's .gitignore applies when a subdirectory is searched.
    assert_eq!(
        found(&mut s, json!({"directory": "sub", "pattern": "*"})),
        ["keep.py"]
    );
}

#[test]
fn an_invalid_glob_says_why() {
    let t = Tree::new(&["a.py"]);
    let mut s = t.server();
    let cases = [
        ("[abc", "unclosed character class"),
        ("{a,b", "unclosed alternate"),
        ("/etc/*", "relative"),
        ("../*", ".."),
    ];
    for (pattern, why) in cases {
        let text = refused(&mut s, json!({"directory": ".", "pattern": pattern}));
        assert!(
            text.contains("invalid pattern") && text.contains(why),
            "{pattern}: {text}"
        );
    }
}

/// 1,200 files in 40 directories.
fn wide_tree() -> Tree {
    let t = Tree::new(&[]);
    for i in 0..1200 {
        t.touch(&format!("d{:02}/f{i:04}.txt", i % 40));
    }
    t
}

/// Every `*.txt` below `root`, found with std alone, in the documented order.
fn expected_txt(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "txt") {
                out.push(p.strip_prefix(root).unwrap().to_str().unwrap().to_owned());
            }
        }
    }
    out.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    out
}

#[test]
fn max_results_at_1_and_1000_keep_the_first_in_order() {
    let t = wide_tree();
    let all = expected_txt(&t.root);
    assert_eq!(all.len(), 1200);
    let mut s = t.server();
    for n in [1usize, 1000] {
        let r = ok(
            &mut s,
            json!({"directory": ".", "pattern": "*.txt", "recursive": true, "max_results": n}),
        );
        assert_eq!(r["matches"], json!(all[..n]), "max_results {n}");
        assert_eq!(r["truncated"], true);
        assert_eq!(r["matched"], 1200);
        assert_eq!(r["scanned"], 1240);
    }
    let r = ok(
        &mut s,
        json!({"directory": ".", "pattern": "d0*/f000*.txt"}),
    );
    assert_eq!(
        r["matches"],
        json!([
            "d00/f0000.txt",
            "d01/f0001.txt",
            "d02/f0002.txt",
            "d03/f0003.txt",
            "d04/f0004.txt",
            "d05/f0005.txt",
            "d06/f0006.txt",
            "d07/f0007.txt",
            "d08/f0008.txt",
            "d09/f0009.txt"
        ])
    );
    assert_eq!(r["truncated"], false);
}

#[test]
fn max_results_out_of_range_is_refused_by_the_schema() {
    let t = Tree::new(&["a.py"]);
    let mut s = t.server();
    for (n, word) in [(0, "minimum"), (1001, "maximum")] {
        let text = refused(
            &mut s,
            json!({"directory": ".", "pattern": "*", "max_results": n}),
        );
        assert!(
            text.contains("/max_results") && text.contains(word),
            "{n}: {text}"
        );
    }
    let text = refused(
        &mut s,
        json!({"directory": ".", "pattern": "*", "depth": 3}),
    );
    assert!(
        text.contains("depth"),
        "unknown arguments are refused: {text}"
    );
}

#[test]
fn results_are_deterministic_across_runs_and_servers() {
    let t = wide_tree();
    let args =
        json!({"directory": ".", "pattern": "f*[37].txt", "recursive": true, "max_results": 50});
    let first = ok(&mut t.server(), args.clone());
    let want: Vec<String> = expected_txt(&t.root)
        .into_iter()
        .filter(|p| p.ends_with("3.txt") || p.ends_with("7.txt"))
        .collect();
    assert_eq!(first["matches"], json!(want[..50]));
    let mut s = t.server();
    for _ in 0..5 {
        assert_eq!(ok(&mut s, args.clone()), first);
    }
}

#[test]
fn dotdot_escapes_are_refused_without_revealing_existence() {
    let t = Tree::new(&["sub/a.py"]);
    let mut s = t.server();
    let exists = refused(&mut s, json!({"directory": "../outside", "pattern": "*"}));
    let missing = refused(&mut s, json!({"directory": "../nowhere", "pattern": "*"}));
    assert!(
        exists.contains("outside the directories this server may search"),
        "{exists}"
    );
    assert_eq!(
        exists.replace("../outside", "X"),
        missing.replace("../nowhere", "X")
    );
    let deep = refused(
        &mut s,
        json!({"directory": "sub/../../outside/secret-dir", "pattern": "*"}),
    );
    assert!(deep.contains("outside the directories"), "{deep}");
    assert!(!deep.contains("does not exist"));
}

#[test]
fn absolute_paths_outside_the_roots_are_refused_alike() {
    let t = Tree::new(&[]);
    let mut s = t.server();
    let real = t.outside.join("secret-dir");
    let fake = t.outside.join("no-such-dir");
    let a = refused(&mut s, json!({"directory": real, "pattern": "*"}));
    let b = refused(&mut s, json!({"directory": fake, "pattern": "*"}));
    assert!(a.contains("outside the directories"), "{a}");
    assert_eq!(
        a.replace(real.to_str().unwrap(), "X"),
        b.replace(fake.to_str().unwrap(), "X")
    );
    assert!(refused(&mut s, json!({"directory": "/", "pattern": "*"})).contains("outside"));
}

#[test]
fn symlinks_that_escape_are_neither_followed_nor_reported() {
    let t = Tree::new(&["inside/ok.py"]);
    symlink(&t.outside, t.root.join("escape")).unwrap();
    symlink(t.outside.join("secret.py"), t.root.join("leak.py")).unwrap();
    symlink(t.root.join("inside"), t.root.join("alias")).unwrap();
    let mut s = t.server();
    for follow in [false, true] {
        let r = ok(
            &mut s,
            json!({"directory": ".", "pattern": "*", "recursive": true, "follow_symlinks": follow}),
        );
        let text = r.to_string();
        for name in ["escape", "leak", "secret"] {
            assert!(
                !text.contains(name),
                "{name} reported (follow {follow}): {text}"
            );
        }
        assert_eq!(r["skipped"]["outside_roots"], 2, "{r}");
        let through_alias = r["matches"]
            .as_array()
            .unwrap()
            .contains(&json!("alias/ok.py"));
        assert_eq!(
            through_alias, follow,
            "links inside the roots are followed on request: {r}"
        );
    }
    // As the directory itself: refused, whether the target below the link exists or not.
    let a = refused(&mut s, json!({"directory": "escape", "pattern": "*"}));
    let b = refused(
        &mut s,
        json!({"directory": "escape/secret-dir", "pattern": "*"}),
    );
    let c = refused(
        &mut s,
        json!({"directory": "escape/nothing", "pattern": "*"}),
    );
    assert!(a.contains("outside the directories"), "{a}");
    assert_eq!(b.replace("secret-dir", "X"), c.replace("nothing", "X"));
    assert!(
        !b.contains(t.outside.to_str().unwrap()),
        "the link target is not revealed: {b}"
    );
}

#[test]
fn a_missing_directory_or_a_file_is_a_clear_error() {
    let t = Tree::new(&["a.py"]);
    let mut s = t.server();
    let missing = refused(&mut s, json!({"directory": "nope", "pattern": "*"}));
    assert!(missing.contains("\"nope\" does not exist"), "{missing}");
    let file = refused(&mut s, json!({"directory": "a.py", "pattern": "*"}));
    assert!(file.contains("is a file, not a directory"), "{file}");
}

fn running_as_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Permission bits do not stop root, so when the tests run as root the server is started
/// as `nobody` through `setpriv`; that makes the kernel refuse it like any other user.
#[test]
fn unreadable_directories_are_skipped_and_counted() {
    let t = Tree::new(&[
        "open/a.txt",
        "locked/hidden-from-us.txt",
        "locked/inner/b.txt",
        "z.txt",
    ]);
    for d in [t.root.parent().unwrap(), &t.root, &t.root.join("open")] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(t.root.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let root = t.root.to_str().unwrap();
    let mut cmd = if running_as_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin());
        c
    } else {
        Command::new(bin())
    };
    let mut child = cmd
        .args(["serve", "--root", root])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the server (setpriv when root)");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |id: i64, method: &str, params: Value| -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let line = lines.next().expect("an answer").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        check_message(false, Some(method), &v);
        assert_eq!(v["id"], id);
        v
    };
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    assert_eq!(
        ask(1, "initialize", init)["result"]["protocolVersion"],
        "2025-11-25"
    );
    let r = ask(
        2,
        "tools/call",
        json!({"name": "search_files", "arguments": {"directory": root, "pattern": "*.txt", "recursive": true}}),
    );
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["matches"], json!(["open/a.txt", "z.txt"]), "{r}");
    assert_eq!(sc["skipped"]["permission_denied"], 1, "{r}");
    // The locked directory itself is still visible by name (its parent is readable).
    let r = ask(
        3,
        "tools/call",
        json!({"name": "search_files", "arguments": {"directory": root, "pattern": "lock*"}}),
    );
    assert_eq!(
        r["result"]["structuredContent"]["matches"],
        json!(["locked/"]),
        "{r}"
    );
    // Searching inside it is a clear error, not a crash.
    let r = ask(
        4,
        "tools/call",
        json!({"name": "search_files", "arguments": {"directory": "locked", "pattern": "*"}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("permission denied"),
        "{r}"
    );
    let _ = child.kill();
    let _ = child.wait();
    fs::set_permissions(t.root.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// A tree that is large to walk but cheap to make: `l0/` holds `width` files and each
/// `lK/` holds `width` links to `l(K-1)/`, so following links from `l{levels}` visits
/// `width^(levels+1)` files. Every link stays inside the root.
fn link_fan(t: &Tree, width: usize, levels: usize) -> String {
    for i in 0..width {
        t.touch(&format!("l0/f{i:02}.dat"));
    }
    for k in 1..=levels {
        fs::create_dir_all(t.root.join(format!("l{k}"))).unwrap();
        for i in 0..width {
            symlink(
                t.root.join(format!("l{}", k - 1)),
                t.root.join(format!("l{k}/s{i:02}")),
            )
            .unwrap();
        }
    }
    format!("l{levels}")
}

#[test]
fn progress_is_reported_when_a_token_is_given() {
    let t = Tree::new(&[]);
    let dir = link_fan(&t, 30, 2); // 27,000 files + 930 directories
    let mut s = t.server();
    let args = json!({"directory": dir, "pattern": "f00.dat", "recursive": true, "follow_symlinks": true, "max_results": 1000});
    let id = s.next_id();
    let mut params =
        json!({"name": "search_files", "arguments": args, "_meta": {"progressToken": "p-1"}});
    params["_meta"]
        .as_object_mut()
        .unwrap()
        .extend(crate::util::modern_meta().as_object().unwrap().clone());
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    let mut seen = Vec::new();
    let result = loop {
        let m = s.recv();
        if m.get("id") == Some(&json!(id)) {
            break m;
        }
        assert_eq!(m["method"], "notifications/progress", "{m}");
        assert_eq!(m["params"]["progressToken"], "p-1");
        assert!(
            m["params"]["message"]
                .as_str()
                .unwrap()
                .starts_with("scanned ")
        );
        seen.push(m["params"]["progress"].as_f64().unwrap());
    };
    let sc = &result["result"]["structuredContent"];
    assert_eq!(sc["matched"], 900, "{result}");
    assert_eq!(sc["scanned"], 27_930);
    assert!(
        seen.len() >= 5,
        "a report every few thousand entries: {seen:?}"
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "increasing: {seen:?}");
    assert!(*seen.last().unwrap() <= 27_930.0);
    // Without a token: no progress.
    let r = ok(&mut s, args);
    assert_eq!(r["matched"], 900);
    assert!(
        s.drain(Duration::from_millis(100))
            .iter()
            .all(|m| m["method"] != "notifications/progress")
    );
}

/// CPU time (user + system, in clock ticks) the process has used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after_name.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn cancellation_stops_a_long_search() {
    let t = Tree::new(&[]);
    let dir = link_fan(&t, 20, 5); // 64 million paths: minutes of walking
    let mut s = t.server();
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "search_files", "_meta": crate::util::modern_meta(),
        "arguments": {"directory": dir, "pattern": "*.dat", "recursive": true, "follow_symlinks": true}}}));
    std::thread::sleep(Duration::from_millis(400));
    let pid = s.child.id();
    let busy = cpu_ticks(pid);
    std::thread::sleep(Duration::from_millis(500));
    assert!(cpu_ticks(pid) > busy, "the search is running");
    s.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    let asked = Instant::now();
    s.assert_alive();
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "ping answered promptly: {:?}",
        asked.elapsed()
    );
    std::thread::sleep(Duration::from_millis(200));
    let after = cpu_ticks(pid);
    let later = s.drain(Duration::from_millis(1000));
    assert!(
        later.iter().all(|m| m.get("id") != Some(&json!(id))),
        "no result for a cancelled call: {later:?}"
    );
    let idle = cpu_ticks(pid) - after;
    assert!(
        idle < 10,
        "the walk stopped: {idle} ticks of CPU in the second after cancelling"
    );
}

#[test]
fn old_clients_get_the_json_as_text() {
    let t = Tree::new(&["a.py"]);
    let mut s = Server::start_in(&["--root", t.root.to_str().unwrap()], None);
    let init = json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    s.request("initialize", init);
    s.notify("notifications/initialized", json!({}));
    let r = s.request(
        "tools/call",
        json!({"name": "search_files", "arguments": {"directory": ".", "pattern": "*.py"}}),
    );
    assert!(r["result"].get("structuredContent").is_none(), "{r}");
    let v: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(v["matches"], json!(["a.py"]));
}
