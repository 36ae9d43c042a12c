//! The gateway while it runs (issue 38): the resources, templates and prompts of lazy
//! servers, upstream `list_changed` followed, and `servers:` edited in a running gateway's
//! file (upstreams added, removed and replaced without a restart).
//!
//! Upstreams: `tests/peers/catalog_peer.py` (standard library: prompts and resources that
//! change when its `grow` tool is called, its starts counted in an events file),
//! `tests/peers/flaky_peer.py` (a slow call to keep in flight across a reload) and the
//! reference `server-everything`. The client is the test, over stdio, with every message
//! checked against the era's schema (`util::Server`), and the TypeScript SDK client where a
//! real client's view of the catalog adds something.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{available, everything, peers_dir, s};
use crate::util::{Server, repo_root};

/// How long a test waits for something it expects (bounds a failure only).
const DEADLINE: Duration = Duration::from_secs(30);

/// `python3 catalog_peer.py` (standard library).
fn catalog_peer() -> Option<Vec<String>> {
    available(
        "python3",
        vec!["python3".into(), s(&peers_dir().join("catalog_peer.py"))],
        &[],
    )
}

/// `python3 flaky_peer.py` (standard library).
fn flaky() -> Option<Vec<String>> {
    available(
        "python3",
        vec!["python3".into(), s(&peers_dir().join("flaky_peer.py"))],
        &[],
    )
}

/// A stdio upstream's entry: `{"command": argv, "env": env}`.
fn entry(argv: &[String], env: Value) -> Value {
    json!({"command": argv, "env": env})
}

/// A config file in a directory of its own (the pins beside it).
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `servers` as the config, whole at once (a new file renamed over the old, as
    /// editors save), so the watcher never reads half of it.
    fn write(&self, servers: Value) {
        let tmp = self.path(".gw.json.tmp");
        std::fs::write(&tmp, json!({"servers": servers}).to_string()).unwrap();
        std::fs::rename(&tmp, self.path("gw.json")).unwrap();
    }

    /// `toolwright serve --config gw.json` in this directory, handshake done, its stderr
    /// kept; its files watched unless `extra` says `--no-watch`.
    fn serve(&self, extra: &[&str]) -> Gw {
        let config = s(&self.path("gw.json"));
        let mut args = vec!["--config", config.as_str()];
        args.extend_from_slice(extra);
        let server = Server::start_logged(&args, Some(self.dir.path())).handshake("2025-11-25");
        Gw {
            server,
            kept: Vec::new(),
        }
    }
}

/// The gateway, with the responses that came while a notification was waited for.
struct Gw {
    server: Server,
    kept: Vec<Value>,
}

impl std::ops::Deref for Gw {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl std::ops::DerefMut for Gw {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

impl Gw {
    /// Waits for a notification `method`; responses that come meanwhile are kept for
    /// [`Gw::response`]. False at the deadline.
    fn notified(&mut self, method: &str) -> bool {
        let end = Instant::now() + DEADLINE;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.server.recv_timeout(left) {
                Some(v) if v["method"] == method => return true,
                Some(v) if v.get("method").is_none() => self.kept.push(v),
                Some(_) => {}
                None => return false,
            }
        }
        false
    }

