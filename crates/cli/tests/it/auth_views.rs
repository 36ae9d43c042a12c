//! Views (`views:` in a tool file) chosen by the caller's access token, and served at their
//! own path (`/mcp/NAME`): each lists and calls only its own tools, a tool outside is
//! answered exactly as an unknown one, and a view's pages are cut over its own tools. (The
//! test server also serves the `probe` fixtures' tools, `probe_*`, which the views leave out.)

use crate::auth_jwt::{Issuer, claims, es256, mint, start};
use crate::http_client::*;
use serde_json::{Value, json};

const CONFIG: &str = r#"builtins: [add, multiply]
tools:
  - name: echo
    description: Print a word.
    inputSchema: {type: object, properties: {word: {type: string}}, required: [word]}
    command: [echo, "{word}"]
views:
  reader:
    include: [add]
    when: {scope: "tickets:read"}
    tools:
      add: {description: "Adds two numbers, for readers.", annotations: {readOnlyHint: true}}
  writer:
    include: ["*"]
    exclude: [add, "probe_*"]
    when: {scope: "tickets:write"}
  ops:
    exclude: ["probe_*"]
    when: {claim: {groups: ops}}
"#;

/// Sends a modern `method` with `params` to `path` with `token`.
fn send(s: &HttpServer, path: &str, token: &str, method: &str, params: Value) -> Resp {
    let bearer = format!("Bearer {token}");
    let name = (params["name"].as_str().or(params["uri"].as_str())).map(str::to_owned);
    let mut h = modern_headers(method, name.as_deref());
    h.push(("authorization", &bearer));
    h.push(("content-type", "application/json"));
    h.push(("accept", "application/json, text/event-stream"));
    let body = modern_request(7, method, params).to_string();
    s.send("POST", path, &h, body.as_bytes())
}

/// The names `tools/list` shows at `path` to `token`, every page followed, and the number
/// of pages.
fn names(s: &HttpServer, path: &str, token: &str) -> (Vec<String>, usize) {
    let (mut all, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let r = send(s, path, token, "tools/list", params);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let result = r.json()["result"].clone();
        pages += 1;
        for t in result["tools"].as_array().unwrap() {
            all.push(t["name"].as_str().unwrap().to_owned());
        }
        match result["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (all, pages),
        }
    }
}

