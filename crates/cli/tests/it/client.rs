//! `toolwright list` and `toolwright call … -- CMD`/`--url` against real servers: the
//! official reference servers (npm), a Python SDK server (PyPI), `toolwright serve` in both
//! eras over stdio and HTTP, and `contract_breaker.py`, which breaks the rules on purpose.
//!
//! Peers live in `tests/peers` (pinned there). When one is not installed the test says so
//! and skips, unless `CI` is set: then it fails. Also holds the peer helpers `lint.rs` uses.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::util::{bin, repo_root};

// ---------------------------------------------------------------- peers

/// How to install the peers (printed when they are missing).
const INSTALL: &str = "install them with: (cd tests/peers && npm ci) && python3 -m venv \
    tests/peers/.venv && tests/peers/.venv/bin/pip install -r tests/peers/requirements.txt \
    (the gateway tests also need: npm ci --prefix tests/node && python3 -m venv \
    tests/peers-modern/.venv && tests/peers-modern/.venv/bin/pip install --no-deps \
    -r tests/peers-modern/requirements.txt)";

pub(crate) fn peers_dir() -> PathBuf {
    repo_root()
        .join("tests/peers")
        .canonicalize()
        .expect("tests/peers exists")
}

pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// `Some(argv)` when the peer is installed; otherwise skips with a message (or fails
/// under CI).
pub(crate) fn available(what: &str, argv: Vec<String>, needs: &[PathBuf]) -> Option<Vec<String>> {
    let program_runs = Command::new(&argv[0])
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let missing: Vec<String> = needs
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if program_runs && missing.is_empty() {
        return Some(argv);
    }
    let why = if program_runs {
        format!("missing {}", missing.join(", "))
    } else {
        format!("{} does not run", argv[0])
    };
    assert!(
        !under_ci(),
        "peer {what} is not installed ({why}); {INSTALL}"
    );
    // Straight to stderr, past the test harness's capture, so the skip is seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipping: peer {what} is not installed ({why}); {INSTALL}"
    );
    None
}

pub(crate) fn node_package(name: &str) -> PathBuf {
    peers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js")
}

pub(crate) fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `@modelcontextprotocol/server-everything` over stdio.
pub(crate) fn everything() -> Option<Vec<String>> {
    let js = node_package("server-everything");
    available(
        "server-everything",
        vec!["node".into(), s(&js), "stdio".into()],
        &[js],
    )
}

/// `@modelcontextprotocol/server-filesystem`, allowed into `root`.
pub(crate) fn filesystem(root: &Path) -> Option<Vec<String>> {
    let js = node_package("server-filesystem");
    available(
        "server-filesystem",
        vec!["node".into(), s(&js), s(root)],
        &[js],
    )
}

/// The Python SDK server `tests/peers/py_server.py` over stdio.
pub(crate) fn python_sdk() -> Option<Vec<String>> {
    let python = peers_dir().join(".venv/bin/python");
    let script = peers_dir().join("py_server.py");
    available("python mcp", vec![s(&python), s(&script)], &[python])
}

/// `tests/peers/contract_breaker.py` (standard library only) with a mode argument.
pub(crate) fn contract_breaker(mode: Option<&str>) -> Option<Vec<String>> {
    let mut argv = vec![
        "python3".to_owned(),
        s(&peers_dir().join("contract_breaker.py")),
    ];
    argv.extend(mode.map(str::to_owned));
    available("python3", argv, &[])
}

/// `toolwright serve` (the binary under test) over stdio.
pub(crate) fn toolwright_serve(extra: &[&str]) -> Vec<String> {
    let mut argv = vec![s(&bin()), "serve".to_owned()];
    argv.extend(extra.iter().map(|a| (*a).to_owned()));
    argv
}

/// A server listening on 127.0.0.1, killed on drop.
pub(crate) struct HttpPeer {
    child: Child,
    /// Its MCP endpoint.
    pub url: String,
}

