//! What the loader and `toolwright lint` both read of a spec without compiling its action:
//! the spec itself ([`read_spec`], [`read_part`]), the messages of refusals both report,
//! every template of the action with where it is and whether a call can leave it out
//! ([`command_sites`], [`http_sites`]), which programs are shells ([`shell_of`]), and the
//! variables a command gets from the server's environment ([`ALLOWED_ENV`]).

use crate::error::{Problem, Seg};
use crate::model::{ArgvElement, CommandSpec, HttpSpec, ToolSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The variables a declared command gets from the server's environment when they are set,
/// besides its `inherit_env` (the same list reaches a gateway's stdio servers, besides
/// theirs). Part of what a tool file's `command` means, so it is defined here, below both
/// `toolwright-declared` (which runs commands) and `toolwright-gateway` (which starts
/// servers), neither depending on the other for it.
pub const ALLOWED_ENV: [&str; 10] = [
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
];

/// The refusal of a tool with no action (`command`, `http` or `sql`).
pub const NO_ACTION: &str = "no action: add `command: [program, args...]` (a program to run), `http: {url: ...}` (a request to send) or `sql: {source: ..., statement: ...}` (a query to run)";

/// The refusal of a tool with both `command` and `http`.
pub const TWO_ACTIONS: &str = "a tool has one action: `command`, `http` or `sql`, not two";

/// The refusal of a mandatory argv element naming an argument a call can leave out.
pub fn not_required(name: &str) -> String {
    format!(
        "`{name}` is not required, so a call can leave it out; put the element in an optional group ([...]) or add {name} to required"
    )
}

/// Reads one tool's value as the loader does.
///
/// # Errors
///
/// A [`Problem`] at the path serde stopped at.
pub fn read_spec(value: &Value) -> Result<ToolSpec, Problem> {
    read_value(value)
}

/// Reads member `key` of a tool on its own (`command`, `http`), so a problem elsewhere in
/// the tool does not hide what is wrong or right there; `None` when the member is absent.
///
/// # Errors
///
/// A [`Problem`] under `key`.
pub fn read_part<T: DeserializeOwned>(value: &Value, key: &str) -> Option<Result<T, Problem>> {
    let part = value.get(key)?;
    Some(read_value(part).map_err(|p| p.under(key)))
}

/// Reads any value, a problem carrying the path inside it where serde stopped: for a
/// member that is not known (`cmd:` for `command:`), the member itself.
///
/// # Errors
///
/// A [`Problem`] at that path.
pub fn read_value<T: DeserializeOwned>(value: &Value) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        use serde_path_to_error::Segment;
        let mut at: Vec<Seg> = e
            .path()
            .iter()
            .filter_map(|s| match s {
                Segment::Seq { index } => Some(Seg::Index(*index)),
                Segment::Map { key } => Some(Seg::Key(key.clone())),
                Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
                Segment::Unknown => None,
            })
            .collect();
        let message = e.into_inner().to_string();
        if let Some(key) = unknown_member(&message)
            && value_at(value, &at).is_some_and(|v| v.get(key).is_some())
        {
            at.push(Seg::Key(key.to_owned()));
        }
        Problem { at, message }
    })
}

/// The member serde's `deny_unknown_fields` refused, from its message (serde writes
/// "unknown field `NAME`, expected ...").
fn unknown_member(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(&rest[..rest.find('`')?])
}

/// The value at `at` inside `value`.
fn value_at<'v>(value: &'v Value, at: &[Seg]) -> Option<&'v Value> {
    at.iter().try_fold(value, |v, seg| match seg {
        Seg::Key(k) => v.get(k),
        Seg::Index(i) => v.get(i),
    })
}

/// What a template is, for the rules that depend on its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// argv\[0\]: the program, literal text only.
    Program,
    /// An argv element always present: a placeholder there must be required.
    Mandatory,
    /// An element of an optional group (`[...]` or `{when, args}`): dropped when absent.
    Optional,
    /// A string in the JSON body: exactly `"{name}"` is the argument's value of any type.
    Body,
    /// Anything else: an environment value, the working directory, stdin, a URL, a query
    /// value, a header value.
    Other,
}

