//! The bodies of toolwright's fuzz targets, as plain functions over bytes.
//!
//! `fuzz/` (a cargo-fuzz workspace, nightly only) wraps each function here in a libFuzzer
//! target; `tests/replay.rs` runs every input of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` through the same function on the stable toolchain, so
//! `cargo test` keeps every crash ever found fixed. Each function panics when a property
//! fails; the fuzzer turns a panic (on any thread) into a crash.
//!
//! - [`envelope`]: the JSON-RPC envelope reader, `parse_call`, [`readable_id`] and the line
//!   decoder fed in chunks.
//! - [`dispatch`]: lines through `Server::read` and `Server::handle` on one session, with
//!   the built-in `add`, `multiply` and `search_files`: era resolution from `_meta` and
//!   the handshake, every method, tool argument validation.
//! - [`http`]: raw bytes to a real Streamable HTTP listener on loopback (request line,
//!   headers, `Host`/`Origin`/`Accept` checks, chunked and sized bodies).
//! - [`schema`]: schema compilation and validation of an instance.
//! - [`search_pattern`]: `search_files` patterns and options over a small tree.
//! - [`toolfile`]: one tool file (YAML, JSON or TOML, the first byte says) parsed and put
//!   through the loader's checks: problems placed inside the text, parsing deterministic.
//! - [`template`]: templates parsed and filled with arbitrary values and environment.
//! - [`openapi`]: bytes read as an OpenAPI description (JSON or YAML) and imported with no
//!   loader for other documents: never a panic, and the written file reads back with the
//!   tools the import made.
//! - [`config_merge`]: two or three files of mixed formats checked as one set: every problem
//!   placed in the file it names, the outcome the same in either order.
//! - [`sql`]: the `sql` action's statement checks and parameter binding: a statement that
//!   compiles as a read-only tool leaves a real SQLite file unchanged, bound values come
//!   back exactly and never match as SQL, PostgreSQL's value codec never panics.
//!
//! [`readable_id`]: toolwright_jsonrpc::readable_id

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use toolwright_jsonrpc::{Incoming, Limits, LineDecoder, Message, Parsed, parse, parse_call};
use toolwright_protocol::Implementation;
use toolwright_protocol::params::CallToolParams;
use toolwright_server::{Config, Handled, Server, Tool, ToolContext};
use toolwright_tools::arith::{Add, Multiply};
use toolwright_tools::search_files::SearchFiles;

mod files;
mod openapi;
mod sql;
pub use files::{config_merge, template, toolfile};
pub use openapi::openapi;
pub use sql::sql;

/// The envelope reader, the id recovery and the line decoder.
pub fn envelope(data: &[u8]) {
    let limits = Limits {
        max_bytes: 1 << 16,
        max_depth: 64,
    };
    let parsed = parse(data, &limits);
    let recovered = toolwright_jsonrpc::readable_id(data);
    // A well-formed request's id is exactly what the recovery reads.
    if let Parsed::Single(Message::Request(r)) = &parsed {
        assert_eq!(
            recovered.as_ref(),
            Some(&r.id),
            "recovery disagrees with the parser"
        );
    }
    if let Parsed::Invalid(e) = &parsed {
        assert_eq!(
            e.id, recovered,
            "a whole-input error must carry the readable id"
        );
    }
    // The one-pass reader agrees with the general one.
    match parse_call::<CallToolParams>(data, &limits, "tools/call") {
        Incoming::Call(id, _) => match &parsed {
            Parsed::Single(Message::Request(r)) => {
                assert_eq!(r.id, id);
                assert_eq!(r.method, "tools/call");
            }
            other => panic!("parse_call read a call that parse reads as {other:?}"),
        },
        Incoming::Other(_) => {}
    }
    // Every error reply is one line of valid JSON.
    if let Parsed::Invalid(e) = &parsed {
        let mut line = Vec::new();
        toolwright_jsonrpc::write_error(&mut line, e.id.as_ref(), &e.error);
        let v: Value = serde_json::from_slice(&line).expect("an error reply is JSON");
        assert!(v.is_object());
    }
    // The decoder, fed in chunks whose size the first byte picks.
    let chunk = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let max_line = 256;
    let mut decoder = LineDecoder::new(max_line);
    let check = |line: &[u8]| {
        assert!(line.len() <= max_line, "a line over the limit was yielded");
        assert!(!line.contains(&b'\n'), "a yielded line holds a newline");
    };
    for piece in data.chunks(chunk) {
        decoder.push(piece);
        while let Some(line) = decoder.next_line() {
            if let Ok(line) = line {
                check(line.as_bytes());
            }
        }
        assert!(decoder.buffered() <= max_line + chunk);
    }
    while let Some(line) = decoder.finish() {
        if let Ok(line) = line {
            check(line.as_bytes());
        }
    }
}

/// The tree every search runs in: a few files, a hidden one, a nested directory, an ignore
/// file and a link that leaves it.
fn tree() -> &'static PathBuf {
    static TREE: OnceLock<PathBuf> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("toolwright-fuzz-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, body) in [
            ("a.txt", "a"),
            ("b.rs", "b"),
            (".hidden", "h"),
            ("sub/c.txt", "c"),
            ("sub/deeper/d.py", "d"),
            ("sub/.gitignore", "*.py\n"),
            ("Ünïcode name.md", "u"),
        ] {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, body).unwrap();
        }
        let _ = std::os::unix::fs::symlink("/etc", dir.join("out"));
        dir.canonicalize().unwrap()
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fn server() -> Server {
    let config = Config {
        roots: vec![tree().clone()],
        call_timeout: Duration::from_secs(2),
        shutdown_grace: Duration::from_millis(100),
        ..Config::default()
    };
    let server = Server::new(Implementation::new("toolwright-fuzz", "0"), config);
    let tools: [Arc<dyn Tool>; 3] = [
        Arc::new(Add::default()),
        Arc::new(Multiply::default()),
        Arc::new(SearchFiles::default()),
    ];
    for tool in tools {
        server
            .register_arc(tool)
            .expect("the built-in tools register");
    }
    server
}

