//! Commands really run: injection attempts stay data, timeouts and cancellation leave no
//! process behind, caps hold, the environment is cleared, the working directory stays
//! beneath the root.

use super::CommandAction;
use crate::error::{RunError, Stream};
use crate::{Output, RunContext};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::CommandSpec;
use toolwright_toolfile::template::RenderError;

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cancel: CancellationToken,
}

fn sandbox() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    Sandbox {
        _tmp: tmp,
        root,
        cancel: CancellationToken::new(),
    }
}

/// A schema whose properties take any value; `required` first.
fn schema(required: &[&str], optional: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> = required
        .iter()
        .chain(optional)
        .map(|p| ((*p).to_owned(), json!({})))
        .collect();
    json!({"type": "object", "properties": props, "required": required})
}

fn compile(command: Value, input: &Value) -> CommandAction {
    let spec: CommandSpec = serde_json::from_value(command).unwrap();
    CommandAction::compile(&spec, &InputInfo::of(input)).unwrap()
}

async fn call(
    s: &Sandbox,
    command: Value,
    input: Value,
    args: Value,
    timeout: Duration,
) -> Result<Output, RunError> {
    let action = compile(command, &input);
    let ctx = RunContext {
        roots: std::slice::from_ref(&s.root),
        timeout,
        cancel: &s.cancel,
        trace: None,
        observed: None,
    };
    action.run(args.as_object().unwrap(), &ctx).await
}

const LONG: Duration = Duration::from_secs(30);

fn text(out: &Output) -> &str {
    std::str::from_utf8(&out.bytes).unwrap()
}

/// Whether process `pid` is gone (no entry, or a zombie waiting for its new parent).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
    }
}

