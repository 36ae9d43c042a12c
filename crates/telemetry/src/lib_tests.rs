use super::*;

fn tool_call(name: &str, transport: Transport) -> Operation {
    Operation {
        method: method_name("tools/call"),
        target: Some(Target::Tool(name.into())),
        target_known: true,
        request_id: Some("7".into()),
        session_id: None,
        protocol_version: Some("2025-11-25"),
        transport,
        ..Operation::default()
    }
}

/// The line of `text` that starts with `prefix`, for the assertions below.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

#[test]
fn an_operation_lands_in_the_histogram_with_the_conventions_attributes() {
    let t = Telemetry::new();
    t.start(tool_call("echo", Transport::Tcp))
        .finish(Outcome::Ok);
    t.start(tool_call("echo", Transport::Tcp))
        .finish(Outcome::ToolError);
    let text = t.render();
    assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram"));
    assert!(text.contains("# UNIT mcp_server_operation_duration_seconds seconds"));
    let ok = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",gen_ai_operation_name=\"execute_tool\",mcp_protocol_version=\"2025-11-25\",network_transport=\"tcp\",network_protocol_name=\"http\"}",
    );
    assert!(ok.ends_with(" 1"), "{ok}");
    let failed = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",gen_ai_operation_name=\"execute_tool\",error_type=\"tool_error\"",
    );
    assert!(failed.ends_with(" 1"), "{failed}");
    // The convention's boundaries, all 14, then +Inf.
    for le in [
        "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1.0", "2.0", "5.0", "10.0", "30.0", "60.0",
        "120.0", "300.0", "+Inf",
    ] {
        assert!(
            text.contains(&format!("le=\"{le}\"")),
            "bucket {le} missing:\n{text}"
        );
    }
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn a_json_rpc_error_names_its_code_and_a_dropped_observation_is_cancelled() {
    let t = Telemetry::new();
    let mut op = tool_call("nope", Transport::Pipe);
    op.protocol_version = None;
    t.start(op.clone()).finish(Outcome::RpcError(-32602));
    t.start(op.clone()).finish(Outcome::RpcError(-32603));
    drop(t.start(op));
    let text = t.render();
    // The caller's error is no failure of the server's: the code, no error.type.
    let rpc = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"nope\",gen_ai_operation_name=\"execute_tool\",rpc_response_status_code=\"-32602\",network_transport=\"pipe\"}",
    );
    assert!(rpc.ends_with(" 1"), "{rpc}");
    let internal = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"nope\",gen_ai_operation_name=\"execute_tool\",error_type=\"-32603\",rpc_response_status_code=\"-32603\",network_transport=\"pipe\"}",
    );
    assert!(internal.ends_with(" 1"), "{internal}");
    let cancelled = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"nope\",gen_ai_operation_name=\"execute_tool\",error_type=\"cancelled\",network_transport=\"pipe\"}",
    );
    assert!(cancelled.ends_with(" 1"), "{cancelled}");
}

#[test]
fn unknown_names_share_one_label_and_known_ones_are_cut() {
    let t = Telemetry::new();
    for i in 0..50 {
        let mut op = tool_call(&format!("made_up_{i}"), Transport::Pipe);
        op.target_known = false;
        t.start(op).finish(Outcome::RpcError(-32602));
    }
    let mut prompt = tool_call("", Transport::Pipe);
    prompt.method = method_name("prompts/get");
    prompt.target = Some(Target::Prompt("made_up".into()));
    prompt.target_known = false;
    t.start(prompt).finish(Outcome::RpcError(-32602));
    let long = format!("{}é", "x".repeat(MAX_LABEL_NAME - 1));
    t.start(tool_call(&long, Transport::Pipe))
        .finish(Outcome::Ok);
    let text = t.render();
    assert!(!text.contains("made_up"), "{text}");
    let other = line(
        &text,
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"_OTHER\"",
    );
    assert!(other.ends_with(" 50"), "{other}");
    assert!(text.contains("gen_ai_prompt_name=\"_OTHER\""), "{text}");
    // Cut at a character boundary: the two-byte é would pass the cap, so it goes.
    let cut = format!("gen_ai_tool_name=\"{}\"", "x".repeat(MAX_LABEL_NAME - 1));
    assert!(text.contains(&cut), "{text}");
}

