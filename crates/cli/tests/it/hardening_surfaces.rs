//! Issue 36, items 6–12: where the new surfaces meet an attacker. Secrets in declared HTTP
//! tools (a redirect, a span), duplicate keys in a JSON tool file, hot reload against a
//! FIFO and against steady traffic, `/metrics` against made-up tool names, and Chromium
//! under a long `TMPDIR`; each against the real binary.

use crate::http_client::*;
use crate::util::{Server, run_cli};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `/metrics` is bounded by what the server has: names no tool has share the one label
/// value `_OTHER`, however many and however long (issue 36, item 11).
#[test]
fn made_up_tool_names_do_not_grow_metrics() {
    let s = HttpServer::start(&[]);
    let session = LegacySession::open(&s, LEGACY);
    let call = |id: i64, name: &str| {
        let r = session.post(
            &s,
            &request(id, "tools/call", json!({"name": name, "arguments": {}})),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.json()["error"].is_object(), "{}", r.text());
    };
    let before = s.send("GET", "/metrics", &[], b"").text().len();
    for i in 0..200 {
        call(100 + i, &format!("made_up_{i}"));
    }
    call(1000, &"y".repeat(200_000));
    let r = s.send("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(!text.contains("made_up_"), "an unknown name is a label");
    assert!(!text.contains("yyyyyyyy"), "an unknown name is a label");
    let other = format!(
        "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"_OTHER\",gen_ai_operation_name=\"execute_tool\",rpc_response_status_code=\"-32602\",mcp_protocol_version=\"{LEGACY}\",network_transport=\"tcp\",network_protocol_name=\"http\",network_protocol_version=\"1.1\"}} 201"
    );
    assert!(text.lines().any(|l| l == other), "{other} missing:\n{text}");
    // 201 calls added one series (and the handshake's own), not 201.
    assert!(
        text.len() < before + 8_000,
        "{before} bytes before, {} after",
        text.len()
    );
}

/// A JSON tool file with a key written twice is refused, placed at the second key, as YAML
/// and TOML files are: a reader sees one `command`, and no server may run another (issue
/// 36, item 8). `tools` loads the file as `serve` does, and `lint` reads it the same way.
#[test]
fn a_json_tool_file_with_a_key_twice_is_refused_at_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let text = "{\"tools\": [\n  {\"name\": \"a\",\n   \"command\": [\"echo\", \"reviewed\"],\n   \"command\": [\"echo\", \"other\"]}\n]}\n";
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    for args in [
        &["tools", "--config", file][..],
        &["call", "--config", file, "a"][..],
    ] {
        let out = run_cli(args);
        let err = String::from_utf8_lossy(&out.stderr);
        let out_text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("t.json:4:4: not valid JSON: the key `command` appears twice"),
            "{args:?}: {err}"
        );
        assert!(!out_text.contains("other"), "{out_text}");
    }
}

const V: &str = "2025-06-18";

/// A tool file whose one tool prints `WORD`, to see which definition answers.
fn echo_file(word: &str) -> String {
    format!(
        "tools:\n  - name: say\n    description: Print a fixed word.\n    inputSchema: {{type: object}}\n    command: [echo, {word}]\n"
    )
}

