//! Unit tests of the client: era detection and transports against scripted servers.

use super::*;

/// A stdio "server" made of a shell script that answers requests by position.
fn script(lines: &str) -> Target {
    Target::command(&["sh", "-c", lines])
}

fn quick() -> ConnectOptions {
    ConnectOptions {
        probe_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn legacy_server_pages_and_server_requests() {
    let target = script(concat!(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}';"#,
        r#"read l; echo '{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}';"#,
        r#"read l; read l; echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}';"#,
        r#"echo '{"jsonrpc":"2.0","id":"srv","method":"roots/list"}';"#,
        r#"echo '{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":""}}';"#,
        r#"read l; case "$l" in *'"id":"srv"'*-32601*) ;; *) exit 1;; esac;"#,
        r#"read l; case "$l" in *'"cursor":""'*) ;; *) exit 1;; esac;"#,
        r#"echo '{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}}';"#,
        "read l",
    ));
    let mut c = Client::connect(target, quick()).await.unwrap();
    assert_eq!(c.era(), Era::Legacy);
    assert_eq!(c.protocol_version(), ProtocolVersion::V2025_06_18);
    assert_eq!(c.server_info().unwrap().name, "sh");
    let names: Vec<String> = c
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    c.close().await;
}

#[tokio::test]
async fn input_required_is_answered_and_the_state_echoed() {
    // Round 1 asks for an elicitation with state "s1"; the retry must be a new request
    // (id 3) carrying the answer under the same key and the state unchanged; round 2
    // asks again without state, and the second retry must carry none.
    let target = script(concat!(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}';"#,
        r#"read l; echo '{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","requestState":"s1","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"go":{"type":"boolean","default":true}}}}}}}}';"#,
        r#"read l; case "$l" in *'"id":3'*'"inputResponses":{"ok":{"action":"accept","content":{"go":true}}}'*'"requestState":"s1"'*) ;; *) exit 1;; esac;"#,
        r#"echo '{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{"again":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}}}}';"#,
        r#"read l; case "$l" in *requestState*) exit 1;; *'"id":4'*'"again":{"action":"accept"'*) ;; *) exit 1;; esac;"#,
        r#"echo '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"done"}]}}';"#,
        "read l",
    ));
    let options = ConnectOptions {
        elicit: Some(ElicitAnswer::AcceptDefaults),
        ..quick()
    };
    let mut c = Client::connect(target, options).await.unwrap();
    let call = c.call_tool("t", json!({}), None).await.unwrap();
    assert_eq!(call.raw["content"][0]["text"], "done");
    c.close().await;
}

#[tokio::test]
async fn input_required_without_an_answer_is_an_error_naming_it() {
    let target = script(concat!(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}';"#,
        r#"read l; echo '{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{}}}}}';"#,
        "read l",
    ));
    let options = ConnectOptions {
        elicit: Some(ElicitAnswer::Decline),
        ..quick()
    };
    let mut c = Client::connect(target, options).await.unwrap();
    let err = c.call_tool("t", json!({}), None).await.unwrap_err();
    assert!(err.to_string().contains("sampling/createMessage"), "{err}");
    c.close().await;
}

#[tokio::test]
async fn a_refused_version_the_server_lists_is_tried_once_more() {
    // The first server/discover is refused with -32022 although 2026-07-28 is listed:
    // the client asks again, in the same version, and goes on in the modern era.
    let target = script(concat!(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}';"#,
        r#"read l; case "$l" in *'"method":"server/discover"'*'"io.modelcontextprotocol/protocolVersion":"2026-07-28"'*) ;; *) exit 1;; esac;"#,
        r#"echo '{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}';"#,
        "read l",
    ));
    let c = Client::connect(target, quick()).await.unwrap();
    assert_eq!(c.era(), Era::Modern);
    c.close().await;
}

#[tokio::test]
async fn modern_server_and_input_required() {
    let target = script(concat!(
        r#"read l; case "$l" in *'"io.modelcontextprotocol/protocolVersion":"2026-07-28"'*) ;; *) exit 1;; esac;"#,
        r#"echo '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"2"}}}}';"#,
        r#"read l; echo '{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{}}}';"#,
        "read l",
    ));
    let mut c = Client::connect(target, quick()).await.unwrap();
    assert_eq!(c.era(), Era::Modern);
    assert_eq!(c.server_info().unwrap().name, "m");
    let err = c.call_tool("t", json!({}), None).await.unwrap_err();
    assert!(matches!(err, ClientError::InputRequired { .. }), "{err}");
    c.close().await;
}

#[tokio::test]
async fn unsupported_modern_version_falls_back_to_a_listed_legacy_one() {
    let target = script(concat!(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2099-01-01","2025-11-25"],"requested":"2026-07-28"}}}';"#,
        r#"read l; echo '{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"d","version":"1"}}}';"#,
        "read l; read l",
    ));
    let c = Client::connect(target, quick()).await.unwrap();
    assert_eq!(
        (c.era(), c.protocol_version()),
        (Era::Legacy, ProtocolVersion::V2025_11_25)
    );
    c.close().await;
    let only_future = script(
        r#"read l; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported","data":{"supported":["2099-01-01"]}}}'; read l"#,
    );
    let err = Client::connect(only_future, quick()).await.err().unwrap();
    assert!(matches!(err, ClientError::NoCommonVersion { .. }), "{err}");
}

#[tokio::test]
async fn a_dead_server_is_reported_with_its_stderr() {
    let err = Client::connect(
        script("echo 'cannot open the database' >&2; exit 3"),
        quick(),
    )
    .await
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(
        text.contains("closed the connection") && text.contains("cannot open the database"),
        "{text}"
    );
}

