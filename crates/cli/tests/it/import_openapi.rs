//! `toolwright import openapi`: real public descriptions (pinned npm packages in
//! `tests/openapi`, installed by `npm ci --prefix tests/openapi`, as scripts/test.sh does)
//! and hand-written edge cases (`tests/openapi/specs`), each imported, linted with
//! `--deny warn`, served over stdio and called against a loopback stand-in that records the
//! request it gets.
//!
//! When the npm fixtures are not installed the tests that need them say so and pass, except
//! under `CI`, where they fail.

use crate::util::{Server, repo_root, run_cli};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request the stand-in got.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    /// Path and query, as sent.
    target: String,
    /// Names lower case.
    headers: Vec<(String, String)>,
    body: String,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A loopback HTTP server: `GET /specs/PATH` answers the file `PATH` of `files`; every
/// other request is recorded and answered `reply` as JSON.
struct StandIn {
    port: u16,
    seen: Arc<Mutex<Vec<Recorded>>>,
}

impl StandIn {
    fn start(reply: Value, files: Option<PathBuf>) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).unwrap_or(0) == 0 {
                    continue;
                }
                let mut parts = first.split_whitespace();
                let method = parts.next().unwrap_or("").to_owned();
                let target = parts.next().unwrap_or("").to_owned();
                let mut headers = Vec::new();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((n, v)) = line.split_once(':') {
                        let n = n.trim().to_ascii_lowercase();
                        let v = v.trim().to_owned();
                        if n == "content-length" {
                            length = v.parse().unwrap();
                        }
                        headers.push((n, v));
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let (status, kind, answer) = match (&files, target.strip_prefix("/specs/")) {
                    (Some(dir), Some(rel)) => match std::fs::read(dir.join(rel)) {
                        Ok(bytes) => (200, "application/yaml", bytes),
                        Err(_) => (404, "text/plain", b"no such file".to_vec()),
                    },
                    _ => {
                        log.lock().unwrap().push(Recorded {
                            method,
                            target,
                            headers,
                            body: String::from_utf8_lossy(&body).into_owned(),
                        });
                        (200, "application/json", reply.to_string().into_bytes())
                    }
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    answer.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(&answer);
            }
        });
        StandIn { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn last(&self) -> Recorded {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request reached the stand-in")
    }
}

/// A description of the pinned npm packages, or `None` (with a message) when they are not
/// installed outside CI.
fn npm_spec(rel: &str) -> Option<PathBuf> {
    let path = repo_root().join("tests/openapi/node_modules").join(rel);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: run `npm ci --prefix tests/openapi`",
        path.display()
    );
    eprintln!(
        "SKIPPED: {} is not installed; run `npm ci --prefix tests/openapi`",
        path.display()
    );
    None
}

fn hand_written(rel: &str) -> PathBuf {
    repo_root().join("tests/openapi/specs").join(rel)
}

