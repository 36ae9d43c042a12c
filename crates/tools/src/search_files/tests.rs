//! In-process tests of the whole tool (the integration tests in crates/cli drive the binary).

use super::*;
use std::fs;
use std::path::Path;

fn run_in(roots: &[&Path], args: Value) -> Result<CallToolResult, ToolError> {
    let ctx = ToolContext::detached(roots.iter().map(|r| r.to_path_buf()).collect(), None);
    run_ctx(ctx, args)
}

fn run_ctx(ctx: ToolContext, args: Value) -> Result<CallToolResult, ToolError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    rt.block_on(SearchFiles::default().call(args, ctx))
}

fn ok(root: &Path, args: Value) -> Value {
    run_in(&[root], args).unwrap().structured_content.unwrap()
}

fn matches(root: &Path, args: Value) -> Vec<String> {
    serde_json::from_value(ok(root, args)["matches"].clone()).unwrap()
}

fn failure(root: &Path, args: Value) -> String {
    match run_in(&[root], args) {
        Err(ToolError::Failed(m)) => m,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn touch(root: &Path, rel: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, rel).unwrap();
}

/// A canonical temporary root with a small tree.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    for f in [
        "a.py",
        "b.txt",
        "src/lib.rs",
        "src/main.rs",
        "src/x/mod.rs",
        "docs/a.py",
        ".hidden.py",
        ".git/config",
    ] {
        touch(&root, f);
    }
    fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    touch(&root, "ignored/c.py");
    touch(&root, "debug.log");
    (tmp, root)
}

#[test]
fn name_pattern_top_level_and_recursive() {
    let (_t, root) = tree();
    assert_eq!(
        matches(&root, json!({"directory": ".", "pattern": "*.py"})),
        ["a.py"]
    );
    assert_eq!(
        matches(
            &root,
            json!({"directory": ".", "pattern": "*.py", "recursive": true})
        ),
        ["a.py", "docs/a.py"]
    );
    assert_eq!(
        matches(
            &root,
            json!({"directory": "src", "pattern": "*.rs", "recursive": true})
        ),
        ["lib.rs", "main.rs", "x/mod.rs"]
    );
}

#[test]
fn path_patterns_and_directories() {
    let (_t, root) = tree();
    assert_eq!(
        matches(&root, json!({"directory": ".", "pattern": "src/*.rs"})),
        ["src/lib.rs", "src/main.rs"]
    );
    assert_eq!(
        matches(&root, json!({"directory": ".", "pattern": "src/**/*.rs"})),
        ["src/lib.rs", "src/main.rs", "src/x/mod.rs"]
    );
    assert_eq!(
        matches(
            &root,
            json!({"directory": ".", "pattern": "x/*.rs", "recursive": true})
        ),
        ["src/x/mod.rs"]
    );
    assert_eq!(
        matches(
            &root,
            json!({"directory": ".", "pattern": "*", "type": "directory"})
        ),
        ["docs/", "src/"]
    );
    assert_eq!(
        matches(&root, json!({"directory": ".", "pattern": "s*/"})),
        ["src/"]
    );
    assert_eq!(
        matches(
            &root,
            json!({"directory": ".", "pattern": "*", "type": "file"})
        ),
        ["a.py", "b.txt"]
    );
}

#[test]
fn hidden_and_ignored_follow_the_options() {
    let (_t, root) = tree();
    let all = |extra: Value| {
        let mut args = json!({"directory": ".", "pattern": "*.py", "recursive": true});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        matches(&root, args)
    };
    assert_eq!(all(json!({})), ["a.py", "docs/a.py"]);
    assert_eq!(
        all(json!({"include_hidden": true})),
        [".hidden.py", "a.py", "docs/a.py"]
    );
    assert_eq!(
        all(json!({"respect_gitignore": false})),
        ["a.py", "docs/a.py", "ignored/c.py"]
    );
    assert_eq!(
        matches(&root, json!({"directory": ".", "pattern": "*.log"})),
        Vec::<String>::new()
    );
}

#[test]
fn ancestor_gitignore_applies_to_a_subdirectory() {
    let (_t, root) = tree();
    touch(&root, "docs/notes.log");
    touch(&root, "docs/notes.md");
    assert_eq!(
        matches(&root, json!({"directory": "docs", "pattern": "notes.*"})),
        ["notes.md"]
    );
    let all = matches(
        &root,
        json!({"directory": "docs", "pattern": "notes.*", "respect_gitignore": false}),
    );
    assert_eq!(all, ["notes.log", "notes.md"]);
}

#[test]
fn case_insensitive_option() {
    let (_t, root) = tree();
    assert!(matches(&root, json!({"directory": ".", "pattern": "*.PY"})).is_empty());
    assert_eq!(
        matches(
            &root,
            json!({"directory": ".", "pattern": "*.PY", "case_sensitive": false})
        ),
        ["a.py"]
    );
}

#[test]
fn truncation_keeps_the_first_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    for i in 0..300 {
        touch(&root, &format!("d{}/f{i:03}.txt", i % 7));
    }
    let full = ok(
        &root,
        json!({"directory": ".", "pattern": "*.txt", "recursive": true, "max_results": 1000}),
    );
    let full: Vec<String> = serde_json::from_value(full["matches"].clone()).unwrap();
    assert_eq!(full.len(), 300);
    let mut sorted = full.clone();
    sorted.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    assert_eq!(full, sorted);
    for n in [1usize, 10, 299] {
        let r = ok(
            &root,
            json!({"directory": ".", "pattern": "*.txt", "recursive": true, "max_results": n}),
        );
        assert_eq!(r["matches"], json!(full[..n]));
        assert_eq!(r["truncated"], json!(true));
        assert_eq!(r["matched"], json!(300));
    }
    let r = ok(
        &root,
        json!({"directory": ".", "pattern": "*.txt", "recursive": true, "max_results": 300}),
    );
    assert_eq!(r["truncated"], json!(false));
    assert_eq!(r["scanned"], json!(307));
}

