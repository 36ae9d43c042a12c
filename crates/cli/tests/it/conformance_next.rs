//! The official conformance suite's 2026-07-28 line (`@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12, pinned in tests/conformance-next) against the real binary: every server
//! scenario against `toolwright serve --http --fixtures conformance` (a server of its own
//! per scenario, since some scenarios change the tool and prompt lists), and every client
//! scenario through `tests/conformance/client.sh` (`auth/*` through `auth-client.sh`).
//! Each scenario is a test; it fails on any FAILURE or WARNING check, and on a run that
//! checked nothing. The lists below must equal `conformance list`, so a scenario the suite
//! adds cannot be left out unnoticed.
//!
//! Under `CI` the tests always run; elsewhere they are skipped, with a message, when the
//! suite is not installed (`npm install --prefix tests/conformance-next`).

use crate::http_client::HttpServer;
use crate::util::repo_root;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The scenarios the suite runs but checks nothing in, with why: their runs must stay
/// all-SKIPPED (so the day the suite starts checking them, the test says so). The README's
/// conformance section lists the same.
const SUITE_SKIPS: &[(&str, &str)] = &[(
    "tasks-status-notifications",
    "alpha.12 skips it itself: its harness still watches the tools/call stream, where \
     SEP-2663 no longer sends notifications/tasks",
)];

fn suite_bin() -> Option<PathBuf> {
    let bin = repo_root().join("tests/conformance-next/node_modules/.bin");
    let node22 = Command::new(bin.join("node"))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"v22."));
    if node22 && bin.join("conformance").exists() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the conformance suite (tests/conformance-next) is not installed"
    );
    None
}

/// `conformance` from the pinned suite, with its Node 22 first on PATH.
fn suite(bin: &Path) -> Command {
    let mut cmd = Command::new(bin.join("conformance"));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path);
    cmd
}

/// Every check the run wrote under `dir`: `<scenario>-<time>/checks.json`, a level deeper
/// for `auth/<name>`.
fn checks(dir: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(checks(&path));
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&path).expect("read checks.json");
            let parsed: Vec<Value> = serde_json::from_str(&text).expect("checks.json is JSON");
            all.extend(parsed);
        }
    }
    all
}

/// Fails unless the checks pass: none FAILURE or WARNING, at least one SUCCESS (or, for a
/// scenario in [`SUITE_SKIPS`], nothing but SKIPPED).
fn judge(scenario: &str, checks: &[Value], log: &str) {
    let status = |c: &Value| c["status"].as_str().unwrap_or("").to_owned();
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| matches!(status(c).as_str(), "FAILURE" | "WARNING"))
        .map(|c| {
            format!(
                "  {} {}: {}",
                status(c),
                c["id"].as_str().unwrap_or("?"),
                c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or("")
            )
        })
        .collect();
    assert!(bad.is_empty(), "{scenario}:\n{}\n{log}", bad.join("\n"));
    let passed = checks.iter().filter(|c| status(c) == "SUCCESS").count();
    if SUITE_SKIPS.iter().any(|(s, _)| *s == scenario) {
        assert!(
            passed == 0 && checks.iter().all(|c| status(c) == "SKIPPED"),
            "{scenario} is listed as skipped by the suite, but it checked something now: \
             take it off SUITE_SKIPS and the README\n{log}"
        );
        return;
    }
    assert!(passed > 0, "{scenario} checked nothing\n{log}");
}

