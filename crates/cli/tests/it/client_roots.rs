//! A client's roots and `search_files`, in both eras where a client has roots (legacy:
//! `roots/list` requests on the connection; modern: `input_required` round trips). A list
//! with roots narrows the server's `--root`s; an empty list leaves them as they are, as the
//! reference filesystem server does (the Inspector answers `roots/list` with `[]`).

use crate::search_files::Tree;
use crate::util::{Server, modern_meta};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// The line the server logs (once) when a client lists no roots.
const EMPTY_NOTE: &str = "the client declared roots but listed none";

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// A server on `t.root` with info logs kept, after the legacy handshake at `version` with a
/// client that declares roots.
fn legacy_with_roots(t: &Tree, version: &str) -> Server {
    let mut s = Server::start_logged_with_env(
        &["--root", t.root.to_str().unwrap()],
        &[("TOOLWRIGHT_LOG", Path::new("info"))],
    );
    let init = json!({"protocolVersion": version, "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "t", "version": "0"}});
    assert_eq!(
        s.request("initialize", init)["result"]["protocolVersion"],
        version
    );
    s.notify("notifications/initialized", json!({}));
    s
}

/// A legacy `search_files` call; a `roots/list` from the server is answered with `roots`
/// when `answer` is given, and fails the test when it is not.
fn legacy_call(s: &mut Server, args: Value, answer: Option<&Value>) -> Value {
    let id = s.next_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "search_files", "arguments": args}}));
    loop {
        let m = s.recv();
        if m["method"] == "roots/list" {
            let roots = answer.unwrap_or_else(|| panic!("roots are asked once, then cached: {m}"));
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {"roots": roots}}));
            continue;
        }
        if m.get("id") == Some(&json!(id)) {
            return m["result"].clone();
        }
        panic!("unexpected message {m}");
    }
}

fn matches(r: &Value) -> Value {
    assert_ne!(r["isError"], json!(true), "{r}");
    r["structuredContent"]["matches"].clone()
}

/// How many stderr lines (from now, until quiet) carry the empty-roots note.
fn notes(s: &mut Server) -> usize {
    s.stderr_drain(Duration::from_millis(300))
        .iter()
        .filter(|l| l.contains(EMPTY_NOTE))
        .count()
}

#[test]
fn legacy_client_roots_narrow_the_server_roots() {
    let t = Tree::new(&["allowed/a.py", "other/b.py", "top.py"]);
    let mut s = legacy_with_roots(&t, "2025-06-18");
    let allowed = t.root.join("allowed");
    let roots = json!([{"uri": uri(&allowed), "name": "allowed"},
                       {"uri": uri(&t.outside), "name": "not the server's"}]);
    // The server root itself is outside the client's roots now.
    let r = legacy_call(
        &mut s,
        json!({"directory": t.root, "pattern": "*.py"}),
        Some(&roots),
    );
    assert_eq!(r["isError"], true, "{r}");
    // A relative path starts from the first allowed root: the client's `allowed`.
    let r = legacy_call(&mut s, json!({"directory": ".", "pattern": "*.py"}), None);
    assert_eq!(matches(&r), json!(["a.py"]), "{r}");
    assert_eq!(r["structuredContent"]["directory"], json!(allowed));
    let r = legacy_call(
        &mut s,
        json!({"directory": t.root.join("other"), "pattern": "*.py"}),
        None,
    );
    assert_eq!(r["isError"], true, "{r}");
    // The client's other root is not the server's: still refused.
    let r = legacy_call(
        &mut s,
        json!({"directory": t.outside, "pattern": "*"}),
        None,
    );
    assert_eq!(r["isError"], true, "{r}");
    // After roots/list_changed the server asks again.
    s.notify("notifications/roots/list_changed", json!({}));
    let r = legacy_call(
        &mut s,
        json!({"directory": allowed, "pattern": "*.py"}),
        Some(&roots),
    );
    assert_eq!(matches(&r), json!(["a.py"]), "{r}");
    assert_eq!(notes(&mut s), 0, "a list with roots is not noted");
}