#[test]
fn sessions_are_counted_while_open_and_timed_when_closed() {
    let t = Telemetry::new();
    let a = t.session(Some("2025-06-18"), Transport::Tcp);
    let b = t.session(Some("2025-06-18"), Transport::Tcp);
    assert_eq!(t.live_sessions(), 2);
    assert!(t.render().contains("mcp_server_sessions_live 2\n"));
    drop(a);
    assert_eq!(t.live_sessions(), 1);
    let text = t.render();
    let count = line(
        &text,
        "mcp_server_session_duration_seconds_count{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\",network_protocol_name=\"http\"}",
    );
    assert!(count.ends_with(" 1"), "{count}");
    drop(b);
    assert_eq!(t.live_sessions(), 0);
}

#[test]
fn span_names_follow_the_convention() {
    let op = tool_call("get_weather", Transport::Pipe);
    assert_eq!(op.span_name(), "tools/call get_weather");
    let mut op = op;
    op.target = Some(Target::Prompt("review".into()));
    op.method = method_name("prompts/get");
    assert_eq!(op.span_name(), "prompts/get review");
    op.target = None;
    op.method = method_name("tools/list");
    assert_eq!(op.span_name(), "tools/list");
}

#[test]
fn unknown_methods_are_other() {
    assert_eq!(method_name("tools/call"), "tools/call");
    assert_eq!(method_name("server/discover"), "server/discover");
    assert_eq!(method_name("made/up/by/a/client"), "_OTHER");
}

#[test]
fn process_figures_parse_from_proc_text() {
    let stat = "4242 (tool (w)right) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 5 0 12345 104857600 2000 18446744073709551615";
    let status = "Name:\ttoolwright\nVmRSS:\t    8192 kB\nThreads:\t5\n";
    let f = process::parse(stat, status).expect("parses");
    assert_eq!(f.cpu_seconds, 3.0);
    assert_eq!(f.threads, 5);
    assert_eq!(f.virtual_bytes, 104_857_600);
    assert_eq!(f.resident_bytes, 8192 * 1024);
    assert_eq!(f.start_ticks, Some(12345));
    assert!(process::parse("garbage", "").is_none());
}

#[cfg(target_os = "linux")]
#[test]
fn process_gauges_are_rendered() {
    let text = Telemetry::new().render();
    for name in [
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_threads ",
        "process_start_time_seconds ",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
}

#[test]
fn traceparent_parses_and_is_passed_on() {
    let p = SpanContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("rojo=00f067aa0ba902b7"),
    )
    .expect("valid");
    assert_eq!(p.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(p.span_id_hex(), "00f067aa0ba902b7");
    assert_eq!(p.flags, 1);
    let child = SpanContext::child_of(Some(&p));
    assert_eq!(child.trace_id, p.trace_id);
    assert_ne!(child.span_id, p.span_id);
    assert_eq!(child.state.as_deref(), Some("rojo=00f067aa0ba902b7"));
    let tp = child.traceparent();
    assert!(tp.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && tp.ends_with("-01"));
    assert_eq!(
        SpanContext::parse(&tp, None).unwrap().span_id,
        child.span_id
    );
    for bad in [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ] {
        assert!(SpanContext::parse(bad, None).is_none(), "{bad:?} accepted");
    }
    // A later version may add fields.
    assert!(
        SpanContext::parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            None
        )
        .is_some()
    );
    let fresh = SpanContext::child_of(None);
    assert_ne!(fresh.trace_id, [0; 16]);
    assert_eq!(fresh.flags, 1);
}