impl HttpPeer {
    /// Starts `cmd` and waits for `find_url` to see the endpoint in a stderr line.
    pub(crate) fn start(mut cmd: Command, find_url: fn(&str) -> Option<String>) -> HttpPeer {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start the HTTP peer");
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining stderr so the server never blocks on it.
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = find_url(&line)
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(url);
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the HTTP peer says where it listens within 60 s");
        // Some servers announce the port before they accept on it: wait until they do.
        let addr = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "{url} never accepted a connection"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpPeer { child, url }
    }

    /// `server-everything streamableHttp`, forced onto 127.0.0.1 by `loopback.cjs`.
    pub(crate) fn everything() -> Option<HttpPeer> {
        let stdio = everything()?;
        let mut cmd = Command::new("node");
        cmd.arg("--require")
            .arg(peers_dir().join("loopback.cjs"))
            .arg(&stdio[1])
            .arg("streamableHttp")
            .env("PORT", "0");
        Some(HttpPeer::start(cmd, |line| {
            let port = line.strip_prefix("loopback-listening ")?;
            Some(format!("http://127.0.0.1:{}/mcp", port.trim()))
        }))
    }

    /// The Python SDK server over Streamable HTTP.
    pub(crate) fn python_sdk() -> Option<HttpPeer> {
        let argv = python_sdk()?;
        let mut cmd = Command::new(&argv[0]);
        cmd.arg(&argv[1]).args(["--http", "0"]);
        Some(HttpPeer::start(cmd, url_in_line))
    }

    /// `toolwright serve --http 127.0.0.1:0`.
    pub(crate) fn toolwright() -> HttpPeer {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        HttpPeer::start(cmd, url_in_line)
    }
}

