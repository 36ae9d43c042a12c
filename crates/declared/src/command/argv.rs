//! argv elements: compiled once (program literal, placeholders checked, mandatory elements
//! only naming required arguments), filled in per call (one value, one element).

use super::parse;
use crate::error::{Problem, RunError, Seg};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::ArgvElement;
use toolwright_toolfile::paths::Paths;
use toolwright_toolfile::template::{Refusal, RenderError, Template, present};

/// One compiled argv element after the program.
#[derive(Debug)]
pub(super) enum Elem {
    /// Always in argv: an absent argument is a call error.
    One(Template),
    /// Kept only when every argument its templates name is present.
    Group(Vec<Template>),
    /// Kept only when `when` is present and not `false`.
    When {
        /// The deciding argument.
        when: String,
        /// The group's templates.
        args: Vec<Template>,
    },
}

impl Elem {
    /// The templates, in argv order.
    pub(super) fn templates(&self) -> &[Template] {
        match self {
            Elem::One(t) => std::slice::from_ref(t),
            Elem::Group(ts) | Elem::When { args: ts, .. } => ts,
        }
    }

    /// Adds the arguments this element names to `out`.
    pub(super) fn names(&self, out: &mut BTreeSet<String>) {
        if let Elem::When { when, .. } = self {
            out.insert(when.clone());
        }
        for t in self.templates() {
            out.extend(t.args().map(|a| a.name.clone()));
        }
    }
}

/// The path of template `j` of element `i` (`command[2]`, `command[2][1]`,
/// `command[2].args[1]`).
pub(super) fn template_at(at: &[Seg], elems: &[Elem], i: usize, j: usize) -> Vec<Seg> {
    let mut p = at.to_vec();
    p.push(Seg::Index(i + 1));
    match &elems[i] {
        Elem::One(_) => {}
        Elem::Group(_) => p.push(Seg::Index(j)),
        Elem::When { .. } => {
            p.push("args".into());
            p.push(Seg::Index(j));
        }
    }
    p
}

/// Compiles argv: the program (literal text) and the elements after it.
pub(super) fn compile(
    argv: &[ArgvElement],
    input: &InputInfo,
    at: &[Seg],
) -> Result<(String, Vec<Elem>), Problem> {
    let here = |i: usize| {
        let mut p = at.to_vec();
        p.push(Seg::Index(i));
        p
    };
    let Some(first) = argv.first() else {
        return Err(Problem::new(
            at.iter().cloned(),
            "argv is empty: its first element is the program to run",
        ));
    };
    let program = compile_program(first, &here(0))?;
    let mut elems = Vec::with_capacity(argv.len() - 1);
    for (i, e) in argv.iter().enumerate().skip(1) {
        let at = here(i);
        elems.push(match e {
            ArgvElement::One(text) => {
                let t = parse(text, &at)?;
                input.check_template(&t, &at)?;
                if let Some(a) = t.args().find(|a| !input.required.contains(&a.name)) {
                    return Err(Problem::new(
                        at,
                        format!(
                            "`{0}` is not required, so a call can leave it out; put the element in an optional group ([...]) or add {0} to required",
                            a.name
                        ),
                    ));
                }
                Elem::One(t)
            }
            ArgvElement::Group(texts) => {
                if texts.is_empty() {
                    return Err(Problem::new(at, "an empty group ([]) adds nothing"));
                }
                Elem::Group(compile_all(texts, input, &at, &[])?)
            }
            ArgvElement::When(w) => {
                if !input.properties.contains_key(&w.when) {
                    let mut p = at.clone();
                    p.push("when".into());
                    return Err(Problem::new(
                        p,
                        format!("`when: {}` names no property of inputSchema", w.when),
                    ));
                }
                Elem::When {
                    when: w.when.clone(),
                    args: compile_all(&w.args, input, &at, &["args"])?,
                }
            }
        });
    }
    Ok((program, elems))
}

fn compile_all(
    texts: &[String],
    input: &InputInfo,
    at: &[Seg],
    under: &[&str],
) -> Result<Vec<Template>, Problem> {
    texts
        .iter()
        .enumerate()
        .map(|(j, text)| {
            let mut p = at.to_vec();
            p.extend(under.iter().map(|k| Seg::from(*k)));
            p.push(Seg::Index(j));
            let t = parse(text, &p)?;
            input.check_template(&t, &p)?;
            Ok(t)
        })
        .collect()
}