/// One template of an action, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site<'s> {
    /// Where it is, from the tool's object.
    pub at: Vec<Seg>,
    /// Its text.
    pub text: &'s str,
    /// Its position's kind.
    pub role: Role,
}

/// An argument named outside a template: a `{when: name}` group's condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameSite<'s> {
    /// Where it is, from the tool's object.
    pub at: Vec<Seg>,
    /// The argument.
    pub name: &'s str,
}

/// Every template of `command` with its place, and the names `when` groups test.
pub fn command_sites(spec: &CommandSpec) -> (Vec<Site<'_>>, Vec<NameSite<'_>>) {
    let (argv, base): (&[ArgvElement], Vec<Seg>) = match spec {
        CommandSpec::Argv(argv) => (argv, vec!["command".into()]),
        CommandSpec::Full(o) => (&o.argv, vec!["command".into(), "argv".into()]),
    };
    let at = |rest: &[Seg]| -> Vec<Seg> { base.iter().chain(rest).cloned().collect() };
    let mut sites = Vec::new();
    let mut names = Vec::new();
    for (i, element) in argv.iter().enumerate() {
        match element {
            ArgvElement::One(text) => sites.push(Site {
                at: at(&[Seg::Index(i)]),
                text,
                role: if i == 0 {
                    Role::Program
                } else {
                    Role::Mandatory
                },
            }),
            ArgvElement::Group(items) => {
                for (j, text) in items.iter().enumerate() {
                    sites.push(Site {
                        at: at(&[Seg::Index(i), Seg::Index(j)]),
                        text,
                        role: Role::Optional,
                    });
                }
            }
            ArgvElement::When(w) => {
                names.push(NameSite {
                    at: at(&[Seg::Index(i), "when".into()]),
                    name: &w.when,
                });
                for (j, text) in w.args.iter().enumerate() {
                    sites.push(Site {
                        at: at(&[Seg::Index(i), "args".into(), Seg::Index(j)]),
                        text,
                        role: Role::Optional,
                    });
                }
            }
        }
    }
    if let CommandSpec::Full(o) = spec {
        for (k, text) in &o.env {
            sites.push(other(&["command", "env", k.as_str()], text));
        }
        if let Some(text) = &o.cwd {
            sites.push(other(&["command", "cwd"], text));
        }
        if let Some(text) = &o.stdin {
            sites.push(other(&["command", "stdin"], text));
        }
    }
    (sites, names)
}

/// Every template of `http` with its place. A body string that is exactly `"{name}"` is
/// a template too (naming `name`).
pub fn http_sites(spec: &HttpSpec) -> Vec<Site<'_>> {
    let mut sites = vec![other(&["http", "url"], &spec.url)];
    for (k, text) in &spec.query {
        sites.push(other(&["http", "query", k.as_str()], text));
    }
    for (k, text) in &spec.headers {
        sites.push(other(&["http", "headers", k.as_str()], text));
    }
    if let Some(body) = &spec.body {
        let mut at = vec![Seg::from("http"), Seg::from("body")];
        body_sites(body, &mut at, &mut sites);
    }
    sites
}