pub(crate) fn url_in_line(line: &str) -> Option<String> {
    let start = line.find("http://")?;
    Some(line[start..].split_whitespace().next()?.to_owned())
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `toolwright ARGS… -- ARGV…` (the server's command goes last, after `--`).
pub(crate) fn with_server(args: &[&str], server: &[String]) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--")
        .args(server)
        .stdin(Stdio::null())
        .output()
        .expect("run toolwright")
}

/// Runs `toolwright ARGS… --url URL`.
pub(crate) fn with_url(args: &[&str], url: &str) -> Output {
    Command::new(bin())
        .args(args)
        .args(["--url", url])
        .stdin(Stdio::null())
        .output()
        .expect("run toolwright")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

/// A trust configuration file that names `argv` (kept alive by the returned dir).
fn trusting(argv: &[String]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trusted.json");
    let mut f = std::fs::File::create(&path).unwrap();
    write!(f, "{}", serde_json::json!({"trusted": [{"command": argv}]})).unwrap();
    (dir, path)
}

/// An empty trust configuration, so the user's own file never changes a test.
fn no_trust() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trusted.json");
    std::fs::write(&path, r#"{"trusted": []}"#).unwrap();
    let p = s(&path);
    (dir, p)
}

// ---------------------------------------------------------------- list

#[test]
fn list_shows_an_untrusted_servers_tools_with_worst_case_hints() {
    let Some(server) = everything() else { return };
    let (_d, cfg) = no_trust();
    let o = with_server(&["list", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o).replace(&cfg, "<config>");
    insta::assert_snapshot!("list_everything_stdio", out);
}

#[test]
fn list_shows_a_trusted_servers_hints_as_claimed() {
    let Some(server) = everything() else { return };
    let (_d, cfg) = trusting(&server);
    let o = with_server(&["list", "--trusted-config", &s(&cfg)], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("legacy era, protocol 2025-11-25, trusted"),
        "{out}"
    );
    // echo claims read-only, idempotent and closed-world: a trusted server is believed.
    assert!(
        out.lines()
            .any(|l| l.starts_with("echo ") && l.contains("R-I-")),
        "{out}"
    );
    assert!(!out.contains("not trusted"), "{out}");
}

#[test]
fn list_json_reports_era_trust_and_every_page() {
    let (_d, cfg) = no_trust();
    for (era, extra) in [("modern", "auto"), ("legacy", "legacy")] {
        let server = toolwright_serve(&["--page-size", "1"]);
        let o = with_server(
            &["list", "--json", "--era", extra, "--trusted-config", &cfg],
            &server,
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v = json_out(&o);
        assert_eq!(v["era"], era);
        assert_eq!(v["trusted"], false);
        assert_eq!(v["server"]["name"], "toolwright");
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["add", "multiply", "search_files", "take_screenshot"],
            "{era}"
        );
    }
}

#[test]
fn list_over_http_matches_stdio() {
    let Some(server) = everything() else { return };
    let Some(http) = HttpPeer::everything() else {
        return;
    };
    let (_d, cfg) = no_trust();
    let over_stdio = with_server(&["list", "--trusted-config", &cfg], &server);
    let over_http = with_url(&["list", "--trusted-config", &cfg], &http.url);
    assert_eq!(code(&over_http), 0, "{}", stderr(&over_http));
    assert_eq!(stdout(&over_http), stdout(&over_stdio));
}

#[test]
fn list_needs_a_server() {
    let o = Command::new(bin()).arg("list").output().unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("-- CMD ARGS..."), "{}", stderr(&o));
}

// ---------------------------------------------------------------- call

#[test]
fn call_toolwright_serve_in_both_eras_over_stdio() {
    let (_d, cfg) = no_trust();
    for era in ["auto", "modern", "legacy"] {
        let o = with_server(
            &[
                "call",
                "add",
                "a=1",
                "b=2",
                "--era",
                era,
                "--trusted-config",
                &cfg,
            ],
            &toolwright_serve(&[]),
        );
        assert_eq!(code(&o), 0, "{era}: {}", stderr(&o));
        let v = json_out(&o);
        assert_eq!(v["structuredContent"]["result"], 3, "{era}");
        assert_eq!(v.get("resultType").is_some(), era != "legacy", "{era}: {v}");
    }
}

#[test]
fn call_toolwright_serve_in_both_eras_over_http() {
    let http = HttpPeer::toolwright();
    let (_d, cfg) = no_trust();
    for era in ["auto", "legacy"] {
        let o = with_url(
            &[
                "call",
                "multiply",
                "a=6",
                "b=7",
                "--era",
                era,
                "--trusted-config",
                &cfg,
            ],
            &http.url,
        );
        assert_eq!(code(&o), 0, "{era}: {}", stderr(&o));
        assert_eq!(json_out(&o)["structuredContent"]["result"], 42, "{era}");
    }
}

#[test]
fn call_reference_server_over_stdio_and_http() {
    let Some(server) = everything() else { return };
    let Some(http) = HttpPeer::everything() else {
        return;
    };
    let (_d, cfg) = no_trust();
    let args = ["call", "get-sum", "a=2", "b=3", "--trusted-config", &cfg];
    for o in [with_server(&args, &server), with_url(&args, &http.url)] {
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            json_out(&o)["content"][0]["text"],
            "The sum of 2 and 3 is 5."
        );
    }
    // A call the server rejects (a string for a number) is a tool failure: exit 1.
    let o = with_server(
        &["call", "get-sum", "a=2", "b=x", "--trusted-config", &cfg],
        &server,
    );
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert_eq!(json_out(&o)["isError"], true);
}

#[test]
fn call_python_sdk_server_checks_its_structured_content() {
    let Some(server) = python_sdk() else { return };
    let Some(http) = HttpPeer::python_sdk() else {
        return;
    };
    let (_d, cfg) = no_trust();
    let args = ["call", "add", "a=20", "b=22", "--trusted-config", &cfg];
    for o in [with_server(&args, &server), with_url(&args, &http.url)] {
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            json_out(&o)["structuredContent"],
            serde_json::json!({"result": 42})
        );
    }
}

