//! How an upstream is reached, checked: a stdio server's command, environment and working
//! directory, or an HTTP server's URL, token variable and extra trusted CAs.

use super::{Transport, dir_of, is_var_name};
use crate::error::{Problem, Seg};
use crate::rules::shell_of;
use crate::servers::ServerSpec;
use crate::template::{Part, Template};
use std::path::Path;

pub(super) fn check_stdio(
    spec: &ServerSpec,
    argv: &[String],
    file: &Path,
    problems: &mut Vec<Problem>,
) -> Option<Transport> {
    let before = problems.len();
    if spec.bearer_env.is_some() {
        problems.push(Problem::new(
            ["bearer_env"],
            "`bearer_env` is for an HTTP server (`url`); pass a stdio server its token in `env`",
        ));
    }
    if spec.ca_cert.is_some() {
        problems.push(Problem::new(
            ["ca_cert"],
            "`ca_cert` is for an https:// server (`url`)",
        ));
    }
    check_argv(argv, problems);
    let env = check_env(spec, problems);
    for (i, var) in spec.inherit_env.iter().enumerate() {
        if !is_var_name(var) {
            problems.push(Problem::new(
                [Seg::from("inherit_env"), Seg::Index(i)],
                format!("{var:?} is not a variable's name (letters, digits and '_')"),
            ));
        }
    }
    if spec.cwd.as_ref().is_some_and(|c| c.as_os_str().is_empty()) {
        problems.push(Problem::new(["cwd"], "an empty directory"));
    }
    (problems.len() == before).then(|| Transport::Stdio {
        argv: argv.to_vec(),
        env,
        inherit_env: spec.inherit_env.clone(),
        cwd: spec.cwd.as_ref().map(|c| dir_of(file).join(c)),
    })
}

/// A stdio server's `command`: a program, no NUL, no inline script.
fn check_argv(argv: &[String], problems: &mut Vec<Problem>) {
    match argv.first() {
        None => problems.push(Problem::new(
            ["command"],
            "an empty command: the first element is the program",
        )),
        Some(p) if p.trim().is_empty() => problems.push(Problem::new(
            [Seg::from("command"), Seg::Index(0)],
            "the program is empty",
        )),
        Some(_) => {}
    }
    for (i, a) in argv.iter().enumerate() {
        if a.contains('\0') {
            problems.push(Problem::new(
                [Seg::from("command"), Seg::Index(i)],
                "an argument cannot hold a NUL",
            ));
        }
    }
    if let Some(p) = inline_script(argv) {
        problems.push(p);
    }
}

/// A stdio server's `env`: good names, values that are `${VAR}` templates (no arguments,
/// no NUL), compiled.
fn check_env(spec: &ServerSpec, problems: &mut Vec<Problem>) -> Vec<(String, Template)> {
    let mut env = Vec::new();
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains(['=', '\0']) {
            problems.push(Problem::new(
                ["env", k.as_str()],
                "a variable's name is not empty and holds no '=' or NUL",
            ));
            continue;
        }
        match Template::parse(v) {
            Err(e) => problems.push(Problem::new(
                ["env", k.as_str()],
                format!("at byte {}: {}", e.at, e.reason),
            )),
            Ok(t) if t.parts().iter().any(|p| matches!(p, Part::Arg(_))) => {
                problems.push(Problem::new(
                    ["env", k.as_str()],
                    "a server's environment has no arguments to fill in: `${VAR}` is the gateway's variable; write `{{` and `}}` for literal braces",
                ));
            }
            Ok(_) if v.contains('\0') => problems.push(Problem::new(
                ["env", k.as_str()],
                "a value cannot hold a NUL",
            )),
            Ok(t) => env.push((k.clone(), t)),
        }
    }
    env
}

/// A shell or interpreter given its script inline (`sh -c …`, `node -e …`, `cmd /c …`),
/// wherever in argv it starts (as the program, or behind a wrapper such as `env`).
fn inline_script(argv: &[String]) -> Option<Problem> {
    for (start, program) in argv.iter().enumerate() {
        let Some(shell) = shell_of(program) else {
            continue;
        };
        if let Some((k, flag)) = argv
            .iter()
            .enumerate()
            .skip(start + 1)
            .find(|(_, a)| shell.runs_script(a))
        {
            return Some(Problem::new(
                [Seg::from("command"), Seg::Index(k)],
                format!(
                    "`{program} {flag}` runs an inline script: a server's command is a program and its arguments, run without a shell; run the server's program directly, or put the script in a file and run that"
                ),
            ));
        }
    }
    None
}

pub(super) fn check_http(
    spec: &ServerSpec,
    url: &str,
    file: &Path,
    problems: &mut Vec<Problem>,
) -> Option<Transport> {
    let before = problems.len();
    for (key, set) in [
        ("env", !spec.env.is_empty()),
        ("inherit_env", !spec.inherit_env.is_empty()),
        ("cwd", spec.cwd.is_some()),
    ] {
        if set {
            problems.push(Problem::new(
                [key],
                format!("`{key}` is for a stdio server (`command`); this one is reached at `url`"),
            ));
        }
    }
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    match rest {
        None => problems.push(Problem::new(
            ["url"],
            format!("{url:?} is not an http:// or https:// URL"),
        )),
        Some(r) if r.is_empty() || r.starts_with(['/', '?', '#']) => {
            problems.push(Problem::new(["url"], format!("{url:?} names no host")));
        }
        Some(_) if url.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            problems.push(Problem::new(
                ["url"],
                "a URL holds no spaces or control characters",
            ));
        }
        Some(_) => {}
    }
    if let Some(var) = &spec.bearer_env
        && !is_var_name(var)
    {
        problems.push(Problem::new(
            ["bearer_env"],
            format!("{var:?} is not a variable's name (letters, digits and '_')"),
        ));
    }
    match &spec.ca_cert {
        Some(c) if c.as_os_str().is_empty() => {
            problems.push(Problem::new(["ca_cert"], "an empty file name"));
        }
        Some(_) if !lower.starts_with("https://") => problems.push(Problem::new(
            ["ca_cert"],
            "`ca_cert` is for an https:// server; this url is not one",
        )),
        _ => {}
    }
    (problems.len() == before).then(|| Transport::Http {
        url: url.to_owned(),
        bearer_env: spec.bearer_env.clone(),
        ca_cert: spec.ca_cert.as_ref().map(|c| dir_of(file).join(c)),
    })
}
