//! The one path by which an argv could still be injected: a shell (or a language
//! interpreter) given its script inline (`sh -c SCRIPT`, `cmd /c ...`, `python -c CODE`,
//! `perl -e CODE`), with a placeholder in that script. The script is code; a value pasted
//! into it is code too. Refused at load, wherever the shell appears in argv (as the program,
//! or behind a wrapper such as `env`, `nice` or `timeout`).
//!
//! A value passed *after* the script, as a positional parameter, is safe and the way to do
//! it: `["sh", "-c", "grep -- \"$1\" notes.txt", "sh", "{pattern}"]`.

use super::argv::{Elem, template_at};
use crate::error::{Problem, Seg};
use toolwright_toolfile::rules::shell_of;
use toolwright_toolfile::template::{Part, Template};

/// The text of a template that holds no placeholder, or the literal text it starts with.
fn literal_start(t: &Template) -> (&str, bool) {
    let whole = t.parts().iter().all(|p| matches!(p, Part::Literal(_)));
    match t.parts().first() {
        Some(Part::Literal(l)) => (l, whole),
        None => ("", true),
        _ => ("", false),
    }
}

fn has_placeholder(t: &Template) -> bool {
    t.parts().iter().any(|p| !matches!(p, Part::Literal(_)))
}

/// Refuses a shell's or interpreter's inline script holding a placeholder.
pub(super) fn check(program: &str, elems: &[Elem], at: &[Seg]) -> Result<(), Problem> {
    // Every template after the program, in argv order, with its path.
    let flat: Vec<(&Template, Vec<Seg>)> = elems
        .iter()
        .enumerate()
        .flat_map(|(i, e)| {
            e.templates()
                .iter()
                .enumerate()
                .map(move |(j, t)| (t, template_at(at, elems, i, j)))
        })
        .collect();
    let starts = std::iter::once((shell_of(program), 0)).chain(flat.iter().enumerate().filter_map(
        |(k, (t, _))| match literal_start(t) {
            (text, true) => Some((shell_of(text), k + 1)),
            _ => None,
        },
    ));
    for (shell, from) in starts {
        let Some(shell) = shell else { continue };
        let rest_is_script = shell.rest_is_script();
        let mut script_from: Option<usize> = None;
        for (k, (t, p)) in flat.iter().enumerate().skip(from) {
            if script_from.is_some_and(|s| rest_is_script || k == s) && has_placeholder(t) {
                return Err(refusal(p));
            }
            if script_from.is_some() {
                continue;
            }
            let (text, whole) = literal_start(t);
            if shell.runs_script(text) {
                if !whole {
                    // The script attached to the flag (`-e{x}`, `--eval={x}`, `/c{x}`).
                    return Err(refusal(p));
                }
                // `--command=SCRIPT` holds its script; otherwise the script comes next.
                let attached = text.contains('=') && !rest_is_script;
                script_from = Some(if attached { k } else { k + 1 });
            }
        }
    }
    Ok(())
}

fn refusal(at: &[Seg]) -> Problem {
    Problem::new(
        at.iter().cloned(),
        "a placeholder in a shell's inline script (after -c, /c, -e...) would run the argument as code; \
         pass it as a positional parameter after the script instead (sh -c 'grep -- \"$1\" f' sh {arg})",
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use toolwright_toolfile::input::InputInfo;
    use toolwright_toolfile::model::CommandSpec;

    /// Compiles `argv`: "ok", "refused at PATH" for an inline script, or the other problem.
    fn verdict(argv: Value, want: &str) {
        let input = InputInfo::of(&json!({
            "type": "object",
            "properties": {"x": {"type": "string"}, "f": {"type": "boolean"}},
            "required": ["x"]
        }));
        let spec: CommandSpec = serde_json::from_value(argv.clone()).unwrap();
        let got = match crate::command::CommandAction::compile(&spec, &input) {
            Ok(_) => "ok".into(),
            Err(p) if p.message.contains("inline script") => {
                format!("refused at {}", p.path_text())
            }
            Err(p) => format!("other: {p}"),
        };
        assert_eq!(got, want, "{argv}");
    }

    #[test]
    fn inline_scripts_with_placeholders_are_refused() {
        table! { verdict;
            (json!(["sh", "-c", "echo {x}"]), "refused at command[2]");
            (json!(["/bin/bash", "-ec", "{x}"]), "refused at command[2]");
            (json!(["bash", "-o", "pipefail", "-c", "ls | grep {x}"]), "refused at command[4]");
            (json!(["zsh", "-c", "echo ${HOME}"]), "refused at command[2]");
            (json!(["fish", "--command", "echo {x}"]), "refused at command[2]");
            (json!(["fish", "--command=echo {x}"]), "refused at command[1]");
            (json!(["/usr/bin/env", "bash", "-c", "ls {x}"]), "refused at command[3]");
            (json!(["timeout", "5", "sh", "-c", "ls {x}"]), "refused at command[4]");
            (json!(["sh", {"when": "f", "args": ["-c", "rm {x}"]}]), "refused at command[1].args[1]");
            (json!({"argv": ["sh", "-c", "echo {x}"]}), "refused at command.argv[2]");
            (json!(["cmd", "/c", "dir", "{x}"]), "refused at command[3]");
            (json!(["CMD.EXE", "/C{x}"]), "refused at command[1]");
            (json!(["pwsh", "-Command", "Get-Item", "{x}"]), "refused at command[3]");
            (json!(["powershell", "-c", "{x}"]), "refused at command[2]");
            (json!(["python3", "-c", "print({x})"]), "refused at command[2]");
            (json!(["perl", "-ne", "print if /{x}/"]), "refused at command[2]");
            (json!(["perl", "-e{x}"]), "refused at command[1]");
            (json!(["node", "--eval={x}"]), "refused at command[1]");
            (json!(["sh", "-c", "echo \"$1\"", "sh", "{x}"]), "ok");
            // Conservative: `sh` as $0 then `-c` reads like a second shell and its script.
            (json!(["sh", "-c", "echo \"$@\"", "sh", ["-c", "{x}"]]), "refused at command[4][1]");
            (json!(["fish", "--command=echo hi", "{x}"]), "ok");
            (json!(["bash", "/opt/script.sh", "{x}"]), "ok");
            (json!(["python3", "-I", "/opt/tool.py", "{x}"]), "ok");
            (json!(["grep", "-c", "{x}"]), "ok");
            (json!(["git", "-c", "core.pager=cat", "log"]), "ok");
        }
    }
}
