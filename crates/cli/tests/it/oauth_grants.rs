//! The OAuth grant options (`--grant`, `--client-assertion-key`, `--id-token-env`, the
//! `--idp-*` options, `--assertion-file`): what each needs and where it applies is checked before any request
//! is made, with a usage error (exit 2) naming the option. The grants themselves are run
//! against the official suite's servers in `conformance_auth.rs`.

use crate::util::run_cli;

/// No server listens there: every case must fail before connecting.
const URL: &str = "http://127.0.0.1:9/mcp";

fn refused(args: &[&str], wanted: &str) {
    let mut all = vec!["list", "--url", URL, "--no-token-cache"];
    all.extend_from_slice(args);
    let out = run_cli(&all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(wanted), "{args:?}: wanted {wanted:?} in {err}");
    assert!(!err.contains("127.0.0.1:9"), "{args:?} connected: {err}");
}

#[test]
fn each_grant_says_what_it_needs() {
    refused(
        &["--grant", "client-credentials"],
        "--grant client-credentials needs --client-id",
    );
    refused(
        &["--grant", "client-credentials", "--client-id", "c"],
        "needs --client-secret-env or --client-assertion-key",
    );
    refused(
        &[
            "--grant",
            "cross-app",
            "--client-id",
            "c",
            "--idp-client-id",
            "i",
        ],
        "--grant cross-app needs --id-token-env",
    );
    refused(
        &[
            "--grant",
            "cross-app",
            "--id-token-env",
            "TW_TEST_UNSET_ID_TOKEN",
            "--idp-token-endpoint",
            "http://127.0.0.1:9/token",
            "--idp-client-id",
            "i",
        ],
        "--grant cross-app needs --client-id",
    );
    refused(
        &[
            "--grant",
            "cross-app",
            "--client-id",
            "c",
            "--id-token-env",
            "TW_TEST_UNSET_ID_TOKEN",
            "--idp-token-endpoint",
            "http://127.0.0.1:9/token",
            "--idp-client-id",
            "i",
        ],
        "--id-token-env: the variable TW_TEST_UNSET_ID_TOKEN is not set",
    );
}

#[test]
fn cross_app_options_apply_only_to_that_grant() {
    refused(
        &["--idp-token-endpoint", "http://127.0.0.1:9/token"],
        "--idp-token-endpoint applies only with --grant cross-app",
    );
    refused(
        &["--grant", "client-credentials", "--id-token-env", "X"],
        "--id-token-env applies only with --grant cross-app",
    );
}

#[test]
fn a_client_key_that_cannot_sign_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a key\n").unwrap();
    let sec1 = dir.path().join("sec1.pem");
    std::fs::write(
        &sec1,
        "-----BEGIN EC PRIVATE KEY-----\nMAMCAQA=\n-----END EC PRIVATE KEY-----\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.pem");
    for (path, wanted) in [
        (&junk, "is not a PEM document"),
        (&sec1, "not a PKCS#8"),
        (&missing, "cannot read"),
    ] {
        let p = path.to_str().unwrap();
        refused(
            &[
                "--grant",
                "client-credentials",
                "--client-id",
                "c",
                "--client-assertion-key",
                p,
            ],
            wanted,
        );
        refused(&["--client-id", "c", "--client-assertion-key", p], p);
    }
}

#[test]
fn the_jwt_bearer_grant_needs_a_readable_nonempty_assertion_file_and_only_it_takes_one() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jwt");
    std::fs::write(&empty, "\n").unwrap();
    let missing = dir.path().join("missing.jwt");
    let (e, m) = (empty.to_str().unwrap(), missing.to_str().unwrap());
    refused(
        &["--grant", "jwt-bearer"],
        "--grant jwt-bearer needs --assertion-file",
    );
    refused(
        &["--grant", "jwt-bearer", "--assertion-file", e],
        "the file is empty",
    );
    refused(
        &["--grant", "jwt-bearer", "--assertion-file", m],
        "--assertion-file: cannot read",
    );
    refused(
        &["--assertion-file", e],
        "--assertion-file applies only with --grant jwt-bearer",
    );
    refused(
        &[
            "--grant",
            "client-credentials",
            "--client-id",
            "c",
            "--assertion-file",
            e,
        ],
        "--assertion-file applies only with --grant jwt-bearer",
    );
}