/// `toolwright import openapi SPEC ARGS… -o DIR/tools.yaml`: the output, the file's text
/// and its path.
fn import(spec: &str, args: &[&str], dir: &Path) -> (std::process::Output, String, PathBuf) {
    let out_file = dir.join("tools.yaml");
    let mut all = vec!["import", "openapi", spec];
    all.extend_from_slice(args);
    let out_text = out_file.to_str().unwrap().to_owned();
    all.extend_from_slice(&["-o", &out_text]);
    let out = run_cli(&all);
    let text = std::fs::read_to_string(&out_file).unwrap_or_default();
    (out, text, out_file)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `toolwright lint --deny warn FILE` passes.
fn assert_lints_clean(file: &Path) {
    let out = run_cli(&["lint", "--deny", "warn", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "lint --deny warn failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

/// The tool file's tools, read back.
fn tools_of(text: &str) -> Vec<Value> {
    let doc = toolwright_lint::parse_document(text).expect("the tool file is YAML");
    doc["tools"].as_array().cloned().unwrap_or_default()
}

/// Serves `file` over stdio with `env`, checks that tools/list has every tool of the file.
fn serve(file: &Path, env: &[(&str, &Path)], tools: &[Value]) -> Server {
    let mut s = Server::start_with_env(&["--config", file.to_str().unwrap()], None, env)
        .handshake("2025-06-18");
    let listed = s.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert!(names.contains(&name), "{name} is not listed: {names:?}");
    }
    s
}

/// Calls a tool; the result (which may be an error: the stand-in's one answer need not fit
/// every tool's `outputSchema`).
fn call_any(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.request("tools/call", json!({"name": name, "arguments": args}));
    r["result"].clone()
}

/// Calls a tool that must succeed.
fn call(s: &mut Server, name: &str, args: Value) -> Value {
    let result = call_any(s, name, args);
    assert!(result["isError"] != json!(true), "{name}: {result}");
    result
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn petstore_30_and_31_import_lint_serve_and_call() {
    for version in ["3.0", "3.1"] {
        let Some(spec) = npm_spec(&format!(
            "@readme/oas-examples/{version}/yaml/petstore.yaml"
        )) else {
            return;
        };
        let pet = json!({"id": 7, "name": "rex", "photoUrls": [], "status": "available"});
        let stand_in = StandIn::start(pet.clone(), None);
        let dir = tempfile::tempdir().unwrap();
        let server = format!("{}/v2", stand_in.url());
        let (out, text, file) = import(spec.to_str().unwrap(), &["--server", &server], dir.path());
        assert!(out.status.success(), "{version}: {}", stderr(&out));
        let tools = tools_of(&text);
        let names = names(&tools);
        for want in [
            "get_pet_by_id",
            "add_pet",
            "delete_pet",
            "login_user",
            "get_inventory",
        ] {
            assert!(names.contains(&want), "{version}: {names:?}");
        }
        // An array query parameter cannot be sent: the operation is listed, with why, in
        // both places; an optional body that is not JSON is left out, and said so.
        let why = "(findPetsByStatus): query parameter `status`: it is an array or object";
        assert!(
            text.contains(&format!("#   GET /pet/findByStatus {why}")),
            "{version}: {text}"
        );
        assert!(
            stderr(&out).contains(&format!("skipped GET /pet/findByStatus {why}")),
            "{}",
            stderr(&out)
        );
        let left_out = "POST /pet/{petId}/uploadImage (uploadFile): optional request body left out";
        assert!(text.contains(left_out), "{version}: {text}");
        assert!(
            stderr(&out).contains(&format!("left out of {left_out}")),
            "{}",
            stderr(&out)
        );
        assert_lints_clean(&file);
        let key = Path::new("k-123");
        let token = Path::new("t-456");
        let env = [
            ("SWAGGER_PETSTORE_API_KEY", key),
            ("SWAGGER_PETSTORE_PETSTORE_AUTH", token),
        ];
        let mut s = serve(&file, &env, &tools);
        let result = call(&mut s, "get_pet_by_id", json!({"petId": 7}));
        assert_eq!(result["structuredContent"], pet, "{version}");
        let r = stand_in.last();
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("GET", "/v2/pet/7"),
            "{version}"
        );
        assert_eq!(r.header("api_key"), Some("k-123"), "{version}: {r:?}");
        // A JSON body, its members from the arguments.
        call(
            &mut s,
            "add_pet",
            json!({"name": "rex", "photoUrls": ["a"], "status": "sold"}),
        );
        let r = stand_in.last();
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/v2/pet"),
            "{version}"
        );
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(
            body,
            json!({"name": "rex", "photoUrls": ["a"], "status": "sold"}),
            "{version}"
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            r.header("authorization"),
            Some("Bearer t-456"),
            "{version}: {r:?}"
        );
        // Query parameters.
        call_any(
            &mut s,
            "login_user",
            json!({"username": "a b", "password": "p&q"}),
        );
        let r = stand_in.last();
        assert_eq!(
            r.target, "/v2/user/login?password=p%26q&username=a%20b",
            "{version}"
        );
    }
}

#[test]
fn edge_cases_are_imported_or_listed_with_why() {
    let spec = hand_written("edge.yaml");
    let dir = tempfile::tempdir().unwrap();
    // The server URL is relative and the description a file: nothing to resolve it against.
    let (out, _, _) = import(spec.to_str().unwrap(), &[], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--server"), "{}", stderr(&out));

    let widget = json!({"id": "7", "name": "n", "note": null, "owner": null});
    let stand_in = StandIn::start(widget.clone(), None);
    let server = format!("{}/v1", stand_in.url());
    let (out, text, file) = import(spec.to_str().unwrap(), &["--server", &server], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    for (op, why) in [
        ("POST /uploads (uploadFile)", "multipart/form-data"),
        ("GET /session (readSession)", "cookie parameter `sid`"),
        ("GET /search (searchWidgets)", "query parameter `tag`"),
    ] {
        let line = format!("#   {op}: ");
        assert!(text.contains(&line) && text.contains(why), "{op}: {text}");
    }
    assert!(text.contains("query parameter `fields` left out"), "{text}");
    assert!(text.contains("EDGE_CASES_API_KEY"), "{text}");
    let tools = tools_of(&text);
    let names = names(&tools);
    assert_eq!(
        names,
        [
            "get_widgets_widget_id",
            "replace_widget",
            "delete_widget",
            "list_trees"
        ],
        "{text}"
    );
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    // The body's `widgetId` is renamed beside the path's; `id` is read-only, not sent.
    let replace = by_name("replace_widget");
    let props = replace["inputSchema"]["properties"].as_object().unwrap();
    let keys: Vec<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["widgetId", "body_widgetId", "name", "score"],
        "{replace}"
    );
    assert_eq!(props["score"]["type"], json!(["number", "null"]));
    assert_eq!(props["score"]["exclusiveMinimum"], json!(0));
    assert_eq!(replace["annotations"]["idempotentHint"], true);
    assert_eq!(
        by_name("delete_widget")["annotations"]["destructiveHint"],
        true
    );
    // 3.0's nullable object in another file, and the recursion cut.
    let got = by_name("get_widgets_widget_id");
    assert_eq!(
        got["outputSchema"]["properties"]["owner"]["type"],
        json!(["object", "null"])
    );
    let trees = by_name("list_trees");
    let node = &trees["outputSchema"]["properties"]["result"]["items"];
    let deep = &node["properties"]["children"]["items"]["properties"]["children"]["items"];
    assert!(
        deep["description"]
            .as_str()
            .unwrap()
            .contains("recursive Node"),
        "{trees}"
    );
    assert_lints_clean(&file);

    let key = Path::new("s3cret");
    let mut s = serve(&file, &[("EDGE_CASES_API_KEY", key)], &tools);
    call(
        &mut s,
        "replace_widget",
        json!({"widgetId": "a/b", "body_widgetId": 7, "name": "n", "score": null}),
    );
    let r = stand_in.last();
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("PUT", "/v1/widgets/a%2Fb")
    );
    assert_eq!(r.header("x-api-key"), Some("s3cret"));
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body, json!({"widgetId": 7, "name": "n"}));
    let result = call(
        &mut s,
        "get_widgets_widget_id",
        json!({"widgetId": "x", "X-Trace": "t1"}),
    );
    assert_eq!(result["structuredContent"], widget);
    let r = stand_in.last();
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("GET", "/v1/widgets/x")
    );
    assert_eq!(r.header("x-trace"), Some("t1"));
    assert_eq!(r.header("accept"), Some("application/json"));
    call_any(&mut s, "list_trees", json!({"limit": 2}));
    assert_eq!(stand_in.last().target, "/v1/trees?limit=2");
}