/// Waits (a little) until every pid listed in `file` is gone; returns those still alive.
async fn alive_after(file: &Path) -> Vec<u32> {
    let pids: Vec<u32> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert!(pids.len() >= 3, "the script wrote {pids:?}");
    for _ in 0..100 {
        if pids.iter().all(|p| gone(*p)) {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pids.into_iter().filter(|p| !gone(*p)).collect()
}

/// A fixed test script: its own pid, a background `sleep`, and a subshell with another.
const SPAWNS: &str = "echo $$ > pids; sleep 1000 & echo $! >> pids; \
                      (sleep 1000 & echo $! >> pids; wait) & wait";

#[tokio::test]
async fn injection_strings_are_one_inert_element() {
    let s = sandbox();
    let mark = s.root.join("pwned");
    let m = mark.display();
    let values = [
        "; rm -rf /".to_owned(),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("x && touch {m}"),
        "* ?".to_owned(),
        "two\nlines".to_owned(),
    ];
    let args = json!({"a": values[0], "b": values[1], "c": values[2], "d": values[3], "e": values[4], "f": values[5]});
    let input = schema(&["a", "b", "c", "d", "e", "f"], &[]);
    let want: String = values.iter().map(|v| format!("[{v}]\n")).collect();
    // Straight into argv.
    let out = call(
        &s,
        json!([
            "printf", "[%s]\\n", "{a}", "{b}", "{c}", "{d}", "{e}", "{f}"
        ]),
        input.clone(),
        args.clone(),
        LONG,
    )
    .await
    .unwrap();
    assert_eq!(text(&out), want);
    // Through a shell, as positional parameters: still data.
    let out = call(
        &s,
        json!([
            "/bin/sh",
            "-c",
            "for v in \"$@\"; do printf '[%s]\\n' \"$v\"; done",
            "sh",
            "{a}",
            "{b}",
            "{c}",
            "{d}",
            "{e}",
            "{f}"
        ]),
        input,
        args,
        LONG,
    )
    .await
    .unwrap();
    assert_eq!(text(&out), want);
    assert!(!mark.exists());
    // A value that would be read as an option is refused before anything runs.
    let ran = s.root.join("ran");
    let err = call(
        &s,
        json!(["/bin/sh", "-c", "touch ran", "sh", "{a}"]),
        schema(&["a"], &[]),
        json!({"a": "--output=/etc/x"}),
        LONG,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, RunError::Render(RenderError::LeadingDash { .. })),
        "{err}"
    );
    assert!(!ran.exists());
}

#[tokio::test]
async fn spread_gives_one_element_per_item() {
    let s = sandbox();
    let input = json!({"type": "object", "properties": {"files": {"type": "array"}}, "required": ["files"]});
    let out = call(
        &s,
        json!(["printf", "[%s]\\n", "{files...}"]),
        input,
        json!({"files": ["a b", "$(x)", 3]}),
        LONG,
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "[a b]\n[$(x)]\n[3]\n");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group() {
    let s = sandbox();
    let start = Instant::now();
    let err = call(
        &s,
        json!(["/bin/sh", "-c", SPAWNS]),
        schema(&[], &[]),
        json!({}),
        Duration::from_secs(2),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RunError::Timeout(_)), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(alive_after(&s.root.join("pids")).await, Vec::<u32>::new());
}

#[tokio::test]
async fn cancelling_kills_the_whole_group() {
    let s = sandbox();
    let pids = s.root.join("pids");
    let (cancel, watched) = (s.cancel.clone(), pids.clone());
    tokio::spawn(async move {
        while std::fs::read_to_string(&watched).map_or(0, |t| t.lines().count()) < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    });
    let start = Instant::now();
    let err = call(
        &s,
        json!(["/bin/sh", "-c", SPAWNS]),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RunError::Cancelled), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(alive_after(&pids).await, Vec::<u32>::new());
}

#[tokio::test]
async fn a_normal_exit_leaves_nothing_behind() {
    let s = sandbox();
    let start = Instant::now();
    // The background sleep keeps stdout open: without the group kill this waits 30s.
    let script = "echo $$ > pids; sleep 1000 & echo $! >> pids; \
                  (sleep 1000 & echo $! >> pids; wait) & sleep 0.2; echo done";
    let out = call(
        &s,
        json!(["/bin/sh", "-c", script]),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "done\n");
    assert_eq!(out.meta.get("exitCode"), Some(&json!(0)));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(alive_after(&s.root.join("pids")).await, Vec::<u32>::new());
}

#[tokio::test]
async fn stdout_past_its_cap_fails_and_kills() {
    let s = sandbox();
    let start = Instant::now();
    let err = call(
        &s,
        json!({"argv": ["yes"], "max_stdout": 1000}),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            RunError::TooLarge {
                stream: Stream::Stdout,
                limit: 1000
            }
        ),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    for (cap, ok) in [("3B", true), ("2", false)] {
        let r = call(
            &s,
            json!({"argv": ["printf", "abc"], "max_stdout": cap}),
            schema(&[], &[]),
            json!({}),
            LONG,
        )
        .await;
        assert_eq!(r.is_ok(), ok, "{cap}: {r:?}");
    }
}

#[tokio::test]
async fn a_failure_carries_the_tail_of_stderr() {
    let s = sandbox();
    let script = "echo first >&2; echo 'last words' >&2; exit 3";
    let err = call(
        &s,
        json!(["/bin/sh", "-c", script]),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "/bin/sh exited with status 3:\nfirst\nlast words"
    );
    // Only the end of a long stderr is kept.
    let script = "head -c 100000 /dev/zero | tr '\\0' x >&2; echo END >&2; exit 1";
    let err = call(
        &s,
        json!({"argv": ["/bin/sh", "-c", script], "max_stderr": 64}),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    let RunError::Exit { stderr_tail, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(stderr_tail, &format!("{}END\n", "x".repeat(60)));
    // Killed by a signal.
    let err = call(
        &s,
        json!(["/bin/sh", "-c", "kill -9 $$"]),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "/bin/sh was killed by signal 9");
    // ok_exit counts other statuses as success.
    let out = call(
        &s,
        json!({"argv": ["/bin/sh", "-c", "echo partial; exit 1"], "ok_exit": [0, 1]}),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap();
    assert_eq!(
        (text(&out), out.meta.get("exitCode")),
        ("partial\n", Some(&json!(1)))
    );
    // A program that does not exist.
    let err = call(
        &s,
        json!(["/nonexistent/program"]),
        schema(&[], &[]),
        json!({}),
        LONG,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RunError::Spawn { .. }), "{err}");
}

#[tokio::test]
async fn the_environment_is_cleared_to_what_is_allowed() {
    let s = sandbox();
    // Set by cargo for this test process.
    let pkg = std::env::var("CARGO_PKG_NAME").expect("cargo sets CARGO_PKG_NAME");
    let lines = |out: &Output| -> Vec<String> { text(out).lines().map(str::to_owned).collect() };
    let out = call(&s, json!(["env"]), schema(&[], &[]), json!({}), LONG)
        .await
        .unwrap();
    let env = lines(&out);
    assert!(env.iter().all(|l| !l.starts_with("CARGO")), "{env:?}");
    assert!(env.iter().any(|l| l.starts_with("PATH=")), "{env:?}");
    let command = json!({
        "argv": ["env"],
        "inherit_env": ["CARGO_PKG_NAME"],
        "env": {"GREETING": "hello {name}", "ABSENT": "{opt}", "FROM_SERVER": "v=${CARGO_PKG_NAME}", "DASH": "{name}"}
    });
    let out = call(
        &s,
        command,
        schema(&["name"], &["opt"]),
        json!({"name": "-x; $(y)"}),
        LONG,
    )
    .await
    .unwrap();
    let env = lines(&out);
    for want in [
        format!("CARGO_PKG_NAME={pkg}"),
        "GREETING=hello -x; $(y)".to_owned(),
        format!("FROM_SERVER=v={pkg}"),
        "DASH=-x; $(y)".to_owned(),
    ] {
        assert!(env.contains(&want), "{want} not in {env:?}");
    }
    assert!(
        env.iter()
            .all(|l| !l.starts_with("ABSENT=") && !l.starts_with("CARGO_MANIFEST")),
        "{env:?}"
    );
}

#[tokio::test]
async fn the_working_directory_stays_beneath_the_root() {
    let s = sandbox();
    let outside = s.root.parent().unwrap().join("outside");
    for d in [s.root.join("sub/-dashed"), outside.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::symlink("../outside", s.root.join("esc")).unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("abs-esc")).unwrap();
    std::os::unix::fs::symlink("sub", s.root.join("inner")).unwrap();
    let root = s.root.display().to_string();
    let cases: [(Value, Result<String, ()>); 9] = [
        (json!({}), Ok(root.clone())),
        (json!({"dir": "sub"}), Ok(format!("{root}/sub"))),
        (
            json!({"dir": "sub/-dashed"}),
            Ok(format!("{root}/sub/-dashed")),
        ),
        (json!({"dir": "inner"}), Ok(format!("{root}/sub"))),
        (
            json!({"dir": format!("{root}/sub")}),
            Ok(format!("{root}/sub")),
        ),
        (json!({"dir": "../"}), Err(())),
        (json!({"dir": "esc"}), Err(())),
        (json!({"dir": "abs-esc"}), Err(())),
        (json!({"dir": outside.display().to_string()}), Err(())),
    ];
    for (args, want) in cases {
        let got = call(
            &s,
            json!({"argv": ["pwd"], "cwd": "{dir}"}),
            schema(&[], &["dir"]),
            args.clone(),
            LONG,
        )
        .await;
        match (got, want) {
            (Ok(out), Ok(w)) => assert_eq!(text(&out).trim_end(), w, "{args}"),
            (Err(RunError::Cwd { .. }), Err(())) => {}
            (got, want) => panic!("{args}: got {got:?}, want {want:?}"),
        }
    }
}

#[tokio::test]
async fn stdin_is_the_rendered_template() {
    let s = sandbox();
    let big = "y".repeat(300_000);
    for (command, args, want) in [
        (
            json!({"argv": ["cat"], "stdin": "{text}"}),
            json!({"text": "a; $(b)\n-c"}),
            "a; $(b)\n-c".to_owned(),
        ),
        (
            json!({"argv": ["cat"], "stdin": "{text}"}),
            json!({}),
            String::new(),
        ),
        (
            json!({"argv": ["cat"], "stdin": "{text}"}),
            json!({"text": big}),
            big.clone(),
        ),
        (json!(["cat"]), json!({"text": "unused"}), String::new()),
    ] {
        let out = call(&s, command, schema(&[], &["text"]), args, LONG)
            .await
            .unwrap();
        assert_eq!(text(&out).len(), want.len());
        assert_eq!(text(&out), want);
    }
}

#[test]
fn names_what_it_uses() {
    let input = schema(&["a"], &["b", "c", "d", "e", "f", "g", "unused"]);
    let action = compile(
        json!({
            "argv": ["git", "{a}", ["-b", "{b}"], {"when": "c", "args": ["{d}"]}],
            "env": {"E": "{e}"}, "cwd": "{f}", "stdin": "{g}"
        }),
        &input,
    );
    assert_eq!(action.program(), "git");
    let used: Vec<String> = action.args_used().into_iter().collect();
    assert_eq!(used, ["a", "b", "c", "d", "e", "f", "g"]);
}

#[tokio::test]
async fn paths_reach_the_program_as_descriptors_opened_beneath_the_root() {
    let s = sandbox();
    std::fs::write(s.root.join("in.txt"), "inside\n").unwrap();
    let input = schema(&["f"], &["out"]);
    // argv, env and stdin each name a descriptor of the file checked, numbered from 3; the
    // program has no other descriptor than those and its stdio.
    let script = r#"echo "$1"; cat "$1"; echo "$F"; read p; echo "$p"; ls /proc/$$/fd"#;
    let cmd = json!({"argv": ["sh", "-c", script, "sh", "{f:path}"],
        "env": {"F": "{f:path}"}, "stdin": "{f:path}\n"});
    let out = call(&s, cmd, input.clone(), json!({"f": "in.txt"}), LONG)
        .await
        .unwrap();
    let (said, fds) = text(&out).rsplit_once("/dev/fd/5\n").unwrap();
    assert_eq!(said, "/dev/fd/3\ninside\n/dev/fd/4\n");
    assert_eq!(numbers(fds), inherited([0, 1, 2, 3, 4, 5]));
    // A file to create: its directory's descriptor and the name.
    let cmd = json!({"argv": ["sh", "-c", r#"echo "$1"; echo made > "$1""#, "sh", "{f:path}"]});
    let out = call(&s, cmd, input.clone(), json!({"f": "new.txt"}), LONG)
        .await
        .unwrap();
    assert_eq!(text(&out), "/dev/fd/3/new.txt\n");
    assert_eq!(
        std::fs::read_to_string(s.root.join("new.txt")).unwrap(),
        "made\n"
    );
    // A call without paths gets none (and is started without a descriptor mapping).
    let cmd = json!({"argv": ["sh", "-c", "ls /proc/$$/fd"]});
    let out = call(&s, cmd, input.clone(), json!({"f": "x"}), LONG)
        .await
        .unwrap();
    assert_eq!(numbers(text(&out)), inherited([0, 1, 2]));
    // Leaving the root is refused before anything starts.
    let cmd = json!({"argv": ["cat", "{f:path}"]});
    for escape in ["../x", "/etc/passwd"] {
        let err = call(&s, cmd.clone(), input.clone(), json!({"f": escape}), LONG)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside"), "{escape}: {err}");
    }
}

/// The descriptor numbers listed in `text`.
fn numbers(text: &str) -> std::collections::BTreeSet<i32> {
    text.split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

/// `fds` and the descriptors this test process would pass to any child (those without
/// close-on-exec, inherited from whatever started the tests).
fn inherited<const N: usize>(fds: [i32; N]) -> std::collections::BTreeSet<i32> {
    let mut out: std::collections::BTreeSet<i32> = fds.into();
    for entry in std::fs::read_dir("/proc/self/fdinfo").unwrap() {
        let name = entry.unwrap().file_name();
        let Some(n) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{n}")) else {
            continue;
        };
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .unwrap_or(0);
        if n > 2 && flags & 0o2_000_000 == 0 {
            out.insert(n);
        }
    }
    out
}
