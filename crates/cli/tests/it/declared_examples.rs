//! The packs in `examples/`, served by the real binary and called as a client would.

use crate::util::{Server, repo_root};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const V: &str = "2025-11-25";

fn pack(name: &str) -> String {
    repo_root()
        .join("examples")
        .join(name)
        .join("toolwright.yaml")
        .to_str()
        .unwrap()
        .to_owned()
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.request("tools/call", json!({"name": name, "arguments": args}));
    assert!(r["result"].is_object(), "{r}");
    r["result"].clone()
}

fn ok(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.invalid")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.invalid")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

#[test]
fn the_git_pack_answers_read_only_queries() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    for (file, text, msg) in [
        ("a.txt", "alpha\n", "first: add a"),
        ("b.txt", "Beta -flag\n", "second\tadds b"),
        ("a.txt", "alpha\ngamma\n", "third touches a"),
    ] {
        std::fs::write(repo.join(file), text).unwrap();
        git(repo, &["add", file]);
        git(repo, &["commit", "-q", "-m", msg]);
    }
    std::fs::write(repo.join("untracked.txt"), "u").unwrap();
    let root = repo.to_str().unwrap();
    let mut s =
        Server::start(&["--root", root, "--config", &pack("git"), "--no-watch"]).handshake(V);

    let log = call(&mut s, "git_log", json!({"max_count": 2}));
    let commits = ok(&log)["commits"].as_array().unwrap().clone();
    let subjects: Vec<&str> = commits
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["third touches a", "second\tadds b"]);
    assert_eq!(commits[0]["author"], "Ada");

    let only_a = call(&mut s, "git_log", json!({"path": "a.txt"}));
    assert_eq!(ok(&only_a)["commits"].as_array().unwrap().len(), 2);

    let status = call(&mut s, "git_status", json!({}));
    let text = status["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("## main") && text.contains("?? untracked.txt"),
        "{text}"
    );

    let show = call(&mut s, "git_show", json!({"rev": "HEAD~1"}));
    assert!(
        show["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("b.txt"),
        "{show}"
    );

    // An option smuggled in as a revision is refused before git runs.
    let marker = repo.join("written-by-git");
    let smuggled = format!("--output={}", marker.display());
    let refused = call(&mut s, "git_show", json!({"rev": smuggled}));
    assert!(
        error_text(&refused).contains("starts with '-'"),
        "{refused}"
    );
    assert!(!marker.exists());

    // After -e a pattern may start with '-'.
    let grep = call(&mut s, "git_grep", json!({"pattern": "-flag"}));
    assert_eq!(
        ok(&grep)["matches"],
        json!([{"file": "b.txt", "line": 1, "text": "Beta -flag"}])
    );
    let grep = call(
        &mut s,
        "git_grep",
        json!({"pattern": "^beta", "ignore_case": true}),
    );
    assert_eq!(ok(&grep)["matches"].as_array().unwrap().len(), 1);
    let none = call(
        &mut s,
        "git_grep",
        json!({"pattern": "nowhere to be found"}),
    );
    assert_eq!(ok(&none)["matches"], json!([]));
}

#[test]
fn the_units_pack_converts() {
    let mut s = Server::start(&["--config", &pack("units"), "--no-watch"]).handshake(V);
    let r = call(
        &mut s,
        "convert_units",
        json!({"quantity": "10 km", "to": "miles"}),
    );
    let miles = ok(&r)["value"].as_f64().unwrap();
    assert!((miles - 6.2137119).abs() < 1e-6, "{r}");
    let r = call(
        &mut s,
        "convert_units",
        json!({"quantity": "-3 m", "to": "ft"}),
    );
    assert!(
        (ok(&r)["value"].as_f64().unwrap() + 9.8425197).abs() < 1e-6,
        "{r}"
    );
    let r = call(
        &mut s,
        "convert_temperature",
        json!({"value": -40, "from": "tempC", "to": "tempF"}),
    );
    assert_eq!(ok(&r)["value"].as_f64(), Some(-40.0), "{r}");
    // Units that measure different things: units says so, and the call fails.
    let r = call(
        &mut s,
        "convert_units",
        json!({"quantity": "5 kg", "to": "m"}),
    );
    assert!(error_text(&r).contains("conformability"), "{r}");
    // The schema stops a scale units does not know before anything runs.
    let r = call(
        &mut s,
        "convert_temperature",
        json!({"value": 1, "from": "tempX", "to": "tempF"}),
    );
    assert!(error_text(&r).contains("from"), "{r}");
}

struct NotesApi {
    child: Child,
    port: u16,
}

impl Drop for NotesApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn notes_api(token: &str) -> NotesApi {
    let script = repo_root().join("examples/notes-api/notes_api.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args(["--port", "0"])
        .env("NOTES_TOKEN", token)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .expect("port");
    NotesApi { child, port }
}

#[test]
fn the_notes_api_pack_encodes_every_argument_for_where_it_lands() {
    let token = "s3cret-token";
    let api = notes_api(token);
    let dir = tempfile::tempdir().unwrap();
    let pack_text = std::fs::read_to_string(pack("notes-api"))
        .unwrap()
        .replace("127.0.0.1:8765", &format!("127.0.0.1:{}", api.port));
    let cfg = dir.path().join("toolwright.yaml");
    std::fs::write(&cfg, pack_text).unwrap();
    let cfg = cfg.to_str().unwrap();
    let mut s = Server::start_with_env(
        &["--config", cfg, "--no-watch"],
        None,
        &[("NOTES_TOKEN", Path::new(token))],
    )
    .handshake(V);

    // Quotes, backslashes and newlines are data in the JSON body.
    let title = "a \"quoted\" title\\ with\nnewline, & an = sign";
    let created = call(
        &mut s,
        "create_note",
        json!({"title": title, "body": "b", "tags": ["x", "y z"]}),
    );
    let id = ok(&created)["id"].as_i64().unwrap();
    assert_eq!(ok(&created)["title"], title);
    let got = call(&mut s, "get_note", json!({"id": id.to_string()}));
    assert_eq!(ok(&got)["tags"], json!(["x", "y z"]));

    // Query components: '&' and '=' do not start new parameters.
    let found = call(
        &mut s,
        "search_notes",
        json!({"text": "& an = sign", "limit": 5}),
    );
    assert_eq!(ok(&found)["notes"].as_array().unwrap().len(), 1, "{found}");
    let found = call(&mut s, "search_notes", json!({"text": "x&tag=nope"}));
    assert_eq!(ok(&found)["notes"], json!([]), "{found}");

    // A path segment cannot climb: the API sees one segment holding "../notes".
    let climbing = call(&mut s, "get_note", json!({"id": "../notes"}));
    assert!(error_text(&climbing).contains("404"), "{climbing}");
    assert!(!error_text(&climbing).contains(token));

    let deleted = call(&mut s, "delete_note", json!({"id": id.to_string()}));
    assert_eq!(ok(&deleted)["deleted"], id);
    let gone = call(&mut s, "get_note", json!({"id": id.to_string()}));
    assert!(error_text(&gone).contains("404"));
}

#[test]
fn every_pack_lints_clean() {
    for name in ["git", "notes-api", "units"] {
        let out = crate::util::run_cli(&["lint", "--deny", "info", &pack(name)]);
        let report = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {report}");
        assert!(report.contains("no findings"), "{name}: {report}");
    }
}