/// One canned HTTP answer: status, content type, extra headers, body.
type Canned = (u16, &'static str, Vec<(&'static str, &'static str)>, String);

/// Serves `answers` in order, one per connection, and returns each request's head and
/// body as received.
async fn http_script(
    answers: Vec<Canned>,
) -> (String, tokio::task::JoinHandle<Vec<(String, String)>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        for (status, ctype, headers, body) in answers {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                let n = sock.read(&mut chunk).await.unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break p + 4;
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < head_end + len {
                let n = sock.read(&mut chunk).await.unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            seen.push((head, String::from_utf8_lossy(&buf[head_end..]).into_owned()));
            let mut reply = format!(
                "HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n",
                body.len()
            );
            if !ctype.is_empty() {
                reply.push_str(&format!("content-type: {ctype}\r\n"));
            }
            for (k, v) in headers {
                reply.push_str(&format!("{k}: {v}\r\n"));
            }
            reply.push_str("\r\n");
            reply.push_str(&body);
            sock.write_all(reply.as_bytes()).await.unwrap();
            sock.shutdown().await.unwrap();
        }
        seen
    });
    (url, task)
}

#[tokio::test]
async fn legacy_http_sessions_sse_and_expiry() {
    let init = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"h","version":"1"}}}}}}"#
        )
    };
    let answers: Vec<Canned> = vec![
        // The modern probe: a legacy server's 400 without a modern error.
        (400, "application/json", vec![], r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#.into()),
        (200, "text/event-stream", vec![("mcp-session-id", "s1")], format!("event: message\ndata: {}\n\n", init(2))),
        (202, "", vec![], String::new()),
        // The session expired.
        (404, "application/json", vec![], r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#.into()),
        (200, "application/json", vec![("mcp-session-id", "s2")], init(4)),
        (202, "", vec![], String::new()),
        (200, "text/event-stream", vec![], concat!(
            ": keep-alive\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"
        ).into()),
        (200, "", vec![], String::new()),
    ];
    let (url, server) = http_script(answers).await;
    let mut c = Client::connect(Target::Http { url }, quick())
        .await
        .unwrap();
    assert_eq!(c.era(), Era::Legacy);
    let tools = c.list_tools_raw().await.unwrap();
    assert_eq!(tools[0]["name"], "a");
    c.close().await;
    let seen = server.await.unwrap();
    let heads: Vec<&str> = seen.iter().map(|(h, _)| h.as_str()).collect();
    assert!(
        heads[0].contains("mcp-method: server/discover")
            && heads[0].contains("mcp-protocol-version: 2026-07-28"),
        "{}",
        heads[0]
    );
    assert!(!heads[1].contains("mcp-session-id") && seen[1].1.contains("\"initialize\""));
    assert!(
        heads[2].contains("mcp-session-id: s1") && seen[2].1.contains("notifications/initialized")
    );
    assert!(
        heads[3].contains("mcp-session-id: s1")
            && heads[3].contains("mcp-protocol-version: 2025-11-25")
    );
    assert!(
        !heads[4].contains("mcp-session-id"),
        "re-initialize without the dead session"
    );
    assert!(heads[6].contains("mcp-session-id: s2") && seen[6].1.contains("tools/list"));
    assert!(heads[7].starts_with("delete ") && heads[7].contains("mcp-session-id: s2"));
}

#[tokio::test]
async fn modern_http_headers() {
    let answers: Vec<Canned> = vec![
        (200, "application/json", vec![], r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}"#.into()),
        (200, "application/json", vec![], r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}"#.into()),
    ];
    let (url, server) = http_script(answers).await;
    let mut c = Client::connect(Target::Http { url }, quick())
        .await
        .unwrap();
    assert_eq!(c.era(), Era::Modern);
    let tool: Tool = serde_json::from_value(
        json!({"name": "écho", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}),
    )
    .unwrap();
    let call = c
        .call_tool("écho", json!({"region": "eu-west"}), Some(&tool))
        .await
        .unwrap();
    assert_eq!(call.result.content.len(), 1);
    c.close().await;
    let seen = server.await.unwrap();
    let head = &seen[1].0;
    assert!(head.contains("mcp-method: tools/call"), "{head}");
    // The test server lower-cases the head it records.
    assert!(
        head.contains(&"mcp-name: =?base64?w6ljaG8=?=".to_lowercase()),
        "{head}"
    );
    assert!(head.contains("mcp-param-region: eu-west"), "{head}");
    assert!(seen[1].1.contains("\"_meta\""));
}

#[test]
fn targets_describe_themselves() {
    assert_eq!(Target::command(&["node", "s.js"]).describe(), "node s.js");
    assert_eq!(
        Target::Http {
            url: "http://x/mcp".into()
        }
        .describe(),
        "http://x/mcp"
    );
}

#[tokio::test]
async fn invalid_header_params_stop_the_call() {
    let answers: Vec<Canned> = vec![(
        200,
        "application/json",
        vec![],
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}"#.into(),
    )];
    let (url, server) = http_script(answers).await;
    let mut c = Client::connect(Target::Http { url }, quick())
        .await
        .unwrap();
    let bad: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object",
        "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}))
    .unwrap();
    let err = c
        .call_tool("t", json!({"n": 1}), Some(&bad))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::InvalidHeaderParam { tool, .. } if tool == "t"),
        "{err}"
    );
    let ok: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object",
        "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}}))
    .unwrap();
    let err = c
        .call_tool("t", json!({"n": 1e300}), Some(&ok))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::HeaderArgument { .. }), "{err}");
    c.close().await;
    assert_eq!(server.await.unwrap().len(), 1, "nothing sent for the calls");
}
