//! Runs every input kept for a fuzz target (its corpus in `fuzz/corpus/<target>/` and the
//! crashes found, in `fuzz/regressions/<target>/`) through the target's function, on the
//! stable toolchain. A panic on any thread fails the test: the server's tasks catch their
//! own panics, so a hook records them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

fn replay(target: &str) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let (_, run) = toolwright_fuzzing::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a known target");
    let files = inputs(target);
    assert!(!files.is_empty(), "no inputs kept for {target}");
    for file in &files {
        // A fuzzer running beside the suite (scripts/fuzz.sh) replaces inputs as it
        // shrinks them: one listed a moment ago may be gone.
        let data = match std::fs::read(file) {
            Ok(data) => data,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("{}: {e}", file.display()),
        };
        let before = PANICS.load(Ordering::SeqCst);
        let started = std::time::Instant::now();
        let caught = std::panic::catch_unwind(|| run(&data));
        if started.elapsed() > std::time::Duration::from_millis(500) {
            eprintln!("{target}: {} took {:?}", file.display(), started.elapsed());
        }
        assert!(
            caught.is_ok() && PANICS.load(Ordering::SeqCst) == before,
            "{target} fails on {}",
            file.display()
        );
    }
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn openapi() {
    replay("openapi");
}

#[test]
fn envelope() {
    replay("envelope");
}

#[test]
fn dispatch() {
    replay("dispatch");
}

#[test]
fn http() {
    replay("http");
}

#[test]
fn schema() {
    replay("schema");
}

#[test]
fn search_pattern() {
    replay("search_pattern");
}

#[test]
fn toolfile() {
    replay("toolfile");
}

#[test]
fn template() {
    replay("template");
}

#[test]
fn config_merge() {
    replay("config_merge");
}

#[test]
fn sql() {
    replay("sql");
}
