//! Named API keys (`api_keys:` in a tool file, kept as SHA-256 digests, made by `toolwright
//! hash-key`): a request with one speaks for `key:NAME` with the key's scopes, so views and
//! identity-bound arguments follow it; any other token, or none, gets 401.

use crate::http_client::*;
use crate::util::run_cli;
use serde_json::{Value, json};

/// `toolwright hash-key --generate`: the key (from stderr) and its entry (stdout).
pub(crate) fn generated(name: &str, scopes: &[&str]) -> (String, String) {
    let mut args = vec!["hash-key", "--generate", "--name", name];
    for s in scopes {
        args.extend(["--scope", s]);
    }
    let out = run_cli(&args);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let key = stderr.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(key.starts_with("tw_"), "{stderr}");
    let entry = String::from_utf8(out.stdout).unwrap();
    assert!(
        !entry.contains(&key),
        "the entry holds the key itself: {entry}"
    );
    (key, entry)
}

fn send(s: &HttpServer, token: Option<&str>, method: &str, params: Value) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let name = params["name"].as_str().map(str::to_owned);
    let mut h = modern_headers(method, name.as_deref());
    if let Some(b) = &bearer {
        h.push(("authorization", b));
    }
    s.post(&h, &modern_request(5, method, params))
}

fn names(s: &HttpServer, token: &str) -> Vec<String> {
    let r = send(s, Some(token), "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    crate::util::sorted_tool_names(&r.json()["result"]["tools"])
}

#[test]
fn api_keys_choose_views_and_bind_arguments_and_nothing_else_gets_in() {
    let (reader_key, reader_entry) = generated("ci-bot", &["tickets:read"]);
    let (ops_key, ops_entry) = generated("ops", &[]);
    let reader_entry = reader_entry.strip_prefix("api_keys:\n").unwrap();
    let ops_entry = ops_entry.strip_prefix("api_keys:\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.yaml");
    std::fs::write(
        &file,
        format!(
            r#"builtins: [add, multiply]
tools:
  - name: whoami
    description: Print whose call this is.
    inputSchema: {{type: object, properties: {{who: {{type: string}}}}, required: [who]}}
    command: [echo, "{{who}}"]
    arguments: {{who: "{{claims.sub}}"}}
views:
  reader:
    include: [add, whoami]
    when: {{scope: "tickets:read"}}
  default:
    exclude: ["probe_*"]
api_keys:
{reader_entry}{ops_entry}"#
        ),
    )
    .unwrap();
    let s = HttpServer::start(&["--config", file.to_str().unwrap()]);

    for token in [None, Some("tw_not-a-key"), Some(&reader_key[..20])] {
        let r = send(&s, token, "tools/list", json!({}));
        assert_eq!(r.status, 401, "{token:?}: {}", r.text());
    }
    assert_eq!(names(&s, &reader_key), ["add", "whoami"]);
    assert_eq!(names(&s, &ops_key), ["add", "multiply", "whoami"]);

    let who = |key: &str| {
        let r = send(
            &s,
            Some(key),
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json();
        assert_ne!(v["result"]["isError"], true, "{v}");
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_eq!(who(&reader_key), "key:ci-bot");
    assert_eq!(who(&ops_key), "key:ops");
}

#[test]
fn a_key_written_in_the_clear_is_refused_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "tools:\n  - name: say_hello\n    description: Print a greeting. Returns the greeting.\n    \
         inputSchema: {type: object}\n    command: [echo, hello]\napi_keys:\n  ci-bot: {key: tw_plaintext}\n",
    )
    .unwrap();
    for (args, place) in [
        (vec!["lint"], "/api_keys/ci-bot"),
        (vec!["serve", "--config"], "api_keys.ci-bot"),
    ] {
        let mut args = args;
        args.push(file.to_str().unwrap());
        let out = run_cli(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {text}");
        assert!(text.contains("toolwright hash-key"), "{args:?}: {text}");
        assert!(text.contains(place), "{args:?}: {text}");
    }
}