#[test]
fn a_description_by_url_resolves_its_server_and_references_against_its_own_location() {
    let widget = json!({"id": "7", "name": "n"});
    let stand_in = StandIn::start(widget, Some(hand_written("")));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/specs/edge.yaml", stand_in.url());
    let (out, text, file) = import(
        &url,
        &["--include-tag", "widgets", "--exclude-tag", "files"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = tools_of(&text);
    // The relative `/v1` against the description's URL; the schema from ext/schemas.yaml
    // fetched beside it.
    let got = tools
        .iter()
        .find(|t| t["name"] == "get_widgets_widget_id")
        .unwrap();
    assert_eq!(
        got["http"]["url"],
        format!("{}/v1/widgets/{{widgetId}}", stand_in.url())
    );
    assert_eq!(got["outputSchema"]["required"], json!(["id", "name"]));
    assert!(
        !text.contains("list_trees") && !text.contains("uploadFile"),
        "{text}"
    );
    assert_lints_clean(&file);
    let key = Path::new("k");
    let mut s = serve(&file, &[("EDGE_CASES_API_KEY", key)], &tools);
    call(&mut s, "get_widgets_widget_id", json!({"widgetId": "q"}));
    assert_eq!(stand_in.last().target, "/v1/widgets/q");
}

#[test]
fn selection_by_operation_and_path_glob() {
    let spec = hand_written("edge.yaml");
    let dir = tempfile::tempdir().unwrap();
    let s = spec.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--operation", "deleteWidget", "--operation", "list_trees"],
            &["delete_widget", "list_trees"],
        ),
        (
            &["--path", "/widgets/*"],
            &["get_widgets_widget_id", "replace_widget", "delete_widget"],
        ),
        (&["--path", "/t*"], &["list_trees"]),
    ];
    for (args, want) in cases {
        let mut all = vec!["--server", "http://127.0.0.1:9"];
        all.extend_from_slice(args);
        let (out, text, _) = import(s, &all, dir.path());
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(names(&tools_of(&text)), want, "{args:?}");
    }
}