#[test]
fn an_empty_legacy_list_keeps_the_server_roots() {
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let t = Tree::new(&["sub/a.py", "top.py"]);
        let mut s = legacy_with_roots(&t, version);
        let empty = json!([]);
        let all = json!(["sub/a.py", "top.py"]);
        let r = legacy_call(
            &mut s,
            json!({"directory": ".", "pattern": "**/*.py"}),
            Some(&empty),
        );
        let text = &r["content"][0]["text"];
        let found = match version {
            // No structuredContent before 2025-06-18: the same JSON as text.
            "2024-11-05" => {
                serde_json::from_str::<Value>(text.as_str().unwrap()).unwrap()["matches"].clone()
            }
            _ => matches(&r),
        };
        assert_eq!(found, all, "{version}: {r}");
        // Cached like any answer; the server's roots still hold, by absolute path too.
        let r = legacy_call(
            &mut s,
            json!({"directory": t.root.join("sub"), "pattern": "*.py"}),
            None,
        );
        assert_ne!(r["isError"], json!(true), "{version}: {r}");
        // Outside the server's roots is still outside.
        let r = legacy_call(
            &mut s,
            json!({"directory": t.outside, "pattern": "*"}),
            None,
        );
        assert_eq!(r["isError"], true, "{version}: {r}");
        // Asked again after a change, still empty: logged once all the same.
        s.notify("notifications/roots/list_changed", json!({}));
        let r = legacy_call(
            &mut s,
            json!({"directory": ".", "pattern": "**/*.py"}),
            Some(&empty),
        );
        assert_ne!(r["isError"], json!(true), "{version}: {r}");
        assert_eq!(notes(&mut s), 1, "{version}: logged once");
    }
}

/// A modern `search_files` call whose client declares roots: the first round asks for
/// them (`input_required`); the retry carries `roots` as the answer.
fn modern_call(s: &mut Server, args: &Value, roots: &Value) -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
    let params = json!({"name": "search_files", "arguments": args, "_meta": meta});
    let first = s.request("tools/call", params.clone());
    let res = &first["result"];
    assert_eq!(res["resultType"], "input_required", "{first}");
    let (key, asked) = res["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(asked["method"], "roots/list", "{first}");
    let mut retry = params;
    retry["inputResponses"] = json!({key.as_str(): {"roots": roots}});
    if let Some(state) = res.get("requestState") {
        retry["requestState"] = state.clone();
    }
    let r = s.request("tools/call", retry);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    r["result"].clone()
}

#[test]
fn modern_client_roots_narrow_unless_empty() {
    let t = Tree::new(&["sub/a.py", "top.py"]);
    let mut s = Server::start_logged_with_env(
        &["--root", t.root.to_str().unwrap()],
        &[("TOOLWRIGHT_LOG", Path::new("info"))],
    );
    let everything = json!({"directory": ".", "pattern": "**/*.py"});
    let sub = json!([{"uri": uri(&t.root.join("sub")), "name": "sub"}]);
    assert_eq!(
        matches(&modern_call(&mut s, &everything, &sub)),
        json!(["a.py"])
    );
    assert_eq!(notes(&mut s), 0, "a list with roots is not noted");
    for _ in 0..2 {
        let r = modern_call(&mut s, &everything, &json!([]));
        assert_eq!(matches(&r), json!(["sub/a.py", "top.py"]), "{r}");
    }
    assert_eq!(notes(&mut s), 1, "logged once");
    // A list naming only directories the server does not serve still leaves nothing.
    let elsewhere = json!([{"uri": uri(&t.outside), "name": "elsewhere"}]);
    let r = modern_call(&mut s, &everything, &elsewhere);
    assert_eq!(r["isError"], true, "{r}");
}