/// argv[0]: literal text, a bare name (looked up on the child's PATH) or an absolute path.
fn compile_program(e: &ArgvElement, at: &[Seg]) -> Result<String, Problem> {
    let refuse = |m: &str| Err(Problem::new(at.iter().cloned(), m));
    let ArgvElement::One(text) = e else {
        return refuse("the program (argv[0]) is one string, not a group");
    };
    let t = parse(text, at)?;
    if t.args().next().is_some() || t.env_vars().next().is_some() {
        return refuse(
            "the program (argv[0]) is literal text: a placeholder or ${VAR} there would let a value choose what runs",
        );
    }
    let program: String = t
        .parts()
        .iter()
        .filter_map(|p| match p {
            toolwright_toolfile::template::Part::Literal(l) => Some(l.as_str()),
            _ => None,
        })
        .collect();
    if program.is_empty() || program.contains('\0') {
        return refuse("the program (argv[0]) is empty");
    }
    if program.contains('/') && !Path::new(&program).is_absolute() {
        return refuse(
            "the program is a bare name (looked up on PATH) or an absolute path; a relative path would depend on the working directory",
        );
    }
    Ok(program)
}

/// Identity encoding: argv elements carry values as they are.
pub(super) fn verbatim(s: &str) -> Result<Cow<'_, str>, Refusal> {
    Ok(Cow::Borrowed(s))
}