#[test]
fn truncation_keeps_characters_whole() {
    assert_eq!(context::truncate("short", 10), "short");
    assert_eq!(context::truncate("abcdef", 3), "abc…");
    assert_eq!(context::truncate("éé", 3), "é…");
}

/// A sink that keeps what it is given, sampling as `sample` says.
struct Kept {
    sample: bool,
    spans: std::sync::Mutex<Vec<FinishedSpan>>,
}

impl SpanSink for Kept {
    fn sampled(&self, _: Option<&SpanContext>, _: &[u8; 16], _: &str, _: SpanKind) -> bool {
        self.sample
    }

    fn export(&self, span: FinishedSpan) {
        self.spans.lock().unwrap().push(span);
    }
}

fn with_sink(sample: bool) -> (Arc<Telemetry>, Arc<Kept>) {
    let kept = Arc::new(Kept {
        sample,
        spans: std::sync::Mutex::new(Vec::new()),
    });
    let t = Telemetry::with(Settings {
        capture_bytes: None,
        spans: Some(kept.clone()),
    });
    (t, kept)
}

#[test]
fn spans_keep_the_propagated_ids_and_link_server_to_client() {
    let (t, kept) = with_sink(true);
    let caller = SpanContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        None,
    );
    let mut op = tool_call("echo", Transport::Pipe);
    op.parent = caller.clone();
    let served = t.start(op);
    let server_ctx = served.context().clone();
    let mut up = tool_call("echo", Transport::Pipe);
    up.parent = Some(server_ctx.clone());
    let client = t.client(
        up,
        Some(Peer {
            address: "up.example".into(),
            port: Some(443),
        }),
    );
    let client_ctx = client.context().unwrap().clone();
    assert_ne!(client_ctx.span_id, server_ctx.span_id);
    client.finish(Outcome::Failed("timeout"));
    served.finish(Outcome::ToolError);
    let spans = kept.spans.lock().unwrap();
    let (c, s) = (&spans[0], &spans[1]);
    assert_eq!((c.kind, s.kind), (SpanKind::Client, SpanKind::Server));
    assert_eq!(s.context, server_ctx);
    assert_eq!(s.parent, caller);
    assert!(s.parent_remote);
    assert_eq!(c.parent.as_ref(), Some(&server_ctx));
    assert_eq!(c.context, client_ctx);
    assert_eq!(s.error.as_deref(), Some("tool_error"));
    assert_eq!(c.error.as_deref(), Some("timeout"));
    assert!(
        c.attributes
            .contains(&("server.port", spans::Value::Int(443)))
    );
    drop(spans);
    let text = t.render();
    assert!(
        text.contains("mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",gen_ai_operation_name=\"execute_tool\",error_type=\"timeout\""),
        "{text}"
    );
    drop(t.upstream_session(Some("2025-11-25"), Transport::Tcp));
    assert!(
        t.render()
            .contains("mcp_client_session_duration_seconds_count{mcp_protocol_version=\"2025-11-25\",network_transport=\"tcp\",network_protocol_name=\"http\"} 1")
    );
}

#[test]
fn an_unsampled_span_is_not_exported_and_propagates_unsampled() {
    let (t, kept) = with_sink(false);
    let o = t.start(tool_call("echo", Transport::Pipe));
    assert!(o.context().traceparent().ends_with("-00"));
    o.finish(Outcome::Ok);
    assert!(kept.spans.lock().unwrap().is_empty());
    // Without a sink, no client span: the peer gets the caller's span as before.
    let t = Telemetry::new();
    let mut up = tool_call("echo", Transport::Pipe);
    let parent = SpanContext::child_of(None);
    up.parent = Some(parent.clone());
    let c = t.client(up, None);
    assert_eq!(c.context(), Some(&parent));
    assert!(
        t.http_request(HttpRequest {
            method: "GET".into(),
            url: "http://h/".into(),
            peer: Peer {
                address: "h".into(),
                port: Some(80)
            },
            parent: None,
        })
        .is_none()
    );
}