#[test]
fn a_31_description_with_server_variables_and_a_whole_json_body() {
    let stand_in = StandIn::start(json!({"id": 3}), None);
    let dir = tempfile::tempdir().unwrap();
    // Rewritten with the stand-in's port as the variable's default.
    let text = std::fs::read_to_string(hand_written("relative-server.json"))
        .unwrap()
        .replace(
            "\"default\": \"9\"",
            &format!("\"default\": \"{}\"", stand_in.port),
        );
    let spec = dir.path().join("api.json");
    std::fs::write(&spec, text).unwrap();
    let (out, text, file) = import(spec.to_str().unwrap(), &[], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = tools_of(&text);
    assert_eq!(names(&tools), ["post_items"]);
    assert_eq!(tools[0]["http"]["body"], "{body}");
    assert_lints_clean(&file);
    let token = Path::new("tok");
    let mut s = serve(&file, &[("RELATIVE_SERVER_BEARER", token)], &tools);
    let result = call(&mut s, "post_items", json!({"body": ["a", "b"]}));
    assert_eq!(result["structuredContent"], json!({"id": 3}));
    let r = stand_in.last();
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("POST", "/api/items")
    );
    assert_eq!(r.header("authorization"), Some("Bearer tok"));
    assert_eq!(r.body, r#"["a","b"]"#);
}

#[test]
fn github_rest_api_by_tag_and_whole() {
    let Some(spec) = npm_spec("@octokit/openapi/generated/api.github.com.json") else {
        return;
    };
    let spec = spec.to_str().unwrap();
    let stand_in = StandIn::start(json!({"login": "octocat", "id": 1}), None);
    let dir = tempfile::tempdir().unwrap();
    let (out, text, file) = import(
        spec,
        &["--include-tag", "users", "--server", &stand_in.url()],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = tools_of(&text);
    assert!(tools.len() > 20, "{}", tools.len());
    assert_lints_clean(&file);
    let mut s = serve(&file, &[], &tools);
    let user = json!({"login": "octocat", "id": 1});
    let r = call_any(
        &mut s,
        "users_get_by_username",
        json!({"username": "octocat"}),
    );
    assert!(r.is_object(), "{r}");
    let got = stand_in.last();
    assert_eq!(
        (got.method.as_str(), got.target.as_str()),
        ("GET", "/users/octocat")
    );
    let _ = user;

    let started = Instant::now();
    let (out, text, file) = import(spec, &[], dir.path());
    let took = started.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = tools_of(&text);
    let skipped = text
        .lines()
        .find(|l| l.starts_with("# Skipped operations ("))
        .unwrap()
        .to_owned();
    eprintln!("GitHub: {} tools, {skipped}, in {took:?}", tools.len());
    assert!(tools.len() > 800, "{} tools; {skipped}", tools.len());
    assert!(took < Duration::from_secs(300), "{took:?}");
    assert_lints_clean(&file);
}

#[test]
fn shipengine_yaml_imported_whole_and_called() {
    let Some(spec) = npm_spec("shipengine-openapi/openapi.yaml") else {
        return;
    };
    let stand_in = StandIn::start(json!({}), None);
    let dir = tempfile::tempdir().unwrap();
    let (out, text, file) = import(
        spec.to_str().unwrap(),
        &["--server", &stand_in.url()],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = tools_of(&text);
    eprintln!(
        "ShipEngine: {} tools, {}",
        tools.len(),
        text.lines()
            .find(|l| l.starts_with("# Skipped operations ("))
            .unwrap()
    );
    assert!(tools.len() > 50, "{}", tools.len());
    assert_lints_clean(&file);
    let _ = serve(&file, &[], &tools);
}
