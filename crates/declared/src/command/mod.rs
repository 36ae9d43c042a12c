//! Command-backed tools: argv built from templates, never a shell.
//!
//! A `command:` is compiled once, when the file is loaded: every template is parsed, every
//! placeholder is checked against `inputSchema`, and what cannot run safely is refused
//! (a placeholder in the program, a mandatory element naming an argument a call may leave
//! out, a shell's `-c` script holding a placeholder). A call then only fills values in: each
//! value becomes exactly one argv element (or, for `{x...}`, one per item), never split,
//! never glob-expanded, never read by a shell.
//!
//! The program runs with a cleared environment (an allow-list, `inherit_env` and `env:`),
//! in a working directory opened beneath one of the server's roots, in its own process
//! group; its process tree, descendants that leave the group included, is owned by one
//! value that ends it on every path (result, error, timeout, cancellation, the server's
//! exit), so a call leaves no process behind.
//!
//! Layout:
//! - `argv`: argv elements, compiled and filled in.
//! - `shell`: refusing a shell's or interpreter's inline script that holds a placeholder.
//! - `env`: the child's environment and stdin.
//! - `cwd`: the working directory, opened beneath a root.
//! - `run`: spawning, capped output.
//! - `tree`: the call's process tree, ended on every path.

mod argv;
mod cwd;
mod env;
pub use env::ALLOWED as ALLOWED_ENV;
mod run;
mod shell;
mod tree;
pub use tree::become_subreaper;
#[cfg(test)]
mod tests;

use crate::error::{Problem, RunError, Seg};
use crate::{Output, RunContext};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::CommandSpec;
use toolwright_toolfile::template::Template;

/// Default cap on stdout: 1 MiB.
const MAX_STDOUT: u64 = 1 << 20;
/// Default cap on stderr: 64 KiB.
const MAX_STDERR: u64 = 64 << 10;

/// A compiled `command:`.
#[derive(Debug)]
pub struct CommandAction {
    program: String,
    argv: Vec<argv::Elem>,
    env: env::EnvPlan,
    cwd: Option<Template>,
    stdin: Option<Template>,
    ok_exit: Vec<i32>,
    max_stdout: u64,
    max_stderr: u64,
    args: BTreeSet<String>,
}

impl CommandAction {
    /// Compiles `command:`; problems are reported under `command`.
    ///
    /// # Errors
    ///
    /// A [`Problem`] for anything that cannot run safely.
    pub fn compile(spec: &CommandSpec, input: &InputInfo) -> Result<CommandAction, Problem> {
        let o = spec.options();
        let argv_at: Vec<Seg> = match spec {
            CommandSpec::Argv(_) => vec!["command".into()],
            CommandSpec::Full(_) => vec!["command".into(), "argv".into()],
        };
        let at = |k: &str| vec![Seg::from("command"), Seg::from(k)];

        let (program, argv) = argv::compile(&o.argv, input, &argv_at)?;
        shell::check(&program, &argv, &argv_at)?;
        let env = env::EnvPlan::compile(
            &o.env,
            &o.inherit_env,
            input,
            &at("env"),
            &at("inherit_env"),
        )?;
        let cwd = o
            .cwd
            .as_deref()
            .map(|t| data_template(t, input, &at("cwd")))
            .transpose()?;
        let stdin = o
            .stdin
            .as_deref()
            .map(|t| data_template(t, input, &at("stdin")))
            .transpose()?;
        let ok_exit = o.ok_exit.clone().unwrap_or_else(|| vec![0]);
        if ok_exit.is_empty() {
            return Err(Problem::new(
                at("ok_exit"),
                "ok_exit is empty, so no run could succeed (leave it out for [0])",
            ));
        }

        let mut args = BTreeSet::new();
        for e in &argv {
            e.names(&mut args);
        }
        env.names(&mut args);
        for t in cwd.iter().chain(stdin.iter()) {
            args.extend(t.args().map(|a| a.name.clone()));
        }
        Ok(CommandAction {
            program,
            argv,
            env,
            cwd,
            stdin,
            ok_exit,
            max_stdout: o.max_stdout.map_or(MAX_STDOUT, |b| b.0),
            max_stderr: o.max_stderr.map_or(MAX_STDERR, |b| b.0),
            args,
        })
    }

    /// The arguments the action names (in argv, `when`, `env`, `cwd` and `stdin`).
    pub fn args_used(&self) -> BTreeSet<String> {
        self.args.clone()
    }

    /// The program.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Runs the program with `args` (already valid against `inputSchema`).
    ///
    /// # Errors
    ///
    /// [`RunError`] for every failure.
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
    ) -> Result<Output, RunError> {
        run::run(self, args, ctx).await
    }
}

/// Parses a template at `at` (a parse error becomes a [`Problem`] there).
fn parse(text: &str, at: &[Seg]) -> Result<Template, Problem> {
    Template::parse(text).map_err(|e| Problem::new(at.iter().cloned(), e.to_string()))
}

/// A template for data no program reads as an option (cwd, stdin, a variable's value):
/// checked against `inputSchema`, `{x...}` refused, a leading `-` accepted.
fn data_template(text: &str, input: &InputInfo, at: &[Seg]) -> Result<Template, Problem> {
    let t = parse(text, at)?;
    if let Some(a) = t.args().find(|a| a.spread) {
        return Err(Problem::new(
            at.iter().cloned(),
            format!(
                "{{{}...}} spreads an array into argv elements and is allowed only in argv",
                a.name
            ),
        ));
    }
    input.check_template(&t, at)?;
    Ok(t.dash_allowed())
}