/// Written beside and renamed over, as editors save.
fn save(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn say(s: &mut Server) -> String {
    let r = s.request("tools/call", json!({"name": "say", "arguments": {}}));
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

fn is_list_changed(m: &Value) -> bool {
    m["method"] == "notifications/tools/list_changed"
}

/// Waits (at most 10 s) for `notifications/tools/list_changed`.
fn wait_for_list_changed(s: &mut Server) {
    for _ in 0..100 {
        if let Some(m) = s.recv_timeout(Duration::from_millis(100))
            && is_list_changed(&m)
        {
            return;
        }
    }
    panic!("no tools/list_changed within 10 s");
}

/// A FIFO put in place of the tool file is refused and logged (it is never opened for a
/// blocking read), and the watcher goes on: the next valid edit is served (issue 36, item 9).
#[test]
fn a_fifo_in_place_of_the_tool_file_is_refused_and_reload_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    std::fs::write(&path, echo_file("one")).unwrap();
    let (cfg, root) = (path.to_str().unwrap(), root.path().to_str().unwrap());
    let mut s = Server::start_logged(&["--config", cfg, "--root", root], None).handshake(V);
    assert_eq!(say(&mut s), "one\n");

    let fifo = dir.path().join("fifo~");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::rename(&fifo, &path).unwrap();
    let log = s.stderr_until(Duration::from_secs(10), |l| l.contains("were not reloaded"));
    assert!(
        log.iter()
            .any(|l| l.contains("tools.yaml: cannot read it: it is a FIFO, not a regular file")),
        "{log:#?}"
    );
    assert_eq!(say(&mut s), "one\n");

    save(&path, &echo_file("two"));
    wait_for_list_changed(&mut s);
    assert_eq!(say(&mut s), "two\n");
}

/// Steady traffic does not postpone a reload: with the tool file inside the first root
/// (each call opens the root, an event in the file's directory) and a call every few
/// milliseconds, an edit is still served while the calls go on (issue 36, item 10).
#[test]
fn steady_calls_do_not_postpone_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    std::fs::write(&path, echo_file("one")).unwrap();
    let (cfg, root) = (path.to_str().unwrap(), dir.path().to_str().unwrap());
    let mut s = Server::start(&["--config", cfg, "--root", root]).handshake(V);
    assert_eq!(say(&mut s), "one\n");
    save(&path, &echo_file("two"));
    // Far more calls than a reload needs; on a starved watcher they never see it.
    let mut reloaded = false;
    for _ in 0..600 {
        let word = say(&mut s);
        if s.drain(Duration::ZERO).iter().any(is_list_changed) {
            reloaded = true;
            break;
        }
        assert_eq!(word, "one\n", "served the edit without telling the client");
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(reloaded, "600 calls went by and the edit was not reloaded");
    assert_eq!(say(&mut s), "two\n");
}

/// The per-launch directories of this server's browsers, wherever they were placed.
fn browser_dirs(server: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("toolwright-chromium-{server}-");
    let mut bases = vec![std::path::PathBuf::from("/tmp")];
    bases.extend(std::env::var_os("XDG_RUNTIME_DIR").map(Into::into));
    bases
        .iter()
        .filter_map(|b| std::fs::read_dir(b).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// `take_screenshot` works under a `TMPDIR` too long for Chromium's Unix sockets beneath
/// it: the browser's directory goes where they fit (0700, a random name), and goes away
/// with the server (issue 36, item 12).
#[test]
fn take_screenshot_works_under_a_long_tmpdir() {
    use crate::screenshot::{Pages, browser_test, decode, pid, wait_until_gone};
    use std::os::unix::fs::PermissionsExt;
    let Some(_one) = browser_test("take_screenshot_works_under_a_long_tmpdir") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let long = tmp
        .path()
        .join("a-temporary-directory-as-long-as-ci-runners-nix-shells-and-private-tmp-make-them");
    std::fs::create_dir(&long).unwrap();
    assert!(long.as_os_str().len() > 80, "{}", long.display());
    let pages = Pages::start();
    let mut s = Server::start_with_env(&[], None, &[("TMPDIR", &long)]).handshake("2025-11-25");
    let r = s.request(
        "tools/call",
        json!({"name": "take_screenshot", "arguments": {"url": pages.url("/bands"), "fullPage": false}}),
    );
    let result = &r["result"];
    decode(result).assert_color(10, 10, [255, 0, 0]);
    let server = s.child.id();
    let dirs = browser_dirs(server);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let mode = std::fs::metadata(&dirs[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", dirs[0].display());
    s.close_stdin();
    let status = s
        .wait_exit(Duration::from_secs(15))
        .expect("the server exits");
    assert!(status.success(), "{status:?}");
    wait_until_gone(pid(result));
    assert_eq!(browser_dirs(server), Vec::<std::path::PathBuf>::new());
}

/// A loopback server that answers every request `status` with `location`.
fn redirector(status: u16, location: String) -> u16 {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = format!(
                "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    port
}

const SECRET: &str = "s3cr3t-0f-the-server";

/// A secret in a request body does not follow a 307 or 308 to another origin, even a
/// listed one: the redirect is refused with an error that says why (and not the secret).
/// A body without one still follows, and a 303 (which drops the body) is followed too
/// (issue 36, item 6).
#[test]
fn a_secret_in_a_body_does_not_follow_a_redirect_elsewhere() {
    let (other, seen) = crate::util::http_recorder("{\"ok\": true}");
    let landing = format!("http://127.0.0.1:{other}/landing");
    let dir = tempfile::tempdir().unwrap();
    let mut tools = String::from("tools:\n");
    for (name, status, body) in [
        ("secret_307", 307, "{token: \"${API_TOKEN}\", n: 1}"),
        ("secret_308", 308, "{nested: [\"Bearer ${API_TOKEN}\"]}"),
        ("plain_307", 307, "{n: 2}"),
        ("secret_303", 303, "{token: \"${API_TOKEN}\", n: 3}"),
    ] {
        let port = redirector(status, landing.clone());
        tools.push_str(&format!(
            "  - name: {name}\n    description: Posts to an API that redirects with {status}.\n    inputSchema: {{type: object}}\n    http:\n      method: POST\n      url: \"http://127.0.0.1:{port}/submit\"\n      body: {body}\n      allow_loopback: true\n      redirects: {{hosts: [\"127.0.0.1:{other}\"]}}\n"
        ));
    }
    let cfg = dir.path().join("tools.yaml");
    std::fs::write(&cfg, tools).unwrap();
    let env = [("API_TOKEN", Path::new(SECRET))];
    let args = ["--config", cfg.to_str().unwrap(), "--no-watch"];
    let mut s = Server::start_with_env(&args, Some(dir.path()), &env).handshake(V);
    let mut call = |name: &str| {
        let r = s.request("tools/call", json!({"name": name, "arguments": {}}));
        assert!(!r.to_string().contains(SECRET), "{r}");
        r["result"].clone()
    };
    for (name, status) in [("secret_307", 307), ("secret_308", 308)] {
        let r = call(name);
        assert_eq!(r["isError"], true, "{name}: {r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let want =
            format!("the server redirected ({status}) to http://127.0.0.1:{other}, another origin");
        assert!(text.contains(&want), "{name}: {text}");
        assert!(text.contains("request body"), "{name}: {text}");
    }
    for name in ["plain_307", "secret_303"] {
        let r = call(name);
        assert_ne!(r["isError"], true, "{name}: {r}");
    }
    let got = seen.lock().unwrap().clone();
    assert_eq!(
        got.len(),
        2,
        "only the plain body and the 303 arrive: {got:#?}"
    );
    assert!(
        got[0].starts_with("POST /landing") && got[0].contains("{\"n\":2}"),
        "{got:#?}"
    );
    assert!(got[1].starts_with("GET /landing"), "{got:#?}");
    assert!(!got.iter().any(|r| r.contains(SECRET)), "{got:#?}");
}

/// A secret in an HTTP tool's URL path is not exported: the request's CLIENT span has
/// `url.full` with that segment `REDACTED`, and no span holds the secret (issue 36, item 7).
#[test]
fn a_secret_in_a_url_path_is_redacted_in_spans() {
    use crate::otlp::{Collector, attr, start_env};
    let Some(mut rx) = Collector::start() else {
        return;
    };
    let (port, seen) = crate::util::http_recorder("{\"ok\": true}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tools.yaml");
    std::fs::write(
        &cfg,
        format!(
            "tools:\n  - name: notify\n    description: Sends a message through a bot API whose token is in the path.\n    inputSchema: {{type: object, properties: {{chat: {{type: string}}}}, required: [chat]}}\n    http:\n      url: \"http://127.0.0.1:{port}/bot${{BOT_TOKEN}}/send/{{chat}}?key=${{BOT_TOKEN}}\"\n      allow_loopback: true\n"
        ),
    )
    .unwrap();
    let mut env = rx.env("http/protobuf", "secret-path");
    env.push(("BOT_TOKEN".into(), SECRET.into()));
    let args = ["--config", cfg.to_str().unwrap(), "--no-watch"];
    let mut s = start_env(&args, dir.path(), &env).handshake(V);
    let r = s.request(
        "tools/call",
        json!({"name": "notify", "arguments": {"chat": "c42"}}),
    );
    assert_ne!(r["result"]["isError"], true, "{r}");
    s.close_stdin();
    s.wait_exit(Duration::from_secs(10));
    // The secret did go where the tool sends it.
    let head = seen.lock().unwrap().last().cloned().expect("a request");
    assert!(
        head.starts_with(&format!("GET /bot{SECRET}/send/c42?key={SECRET}")),
        "{head}"
    );

    let http = rx.named("secret-path", "SPAN_KIND_CLIENT", "GET");
    assert_eq!(
        attr(&http, "url.full"),
        format!("http://127.0.0.1:{port}/REDACTED/send/c42").as_str(),
        "{http}"
    );
    let server = rx.named("secret-path", "SPAN_KIND_SERVER", "tools/call notify");
    for span in [&http, &server] {
        assert!(!span.to_string().contains(SECRET), "{span}");
    }
}