    /// The response to request `id`.
    fn response(&mut self, id: i64) -> Value {
        match self.kept.iter().position(|v| v["id"] == id) {
            Some(i) => self.kept.remove(i),
            None => self.server.response_to(&json!(id)),
        }
    }
}

/// The `name`s of a list result's `key` array.
fn names(result: &Value, key: &str) -> Vec<String> {
    result["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {result}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tool_names(server: &mut Gw) -> Vec<String> {
    names(&server.request("tools/list", json!({})), "tools")
}

/// The first text of a call's or read's result.
fn first_text(v: &Value) -> String {
    let r = &v["result"];
    let t = r["content"][0]["text"]
        .as_str()
        .or_else(|| r["contents"][0]["text"].as_str())
        .or_else(|| r["messages"][0]["content"]["text"].as_str());
    t.unwrap_or_else(|| panic!("no text in {v}")).to_owned()
}

fn call(server: &mut Gw, tool: &str, args: Value) -> Value {
    server.request("tools/call", json!({"name": tool, "arguments": args}))
}

/// How many times a peer wrote "started" to `events`.
fn starts(events: &Path) -> usize {
    std::fs::read_to_string(events)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("started "))
        .count()
}

/// Polls `check` until it says yes; false at the deadline.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + DEADLINE;
    while Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A lazy server's prompts and resources are served: `prompts/list` is the first thing
/// the client asks (no `tools/list` first), and it shows them; `prompts/get`, a resource
/// and a templated resource are read through the gateway, with the server started once.
#[test]
fn a_lazy_servers_prompts_and_resources_are_served() {
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    let events = d.path("events.txt");
    d.write(json!({"cat": entry(&peer, json!({"CATALOG_PEER_EVENTS": s(&events)}))}));
    let mut g = d.serve(&["--no-watch"]);
    let prompts = g.request("prompts/list", json!({}));
    assert_eq!(names(&prompts, "prompts"), ["cat__greet"], "{prompts}");
    let got = g.request(
        "prompts/get",
        json!({"name": "cat__greet", "arguments": {"name": "Ada"}}),
    );
    assert_eq!(first_text(&got), "Hello, Ada.", "{got}");
    let resources = g.request("resources/list", json!({}));
    assert_eq!(names(&resources, "resources"), ["note"], "{resources}");
    let read = g.request("resources/read", json!({"uri": "peer://note"}));
    assert_eq!(first_text(&read), "a note", "{read}");
    let templates = g.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"], "peer://item/{id}",
        "{templates}"
    );
    let item = g.request("resources/read", json!({"uri": "peer://item/42"}));
    assert_eq!(first_text(&item), "item 42", "{item}");
    assert_eq!(starts(&events), 1, "the lazy server was started once");
}

/// A lazy server served from its pins is not started for `tools/list`; a `prompts/list`
/// starts it (once) and shows its prompts.
#[test]
fn a_pinned_lazy_server_is_started_by_the_first_prompts_list() {
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    let events = d.path("events.txt");
    d.write(json!({"cat": entry(&peer, json!({"CATALOG_PEER_EVENTS": s(&events)}))}));
    {
        // The first run lists (and pins) the server's tools.
        let mut first = d.serve(&["--no-watch"]);
        assert!(tool_names(&mut first).contains(&"cat__grow".to_owned()));
    }
    assert!(eventually(|| d.path(".toolwright-pins.json").exists()));
    let before = starts(&events);
    let mut g = d.serve(&["--no-watch"]);
    assert!(tool_names(&mut g).contains(&"cat__grow".to_owned()));
    assert_eq!(starts(&events), before, "listed from its pins, not started");
    let prompts = g.request("prompts/list", json!({}));
    assert_eq!(names(&prompts, "prompts"), ["cat__greet"], "{prompts}");
    assert_eq!(starts(&events), before + 1, "started by prompts/list");
    let again = g.request("prompts/list", json!({}));
    assert_eq!(names(&again, "prompts"), ["cat__greet"], "{again}");
    assert_eq!(starts(&events), before + 1, "and only once");
}

/// An upstream's `prompts/list_changed` and `resources/list_changed` are followed: the
/// client is told, and the lists show what the upstream offers now.
#[test]
fn an_upstreams_list_changed_is_followed() {
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    d.write(json!({"cat": entry(&peer, json!({}))}));
    let mut g = d.serve(&["--no-watch"]);
    assert_eq!(
        names(&g.request("prompts/list", json!({})), "prompts"),
        ["cat__greet"]
    );
    let grown = call(&mut g, "cat__grow", json!({}));
    assert_eq!(first_text(&grown), "grown", "{grown}");
    assert!(g.notified("notifications/prompts/list_changed"));
    let prompts = names(&g.request("prompts/list", json!({})), "prompts");
    assert_eq!(prompts, ["cat__extra", "cat__greet"]);
    let extra = g.request("prompts/get", json!({"name": "cat__extra"}));
    assert_eq!(first_text(&extra), "An extra prompt.", "{extra}");
    let resources = names(&g.request("resources/list", json!({})), "resources");
    assert_eq!(resources, ["extra", "note"]);
}

