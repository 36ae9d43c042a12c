//! Declared tools' jq shaping in its child process: the real binary's hidden
//! `__toolwright_jq` mode through its stdin/stdout protocol (its own resource limits end a
//! runaway expression), and `Shaper` with the child runner (killed at the wall deadline).

use crate::util::bin;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolwright_declared::shape::{CHILD_ARG, Shaped, Shaper, use_child_runner_at};
use toolwright_toolfile::model::OutputSpec;

/// One jq child at a time from this file: timings stay meaningful on a busy machine, and the
/// process scan in `wall_deadline_kills_the_child` sees only its own.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the child directly: request in, (stdout, status, wall time) out, killed by the test
/// only if it outlives `patience`.
fn child(
    code: &str,
    cpu_seconds: u64,
    input: &str,
    patience: Duration,
) -> (String, ExitStatus, Duration) {
    let mut c = Command::new(bin())
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let start = Instant::now();
    let mut stdin = c.stdin.take().unwrap();
    let head = json!({"jq": code, "cpu_seconds": cpu_seconds});
    writeln!(stdin, "{head}").unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > patience {
            let _ = c.kill();
            let _ = c.wait();
            panic!("{code}: still running after {patience:?}: its limits did not end it");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    let mut out = String::new();
    c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    (out, status, took)
}

#[test]
fn child_answers_one_output() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let table: &[(&str, &str, &str)] = &[
        (".a + 1", r#"{"a": 41}"#, "ok\n42"),
        (
            "{n: (.items | length)}",
            r#"{"items": [1, 2]}"#,
            "ok\n{\"n\":2}",
        ),
        (
            ".[]",
            "[1, 2]",
            "error\nthe jq expression gave more than one output (it must give exactly one)",
        ),
        (
            "empty",
            "null",
            "error\nthe jq expression gave no output (it must give exactly one)",
        ),
        (
            "error(\"boom\")",
            "null",
            "error\nthe jq expression failed: boom",
        ),
    ];
    for (code, input, want) in table {
        let (out, status, _) = child(code, 1, input, Duration::from_secs(30));
        assert!(status.success(), "{code}: {status:?}");
        assert_eq!(out, *want, "{code}");
    }
    // Not a request: exit 2.
    let mut c = Command::new(bin())
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(b"not json\n").unwrap();
    assert_eq!(c.wait().unwrap().code(), Some(2));
}

#[test]
fn child_limits_end_runaway_expressions() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // CPU-bound forever: RLIMIT_CPU (1 s soft: SIGXCPU, 2 s hard: SIGKILL) ends them.
    // Memory-bound: RLIMIT_AS (1 GiB) fails the allocation, which aborts.
    // Deep recursion: the stack overflows and ends the child only.
    // The wall-time bound is generous for a loaded machine: CPU seconds lag wall seconds.
    for (code, signals) in [
        ("last(range(1e12))", &[24, 9][..]),
        ("def f: f; f", &[24, 9][..]),
        ("[limit(1e9; repeat(1))] | length", &[6, 9, 11, 24][..]),
        ("def f: [f]; f", &[6, 9, 11, 24][..]),
    ] {
        let (out, status, took) = child(code, 1, "null", Duration::from_secs(30));
        let sig = status.signal();
        assert!(
            sig.is_some_and(|s| signals.contains(&s)),
            "{code}: {status:?}, stdout {out:?}, want a signal in {signals:?}"
        );
        assert!(out.is_empty(), "{code}: {out:?}");
        assert!(took < Duration::from_secs(15), "{code}: took {took:?}");
    }
}

fn shaper(output: Value) -> Shaper {
    use_child_runner_at(bin());
    let spec: OutputSpec = serde_json::from_value(output).unwrap();
    Shaper::compile(Some(&spec), None).expect("compiles")
}

fn shape(s: &Shaper, bytes: &[u8]) -> Result<Shaped, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(s.shape(bytes.to_vec()))
        .map_err(|e| e.to_string())
}

/// Children of this process that are jq runners.
fn jq_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
            continue;
        };
        let ppid = after.split_whitespace().nth(1).unwrap_or("");
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if ppid == me && String::from_utf8_lossy(&cmdline).contains(CHILD_ARG) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn shaper_uses_the_child_runner() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = shaper(json!({"parse": "json", "jq": "{names: [.[].name]}"}));
    assert_eq!(
        shape(&s, br#"[{"name": "a"}, {"name": "b"}]"#),
        Ok(Shaped::Structured(json!({"names": ["a", "b"]})))
    );
    let s = shaper(json!({"parse": "json", "jq": ".[]"}));
    let got = shape(&s, b"[1, 2]");
    assert!(
        matches!(&got, Err(e) if e.contains("more than one output")),
        "{got:?}"
    );
    // A value as deep as JSON parsing allows comes back whole.
    let s = shaper(json!({"parse": "json", "jq": "."}));
    let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let got = shape(&s, deep.as_bytes()).expect("shapes");
    let want: Value = serde_json::from_str(&deep).unwrap();
    assert_eq!(got, Shaped::Structured(json!({ "result": want })));
    // A stack overflow or a memory limit ends the child, not this process.
    let s = shaper(json!({"parse": "json", "jq": "def f: [f]; f", "jq_timeout": "20s"}));
    let got = shape(&s, b"null");
    assert!(
        matches!(&got, Err(e) if e.contains("the jq expression's runner was killed by signal")),
        "{got:?}"
    );
}

#[test]
fn wall_deadline_kills_the_child() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for code in [
        "last(range(1e12))",
        "def f: f; f",
        "[limit(1e9; repeat(1))] | length",
    ] {
        let s = shaper(json!({"parse": "json", "jq": code, "jq_timeout": "300ms"}));
        let start = Instant::now();
        let got = shape(&s, b"null");
        let took = start.elapsed();
        assert!(
            matches!(&got, Err(e) if e.contains("ran past its time limit of 300ms")),
            "{code}: {got:?}"
        );
        assert!(took >= Duration::from_millis(300), "{code}: {took:?}");
        assert!(
            took < Duration::from_millis(300 + 1500),
            "{code}: took {took:?}"
        );
        assert_eq!(
            jq_children(),
            Vec::<u32>::new(),
            "{code}: a runner was left behind"
        );
    }
}

/// The child runner's cost per call: `cargo test -p toolwright --test it declared_shape --
/// --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn child_runner_overhead() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = shaper(json!({"parse": "json", "jq": "{n: .a}"}));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            let got = rt.block_on(s.shape(br#"{"a": 1}"#.to_vec()));
            assert!(got.is_ok(), "{got:?}");
            start.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "child runner, 200 calls: median {:?}, p90 {:?}, min {:?}",
        times[100], times[180], times[0]
    );
}
