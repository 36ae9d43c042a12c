//! Criterion micro-benchmarks of the per-call hot path: argument validation against a
//! realistic schema, and dispatch of a whole `tools/call` line (parse, validate, call,
//! serialize) without any I/O.
//!
//! Run: `cargo bench -p toolwright-server --bench hot_path`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use toolwright_protocol::{CallToolResult, Implementation};
use toolwright_schema::Validator;
use toolwright_server::{Config, Discard, FnTool, Handled, Outbound, Server};

fn realistic_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search query", "minLength": 1, "maxLength": 100},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            "format": {"type": "string", "enum": ["json", "csv", "xml"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
            "since": {"type": "string", "format": "date-time"},
            "exact": {"type": "boolean"}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn validation(c: &mut Criterion) {
    let v = Validator::compile(&realistic_schema()).unwrap();
    let args = json!({"query": "rust mcp", "limit": 25, "format": "json",
        "tags": ["a", "b", "c"], "since": "2026-01-01T00:00:00Z", "exact": false});
    assert!(v.is_valid(&args));
    c.bench_function("validate realistic arguments", |b| {
        b.iter(|| v.validate(black_box(&args)))
    });
    let bad = json!({"query": "", "limit": 0, "format": "yaml"});
    c.bench_function("validate and explain invalid arguments", |b| {
        b.iter(|| v.validate(black_box(&bad)))
    });
}

fn dispatch(c: &mut Criterion) {
    let server = Server::new(Implementation::new("bench", "0"), Config::default());
    server
        .register(
            FnTool::from_json(
                json!({"name": "add", "inputSchema": {"type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
                    "outputSchema": {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]}}),
                |args, _ctx| async move {
                    let r = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                    Ok(CallToolResult::structured(json!({"result": r})))
                },
            )
            .unwrap(),
        )
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let sink: Arc<dyn Outbound> = Arc::new(Discard);
    let session = server.new_session(sink.clone());
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}"#;
    assert!(matches!(
        server.handle(&session, server.read(init), &sink),
        Handled::Reply(_)
    ));
    let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#;
    c.bench_function("dispatch tools/call add (legacy)", |b| {
        b.iter(
            || match server.handle(&session, server.read(black_box(line)), &sink) {
                Handled::Reply(r) => r,
                _ => unreachable!("add answers at once"),
            },
        )
    });
    let modern = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    c.bench_function("dispatch tools/call add (modern)", |b| {
        b.iter(
            || match server.handle(&session, server.read(black_box(modern)), &sink) {
                Handled::Reply(r) => r,
                _ => unreachable!("add answers at once"),
            },
        )
    });
    let list = br#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;
    c.bench_function("dispatch tools/list (cached page)", |b| {
        b.iter(|| server.handle(&session, server.read(black_box(list)), &sink))
    });
}

criterion_group!(benches, validation, dispatch);
criterion_main!(benches);
