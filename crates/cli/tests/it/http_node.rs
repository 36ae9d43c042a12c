//! The official TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/node/package-lock.json`) connects over Streamable HTTP, lists tools and calls one.
//!
//! It needs `tests/node/node_modules` (`npm ci --prefix tests/node`). Under `CI` the test
//! installs it itself and must run; elsewhere it is skipped, with a message, when the
//! modules are missing.

use crate::http_client::HttpServer;
use crate::util::repo_root;
use serde_json::Value;
use std::process::Command;

pub(crate) fn node_project() -> Option<std::path::PathBuf> {
    let dir = repo_root().join("tests/node");
    let installed = dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists();
    if installed {
        return Some(dir);
    }
    if std::env::var_os("CI").is_none() {
        eprintln!(
            "SKIPPED ts_sdk_client: tests/node/node_modules is missing; run `npm ci --prefix tests/node`"
        );
        return None;
    }
    let st = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .status()
        .expect("CI is set: npm must be available to install tests/node");
    assert!(st.success(), "npm ci --prefix tests/node failed");
    Some(dir)
}

#[test]
fn ts_sdk_client_lists_and_calls_tools() {
    let Some(dir) = node_project() else { return };
    let s = HttpServer::start(&[]);
    let out = Command::new("node")
        .arg(dir.join("sdk_client.mjs"))
        .arg(s.url())
        .current_dir(&dir)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {}\nstderr: {}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["protocolVersion"], "2025-11-25", "{v}");
    assert_eq!(v["sessionId"].as_str().map(str::len), Some(32), "{v}");
    assert_eq!(v["server"]["name"], "toolwright");
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"add") && tools.contains(&"multiply"),
        "{tools:?}"
    );
    assert_eq!(v["result"]["structuredContent"]["result"], 5, "{v}");
    assert_eq!(v["result"]["content"][0]["type"], "text");
    assert_eq!(
        v["errors"],
        serde_json::json!([]),
        "the client reported errors: {v}"
    );
}
