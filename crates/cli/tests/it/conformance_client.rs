//! The official conformance CLIENT suite (`@modelcontextprotocol/conformance`, pinned in
//! tests/conformance) against the real binary, through `tests/conformance/client.sh`: one
//! run per scenario, so a failure names its scenario. A run must check something (the
//! suite calls a run that exercises nothing "0/0 PASSED") and fail nothing.
//!
//! Like `conformance.rs`, it needs `tests/conformance/node_modules`: under `CI` it always
//! runs; elsewhere it is skipped, with a message, when the suite is not installed.

use crate::util::repo_root;
use std::process::Command;

/// The scenarios the client passes. Adding one (an `auth/*` scenario once the driver maps
/// it) is one entry here.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
];

fn suite_bin() -> Option<std::path::PathBuf> {
    crate::conformance::suite_installed()
        .then(|| repo_root().join("tests/conformance/node_modules/.bin"))
}

/// `Passed: N/M, K failed` from the suite's output, as (N, M, K).
fn counts(out: &str) -> Option<(u32, u32, u32)> {
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Passed: "))?;
    let (ratio, rest) = line.split_once(',')?;
    let (n, m) = ratio.split_once('/')?;
    let k = rest.trim().split_once(' ')?.0;
    Some((n.parse().ok()?, m.parse().ok()?, k.parse().ok()?))
}

fn run(scenario: &str, bin: &std::path::Path) -> Result<(), String> {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let driver = repo_root().join("tests/conformance/client.sh");
    let out = Command::new(bin.join("conformance"))
        .args(["client", "--scenario", scenario, "--command"])
        .arg(&driver)
        .env("PATH", path)
        .env("TOOLWRIGHT", env!("CARGO_BIN_EXE_toolwright"))
        .output()
        .map_err(|e| format!("cannot run the suite: {e}"))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match counts(&text) {
        Some((n, m, 0)) if n == m && m > 0 && out.status.success() => Ok(()),
        _ => Err(format!("scenario {scenario} failed:\n{text}")),
    }
}

#[test]
fn the_passed_line_is_read() {
    assert_eq!(
        counts("x\nPassed: 1/1, 0 failed, 0 warnings\n"),
        Some((1, 1, 0))
    );
    assert_eq!(counts("Passed: 0/5, 5 failed, 0 warnings"), Some((0, 5, 5)));
    assert_eq!(counts("nothing"), None);
}

#[test]
fn official_client_suite_passes_each_scenario() {
    let Some(bin) = suite_bin() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the conformance suite is not installed"
        );
        eprintln!(
            "SKIPPED official_client_suite_passes_each_scenario: run \
             `npm install --prefix tests/conformance` once"
        );
        return;
    };
    let failures: Vec<String> = SCENARIOS
        .iter()
        .filter_map(|s| run(s, &bin).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
