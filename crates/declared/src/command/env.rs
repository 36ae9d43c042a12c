//! The child's environment: cleared, then the default allow-list and `inherit_env` copied
//! from the server's own environment where set, then the `env:` entries (templates).

use super::argv::{server_env, verbatim};
use super::data_template;
use crate::error::{Problem, RunError, Seg};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::paths::Paths;
use toolwright_toolfile::template::Template;

/// Copied from the server's environment when set (the tool file's rule, shared with the
/// gateway's stdio servers).
pub use toolwright_toolfile::rules::ALLOWED_ENV as ALLOWED;

/// PATH when the server has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The compiled environment settings.
#[derive(Debug, Default)]
pub(super) struct EnvPlan {
    inherit: Vec<String>,
    set: Vec<(String, Template)>,
}

/// A variable name the OS can carry: not empty, no `=` or NUL.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// Variables that choose what code every program loads or runs: an argument may not set
/// them (the author may, with literal text or `${VAR}`).
fn chooses_code(name: &str) -> bool {
    name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || matches!(name, "PATH" | "BASH_ENV" | "ENV")
}

impl EnvPlan {
    /// Compiles `env:` (at `env_at`) and `inherit_env` (at `inherit_at`).
    pub(super) fn compile(
        env: &BTreeMap<String, String>,
        inherit: &[String],
        input: &InputInfo,
        env_at: &[Seg],
        inherit_at: &[Seg],
    ) -> Result<EnvPlan, Problem> {
        for (i, name) in inherit.iter().enumerate() {
            if !valid_name(name) {
                let mut at = inherit_at.to_vec();
                at.push(Seg::Index(i));
                return Err(Problem::new(at, format!("{name:?} is not a variable name")));
            }
        }
        let mut set = Vec::with_capacity(env.len());
        for (name, text) in env {
            let mut at = env_at.to_vec();
            at.push(Seg::Key(name.clone()));
            if !valid_name(name) {
                return Err(Problem::new(at, format!("{name:?} is not a variable name")));
            }
            let t = data_template(text, input, &at)?;
            if chooses_code(name) && t.args().next().is_some() {
                return Err(Problem::new(
                    at,
                    format!(
                        "{name} chooses what code programs load or run, so a call's argument may not set it"
                    ),
                ));
            }
            set.push((name.clone(), t));
        }
        Ok(EnvPlan {
            inherit: inherit.to_vec(),
            set,
        })
    }

    /// Adds the arguments the `env:` templates name to `out`.
    pub(super) fn names(&self, out: &mut BTreeSet<String>) {
        for (_, t) in &self.set {
            out.extend(t.args().map(|a| a.name.clone()));
        }
    }

    /// The child's whole environment for a call with `args` (`{name:path}` values opened in
    /// `paths`, so a variable names the program's `/dev/fd/N` too).
    pub(super) fn build(
        &self,
        args: &Map<String, Value>,
        paths: &mut Paths<'_>,
    ) -> Result<BTreeMap<OsString, OsString>, RunError> {
        let mut out = BTreeMap::new();
        for name in ALLOWED
            .iter()
            .copied()
            .chain(self.inherit.iter().map(String::as_str))
        {
            if let Some(v) = std::env::var_os(name) {
                out.insert(OsString::from(name), v);
            }
        }
        out.entry(OsString::from("PATH"))
            .or_insert_with(|| OsString::from(DEFAULT_PATH));
        for (name, t) in &self.set {
            if let Some(v) = t.render_in(args, &server_env, &verbatim, paths)? {
                out.insert(OsString::from(name), OsString::from(v));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use toolwright_toolfile::input::InputInfo;
    use toolwright_toolfile::model::CommandSpec;

    /// Compiles `command`: "ok" or the problem, which must start as `want`.
    fn refuses(command: Value, want: &str) {
        let input = InputInfo::of(&json!({
            "type": "object",
            "properties": {"x": {"type": "string"}, "list": {"type": "array"}},
            "required": ["x"]
        }));
        let spec: CommandSpec = serde_json::from_value(command.clone()).unwrap();
        let got = match crate::command::CommandAction::compile(&spec, &input) {
            Ok(_) => "ok".to_owned(),
            Err(p) => p.to_string(),
        };
        assert!(
            got.starts_with(want),
            "{command}: got {got:?}, want {want:?}"
        );
    }

    #[test]
    fn env_cwd_stdin_refusals() {
        table! { refuses;
            (json!({"argv": ["env"], "env": {"A=B": "x"}}), "command.env.A=B: \"A=B\" is not");
            (json!({"argv": ["env"], "env": {"LD_PRELOAD": "{x}"}}), "command.env.LD_PRELOAD: LD_PRELOAD chooses");
            (json!({"argv": ["env"], "env": {"PATH": "/opt/{x}"}}), "command.env.PATH: PATH chooses");
            (json!({"argv": ["env"], "env": {"A": "{nope}"}}), "command.env.A: placeholder {nope}");
            (json!({"argv": ["env"], "env": {"A": "{list...}"}}), "command.env.A: {list...} spreads");
            (json!({"argv": ["env"], "inherit_env": ["OK", ""]}), "command.inherit_env[1]: \"\" is not");
            (json!({"argv": ["env"], "cwd": "{nope}"}), "command.cwd: placeholder {nope}");
            (json!({"argv": ["env"], "stdin": "{x"}), "command.stdin: template");
            (json!({"argv": ["env"], "ok_exit": []}), "command.ok_exit: ok_exit is empty");
            (json!({"argv": ["env", "{x}"]}), "ok");
            (json!({"argv": ["env"], "env": {"PATH": "/opt/bin:${PATH}", "A": "-{x}"}}), "ok");
        }
    }
}
