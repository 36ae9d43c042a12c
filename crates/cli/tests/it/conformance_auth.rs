//! The official conformance suite's auth/* client scenarios, each run on its own against
//! the real binary (`tests/conformance/auth-client.sh` drives `toolwright list` and
//! `toolwright call`; the authorization URL is followed by `oauth-browser.sh`, a real HTTP
//! round trip to the loopback listener). Skipped with a message where the suite is not
//! installed, except under `CI`.

use crate::util::repo_root;
use std::process::Command;

use crate::conformance::suite_installed;

fn scenario(name: &str) {
    scenario_with(name, &[]);
}

fn scenario_with(name: &str, env: &[(&str, &str)]) {
    if !suite_installed() && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED auth/{name}: the conformance suite is not installed");
        return;
    }
    let root = repo_root();
    let bin = root.join("tests/conformance/node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(bin.join("conformance"))
        .args(["client", "--command"])
        .arg(root.join("tests/conformance/auth-client.sh"))
        .args(["--scenario", &format!("auth/{name}")])
        .env("PATH", path)
        .env("TOOLWRIGHT_BIN", env!("CARGO_BIN_EXE_toolwright"))
        .envs(env.iter().copied())
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed = text
        .lines()
        .find_map(|l| l.strip_prefix("Passed: "))
        .unwrap_or_else(|| panic!("no result line for auth/{name}:\n{text}"));
    let (count, rest) = passed.split_once('/').expect("Passed: N/M");
    let total: u32 = rest
        .split(',')
        .next()
        .and_then(|t| t.trim().parse().ok())
        .expect("a total");
    assert!(total > 0, "auth/{name} ran no check:\n{text}");
    assert_eq!(count.trim(), total.to_string(), "auth/{name}:\n{text}");
    assert!(
        passed.contains(" 0 failed, 0 warnings") && text.contains("OVERALL: PASSED"),
        "auth/{name}:\n{text}"
    );
    assert!(
        out.status.success(),
        "auth/{name} exited {}:\n{text}",
        out.status
    );
}

macro_rules! scenarios {
    ($($test:ident => $name:literal,)*) => {
        $(#[test]
        fn $test() {
            scenario($name);
        })*
    };
}

scenarios! {
    metadata_default => "metadata-default",
    metadata_var1 => "metadata-var1",
    metadata_var2 => "metadata-var2",
    metadata_var3 => "metadata-var3",
    basic_cimd => "basic-cimd",
    scope_from_www_authenticate => "scope-from-www-authenticate",
    scope_from_scopes_supported => "scope-from-scopes-supported",
    scope_omitted_when_undefined => "scope-omitted-when-undefined",
    scope_step_up => "scope-step-up",
    scope_retry_limit => "scope-retry-limit",
    token_endpoint_auth_basic => "token-endpoint-auth-basic",
    token_endpoint_auth_post => "token-endpoint-auth-post",
    token_endpoint_auth_none => "token-endpoint-auth-none",
    pre_registration => "pre-registration",
    backcompat_2025_03_26_oauth_metadata => "2025-03-26-oauth-metadata-backcompat",
    backcompat_2025_03_26_oauth_endpoint_fallback => "2025-03-26-oauth-endpoint-fallback",
    resource_mismatch => "resource-mismatch",
    offline_access_scope => "offline-access-scope",
    offline_access_not_supported => "offline-access-not-supported",
    client_credentials_basic => "client-credentials-basic",
    client_credentials_jwt => "client-credentials-jwt",
    cross_app_access_complete_flow => "cross-app-access-complete-flow",
}

/// A login slower than the request timeout: the browser waits 3 s before it follows the
/// authorization URL, while `--timeout` and `--probe-timeout` are 1 s. The time spent in
/// the login does not count against the request, which then gets its whole second.
#[test]
fn a_login_slower_than_the_request_timeout_completes() {
    scenario_with(
        "metadata-default",
        &[("BROWSER_DELAY", "3"), ("REQUEST_TIMEOUT", "1")],
    );
}