#[test]
fn links_out_are_never_reported_nor_followed() {
    let (_t, root) = tree();
    let outside = root.parent().unwrap().join("outside");
    touch(&outside, "secret.py");
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.py"), root.join("leak.py")).unwrap();
    std::os::unix::fs::symlink(root.join("src"), root.join("alias")).unwrap();
    for follow in [false, true] {
        let r = ok(
            &root,
            json!({"directory": ".", "pattern": "*", "recursive": true, "follow_symlinks": follow}),
        );
        let text = r.to_string();
        assert!(
            !text.contains("escape") && !text.contains("secret") && !text.contains("leak"),
            "{text}"
        );
        assert_eq!(r["skipped"]["outside_roots"], json!(2), "{r}");
        let alias_inside = r["matches"]
            .as_array()
            .unwrap()
            .contains(&json!("alias/lib.rs"));
        assert_eq!(alias_inside, follow, "{r}");
        assert_eq!(
            r["skipped"]["symlinks_not_followed"],
            json!(if follow { 0 } else { 1 })
        );
        assert!(r["matches"].as_array().unwrap().contains(&json!("alias/")));
    }
}

#[test]
fn refusals() {
    let (_t, root) = tree();
    assert!(failure(&root, json!({"directory": "..", "pattern": "*"})).contains("outside"));
    assert!(
        failure(&root, json!({"directory": "nope", "pattern": "*"})).contains("does not exist")
    );
    assert!(failure(&root, json!({"directory": "a.py", "pattern": "*"})).contains("is a file"));
    assert!(failure(&root, json!({"directory": ".", "pattern": "[a"})).contains("unclosed"));
}

#[test]
fn cancelled_before_the_walk_sends_nothing() {
    let (_t, root) = tree();
    let ctx = ToolContext::detached(vec![root.clone()], None);
    ctx.cancellation().cancel();
    let r = run_ctx(
        ctx,
        json!({"directory": ".", "pattern": "*", "recursive": true}),
    );
    assert!(matches!(r, Err(ToolError::Cancelled)), "{r:?}");
}

#[test]
fn definition_keeps_the_seed_interface() {
    let d = SearchFiles::default().definition();
    assert_eq!(d.name, "search_files");
    let s = &d.input_schema;
    assert_eq!(s["required"], json!(["directory", "pattern"]));
    assert_eq!(s["properties"]["recursive"]["default"], json!(false));
    assert_eq!(s["properties"]["max_results"]["minimum"], json!(1));
    assert_eq!(s["properties"]["max_results"]["maximum"], json!(1000));
    assert_eq!(s["properties"]["max_results"]["default"], json!(100));
    assert_eq!(s["additionalProperties"], json!(false));
    let h = d.hints();
    assert!(h.read_only() && !h.destructive() && h.idempotent() && !h.open_world());
    assert!(d.output_schema.is_some() && d.title.is_some());
}

#[test]
fn the_schema_advertises_the_defaults_serde_applies() {
    let schema = input_schema();
    let required = json!({"directory": "d", "pattern": "p"});
    let defaulted: Args = serde_json::from_value(required.clone()).unwrap();
    let properties = schema["properties"].as_object().unwrap();
    let required_names = schema["required"].as_array().unwrap();
    for (name, property) in properties {
        if required_names.contains(&json!(name)) {
            continue;
        }
        let default = property
            .get("default")
            .unwrap_or_else(|| panic!("optional {name} has no default in the schema"));
        let mut explicit = required.clone();
        explicit[name] = default.clone();
        let explicit: Args = serde_json::from_value(explicit).unwrap();
        assert_eq!(explicit, defaulted, "{name}: schema default {default}");
    }
}

#[test]
fn link_loops_are_counted_not_walked_forever() {
    let (_t, root) = tree();
    std::os::unix::fs::symlink("..", root.join("src/x/up")).unwrap();
    std::os::unix::fs::symlink("../src", root.join("docs/src")).unwrap();
    let r = ok(
        &root,
        json!({"directory": ".", "pattern": "mod.rs", "recursive": true, "follow_symlinks": true}),
    );
    // Through docs/src once; src/x/up leads back to src, which is on the path: a loop.
    assert_eq!(
        r["matches"],
        json!(["docs/src/x/mod.rs", "src/x/mod.rs"]),
        "{r}"
    );
    assert!(r["skipped"]["errors"].as_u64().unwrap() >= 2, "{r}");
}

/// A FIFO under an ignore file's name would block an ordinary `open` until a writer came;
/// the walk opens ignore files without blocking and passes over anything not a file.
#[test]
fn a_fifo_named_gitignore_does_not_stall_the_walk() {
    let (_t, root) = tree();
    for dir in ["", "docs"] {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(dir).join(if dir.is_empty() {
                ".ignore"
            } else {
                ".gitignore"
            }),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let r = root.clone();
    std::thread::spawn(move || {
        let _ = tx.send(matches(
            &r,
            json!({"directory": "docs", "pattern": "*.py", "recursive": true}),
        ));
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the search finishes");
    assert_eq!(got, ["a.py"]);
}
