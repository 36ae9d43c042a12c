//! The README's gateway example, run as written (issue 35).
//!
//! The `gateway.yaml` block of "## Your first gateway" is taken out of README.md and saved
//! in a temporary directory with the `docs` directory the walk-through makes; then the real
//! binary runs `toolwright tools --config gateway.yaml` (whose table must be the one the
//! README prints) and `toolwright call` of tools of both upstreams, and of the two that
//! policy stops. The file's upstreams are `npx -y @modelcontextprotocol/server-…`: here
//! `npx` finds both packages in a `node_modules` beside the file, a link to the ones pinned
//! in tests/peers, and runs with npm offline and an empty cache (a `HOME` of its own, which
//! the gateway passes to its upstreams), so nothing is fetched.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{available, peers_dir, s};
use crate::util::{bin, repo_root};

/// The heading of the walk-through, the sentence before the file, the command whose
/// output the README shows.
const SECTION: &str = "## Your first gateway";
const SAVE: &str = "Save this as `gateway.yaml`";
const TOOLS: &str = "toolwright tools --config gateway.yaml\n```";

/// The body of the first fenced block of `lang` after `from` in `text`.
fn block_after<'a>(text: &'a str, from: &str, lang: &str) -> &'a str {
    let at = text
        .find(from)
        .unwrap_or_else(|| panic!("README.md: no {from:?}"));
    let fence = format!("```{lang}\n");
    let start = at
        + text[at..]
            .find(&fence)
            .unwrap_or_else(|| panic!("README.md: no ```{lang} block after {from:?}"))
        + fence.len();
    let len = text[start..].find("\n```").expect("a closing fence");
    &text[start..start + len + 1]
}

