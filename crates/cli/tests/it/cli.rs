//! The command line: `tools`, `call`, help and exit codes.

use crate::util::run_cli;
use serde_json::{Value, json};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tools_json_lists_the_builtin_tools() {
    let o = run_cli(&["tools", "--json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for n in ["add", "multiply", "search_files", "take_screenshot"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn tools_table_is_for_people() {
    let o = run_cli(&["tools"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.starts_with("NAME"), "{out}");
    assert!(out.contains("add") && out.contains("HINTS"));
}

#[test]
fn call_runs_a_tool_in_process() {
    let o = run_cli(&["call", "add", "a=1", "b=2.5"]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 3.5);
    let o = run_cli(&["call", "multiply", "--args", r#"{"a": 3, "b": 4}"#]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["result"], 12);
}

#[test]
fn exit_codes() {
    // A tool failure (here: invalid arguments) is 1.
    let o = run_cli(&["call", "add", "a=x", "b=1"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("is not of type"));
    // Usage errors are 2.
    assert_eq!(run_cli(&["call", "nope"]).status.code(), Some(2));
    assert_eq!(run_cli(&["call", "add", "novalue"]).status.code(), Some(2));
    assert_eq!(
        run_cli(&["call", "add", "--args", "[1]"]).status.code(),
        Some(2)
    );
    assert_eq!(run_cli(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        run_cli(&["serve", "--root", "/definitely/not/here"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn help_for_every_command() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["tools", "--help"],
        &["call", "--help"],
    ] {
        let o = run_cli(args);
        assert!(o.status.success(), "{args:?}");
        assert!(stdout(&o).contains("Usage"), "{args:?}");
    }
}

/// A pseudo-terminal: the controlling side, and the terminal a child gets as stdin.
fn pty() -> (std::fs::File, std::fs::File) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.as_bytes()))
        .expect("open the terminal");
    (std::fs::File::from(master), terminal)
}

#[test]
fn serve_on_a_terminal_says_what_it_serves_and_how_to_quit() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let (mut master, terminal) = pty();
    let mut child = Command::new(crate::util::bin())
        .args(["serve", "--root", root.to_str().unwrap()])
        .current_dir(&root)
        .stdin(terminal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut note = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let last = line.contains("quits");
        note.push(line);
        if last {
            break;
        }
    }
    let note = note.join("\n");
    for want in [
        "toolwright: serving MCP on stdio: 4 tools; file tools may touch ",
        "stdin is a terminal, so no client is attached",
        "claude_desktop_config.json",
        "toolwright serve --http",
        "Ctrl-D (end of input) or Ctrl-C quits",
    ] {
        assert!(note.contains(want), "{want:?} not in:\n{note}");
    }
    assert!(note.contains(root.to_str().unwrap()), "{note}");
    // The client entry is JSON that starts this very command.
    let entry = note
        .lines()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap();
    let entry: Value = serde_json::from_str(entry).unwrap();
    let server = &entry["mcpServers"]["toolwright"];
    assert_eq!(server["args"][0], "serve");
    assert_eq!(server["args"][2], root.to_str().unwrap());
    // Ctrl-D at the start of a line is the end of input: the server exits, 0.
    master.write_all(&[4]).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(
        out.is_empty(),
        "stdout carries protocol messages only: {out:?}"
    );
}

#[test]
fn serve_on_a_terminal_suggests_an_entry_with_absolute_paths() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    // The file found by default and the current directory as root: a client starts the
    // server in a directory of its own, so the entry names both, absolutely.
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(dir.join("docs")).unwrap();
    std::fs::write(dir.join("toolwright.yaml"), "builtins: [add]\n").unwrap();
    let (mut master, terminal) = pty();
    let mut child = Command::new(crate::util::bin())
        .args(["serve", "--root=docs"])
        .current_dir(&dir)
        .stdin(terminal)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut note = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let last = line.contains("quits");
        note.push(line);
        if last {
            break;
        }
    }
    master.write_all(&[4]).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let note = note.join("\n");
    let entry = note
        .lines()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap();
    let entry: Value = serde_json::from_str(entry).unwrap();
    let file = dir.join("toolwright.yaml");
    let docs = dir.join("docs");
    assert_eq!(
        entry["mcpServers"]["toolwright"]["args"],
        json!(["serve", "--root", docs, "--config", file]),
        "{note}"
    );
    let program = entry["mcpServers"]["toolwright"]["command"]
        .as_str()
        .unwrap();
    assert!(std::path::Path::new(program).is_absolute(), "{program}");
    let claude = format!(
        "toolwright: Claude Code: claude mcp add toolwright -- {program} serve --root {} --config {}",
        docs.display(),
        file.display()
    );
    assert!(note.contains(&claude), "{claude:?} not in:\n{note}");
}

#[test]
fn serve_from_a_client_prints_nothing_on_stderr() {
    let o = std::process::Command::new(crate::util::bin())
        .arg("serve")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