fn output_log(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn server_scenario(scenario: &str) {
    let Some(bin) = suite_bin() else {
        eprintln!("SKIPPED {scenario}: tests/conformance-next is not installed");
        return;
    };
    let served = HttpServer::start_with_fixtures("conformance", &[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = suite(&bin)
        .args([
            "server",
            "--url",
            &served.url(),
            "--scenario",
            scenario,
            "-o",
        ])
        .arg(dir.path())
        .current_dir(dir.path())
        .output()
        .expect("run the conformance suite");
    judge(scenario, &checks(dir.path()), &output_log(&out));
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{scenario} took {:?}",
        started.elapsed()
    );
}

fn client_scenario(scenario: &str) {
    let Some(bin) = suite_bin() else {
        eprintln!("SKIPPED {scenario}: tests/conformance-next is not installed");
        return;
    };
    let driver = if scenario.starts_with("auth/") {
        "tests/conformance/auth-client.sh"
    } else {
        "tests/conformance/client.sh"
    };
    let dir = tempfile::tempdir().unwrap();
    let out = suite(&bin)
        .args(["client", "--scenario", scenario, "--command"])
        .arg(repo_root().join(driver))
        .arg("-o")
        .arg(dir.path())
        .current_dir(dir.path())
        .env("TOOLWRIGHT", env!("CARGO_BIN_EXE_toolwright"))
        .env("TOOLWRIGHT_BIN", env!("CARGO_BIN_EXE_toolwright"))
        .output()
        .expect("run the conformance suite");
    judge(scenario, &checks(dir.path()), &output_log(&out));
}

macro_rules! scenarios {
    ($run:ident, $list:ident; $($test:ident => $name:literal,)*) => {
        const $list: &[&str] = &[$($name),*];
        $(
            #[test]
            fn $test() {
                $run($name);
            }
        )*
    };
}

mod server {
    use super::server_scenario;
    scenarios! { server_scenario, SERVER;
    server_initialize => "server-initialize",
    server_session_lifecycle => "server-session-lifecycle",
    server_stateless => "server-stateless",
    logging_set_level => "logging-set-level",
    ping => "ping",
    completion_complete => "completion-complete",
    tools_list => "tools-list",
    tools_call_simple_text => "tools-call-simple-text",
    tools_call_image => "tools-call-image",
    tools_call_audio => "tools-call-audio",
    tools_call_embedded_resource => "tools-call-embedded-resource",
    tools_call_mixed_content => "tools-call-mixed-content",
    tools_call_with_logging => "tools-call-with-logging",
    tools_call_error => "tools-call-error",
    tools_call_with_progress => "tools-call-with-progress",
    tools_call_sampling => "tools-call-sampling",
    tools_call_elicitation => "tools-call-elicitation",
    json_schema_2020_12 => "json-schema-2020-12",
    elicitation_sep1034_defaults => "elicitation-sep1034-defaults",
    server_sse_polling => "server-sse-polling",
    server_sse_multiple_streams => "server-sse-multiple-streams",
    elicitation_sep1330_enums => "elicitation-sep1330-enums",
    resources_list => "resources-list",
    resources_read_text => "resources-read-text",
    resources_read_binary => "resources-read-binary",
    resources_templates_read => "resources-templates-read",
    resources_subscribe => "resources-subscribe",
    resources_unsubscribe => "resources-unsubscribe",
    sep_2164_resource_not_found => "sep-2164-resource-not-found",
    sep_2640_skills_directory => "sep-2640-skills-directory",
    sep_2640_skills_enumeration => "sep-2640-skills-enumeration",
    sep_2640_skills_manifest => "sep-2640-skills-manifest",
    prompts_list => "prompts-list",
    prompts_get_simple => "prompts-get-simple",
    prompts_get_with_args => "prompts-get-with-args",
    prompts_get_embedded_resource => "prompts-get-embedded-resource",
    prompts_get_with_image => "prompts-get-with-image",
    dns_rebinding_protection => "dns-rebinding-protection",
    caching => "caching",
    http_header_validation => "http-header-validation",
    http_custom_header_server_validation => "http-custom-header-server-validation",
    tasks_lifecycle => "tasks-lifecycle",
    tasks_capability_negotiation => "tasks-capability-negotiation",
    tasks_wire_fields => "tasks-wire-fields",
    tasks_request_state_removal => "tasks-request-state-removal",
    tasks_mrtr_input => "tasks-mrtr-input",
    tasks_request_headers => "tasks-request-headers",
    tasks_dispatch_and_envelope => "tasks-dispatch-and-envelope",
    tasks_status_notifications => "tasks-status-notifications",
    tasks_required_task_error => "tasks-required-task-error",
    tasks_mrtr_composition => "tasks-mrtr-composition",
    input_required_result_basic_elicitation => "input-required-result-basic-elicitation",
    input_required_result_basic_sampling => "input-required-result-basic-sampling",
    input_required_result_basic_list_roots => "input-required-result-basic-list-roots",
    input_required_result_request_state => "input-required-result-request-state",
    input_required_result_multiple_input_requests => "input-required-result-multiple-input-requests",
    input_required_result_multi_round => "input-required-result-multi-round",
    input_required_result_missing_input_response => "input-required-result-missing-input-response",
    input_required_result_non_tool_request => "input-required-result-non-tool-request",
    input_required_result_result_type => "input-required-result-result-type",
    input_required_result_unsupported_methods => "input-required-result-unsupported-methods",
    input_required_result_tampered_state => "input-required-result-tampered-state",
    input_required_result_capability_check => "input-required-result-capability-check",
    input_required_result_ignore_extra_params => "input-required-result-ignore-extra-params",
    input_required_result_validate_input => "input-required-result-validate-input",
    }

    #[test]
    fn the_list_is_the_suites() {
        super::lists_match("Server scenarios", SERVER);
    }
}

mod client {
    use super::client_scenario;
    scenarios! { client_scenario, CLIENT;
    initialize => "initialize",
    tools_call => "tools_call",
    elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults",
    sse_retry => "sse-retry",
    request_metadata => "request-metadata",
    auth_metadata_default => "auth/metadata-default",
    auth_metadata_var1 => "auth/metadata-var1",
    auth_metadata_var2 => "auth/metadata-var2",
    auth_metadata_var3 => "auth/metadata-var3",
    auth_basic_cimd => "auth/basic-cimd",
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate",
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported",
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined",
    auth_scope_step_up => "auth/scope-step-up",
    auth_scope_retry_limit => "auth/scope-retry-limit",
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic",
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post",
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none",
    auth_pre_registration => "auth/pre-registration",
    auth_2025_03_26_oauth_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat",
    auth_2025_03_26_oauth_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback",
    auth_resource_mismatch => "auth/resource-mismatch",
    auth_offline_access_scope => "auth/offline-access-scope",
    auth_offline_access_not_supported => "auth/offline-access-not-supported",
    auth_authorization_server_migration => "auth/authorization-server-migration",
    auth_iss_supported => "auth/iss-supported",
    auth_iss_not_advertised => "auth/iss-not-advertised",
    auth_iss_supported_missing => "auth/iss-supported-missing",
    auth_iss_wrong_issuer => "auth/iss-wrong-issuer",
    auth_iss_unexpected => "auth/iss-unexpected",
    auth_iss_normalized => "auth/iss-normalized",
    auth_metadata_issuer_mismatch => "auth/metadata-issuer-mismatch",
    auth_client_credentials_jwt => "auth/client-credentials-jwt",
    auth_client_credentials_basic => "auth/client-credentials-basic",
    auth_enterprise_managed_authorization => "auth/enterprise-managed-authorization",
    auth_dpop => "auth/dpop",
    auth_dpop_nonce => "auth/dpop-nonce",
    auth_wif_jwt_bearer => "auth/wif-jwt-bearer",
    sep_2322_client_request_state => "sep-2322-client-request-state",
    http_standard_headers => "http-standard-headers",
    http_custom_headers => "http-custom-headers",
    http_invalid_tool_headers => "http-invalid-tool-headers",
    json_schema_ref_no_deref => "json-schema-ref-no-deref",
    json_schema_2020_12_preservation => "json-schema-2020-12-preservation",
    sep_2640_client_no_prefetch => "sep-2640-client-no-prefetch",
    sep_2640_client_verify_digest => "sep-2640-client-verify-digest",
    sep_2640_client_verify_size => "sep-2640-client-verify-size",
    sep_2640_client_verify_frontmatter => "sep-2640-client-verify-frontmatter",
    }

    #[test]
    fn the_list_is_the_suites() {
        super::lists_match("Client scenarios", CLIENT);
    }
}

/// Fails unless `conformance list`'s section `heading` names exactly `ours`.
fn lists_match(heading: &str, ours: &[&str]) {
    let Some(bin) = suite_bin() else {
        return;
    };
    let out = suite(&bin).arg("list").output().expect("conformance list");
    let text = String::from_utf8_lossy(&out.stdout);
    let theirs: Vec<&str> = text
        .split(heading)
        .nth(1)
        .expect("the section is listed")
        .lines()
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(theirs, ours, "the suite's {heading} changed");
}