#[test]
fn call_refuses_a_tool_an_untrusted_server_does_not_call_read_only() {
    let Some(server) = contract_breaker(None) else {
        return;
    };
    let (_d, cfg) = no_trust();
    let o = with_server(&["call", "wipe_disk", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 2);
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(
        err.contains("refusing to call \"wipe_disk\" without --yes") && err.contains("not trusted"),
        "{err}"
    );
    // --yes is consent.
    let o = with_server(
        &["call", "wipe_disk", "--yes", "--trusted-config", &cfg],
        &server,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // So is naming the server trusted.
    let (_t, trusted) = trusting(&server);
    let o = with_server(
        &["call", "wipe_disk", "--trusted-config", &s(&trusted)],
        &server,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A tool that claims read-only runs without either.
    let o = with_server(&["call", "peek", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["content"][0]["text"], "peeked");
}

#[test]
fn call_reports_structured_content_that_breaks_the_output_schema() {
    let Some(server) = contract_breaker(None) else {
        return;
    };
    let (_d, cfg) = no_trust();
    let o = with_server(&["call", "total", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 1);
    // The result is still printed: nothing is hidden.
    assert_eq!(json_out(&o)["structuredContent"]["result"], "three");
    assert_eq!(
        stderr(&o).trim(),
        "toolwright: total: structuredContent does not match the outputSchema:\n/result: \"three\" is not of type \"number\""
    );
    let o = with_server(&["call", "no_structure", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("declares an outputSchema but the result has no structuredContent"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn call_exit_codes_for_failures_and_unknown_tools() {
    let Some(server) = contract_breaker(None) else {
        return;
    };
    let (_d, cfg) = no_trust();
    let o = with_server(&["call", "fail", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 1);
    assert_eq!(json_out(&o)["isError"], true);
    let o = with_server(&["call", "nope", "--trusted-config", &cfg], &server);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(
            "has no tool \"nope\"; it offers: total, no_structure, fail, wipe_disk, peek"
        ),
        "{}",
        stderr(&o)
    );
    let o = with_server(
        &["call", "add", "--trusted-config", &cfg],
        &["/nonexistent/server".to_owned()],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot start"), "{}", stderr(&o));
    let o = with_url(&["call", "add"], "https://127.0.0.1:1/mcp");
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("connecting to 127.0.0.1:1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn era_detection_falls_back_to_the_handshake() {
    // -32601 to the probe, silence until the probe timeout, and a server that exits on the
    // probe (started again for the handshake) all end up legacy.
    let (_d, cfg) = no_trust();
    for mode in [None, Some("--silent"), Some("--exit-on-unknown")] {
        let Some(server) = contract_breaker(mode) else {
            return;
        };
        let o = with_server(
            &[
                "list",
                "--json",
                "--probe-timeout",
                "1",
                "--trusted-config",
                &cfg,
            ],
            &server,
        );
        assert_eq!(code(&o), 0, "{mode:?}: {}", stderr(&o));
        let v = json_out(&o);
        assert_eq!(v["era"], "legacy", "{mode:?}");
        assert_eq!(v["protocolVersion"], "2025-06-18", "{mode:?}");
        assert_eq!(
            v["tools"].as_array().unwrap().len(),
            5,
            "{mode:?}: every page"
        );
    }
    // Forcing the modern era on a legacy server fails clearly.
    let Some(server) = contract_breaker(None) else {
        return;
    };
    let o = with_server(
        &["list", "--era", "modern", "--trusted-config", &cfg],
        &server,
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("server/discover failed: Method not found (-32601)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_malformed_trust_configuration_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trusted.json");
    std::fs::write(&path, "{\"trusted\": [{}]}").unwrap();
    let o = with_server(
        &["list", "--trusted-config", &s(&path)],
        &toolwright_serve(&[]),
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("needs a \"command\" or a \"url\""),
        "{}",
        stderr(&o)
    );
}
