//! Identity-bound arguments (`arguments: {owner: "{claims.sub}"}` on a declared tool): out
//! of the advertised schema, filled from the verified token's claim, never from the
//! client; a call that gives one, or that carries no token, is refused with a tool error.
//! The same for a `sql` tool's parameter: each caller reads only their own rows.

use crate::auth_jwt::{Issuer, claims, es256, mint, start};
use crate::http_client::*;
use serde_json::{Value, json};

const CONFIG: &str = r#"tools:
  - name: whoami
    description: Print whose call this is.
    inputSchema:
      type: object
      properties: {owner: {type: string}, note: {type: string}}
      required: [owner]
    command: [echo, "owner={owner}"]
    arguments: {owner: "{claims.sub}"}
"#;

fn send(s: &HttpServer, token: Option<&str>, method: &str, params: Value) -> Value {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let name = params["name"].as_str().map(str::to_owned);
    let mut h = modern_headers(method, name.as_deref());
    if let Some(b) = &bearer {
        h.push(("authorization", b));
    }
    let r = s.post(&h, &modern_request(3, method, params));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn call(s: &HttpServer, token: Option<&str>, arguments: Value) -> (bool, String) {
    call_tool(s, token, "whoami", arguments)
}

fn call_tool(s: &HttpServer, token: Option<&str>, tool: &str, arguments: Value) -> (bool, String) {
    let v = send(
        s,
        token,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    let result = &v["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == true, text.trim().to_owned())
}

#[test]
fn a_bound_argument_comes_from_the_token_never_from_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bound.yaml");
    std::fs::write(&file, CONFIG).unwrap();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(&issuer, &["--config", file.to_str().unwrap()]);
    let alice = mint(&key, &claims(&s, &issuer.url, json!({"sub": "alice"})));

    // Out of the advertised schema.
    let list = send(&s, Some(&alice), "tools/list", json!({}));
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "whoami")
        .unwrap()
        .clone();
    assert_eq!(
        tool["inputSchema"],
        json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": []})
    );

    // From the token.
    assert_eq!(
        call(&s, Some(&alice), json!({})),
        (false, "owner=alice".into())
    );
    // Never from the client: the call is refused, the program not run.
    let (is_error, text) = call(&s, Some(&alice), json!({"owner": "mallory"}));
    assert!(is_error, "{text}");
    assert!(
        text.contains("\"owner\" is bound to the caller's identity"),
        "{text}"
    );
    assert!(!text.contains("owner=mallory"), "{text}");
}

#[test]
fn without_a_token_a_bound_argument_refuses_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bound.yaml");
    std::fs::write(&file, CONFIG).unwrap();
    let s = HttpServer::start(&["--config", file.to_str().unwrap()]);
    let (is_error, text) = call(&s, None, json!({}));
    assert!(is_error, "{text}");
    assert!(text.contains("carries no such claim"), "{text}");
}

#[test]
fn a_sql_parameter_bound_to_the_token_reads_only_the_callers_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "create table orders (id integer primary key, owner text not null, item text not null);
         insert into orders (owner, item) values
           ('alice', 'lamp'), ('bob', 'desk'), ('alice', 'chair'), ('alice'' or ''1''=''1', 'x');",
    )
    .unwrap();
    drop(conn);
    let file = dir.path().join("orders.yaml");
    std::fs::write(
        &file,
        format!(
            r#"sources:
  shop: {{sqlite: {db}}}
tools:
  - name: my_orders
    description: List the caller's own orders.
    inputSchema:
      type: object
      properties: {{owner: {{type: string}}}}
      required: [owner]
    sql: {{source: shop, statement: "select item from orders where owner = ? order by id", params: [owner]}}
    arguments: {{owner: "{{claims.sub}}"}}
    annotations: {{readOnlyHint: true}}
"#,
            db = db.display()
        ),
    )
    .unwrap();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(&issuer, &["--config", file.to_str().unwrap()]);
    let token = |sub: &str| mint(&key, &claims(&s, &issuer.url, json!({"sub": sub})));

    let items = |sub: &str| {
        let v = send(
            &s,
            Some(&token(sub)),
            "tools/call",
            json!({"name": "my_orders", "arguments": {}}),
        );
        assert_ne!(v["result"]["isError"], true, "{v}");
        v["result"]["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["item"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(items("alice"), ["lamp", "chair"]);
    assert_eq!(items("bob"), ["desk"]);
    // A subject that reads like SQL is bound as data: it matches only its own row.
    assert_eq!(items("alice' or '1'='1"), ["x"]);
    assert!(items("carol").is_empty());

    // The client cannot name another owner.
    let (is_error, text) = call_tool(
        &s,
        Some(&token("alice")),
        "my_orders",
        json!({"owner": "bob"}),
    );
    assert!(is_error, "{text}");
    assert!(
        text.contains("\"owner\" is bound to the caller's identity"),
        "{text}"
    );
    assert!(!text.contains("desk"), "{text}");
}

#[test]
fn a_gateway_fixed_argument_bound_to_the_token_reaches_the_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = dir.path().join("up.yaml");
    std::fs::write(
        &upstream,
        r#"builtins: []
tools:
  - name: whoami
    description: Print the name it is given.
    inputSchema: {type: object, properties: {who: {type: string}, note: {type: string}}, required: [who]}
    command: [echo, "who={who}"]
"#,
    )
    .unwrap();
    let gateway = dir.path().join("gw.yaml");
    std::fs::write(
        &gateway,
        format!(
            r#"builtins: []
servers:
  up:
    command: [{bin:?}, serve, --config, {up:?}]
    trust: trusted
    tools:
      whoami:
        arguments: {{who: "{{claims.sub}}"}}
"#,
            bin = crate::util::bin().display().to_string(),
            up = upstream.display().to_string()
        ),
    )
    .unwrap();
    let key = es256("ec-1");
    let issuer = Issuer::start(&[&key]);
    let s = start(&issuer, &["--config", gateway.to_str().unwrap()]);
    let token = |sub: &str| mint(&key, &claims(&s, &issuer.url, json!({"sub": sub})));

    let list = send(&s, Some(&token("alice")), "tools/list", json!({}));
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "up__whoami")
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert!(
        tool["inputSchema"]["properties"].get("who").is_none(),
        "{tool}"
    );
    for sub in ["alice", "bob"] {
        assert_eq!(
            call_tool(&s, Some(&token(sub)), "up__whoami", json!({})),
            (false, format!("who={sub}"))
        );
    }
    let (is_error, text) = call_tool(
        &s,
        Some(&token("alice")),
        "up__whoami",
        json!({"who": "bob"}),
    );
    assert!(is_error, "{text}");
    assert!(!text.contains("who=bob"), "{text}");
}