macro_rules! fails {
    ($($name:ident: $outcome:expr, $side:expr => $fails:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!($outcome.fails($side), $fails);
            assert_eq!($outcome.error_type_on($side).is_some(), $fails);
        }
    )*};
}

fails! {
    parse_error_is_the_callers: Outcome::RpcError(-32700), Side::Server => false;
    invalid_request_is_the_callers: Outcome::RpcError(-32600), Side::Server => false;
    unknown_method_is_the_callers: Outcome::RpcError(-32601), Side::Server => false;
    invalid_params_is_the_callers: Outcome::RpcError(-32602), Side::Server => false;
    resource_not_found_is_the_callers: Outcome::RpcError(-32002), Side::Server => false;
    internal_error_fails_the_server: Outcome::RpcError(-32603), Side::Server => true;
    server_range_fails_the_server: Outcome::RpcError(-32001), Side::Server => true;
    every_code_fails_a_client: Outcome::RpcError(-32602), Side::Client => true;
    a_tool_error_fails: Outcome::ToolError, Side::Server => true;
    cancelled_fails: Outcome::Cancelled, Side::Server => true;
    ok_does_not_fail: Outcome::Ok, Side::Client => false;
}

#[test]
fn a_failed_spans_status_is_the_error_message() {
    assert_eq!(
        observe::status(Outcome::RpcError(-32603), Side::Server, Some("boom")),
        Some("boom".to_owned())
    );
    assert_eq!(
        observe::status(
            Outcome::RpcError(-32601),
            Side::Server,
            Some("no such method")
        ),
        None
    );
    assert_eq!(
        observe::status(Outcome::ToolError, Side::Server, None),
        Some("tool_error".to_owned())
    );
}

#[test]
fn a_server_span_carries_the_request_as_sent_and_links_the_ambient_context() {
    let (t, kept) = with_sink(true);
    let ambient = SpanContext::child_of(None);
    let op = Operation {
        method: method_name("made/up"),
        unknown_method: Some("made/up".into()),
        request_id: Some("request-7".into()),
        resource_uri: Some("test://x".into()),
        transport: Transport::Tcp,
        network_protocol_version: Some("1.1"),
        client: Some("127.0.0.1:4242".parse().unwrap()),
        parent: Some(SpanContext::child_of(None)),
        link: Some(ambient.clone()),
        ..Operation::default()
    };
    let mut o = t.start(op);
    o.set_error_message("Method not found: made/up");
    o.finish(Outcome::RpcError(-32601));
    let spans = kept.spans.lock().unwrap();
    let s = &spans[0];
    assert_eq!(s.name, "made/up");
    assert_eq!(s.links, vec![ambient]);
    assert_eq!(s.error, None, "a caller's error is not the server's");
    for (k, v) in [
        ("mcp.method.name", spans::Value::from("made/up")),
        ("jsonrpc.request.id", spans::Value::from("request-7")),
        ("mcp.resource.uri", spans::Value::from("test://x")),
        ("network.protocol.version", spans::Value::from("1.1")),
        ("client.address", spans::Value::from("127.0.0.1")),
        ("client.port", spans::Value::Int(4242)),
        ("rpc.response.status_code", spans::Value::from("-32601")),
    ] {
        assert!(
            s.attributes.contains(&(k, v.clone())),
            "{k}: {:?}",
            s.attributes
        );
    }
    assert!(!s.attributes.iter().any(|(k, _)| *k == "error.type"));
    drop(spans);
    let text = t.render();
    assert!(
        text.contains("mcp_server_operation_duration_seconds_count{mcp_method_name=\"_OTHER\",rpc_response_status_code=\"-32601\",network_transport=\"tcp\",network_protocol_name=\"http\",network_protocol_version=\"1.1\"} 1"),
        "{text}"
    );
}