/// Checks that a reply is one JSON object for the request it answers.
fn check_reply(line: &[u8], id: Option<&toolwright_jsonrpc::RequestId>) {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    assert!(!text.contains(&b'\n'), "a reply spans lines");
    let v: Value = serde_json::from_slice(text).expect("a reply is JSON");
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    if let Some(id) = id {
        assert_eq!(
            v["id"],
            serde_json::to_value(id).unwrap(),
            "reply to another id: {v}"
        );
    }
}

/// Lines through the server's one entry point, on one session.
pub fn dispatch(data: &[u8]) {
    static SERVER: OnceLock<Server> = OnceLock::new();
    let server = SERVER.get_or_init(server);
    let sink: Arc<dyn toolwright_server::Outbound> = Arc::new(toolwright_server::Discard);
    let session = server.new_session(sink.clone());
    let _enter = runtime().enter();
    for line in data.split(|&b| b == b'\n').take(16) {
        let inbound = server.read(line);
        let id = inbound.id().cloned();
        match server.handle(&session, inbound, &sink) {
            Handled::Nothing => {}
            Handled::Reply(reply) => check_reply(reply.line(), id.as_ref()),
            Handled::Later(fut) => {
                let answer = runtime().block_on(async {
                    tokio::time::timeout(Duration::from_millis(300), fut).await
                });
                if let Ok(Some(reply)) = answer {
                    check_reply(reply.line(), id.as_ref());
                }
            }
        }
    }
    session.shutdown();
    session.close();
}

fn http_addr() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let config = toolwright_http::HttpConfig {
            addr: "127.0.0.1:0".into(),
            ..Default::default()
        };
        let http = runtime()
            .block_on(toolwright_http::HttpServer::bind(server(), config))
            .expect("the listener binds");
        let addr = http.local_addr();
        runtime().spawn(http.run_until(std::future::pending()));
        addr
    })
}

/// Raw bytes to a real listener; the answer, if any, must be HTTP/1.1.
pub fn http(data: &[u8]) {
    let addr = http_addr();
    let mut conn = TcpStream::connect(addr).expect("the listener accepts");
    conn.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = conn.write_all(data);
    let _ = conn.shutdown(Shutdown::Write);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    // An HTTP/1.0 request is answered in HTTP/1.0.
    if !answer.is_empty() {
        assert!(
            answer.starts_with(b"HTTP/1.1 ") || answer.starts_with(b"HTTP/1.0 "),
            "not an HTTP answer: {answer:?}"
        );
    }
    // Whatever the input did, the listener still serves the next client.
    let mut probe = TcpStream::connect(addr).expect("the listener still accepts");
    probe
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    probe
        .write_all(b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 12];
    probe
        .read_exact(&mut head)
        .expect("the listener still answers");
    assert!(head.starts_with(b"HTTP/1.1 "));
}

/// A schema and an instance, one JSON text each, separated by the first newline.
pub fn schema(data: &[u8]) {
    let (schema, instance) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"null"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(instance) = serde_json::from_slice::<Value>(instance) else {
        return;
    };
    let _ = toolwright_schema::root_type_is_object(&schema);
    let Ok(validator) = toolwright_schema::Validator::compile(&schema) else {
        return;
    };
    let verdict = validator.validate(&instance);
    assert_eq!(
        validator.is_valid(&instance),
        verdict.is_ok(),
        "is_valid and validate disagree"
    );
    if let Err(violations) = verdict {
        assert!(!violations.is_empty());
        let _ = toolwright_schema::format_violations(&violations);
    }
}

/// A pattern (after one byte of option flags) searched for in a small tree.
pub fn search_pattern(data: &[u8]) {
    let Some((&flags, pattern)) = data.split_first() else {
        return;
    };
    let pattern = String::from_utf8_lossy(pattern);
    let kind = ["any", "file", "directory"][usize::from(flags >> 6) % 3];
    let args = json!({
        "directory": if flags & 32 != 0 { "sub" } else { "." },
        "pattern": pattern,
        "recursive": flags & 1 != 0,
        "include_hidden": flags & 2 != 0,
        "respect_gitignore": flags & 4 != 0,
        "follow_symlinks": flags & 8 != 0,
        "case_sensitive": flags & 16 != 0,
        "max_results": 1 + usize::from(flags % 7),
        "type": kind,
    });
    let root = tree().clone();
    let ctx = ToolContext::detached(vec![root.clone()], None);
    let tool = SearchFiles::default();
    let outcome = runtime().block_on(tool.call(args, ctx));
    if let Ok(result) = outcome {
        let text = serde_json::to_string(&result.structured_content).unwrap();
        assert!(!text.contains("/etc/"), "a result left the root: {text}");
    }
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target, by the name `fuzz/` and the corpus folders use.
pub const TARGETS: &[(&str, Target)] = &[
    ("envelope", envelope),
    ("dispatch", dispatch),
    ("http", http),
    ("schema", schema),
    ("search_pattern", search_pattern),
    ("toolfile", toolfile),
    ("template", template),
    ("config_merge", config_merge),
    ("sql", sql),
    ("openapi", openapi),
];
