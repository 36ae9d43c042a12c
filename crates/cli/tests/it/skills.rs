//! The Skills extension (SEP-2640) end to end: `serve --skills DIR` (and a tool file's
//! `skills:`) over stdio and HTTP, read by raw JSON-RPC and by `toolwright skills`; files
//! beneath the root only; a client that refuses a file that does not match its entry.

use crate::http_client::HttpServer;
use crate::util::{Server, bin, run_cli};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

const LEGACY: &str = "2025-11-25";
const SKILL_MD: &str = "---\nname: pdf\ndescription: Work with PDF files\nmetadata:\n  owner: docs\n---\n\n# PDF\n\nSee references/FORMS.md.\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A skills directory: `pdf` (with a subdirectory) and `team/hello`, plus a secret beside
/// the root that a link inside it points at.
fn skills_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    write(&root, "pdf/SKILL.md", SKILL_MD);
    write(&root, "pdf/references/FORMS.md", "Fill fields by name.\n");
    write(
        &root,
        "team/hello/SKILL.md",
        "---\nname: hello\ndescription: Say hello\n---\nHi\n",
    );
    write(dir.path(), "secret.txt", "do not serve\n");
    symlink("../../secret.txt", root.join("pdf/leak.txt")).unwrap();
    dir
}

/// `sha256:` and the hex digest by coreutils' sha256sum, not by the code under test.
fn sha256sum(file: &Path) -> String {
    let out = Command::new("sha256sum").arg(file).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// A stdio MCP server as a shell script: each request whose method is one of `answers`'
/// gets that result under its own id; anything else goes unanswered.
pub(crate) fn scripted_server(answers: &[(&str, Value)]) -> String {
    let mut script = String::from(
        "while IFS= read -r line; do\n  id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\\([0-9][0-9]*\\).*/\\1/p')\n  [ -n \"$id\" ] || continue\n  case \"$line\" in\n",
    );
    for (method, result) in answers {
        let reply = json!({"jsonrpc": "2.0", "id": 0, "result": result})
            .to_string()
            .replace("\"id\":0", "\"id\":ID");
        script.push_str(&format!(
            "  *'\"method\":\"{method}\"'*) printf '%s\\n' '{reply}' | sed \"s/\\\"id\\\":ID/\\\"id\\\":$id/\" ;;\n"
        ));
    }
    script.push_str("  esac\ndone\n");
    script
}

#[test]
fn stdio_lists_gets_reads_and_walks_skills() {
    let dir = skills_dir();
    let root = dir.path().join("skills");
    let mut s = Server::start(&["--skills", root.to_str().unwrap()]);
    let init = s.request(
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{init}"
    );
    assert!(caps["resources"].is_object(), "{init}");
    s.notify("notifications/initialized", json!({}));

    let list = s.request("skills/list", json!({}));
    let skills = list["result"]["skills"].as_array().unwrap();
    let uris: Vec<&str> = skills.iter().map(|e| e["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        ["skill://pdf/SKILL.md", "skill://team/hello/SKILL.md"]
    );
    let pdf = &skills[0];
    assert_eq!(
        pdf["frontmatter"],
        json!({"name": "pdf", "description": "Work with PDF files", "metadata": {"owner": "docs"}})
    );
    let files = pdf["resources"].as_array().unwrap();
    let listed: Vec<&str> = files.iter().map(|f| f["uri"].as_str().unwrap()).collect();
    assert_eq!(
        listed,
        ["skill://pdf/SKILL.md", "skill://pdf/references/FORMS.md"],
        "the link out of the root is not listed"
    );
    assert_eq!(files[0]["digest"], sha256sum(&root.join("pdf/SKILL.md")));
    assert_eq!(files[0]["size"], SKILL_MD.len());
    assert_eq!(
        files[1]["digest"],
        sha256sum(&root.join("pdf/references/FORMS.md"))
    );

    let got = s.request("skills/get", json!({"uri": "skill://pdf/SKILL.md"}));
    assert_eq!(&got["result"]["skill"], pdf);
    let unknown = s.request("skills/get", json!({"uri": "skill://nope/SKILL.md"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let read = s.request("resources/read", json!({"uri": "skill://pdf/SKILL.md"}));
    let part = &read["result"]["contents"][0];
    assert_eq!(
        (part["text"].as_str(), part["mimeType"].as_str()),
        (Some(SKILL_MD), Some("text/markdown"))
    );
    let leak = s.request("resources/read", json!({"uri": "skill://pdf/leak.txt"}));
    assert!(
        leak["error"].is_object(),
        "a link out of the root is not served: {leak}"
    );
    let escape = s.request(
        "resources/read",
        json!({"uri": "skill://pdf/../../secret.txt"}),
    );
    assert!(escape["error"].is_object(), "{escape}");

    let resources = s.request("resources/list", json!({}));
    let md: Vec<&Value> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["uri"] == "skill://pdf/SKILL.md")
        .collect();
    assert_eq!(
        (md[0]["name"].as_str(), md[0]["description"].as_str()),
        (Some("pdf"), Some("Work with PDF files"))
    );

    let top = s.request("resources/directory/read", json!({"uri": "skill://pdf"}));
    let children: Vec<(&str, &str)> = top["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        children,
        [
            ("skill://pdf/SKILL.md", "text/markdown"),
            ("skill://pdf/references", "inode/directory")
        ]
    );
    let file = s.request(
        "resources/directory/read",
        json!({"uri": "skill://pdf/SKILL.md"}),
    );
    assert_eq!(file["error"]["code"], -32602, "{file}");
}

#[test]
fn a_tool_file_names_the_skills_directory_relative_to_itself() {
    let dir = skills_dir();
    write(dir.path(), "conf/toolwright.yaml", "skills: ../skills\n");
    let config = dir.path().join("conf/toolwright.yaml");
    let mut s = Server::legacy(LEGACY, &["--config", config.to_str().unwrap()]);
    let list = s.request("skills/list", json!({}));
    assert_eq!(
        list["result"]["skills"].as_array().map(Vec::len),
        Some(2),
        "{list}"
    );
}

#[test]
fn a_server_without_skills_does_not_answer_skills_methods() {
    let mut s = Server::legacy(LEGACY, &[]);
    let list = s.request("skills/list", json!({}));
    assert_eq!(list["error"]["code"], -32601, "{list}");
}

#[test]
fn a_skill_that_breaks_the_rules_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "pdf/SKILL.md",
        "---\nname: other\ndescription: d\n---\n",
    );
    let out = run_cli(&["serve", "--skills", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"other\" is not the directory's name \"pdf\""),
        "{err}"
    );
}

#[test]
fn the_cli_lists_and_gets_skills_over_http_verified() {
    let dir = skills_dir();
    let root = dir.path().join("skills");
    let server = HttpServer::start(&["--skills", root.to_str().unwrap()]);
    let url = server.url();
    let list = run_cli(&["skills", "list", "--url", &url]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        text.contains("pdf  skill://pdf/SKILL.md")
            && text.contains("hello  skill://team/hello/SKILL.md"),
        "{text}"
    );

    let get = run_cli(&[
        "skills",
        "get",
        "--url",
        &url,
        "pdf",
        "--file",
        "references/FORMS.md",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&get.stdout),
        "Fill fields by name.\n"
    );

    let out = tempfile::tempdir().unwrap();
    let all = run_cli(&[
        "skills",
        "get",
        "--url",
        &url,
        "skill://pdf/SKILL.md",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    assert_eq!(
        fs::read_to_string(out.path().join("pdf/SKILL.md")).unwrap(),
        SKILL_MD
    );
    assert!(out.path().join("pdf/references/FORMS.md").is_file());
    assert!(!out.path().join("pdf/leak.txt").exists());
}

/// A stdio server (a shell script) that lists a skill and then serves its SKILL.md with
/// one byte changed: the client must refuse it and print nothing of it.
#[test]
fn the_cli_refuses_a_tampered_file() {
    let dir = tempfile::tempdir().unwrap();
    let md = "---\nname: pdf\ndescription: Work with PDF files\n---\nSafe body\n";
    let md_file = dir.path().join("SKILL.md");
    fs::write(&md_file, md).unwrap();
    let entry = json!({
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Work with PDF files"},
        "resources": [{"uri": "skill://pdf/SKILL.md", "digest": sha256sum(&md_file), "size": md.len()}]
    });
    let tampered = md.replace("Safe body", "Evil body");
    let answers = [
        (
            "initialize",
            json!({"protocolVersion": LEGACY, "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}, "serverInfo": {"name": "tamper", "version": "0"}}),
        ),
        ("skills/list", json!({"skills": [entry]})),
        (
            "resources/read",
            json!({"contents": [{"uri": "skill://pdf/SKILL.md", "mimeType": "text/markdown", "text": tampered}]}),
        ),
    ];
    let script = scripted_server(&answers);
    let script_file = dir.path().join("tamper.sh");
    fs::write(&script_file, script).unwrap();
    let out = Command::new(bin())
        .args(["skills", "get", "--era", "legacy", "pdf", "--", "sh"])
        .arg(&script_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "unverified content was printed");
    assert!(
        err.contains("skill://pdf/SKILL.md: refused") && err.contains("digest"),
        "{err}"
    );
    // The same script serving the file untouched is accepted (the test can tell).
    let honest = fs::read_to_string(&script_file)
        .unwrap()
        .replace("Evil body", "Safe body");
    fs::write(&script_file, honest).unwrap();
    let ok = Command::new(bin())
        .args(["skills", "get", "--era", "legacy", "pdf", "--", "sh"])
        .arg(&script_file)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout),
        md,
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn modern_requests_over_stdio_carry_the_cache_fields() {
    let dir = skills_dir();
    let root = dir.path().join("skills");
    let mut s = Server::start(&["--skills", root.to_str().unwrap()]);
    let discover = s.modern("server/discover", json!({}));
    let ext = &discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"];
    assert_eq!(ext, &json!({"directoryRead": true}), "{discover}");
    for (method, params) in [
        ("skills/list", json!({})),
        ("skills/get", json!({"uri": "skill://team/hello/SKILL.md"})),
        (
            "resources/directory/read",
            json!({"uri": "skill://team/hello"}),
        ),
        (
            "resources/read",
            json!({"uri": "skill://team/hello/SKILL.md"}),
        ),
    ] {
        let r = s.modern(method, params);
        let res = &r["result"];
        assert_eq!(res["resultType"], "complete", "{method}: {r}");
        assert!(
            res["ttlMs"].is_u64() && res["cacheScope"].is_string(),
            "{method}: {r}"
        );
    }
    let bad_cursor = s.modern("skills/list", json!({"cursor": "7"}));
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
}