fn call(s: &HttpServer, path: &str, token: &str, name: &str, arguments: Value) -> Resp {
    send(
        s,
        path,
        token,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// What a call to `name` answers when it is outside the caller's view: what a call to a
/// made-up tool answers, with the name in place of the made-up one.
fn refused_as_unknown(s: &HttpServer, path: &str, token: &str, name: &str) {
    let unknown = call(s, path, token, "zz_no_such_tool", json!({}));
    let r = call(s, path, token, name, json!({"a": 1, "b": 2, "word": "x"}));
    assert_eq!(r.status, unknown.status, "{name}");
    assert_eq!(
        r.text(),
        unknown.text().replace("zz_no_such_tool", name),
        "{name}"
    );
}

#[test]
fn views_chosen_by_scope_list_and_call_only_their_tools() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("views.yaml");
    std::fs::write(&file, CONFIG).unwrap();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(
        &issuer,
        &["--config", file.to_str().unwrap(), "--page-size", "1"],
    );
    let iss = issuer.url.as_str();
    let token = |extra: Value| mint(&key, &claims(&s, iss, extra));
    let reader = token(json!({"scope": "tools:read tools:call tickets:read"}));
    let writer = token(json!({"scope": "tools:read tools:call tickets:write"}));
    let nobody = token(json!({}));
    let ops = token(json!({"groups": ["staff", "ops"]}));

    // The reader's view: `add` only, with the view's words.
    assert_eq!(names(&s, "/mcp", &reader), (vec!["add".to_owned()], 1));
    let r = send(&s, "/mcp", &reader, "tools/list", json!({}));
    let add = &r.json()["result"]["tools"][0];
    assert_eq!(add["description"], "Adds two numbers, for readers.");
    assert_eq!(add["annotations"], json!({"readOnlyHint": true}));
    let r = call(&s, "/mcp", &reader, "add", json!({"a": 2, "b": 3}));
    assert_eq!(
        r.json()["result"]["structuredContent"]["result"],
        5,
        "{}",
        r.text()
    );
    for outside in ["multiply", "echo"] {
        refused_as_unknown(&s, "/mcp", &reader, outside);
    }

    // The writer's view: every tool but `add`, a page each (--page-size 1).
    let (listed, pages) = names(&s, "/mcp", &writer);
    assert_eq!(listed, ["echo", "multiply"]);
    assert_eq!(pages, 2);
    let r = call(&s, "/mcp", &writer, "multiply", json!({"a": 2, "b": 3}));
    assert_eq!(
        r.json()["result"]["structuredContent"]["result"],
        6,
        "{}",
        r.text()
    );
    refused_as_unknown(&s, "/mcp", &writer, "add");

    // No view chosen (and none named `default`): no tool at all.
    assert_eq!(names(&s, "/mcp", &nobody), (vec![], 1));
    refused_as_unknown(&s, "/mcp", &nobody, "add");

    // A view at its own path: for the callers its `when` admits; to others it is a path
    // that does not exist.
    let (listed, _) = names(&s, "/mcp/ops", &ops);
    assert_eq!(listed, ["add", "echo", "multiply"]);
    let r = call(&s, "/mcp/ops", &ops, "echo", json!({"word": "hi"}));
    assert!(r.text().contains("hi"), "{}", r.text());
    let missing = send(&s, "/mcp/nope", &reader, "tools/list", json!({}));
    assert_eq!(missing.status, 404);
    let r = send(&s, "/mcp/ops", &reader, "tools/list", json!({}));
    assert_eq!((r.status, r.text()), (404, missing.text()));
    assert_eq!(names(&s, "/mcp/reader", &reader).0, ["add"]);
    // A legacy session gets its view at `initialize` and keeps it.
    let bearer = format!("Bearer {reader}");
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = s.post(&[("authorization", bearer.as_str())], &init);
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let session = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    let r = s.post(&session, &request(2, "tools/list", json!({})));
    let tools = r.checked(false, "tools/list")["result"]["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools[0]["name"], "add");
    let unknown = s.post(
        &session,
        &request(3, "tools/call", json!({"name": "zz_no_such_tool"})),
    );
    let r = s.post(
        &session,
        &request(3, "tools/call", json!({"name": "multiply"})),
    );
    assert_eq!(
        r.text(),
        unknown.text().replace("zz_no_such_tool", "multiply")
    );

    // Without a token, a view's path asks for one like /mcp does.
    let r = s.send("POST", "/mcp/ops", &[], b"{}");
    assert_eq!(r.status, 401);
}

#[test]
fn resources_and_prompts_follow_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("views.yaml");
    let config = "views:\n  docs:\n    include: [test_simple_prompt, \"test://static-text\"]\n";
    std::fs::write(&file, config).unwrap();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(
        &issuer,
        &[
            "--config",
            file.to_str().unwrap(),
            "--fixtures",
            "conformance",
        ],
    );
    let token = mint(&key, &claims(&s, &issuer.url, json!({})));
    let listed = |method: &str, key: &str, field: &str| -> Vec<String> {
        let r = send(&s, "/mcp/docs", &token, method, json!({}));
        let items = r.json()["result"][key].clone();
        let items = items.as_array().cloned().unwrap_or_default();
        items
            .iter()
            .map(|i| i[field].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        listed("prompts/list", "prompts", "name"),
        ["test_simple_prompt"]
    );
    assert_eq!(
        listed("resources/list", "resources", "uri"),
        ["test://static-text"]
    );
    assert!(
        listed(
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate"
        )
        .is_empty()
    );
    // Outside the view: answered as what does not exist.
    let get = |name: &str| {
        send(
            &s,
            "/mcp/docs",
            &token,
            "prompts/get",
            json!({"name": name}),
        )
        .text()
    };
    assert_eq!(
        get("test_prompt_with_arguments"),
        get("zz_none").replace("zz_none", "test_prompt_with_arguments")
    );
    let read = |uri: &str| {
        send(
            &s,
            "/mcp/docs",
            &token,
            "resources/read",
            json!({"uri": uri}),
        )
        .text()
    };
    let text = read("test://static-text");
    assert!(text.contains("contents"), "{text}");
    assert_eq!(
        read("test://static-binary"),
        read("test://zz-none").replace("test://zz-none", "test://static-binary")
    );
}

/// Over stdio (no token, one caller: whoever started the process): the view named
/// `default` when there is one, every tool when there is none, and `--view NAME` for any
/// view, its `when` aside; a name the files do not have is refused at start.
#[test]
fn stdio_serves_the_default_view_or_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let names = |config: &str, extra: &[&str]| {
        let file = dir.path().join("views.yaml");
        std::fs::write(&file, config).unwrap();
        let mut args = vec!["--config", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut s = crate::util::Server::legacy("2025-06-18", &args);
        let r = s.request("tools/list", json!({}));
        let names = crate::util::sorted_tool_names(&r["result"]["tools"]);
        // Outside the view, a call is an unknown tool's.
        let call = s.request(
            "tools/call",
            json!({"name": "multiply", "arguments": {"a": 2, "b": 3}}),
        );
        (
            names,
            call["result"]["isError"] == true || call["error"].is_object(),
        )
    };
    let with_default = format!("{CONFIG}  default:\n    include: [add]\n");
    assert_eq!(names(&with_default, &[]), (vec!["add".to_owned()], true));
    assert_eq!(
        names(CONFIG, &[]),
        (
            vec!["add".to_owned(), "echo".to_owned(), "multiply".to_owned()],
            false
        )
    );
    assert_eq!(
        names(CONFIG, &["--view", "writer"]),
        (vec!["echo".to_owned(), "multiply".to_owned()], false)
    );
    let file = dir.path().join("views.yaml");
    let out = crate::util::run_cli(&[
        "serve",
        "--config",
        file.to_str().unwrap(),
        "--view",
        "nope",
    ]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        text.contains("--view \"nope\"") && text.contains("reader, writer, ops"),
        "{text}"
    );
}

/// Completion and resource subscriptions follow the view as listing and reading do: what is
/// outside it is answered as what does not exist, and a listen stream is not subscribed to
/// it (over stdio, `--view docs`, in both eras).
#[test]
fn completion_and_subscriptions_follow_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("views.yaml");
    let config = "views:\n  docs:\n    include: [test_simple_prompt, \"test://static-text\"]\n";
    std::fs::write(&file, config).unwrap();
    let args = [
        "--config",
        file.to_str().unwrap(),
        "--fixtures",
        "conformance",
        "--view",
        "docs",
    ];
    let mut s = crate::util::Server::legacy("2025-11-25", &args);
    let complete = |s: &mut crate::util::Server, name: &str| {
        let r = s.request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": name},
                   "argument": {"name": "arg1", "value": ""}}),
        );
        r["error"].to_string()
    };
    let outside = complete(&mut s, "test_prompt_with_arguments");
    assert!(outside.contains("Unknown prompt"), "{outside}");
    assert_eq!(
        outside,
        complete(&mut s, "zz_none").replace("zz_none", "test_prompt_with_arguments")
    );
    let subscribe = |s: &mut crate::util::Server, uri: &str| {
        s.request("resources/subscribe", json!({"uri": uri}))["error"].to_string()
    };
    assert_eq!(subscribe(&mut s, "test://static-text"), "null");
    assert_eq!(
        subscribe(&mut s, "test://watched-resource"),
        subscribe(&mut s, "test://zz-none").replace("test://zz-none", "test://watched-resource")
    );

    let mut m = crate::util::Server::start(&args);
    let id = m.next_id();
    m.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": crate::util::modern_meta(), "notifications": {
            "resourceSubscriptions": ["test://static-text", "test://watched-resource"]}}}),
    );
    let ack = m.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://static-text"]})
    );
}