fn body_sites<'s>(value: &'s Value, at: &mut Vec<Seg>, out: &mut Vec<Site<'s>>) {
    match value {
        Value::String(text) => out.push(Site {
            at: at.clone(),
            text,
            role: Role::Body,
        }),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                body_sites(v, at, out);
                at.pop();
            }
        }
        Value::Object(members) => {
            for (k, v) in members {
                at.push(Seg::Key(k.clone()));
                body_sites(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn other<'s>(at: &[&str], text: &'s str) -> Site<'s> {
    Site {
        at: at.iter().map(|s| Seg::from(*s)).collect(),
        text,
        role: Role::Other,
    }
}

/// A program that runs code given inline, and how it is told to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `sh`, `bash`, `dash`, `zsh`, `ksh`, `mksh`, `ash`, `fish`, `csh`, `tcsh`: `-c` (alone
    /// or in a cluster of short options such as `-ec`), fish's `--command`.
    Posix,
    /// `cmd`, `cmd.exe`: `/c`, `/k` or `/r`; the rest of the command line is the script.
    Cmd,
    /// `powershell`, `pwsh` (`.exe` too): `-Command` (or a prefix, `-c`), `-EncodedCommand`,
    /// `-ec`; the rest of the command line is the script.
    PowerShell,
    /// An interpreter with an inline-code flag (`python -c`, `perl -e`, `node --eval`…): the
    /// short option letters that take code, and the long options.
    Interp(&'static [char], &'static [&'static str]),
}

/// What a program is, judged by its file name (`/usr/bin/bash` is bash, `CMD.EXE` is cmd).
pub fn shell_of(program: &str) -> Option<Shell> {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".exe").unwrap_or(&name);
    Some(match name {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh" => {
            Shell::Posix
        }
        "cmd" => Shell::Cmd,
        "powershell" | "pwsh" => Shell::PowerShell,
        "perl" | "ruby" => Shell::Interp(&['e', 'E'], &[]),
        "node" | "nodejs" => Shell::Interp(&['e', 'p'], &["--eval", "--print"]),
        "php" => Shell::Interp(&['r', 'R', 'B', 'E'], &[]),
        "lua" | "luajit" | "rscript" | "osascript" => Shell::Interp(&['e'], &[]),
        n if n.starts_with("python") || n.starts_with("pypy") => Shell::Interp(&['c'], &[]),
        _ => return None,
    })
}

impl Shell {
    /// A language interpreter rather than a command shell.
    pub fn is_interpreter(self) -> bool {
        matches!(self, Shell::Interp(..))
    }

    /// Whether everything after the script flag is script (cmd, PowerShell), not just the
    /// next argument.
    pub fn rest_is_script(self) -> bool {
        matches!(self, Shell::Cmd | Shell::PowerShell)
    }