/// Over Streamable HTTP too, in both eras: the first `prompts/list` starts the lazy
/// server and shows its prompts (the request waits for it where HTTP requests are served).
#[test]
fn a_lazy_servers_prompts_are_served_over_http() {
    use crate::http_client::{
        HttpServer, LEGACY, LegacySession, modern_headers, modern_request, request,
    };
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    d.write(json!({"cat": entry(&peer, json!({}))}));
    let config = s(&d.path("gw.json"));
    let http = HttpServer::start(&["--no-watch", "--config", &config]);
    let session = LegacySession::open(&http, LEGACY);
    let listed = session.post(&http, &request(2, "prompts/list", json!({})));
    let listed = listed.checked(false, "prompts/list");
    assert_eq!(names(&listed, "prompts"), ["cat__greet"], "{listed}");
    let got = session.post(
        &http,
        &request(
            3,
            "prompts/get",
            json!({"name": "cat__greet", "arguments": {"name": "Bo"}}),
        ),
    );
    assert_eq!(first_text(&got.checked(false, "prompts/get")), "Hello, Bo.");
    let r = http.post(
        &modern_headers("prompts/list", None),
        &modern_request(4, "prompts/list", json!({})),
    );
    let v = r.checked(true, "prompts/list");
    assert_eq!(names(&v, "prompts"), ["cat__greet"], "{v}");
}

/// A restarted upstream's catalog is listed again: what it offered before it exited and
/// no longer offers is gone, and the client is told.
#[test]
fn a_restarted_upstreams_catalog_is_listed_again() {
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    let events = d.path("events.txt");
    d.write(json!({"cat": entry(&peer, json!({"CATALOG_PEER_EVENTS": s(&events)}))}));
    let mut g = d.serve(&["--no-watch"]);
    call(&mut g, "cat__grow", json!({}));
    assert!(g.notified("notifications/prompts/list_changed"));
    let grown = names(&g.request("prompts/list", json!({})), "prompts");
    assert_eq!(grown, ["cat__extra", "cat__greet"]);
    assert_eq!(first_text(&call(&mut g, "cat__quit", json!({}))), "bye");
    // Started again after its backoff, and listed as it comes up.
    assert!(
        eventually(|| starts(&events) == 2),
        "the upstream is started again"
    );
    assert!(g.notified("notifications/prompts/list_changed"));
    let now = names(&g.request("prompts/list", json!({})), "prompts");
    assert_eq!(now, ["cat__greet"]);
}

/// The reference server-everything, lazy: its prompts and resources are listed through
/// the gateway and one of each is read.
#[test]
fn server_everythings_catalog_is_served_lazily() {
    let Some(ev) = everything() else { return };
    let d = Dir::new();
    d.write(json!({"ev": {"command": ev}}));
    let mut g = d.serve(&["--no-watch"]);
    let prompts = g.request("prompts/list", json!({}));
    let plain = prompts["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["arguments"]
                .as_array()
                .is_none_or(|a| a.iter().all(|a| a["required"] != true))
        })
        .unwrap_or_else(|| panic!("a prompt without required arguments: {prompts}"))
        .clone();
    assert!(
        plain["name"].as_str().unwrap().starts_with("ev__"),
        "{plain}"
    );
    let got = g.request("prompts/get", json!({"name": plain["name"]}));
    assert!(got["result"]["messages"].is_array(), "{got}");
    let resources = g.request("resources/list", json!({}));
    let uri = resources["result"]["resources"][0]["uri"].clone();
    assert!(uri.is_string(), "{resources}");
    let read = g.request("resources/read", json!({"uri": uri}));
    assert!(read["result"]["contents"].is_array(), "{read}");
}

/// The TypeScript SDK client (1.x) sees a lazy server's prompts and resources through
/// the gateway: what a real client does with the capabilities announced at `initialize`.
#[test]
fn an_sdk_client_sees_a_lazy_servers_catalog() {
    let Some(peer) = catalog_peer() else { return };
    let node = repo_root().join("tests/node");
    let driver = node.join("catalog_client.mjs");
    let Some(argv) = available(
        "TypeScript SDK client (sdk)",
        vec!["node".into(), s(&driver)],
        &[node
            .join("node_modules/@modelcontextprotocol/sdk/package.json")
            .clone()],
    ) else {
        return;
    };
    let d = Dir::new();
    d.write(json!({"cat": entry(&peer, json!({}))}));
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .arg(s(&crate::util::bin()))
        .args(["serve", "--no-watch", "--config", &s(&d.path("gw.json"))])
        .current_dir(d.dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["prompts"], json!(["cat__greet"]), "{v}");
    assert_eq!(v["greeting"], "Hello, Ada.", "{v}");
    assert_eq!(v["note"], "a note", "{v}");
}