/// The walk-through's section of the README.
fn section(readme: &str) -> &str {
    let start = readme
        .find(SECTION)
        .expect("README.md: no gateway walk-through");
    let rest = &readme[start + SECTION.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// A directory laid out as the walk-through leaves it, and how to run toolwright there.
struct Walkthrough {
    dir: tempfile::TempDir,
    home: PathBuf,
}

impl Walkthrough {
    fn new(gateway_yaml: &str) -> Walkthrough {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(
            dir.path().join("docs/notes.md"),
            "# Notes\n\nServed by server-filesystem, behind toolwright.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("gateway.yaml"), gateway_yaml).unwrap();
        // What `npx -y PACKAGE` runs without fetching: a package installed in the nearest
        // node_modules of its working directory (the gateway's, here).
        std::os::unix::fs::symlink(
            peers_dir().join("node_modules"),
            dir.path().join("node_modules"),
        )
        .unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(
            home.join(".npmrc"),
            "offline=true\nupdate-notifier=false\naudit=false\nfund=false\n",
        )
        .unwrap();
        Walkthrough { dir, home }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `toolwright ARGS --config gateway.yaml` in the directory: (exit code, stdout,
    /// stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut child = Command::new(bin())
            .args(args)
            .args(["--config", "gateway.yaml"])
            .current_dir(self.path())
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run toolwright");
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).map(|_| s)
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            err.read_to_string(&mut s).map(|_| s)
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "toolwright {args:?} --config gateway.yaml took over 2 minutes; stderr:\n{}",
                    err.join().unwrap().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = out.join().unwrap().unwrap();
        let err = err.join().unwrap().unwrap();
        (status.code().unwrap_or(-1), out, err)
    }

    /// `toolwright call TOOL ARGS… --config gateway.yaml`, which must succeed: the text of
    /// its result.
    fn call_ok(&self, tool: &str, args: &[&str]) -> String {
        let mut argv = vec!["call", tool];
        argv.extend(args);
        let (code, out, err) = self.run(&argv);
        assert_eq!(code, 0, "call {tool} {args:?}: {out}\nstderr:\n{err}");
        let result: Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("call {tool}: stdout is not JSON ({e}): {out}"));
        assert_ne!(result["isError"], true, "call {tool}: {result}");
        text_of(&result)
    }

    /// `toolwright call TOOL ARGS…`, which must be refused: stdout and stderr together.
    fn call_refused(&self, tool: &str, args: &[&str]) -> String {
        let mut argv = vec!["call", tool];
        argv.extend(args);
        let (code, out, err) = self.run(&argv);
        assert_ne!(
            code, 0,
            "call {tool} {args:?} was not refused: {out}\nstderr:\n{err}"
        );
        format!("{out}\n{err}")
    }
}

/// The text blocks of a `tools/call` result, joined.
fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Whether npx and the pinned reference servers are there (else the test skips, or fails
/// under CI).
fn peers_installed() -> bool {
    let pkgs = peers_dir().join("node_modules/@modelcontextprotocol");
    available(
        "npx with server-everything and server-filesystem",
        vec!["npx".into()],
        &[
            pkgs.join("server-everything"),
            pkgs.join("server-filesystem"),
        ],
    )
    .is_some()
}

#[test]
fn the_readmes_gateway_example_runs_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let walkthrough = section(&readme);
    let gateway_yaml = block_after(walkthrough, SAVE, "yaml");
    let shown_tools = block_after(walkthrough, TOOLS, "text");
    // The file stands on its own: no remote server, no token, nothing outside its directory.
    for absent in ["url:", "bearer_env", "/srv/", "${"] {
        assert!(
            !gateway_yaml.contains(absent),
            "README's gateway.yaml has {absent:?}"
        );
    }
    for part in [
        "builtins:",
        "roots:",
        "rename:",
        "policy:",
        "arguments:",
        "exclude:",
    ] {
        assert!(
            gateway_yaml.contains(part),
            "README's gateway.yaml lost {part:?}"
        );
    }
    if !peers_installed() {
        return;
    }
    let w = Walkthrough::new(gateway_yaml);

    // What a client is offered: exactly the table the README prints.
    let (code, table, err) = w.run(&["tools"]);
    assert_eq!(code, 0, "tools: {table}\nstderr:\n{err}");
    assert_eq!(
        table.trim_end(),
        shown_tools.trim_end(),
        "`toolwright tools --config gateway.yaml` is not what the README shows; stderr:\n{err}"
    );
    let (code, json, err) = w.run(&["tools", "--json"]);
    assert_eq!(code, 0, "tools --json: {json}\nstderr:\n{err}");
    let listed: Value = serde_json::from_str(&json).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {json}"))
    };
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    // builtins: [add]; rename; the policy's deny and the exclude; include.
    assert_eq!(
        names,
        [
            "add",
            "docs__list_allowed_directories",
            "docs__list_directory",
            "docs__read_text_file",
            "everything__get-sum",
            "everything__gzip-file-as-resource",
            "everything__say",
        ],
        "{json}"
    );
    // The override and the fixed argument.
    let sum = tool("everything__get-sum");
    assert_eq!(
        sum["description"],
        "Adds 10 to a number a and returns the sum as text."
    );
    let props = sum["inputSchema"]["properties"].as_object().unwrap();
    assert!(props.contains_key("a") && !props.contains_key("b"), "{sum}");
    assert!(
        !sum["inputSchema"]["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|n| n == "b")),
        "{sum}"
    );
    // The annotations are the file's: an untrusted server's own are not believed.
    assert_eq!(tool("everything__say")["annotations"]["readOnlyHint"], true);
    let gzip = &tool("everything__gzip-file-as-resource")["annotations"];
    assert_eq!(gzip["readOnlyHint"], false, "{gzip}");
    assert_eq!(gzip["destructiveHint"], false, "{gzip}");
    assert_eq!(
        tool("docs__read_text_file")["annotations"]["readOnlyHint"],
        true
    );

    // A tool of each upstream, called through the gateway.
    let said = w.call_ok("everything__say", &["message=hello"]);
    assert!(said.contains("hello"), "{said}");
    let sum = w.call_ok("everything__get-sum", &["a=5"]);
    assert!(sum.contains("15"), "{sum}");
    // roots: [docs]: the filesystem server has ./docs, and not the gateway's directory.
    let docs = w.path().join("docs").canonicalize().unwrap();
    let allowed = w.call_ok("docs__list_allowed_directories", &[]);
    assert!(allowed.contains(&s(&docs)), "{allowed}");
    let dir = s(&w.path().canonicalize().unwrap());
    assert!(
        !allowed.lines().any(|l| l.trim() == dir),
        "the gateway's own directory reached the upstream: {allowed}"
    );
    let notes = w.call_ok("docs__read_text_file", &["path=notes.md"]);
    assert!(notes.contains("behind toolwright"), "{notes}");
    let outside = w.call_refused("docs__read_text_file", &["path=../gateway.yaml"]);
    assert!(!outside.contains("state_file"), "{outside}");

    // What policy stops: a denied tool, and one that needs a confirmation `call` cannot give.
    let denied = w.call_refused("everything__get-env", &[]);
    assert!(denied.contains("destructive"), "{denied}");
    let confirm = w.call_refused(
        "everything__gzip-file-as-resource",
        &["name=notes.gz", "data=data:,hello"],
    );
    assert!(
        confirm.contains("confirm") || confirm.contains("elicit"),
        "{confirm}"
    );

    // Nothing was fetched: npm ran offline, with an empty cache of its own.
    assert!(
        !w.home.join(".npm/_npx").exists(),
        "npx installed a package instead of using tests/peers"
    );
}