/// The server's own environment, for `${VAR}`.
pub(super) fn server_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// The argv after the program for a call with `args`.
/// `{name:path}` values are opened in `paths`.
pub(super) fn build(
    elems: &[Elem],
    args: &Map<String, Value>,
    paths: &mut Paths<'_>,
) -> Result<Vec<String>, RunError> {
    let mut out = Vec::new();
    for e in elems {
        let keep = match e {
            Elem::One(_) => true,
            Elem::Group(ts) => ts.iter().all(|t| t.is_complete(args)),
            Elem::When { when, .. } => {
                present(args, when) && args.get(when) != Some(&Value::Bool(false))
            }
        };
        if keep {
            for t in e.templates() {
                push(t, args, paths, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// Fills one template in: one element, or one per item for `{x...}`.
fn push(
    t: &Template,
    args: &Map<String, Value>,
    paths: &mut Paths<'_>,
    out: &mut Vec<String>,
) -> Result<(), RunError> {
    let missing = || {
        let name = t
            .args()
            .find(|a| !present(args, &a.name))
            .map(|a| a.name.clone())
            .unwrap_or_default();
        RunError::Missing(name)
    };
    let Some(a) = t.spread() else {
        let s = t
            .render_in(args, &server_env, &verbatim, paths)?
            .ok_or_else(missing)?;
        out.push(s);
        return Ok(());
    };
    let value = args
        .get(&a.name)
        .filter(|v| !v.is_null())
        .ok_or_else(missing)?;
    let Value::Array(items) = value else {
        return Err(RenderError::Refused {
            name: a.name.clone(),
            reason: format!(
                "{{{}...}} spreads an array, and this value is not one",
                a.name
            ),
        }
        .into());
    };
    for item in items {
        if matches!(item, Value::Null | Value::Array(_) | Value::Object(_)) {
            return Err(RenderError::NotScalar {
                name: a.name.clone(),
                kind: "an array holding a null, an array or an object",
            }
            .into());
        }
        let text = a.value_text(item, true, paths)?;
        out.push(text.into_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_toolfile::model::CommandSpec;

    fn input() -> InputInfo {
        InputInfo::of(&json!({
            "type": "object",
            "properties": {
                "x": {"type": "string"}, "opt": {"type": "string"}, "n": {"type": "integer"},
                "flag": {"type": "boolean"}, "files": {"type": "array"}, "any": {}
            },
            "required": ["x", "files"]
        }))
    }

    fn compiled(argv: &Value) -> Result<(String, Vec<Elem>), Problem> {
        let spec: CommandSpec = serde_json::from_value(argv.clone()).unwrap();
        compile(&spec.options().argv, &input(), &["command".into()])
    }

    /// Compiles `argv`: "ok", or the problem's path and message, which must start as `want`.
    fn refuses(argv: Value, want: &str) {
        let got = match compiled(&argv) {
            Ok(_) => "ok".into(),
            Err(p) => format!("{}: {}", p.path_text(), p.message),
        };
        assert!(got.starts_with(want), "{argv}: got {got:?}, want {want:?}");
    }

    #[test]
    fn compile_refuses() {
        table! { refuses;
            (json!([]), "command: argv is empty");
            (json!(["{x}"]), "command[0]: the program (argv[0]) is literal");
            (json!(["${HOME}/bin/t"]), "command[0]: the program (argv[0]) is literal");
            (json!([["echo"]]), "command[0]: the program (argv[0]) is one string");
            (json!(["bin/tool"]), "command[0]: the program is a bare name");
            (json!(["echo", "{opt}"]), "command[1]: `opt` is not required, so a call can leave it out");
            (json!(["echo", "--o={n}"]), "command[1]: `n` is not required");
            (json!(["echo", "x", "{nope}"]), "command[2]: placeholder {nope} names no property");
            (json!(["echo", ["-o", "{nope}"]]), "command[1][1]: placeholder {nope}");
            (json!(["echo", {"when": "nope", "args": ["-a"]}]), "command[1].when: `when: nope`");
            (json!(["echo", {"when": "flag", "args": ["{nope}"]}]), "command[1].args[0]: placeholder");
            (json!(["echo", "{x"]), "command[1]: template \"{x\"");
            (json!(["echo", "{x...}"]), "command[1]: {x...} spreads an array, but `x`");
            (json!(["echo", "{files}"]), "command[1]: placeholder {files} takes one value");
            (json!(["echo", []]), "command[1]: an empty group");
            (json!(["echo", "{{literal}}"]), "ok");
            (json!(["/bin/echo", "{x}", "{files...}"]), "ok");
            (json!(["echo", ["--opt", "{opt}"], {"when": "flag", "args": ["-f"]}]), "ok");
        }
    }

    /// Builds argv for `args`: the elements joined by `|`, or "error: " and the error's
    /// text, which must start as `want`.
    fn builds(argv: Value, args: Value, want: &str) {
        let (_, elems) = compiled(&argv).unwrap();
        let got = match build(&elems, args.as_object().unwrap(), &mut Paths::new(&[])) {
            Ok(v) => v.join("|"),
            Err(e) => format!("error: {e}"),
        };
        assert!(
            got.starts_with(want),
            "{argv} {args}: got {got:?}, want {want:?}"
        );
        assert!(
            !want.is_empty() || got.is_empty(),
            "{argv} {args}: got {got:?}"
        );
    }

    #[test]
    fn builds_argv() {
        table! { builds;
            (json!(["e", "{x}"]), json!({"x": "; rm -rf /", "files": []}), "; rm -rf /");
            (json!(["e", "{x}"]), json!({"x": "$(touch /tmp/x)", "files": []}), "$(touch /tmp/x)");
            (json!(["e", "{x}"]), json!({"x": "`id` *", "files": []}), "`id` *");
            (json!(["e", "{x}"]), json!({"x": "a b\nc", "files": []}), "a b\nc");
            (json!(["e", "{x}"]), json!({"x": "--output=/etc/x", "files": []}), "error: argument `x` starts with '-'");
            (json!(["e", "{x:dash}"]), json!({"x": "-v", "files": []}), "-v");
            (json!(["e", "--name={x}"]), json!({"x": "-v", "files": []}), "--name=-v");
            (json!(["e", "{x}"]), json!({"x": "a\u{0}b", "files": []}), "error: argument `x` contains a NUL");
            (json!(["e", "{x}"]), json!({"files": []}), "error: argument `x` is needed");
            (json!(["e", ["-o", "{opt}"], "{x}"]), json!({"x": "1", "files": []}), "1");
            (json!(["e", ["-o", "{opt}"], "{x}"]), json!({"x": "1", "opt": null, "files": []}), "1");
            (json!(["e", ["-o", "{opt}"], "{x}"]), json!({"x": "1", "opt": "v", "files": []}), "-o|v|1");
            (json!(["e", ["-o", "{opt}"]]), json!({"opt": "-rf", "files": []}), "error: argument `opt` starts with '-'");
            (json!(["e", ["-n", "{n}"]]), json!({"n": 3, "files": []}), "-n|3");
            (json!(["e", {"when": "flag", "args": ["-f"]}]), json!({"flag": true, "files": []}), "-f");
            (json!(["e", {"when": "flag", "args": ["-f"]}]), json!({"flag": false, "files": []}), "");
            (json!(["e", {"when": "flag", "args": ["-f"]}]), json!({"files": []}), "");
            (json!(["e", {"when": "any", "args": ["-a"]}]), json!({"any": 0, "files": []}), "-a");
            (json!(["e", {"when": "flag", "args": ["{opt}"]}]), json!({"flag": true, "files": []}), "error: argument `opt` is needed");
            (json!(["e", "{files...}"]), json!({"files": ["a b", "c", 4]}), "a b|c|4");
            (json!(["e", "{files...}"]), json!({"files": []}), "");
            (json!(["e", "{files...}"]), json!({"files": ["ok", "-rf"]}), "error: argument `files` starts with '-'");
            (json!(["e", "{files:dash...}"]), json!({"files": ["-rf"]}), "-rf");
            (json!(["e", "{files...}"]), json!({"files": [["a"]]}), "error: argument `files` is an array holding");
            (json!(["e", "{files...}"]), json!({"files": "a"}), "error: argument `files`: {files...} spreads");
            (json!(["e", ["--", "{files...}"]]), json!({"files": ["a"]}), "--|a");
        }
    }
}