    /// Whether `text` (a whole argument, or the literal start of one) is the flag that
    /// takes the script.
    pub fn runs_script(self, text: &str) -> bool {
        let short = |letters: &[char]| {
            text.strip_prefix('-').is_some_and(|rest| {
                !rest.is_empty()
                    && !rest.starts_with('-')
                    && rest.chars().all(|c| c.is_ascii_alphabetic())
                    && rest.chars().any(|c| letters.contains(&c))
            })
        };
        let long = |names: &[&str]| {
            names
                .iter()
                .any(|n| text == *n || text.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
        };
        match self {
            Shell::Posix => short(&['c']) || long(&["--command"]),
            Shell::Cmd => {
                let t = text.to_ascii_lowercase();
                ["/c", "/k", "/r"].iter().any(|f| t.starts_with(f))
            }
            Shell::PowerShell => {
                let t = text.to_ascii_lowercase();
                t.strip_prefix(['-', '/']).is_some_and(|name| {
                    !name.is_empty()
                        && ("command".starts_with(name)
                            || "encodedcommand".starts_with(name)
                            || name == "ec")
                })
            }
            Shell::Interp(letters, longs) => short(letters) || long(longs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths<'s>(sites: &[Site<'s>]) -> Vec<(String, &'s str, Role)> {
        sites
            .iter()
            .map(|s| (crate::error::path_text(&s.at), s.text, s.role))
            .collect()
    }

    #[test]
    fn command_sites_in_both_forms() {
        let spec: CommandSpec = serde_json::from_value(
            json!(["git", "log", "{rev}", ["-n", "{n}"], {"when": "all", "args": ["--all"]}]),
        )
        .unwrap();
        let (sites, names) = command_sites(&spec);
        assert_eq!(
            paths(&sites),
            [
                ("command[0]".into(), "git", Role::Program),
                ("command[1]".into(), "log", Role::Mandatory),
                ("command[2]".into(), "{rev}", Role::Mandatory),
                ("command[3][0]".into(), "-n", Role::Optional),
                ("command[3][1]".into(), "{n}", Role::Optional),
                ("command[4].args[0]".into(), "--all", Role::Optional),
            ]
        );
        assert_eq!(names[0].name, "all");
        assert_eq!(crate::error::path_text(&names[0].at), "command[4].when");
        let spec: CommandSpec = serde_json::from_value(
            json!({"argv": ["cat"], "env": {"A": "{a}"}, "cwd": "{d}", "stdin": "{s}"}),
        )
        .unwrap();
        let (sites, _) = command_sites(&spec);
        assert_eq!(
            paths(&sites),
            [
                ("command.argv[0]".into(), "cat", Role::Program),
                ("command.env.A".into(), "{a}", Role::Other),
                ("command.cwd".into(), "{d}", Role::Other),
                ("command.stdin".into(), "{s}", Role::Other),
            ]
        );
    }

    #[test]
    fn http_sites_reach_into_the_body() {
        let spec: HttpSpec = serde_json::from_value(json!({
            "url": "http://h/{id}", "query": {"q": "{q}"}, "headers": {"X": "${T}"},
            "body": {"a": ["{x}", 1], "b": {"c": "{y}"}}
        }))
        .unwrap();
        let texts: Vec<(String, &str)> = http_sites(&spec)
            .iter()
            .map(|s| (crate::error::path_text(&s.at), s.text))
            .collect();
        assert_eq!(
            texts,
            [
                ("http.url".into(), "http://h/{id}"),
                ("http.query.q".into(), "{q}"),
                ("http.headers.X".into(), "${T}"),
                ("http.body.a[0]".into(), "{x}"),
                ("http.body.b.c".into(), "{y}"),
            ]
        );
    }

    #[test]
    fn shells() {
        for (program, arg, runs) in [
            ("sh", "-c", true),
            ("/bin/bash", "-lc", true),
            ("bash", "-ec", true),
            ("bash", "--norc", false),
            ("bash", "script.sh", false),
            ("zsh", "-x", false),
            ("cmd.exe", "/C", true),
            ("CMD", "/k", true),
            ("cmd", "/q", false),
            ("pwsh", "-Command", true),
            ("powershell.exe", "-c", true),
            ("pwsh", "-File", false),
        ] {
            let shell = shell_of(program).unwrap_or_else(|| panic!("{program}"));
            assert_eq!(shell.runs_script(arg), runs, "{program} {arg}");
        }
        for program in ["wc", "git", "shasum", "/usr/bin/bashful", "sh.py"] {
            assert_eq!(shell_of(program), None, "{program}");
        }
    }

    #[test]
    fn an_unknown_member_is_placed_at_its_key() {
        let tool = json!({"name": "t", "cmd": ["wc"]});
        let p = read_spec(&tool).unwrap_err();
        assert_eq!(p.path_text(), "cmd");
        assert!(
            p.message.starts_with("unknown field `cmd`"),
            "{}",
            p.message
        );
        let p = read_part::<HttpSpec>(&json!({"http": {"url": "x", "methd": "GET"}}), "http")
            .unwrap()
            .unwrap_err();
        assert_eq!(p.path_text(), "http.methd");
        assert_eq!(unknown_member("unknown field `a b`, expected"), Some("a b"));
        assert_eq!(unknown_member("invalid type"), None);
    }

    #[test]
    fn parts_are_read_on_their_own() {
        let tool = json!({"name": "t", "nope": 1, "command": ["wc", 5]});
        assert!(read_spec(&tool).is_err());
        let p = read_part::<CommandSpec>(&tool, "command")
            .unwrap()
            .unwrap_err();
        assert_eq!(p.path_text(), "command[1]");
        assert!(read_part::<HttpSpec>(&tool, "http").is_none());
    }
}