/// `servers:` edited while the gateway runs: an upstream added is served (tools/list
/// changes, the client is told, a call works), one removed is gone while a call in flight
/// on it finishes and its process ends after, and a changed entry (an `env:` value the
/// upstream reads) takes effect.
#[test]
fn servers_are_added_removed_and_changed_in_a_running_gateway() {
    let (Some(flaky), Some(peer)) = (flaky(), catalog_peer()) else {
        return;
    };
    let d = Dir::new();
    let (flaky_events, cat_events) = (d.path("flaky.txt"), d.path("cat-1.txt"));
    d.write(json!({"flaky": entry(&flaky, json!({"FLAKY_PEER_EVENTS": s(&flaky_events)}))}));
    let mut g = d.serve(&[]);
    let before = tool_names(&mut g);
    assert!(before.contains(&"flaky__slow".to_owned()), "{before:?}");
    let pid: i32 = first_text(&call(&mut g, "flaky__pid", json!({})))
        .parse()
        .unwrap();

    // A slow call in flight on the upstream about to be removed.
    let slow = g.next_id();
    g.send(
        &json!({"jsonrpc": "2.0", "id": slow, "method": "tools/call", "params": {
        "name": "flaky__slow", "arguments": {"steps": 30, "interval_ms": 100},
        "_meta": {"progressToken": "p"}}}),
    );
    assert!(g.notified("notifications/progress"), "the slow call runs");

    // flaky removed, cat added.
    let cat = |events: &Path, note: &str| {
        entry(
            &peer,
            json!({"CATALOG_PEER_EVENTS": s(events), "CATALOG_PEER_NOTE": note}),
        )
    };
    d.write(json!({"cat": cat(&cat_events, "first")}));
    assert!(g.notified("notifications/tools/list_changed"));
    assert!(
        eventually(|| {
            let now = tool_names(&mut g);
            now.contains(&"cat__starts".to_owned()) && !now.iter().any(|n| n.starts_with("flaky__"))
        }),
        "the new upstream's tools in, the removed one's out"
    );
    assert_eq!(first_text(&call(&mut g, "cat__starts", json!({}))), "1");
    let gone = call(&mut g, "flaky__pid", json!({}));
    assert!(
        gone.get("error").is_some() || gone["result"]["isError"] == true,
        "{gone}"
    );

    // The call in flight on the removed upstream finishes there; then its process ends.
    let done = g.response(slow);
    assert_eq!(first_text(&done), "took 30 steps", "{done}");
    assert!(
        std::fs::read_to_string(&flaky_events)
            .unwrap()
            .contains("slow completed")
    );
    assert!(
        eventually(|| !alive(pid)),
        "the removed upstream's process {pid} ends once its call is done"
    );

    // A changed entry: a new note, read by a new process.
    let read = g.request("resources/read", json!({"uri": "peer://note"}));
    assert_eq!(first_text(&read), "first", "{read}");
    let cat_events_2 = d.path("cat-2.txt");
    d.write(json!({"cat": cat(&cat_events_2, "second")}));
    assert!(
        eventually(|| {
            let read = g.request("resources/read", json!({"uri": "peer://note"}));
            read["result"]["contents"][0]["text"] == "second"
        }),
        "the changed entry's upstream serves the note"
    );
    assert_eq!(starts(&cat_events_2), 1);
    g.assert_alive();
}

/// An edit that does not read keeps the running upstreams; the next good one is applied.
#[test]
fn a_bad_edit_keeps_the_running_servers() {
    let Some(peer) = catalog_peer() else { return };
    let d = Dir::new();
    d.write(json!({"cat": entry(&peer, json!({}))}));
    let mut g = d.serve(&[]);
    assert!(tool_names(&mut g).contains(&"cat__grow".to_owned()));
    // A server with neither command nor url: refused, and said so.
    d.write(json!({"cat": entry(&peer, json!({})), "broken": {"start": "lazy"}}));
    let said = g.stderr_until(DEADLINE, |l| l.contains("the servers were not reloaded"));
    assert!(said.iter().any(|l| l.contains("broken")), "{said:#?}");
    let kept = tool_names(&mut g);
    assert!(kept.contains(&"cat__grow".to_owned()), "{kept:?}");
    // The next good edit is applied.
    d.write(json!({"cat": entry(&peer, json!({})), "cat2": entry(&peer, json!({}))}));
    assert!(eventually(
        || tool_names(&mut g).contains(&"cat2__grow".to_owned())
    ));
    let now = tool_names(&mut g);
    assert!(now.contains(&"cat__grow".to_owned()), "{now:?}");
    assert!(!now.iter().any(|n| n.starts_with("broken")), "{now:?}");
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}
