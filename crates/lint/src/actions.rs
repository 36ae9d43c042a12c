//! Rules on a declared tool's action (`command` or `http`), read from the spec as the
//! loader reads it (`toolwright_toolfile::rules`), without compiling anything: templates
//! parse and name properties, a call cannot leave out what argv always needs, no shell
//! runs a script, the hints agree with the HTTP method, annotations are there.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use toolwright_toolfile::error::{Problem, Seg};
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::{ArgvElement, CommandSpec, HttpSpec};
use toolwright_toolfile::rules::{self, NameSite, Role, Site};
use toolwright_toolfile::sql::SqlSpec;
use toolwright_toolfile::template::{Part, Template};

use crate::finding::{Rule, Sink, push_pointer};

/// The fix for a shell running a script.
const SHELL_FIX: &str = "run the program itself, one argv element per argument (e.g. [\"grep\", \"-e\", \"{pattern}\", \"{path}\"]); for a pipeline, put it in a script file and pass the arguments as its own argv elements";

pub(crate) fn check(tool: &Value, sink: &mut Sink<'_>) {
    let Value::Object(map) = tool else {
        return;
    };
    let command = rules::read_part::<CommandSpec>(tool, "command");
    let http = rules::read_part::<HttpSpec>(tool, "http");
    let sql = rules::read_part::<SqlSpec>(tool, "sql");
    check_reading(tool, &command, &http, &sql, sink);
    let schema = map.get("inputSchema").or_else(|| map.get("input_schema"));
    let input = schema.map(InputInfo::of).unwrap_or_default();
    let annotations = map.get("annotations").and_then(Value::as_object);
    if map.get("annotations").is_none_or(Value::is_null) {
        sink.add(
            Rule::AnnotationsMissing,
            "/annotations",
            "the tool has no annotations, so it is served with the spec's defaults: not \
             read-only, destructive and open-world",
            "add annotations saying what the tool does, e.g. {readOnlyHint: true, openWorldHint: false} for one that only reads local data",
        );
    }

    let mut sites: Vec<Site<'_>> = Vec::new();
    let mut names: Vec<NameSite<'_>> = Vec::new();
    let mut read_one = false;
    if let Some(Ok(c)) = &command {
        // What the loader refuses (an empty argv, ...) it reports itself: `toolwright lint`
        // runs it beside these rules.
        read_one = true;
        let (s, n) = rules::command_sites(c);
        sites = s;
        names = n;
        shell(c, sink);
    }
    if let Some(Ok(h)) = &http {
        read_one = true;
        sites.extend(rules::http_sites(h));
        read_only_method(h, annotations, sink);
    }
    if let Some(Ok(s)) = &sql {
        read_one = true;
        // Known parameters count as uses; `sql::check` reports the unknown ones.
        names.extend(
            s.params
                .iter()
                .filter(|p| input.properties.contains_key(*p))
                .map(|p| NameSite {
                    name: p,
                    at: vec![Seg::Key("sql".into()), Seg::Key("params".into())],
                }),
        );
        crate::sql::check(s, &input, annotations, sink);
    }
    check_uses(&sites, &names, &input, read_one, sink);
}

/// What the loader would refuse in reading the tool's spec and its action (one action,
/// exactly), reported as lint findings.
fn check_reading(
    tool: &Value,
    command: &Option<Result<CommandSpec, Problem>>,
    http: &Option<Result<HttpSpec, Problem>>,
    sql: &Option<Result<SqlSpec, Problem>>,
    sink: &mut Sink<'_>,
) {
    if let Some(Err(problem)) = command {
        invalid(problem, sink);
    }
    if let Some(Err(problem)) = http {
        invalid(problem, sink);
    }
    if let Some(Err(problem)) = sql {
        invalid(problem, sink);
    }
    if let Err(problem) = rules::read_spec(tool) {
        let in_part = matches!(problem.at.first(), Some(Seg::Key(k)) if k == "command" || k == "http" || k == "sql");
        if !in_part {
            invalid(&problem, sink);
        }
    }
    match [command.is_some(), http.is_some(), sql.is_some()] {
        [false, false, false] => sink.add(
            Rule::ActionMissing,
            "",
            rules::NO_ACTION,
            "give the tool a `command` or an `http` request (or lint it as a plain definition, in a file without actions)",
        ),
        [_, _, true] if command.is_some() || http.is_some() => sink.add(
            Rule::DeclaredInvalid,
            "/sql",
            rules::TWO_ACTIONS,
            "split it into two tools, one per action",
        ),
        [true, true, _] => sink.add(
            Rule::DeclaredInvalid,
            "/http",
            rules::TWO_ACTIONS,
            "split it into two tools, one per action",
        ),
        _ => {}
    }
}

/// `readOnlyHint: true` on a request whose method changes things.
fn read_only_method(h: &HttpSpec, annotations: Option<&Map<String, Value>>, sink: &mut Sink<'_>) {
    let method = h.method.as_deref().unwrap_or("GET").to_ascii_uppercase();
    let read_only = annotations.and_then(|a| a.get("readOnlyHint")) == Some(&Value::Bool(true));
    if read_only && method != "GET" && method != "HEAD" {
        sink.add(
            Rule::HintReadOnlyMethod,
            "/annotations/readOnlyHint",
            format!(
                "readOnlyHint: true on a {method} request: clients may call a read-only tool \
                 without asking, but {method} is a method that changes things"
            ),
            "use GET (or HEAD) if the request only reads; otherwise set readOnlyHint: false",
        );
    }
}

/// Each placeholder and `when:` names a property of `input`, and (when an action was read)
/// each property is used somewhere.
fn check_uses(
    sites: &[Site<'_>],
    names: &[NameSite<'_>],
    input: &InputInfo,
    read_one: bool,
    sink: &mut Sink<'_>,
) {
    let mut used = BTreeSet::new();
    for site in sites {
        template(site, input, &mut used, sink);
    }
    for n in names {
        used.insert(n.name.to_owned());
        if !input.properties.contains_key(n.name) {
            sink.add(
                Rule::PlaceholderUnknown,
                pointer(&n.at),
                format!(
                    "`when: {}` names no property of inputSchema ({})",
                    n.name,
                    known(input)
                ),
                format!(
                    "add {} to inputSchema's properties, or test a property it has",
                    n.name
                ),
            );
        }
    }
    if read_one {
        for name in input.properties.keys().filter(|k| !used.contains(*k)) {
            sink.add(
                Rule::PropertyUnused,
                push_pointer(&push_pointer("/inputSchema", "properties"), name),
                format!(
                    "`{name}` is a property of inputSchema, but the action never uses it: a \
                     model may fill it in and nothing happens"
                ),
                format!("use it in the action ({{{name}}}) or remove it from inputSchema"),
            );
        }
    }
}

/// The loader refuses the tool.
fn invalid(problem: &Problem, sink: &mut Sink<'_>) {
    sink.add(
        Rule::DeclaredInvalid,
        pointer(&problem.at),
        format!("the loader refuses the tool: {}", problem.message),
        "write the field as the README's reference of declared tools describes it",
    );
}

/// The rules on one template.
fn template(site: &Site<'_>, input: &InputInfo, used: &mut BTreeSet<String>, sink: &mut Sink<'_>) {
    let at = pointer(&site.at);
    let t = match Template::parse(site.text) {
        Ok(t) => t,
        Err(e) => {
            sink.add(
                Rule::TemplateInvalid,
                at,
                e.to_string(),
                "write {name} for an argument, ${VAR} for a variable, {{ and }} for literal braces",
            );
            return;
        }
    };
    if site.role == Role::Program && t.parts().iter().any(|p| !matches!(p, Part::Literal(_))) {
        sink.add(
            Rule::ProgramPlaceholder,
            at.clone(),
            format!(
                "the program {:?} holds a placeholder: an argument or the environment would \
                 choose what runs",
                site.text
            ),
            "name the program literally (a path or a name on PATH); pass arguments after it",
        );
    }
    for a in t.args() {
        used.insert(a.name.clone());
        if !input.properties.contains_key(&a.name) {
            let message = input
                .check_ref(a, &site.at)
                .err()
                .map_or_else(String::new, |p| p.message);
            sink.add(
                Rule::PlaceholderUnknown,
                at.clone(),
                message,
                format!(
                    "add {} to inputSchema's properties, or name a property it has",
                    a.name
                ),
            );
            continue;
        }
        // In the body, exactly "{name}" is the argument's JSON value, of any type.
        let whole_value = site.role == Role::Body && t.whole_arg().is_some();
        if !whole_value && let Err(p) = input.check_ref(a, &site.at) {
            sink.add(
                Rule::PlaceholderType,
                at.clone(),
                p.message,
                "give the property a type this position takes, or use {name...} for an array in argv",
            );
        }
        if site.role == Role::Mandatory && !input.required.contains(&a.name) {
            sink.add(
                Rule::ArgvNotRequired,
                at.clone(),
                rules::not_required(&a.name),
                format!(
                    "write the element as a group ([\"...\", \"{{{}}}\"]) or add {} to required",
                    a.name, a.name
                ),
            );
        }
    }
}

/// `shell-program`: a shell told to run a script given in argv. `env` in front of the
/// shell (`env sh -c`, `/usr/bin/env -i bash -c`) is looked through.
fn shell(spec: &CommandSpec, sink: &mut Sink<'_>) {
    let (argv, base) = match spec {
        CommandSpec::Argv(a) => (a.as_slice(), "/command"),
        CommandSpec::Full(o) => (o.argv.as_slice(), "/command/argv"),
    };
    let mut start = 0;
    if argv
        .first()
        .and_then(literal)
        .is_some_and(|p| file_name(p) == "env")
    {
        start = 1;
        while let Some(text) = argv.get(start).and_then(literal) {
            if text.starts_with('-') || text.contains('=') {
                start += 1;
            } else {
                break;
            }
        }
    }
    let Some(program) = argv.get(start).and_then(literal) else {
        return;
    };
    // The rule is about shells; interpreters' inline code is refused by the loader alone.
    let Some(kind) = rules::shell_of(program).filter(|s| !s.is_interpreter()) else {
        return;
    };
    for (i, e) in argv.iter().enumerate().skip(start + 1) {
        let texts: Vec<(String, &str)> = match e {
            ArgvElement::One(t) => vec![(format!("{base}/{i}"), t.as_str())],
            ArgvElement::Group(g) => g
                .iter()
                .enumerate()
                .map(|(j, t)| (format!("{base}/{i}/{j}"), t.as_str()))
                .collect(),
            ArgvElement::When(w) => w
                .args
                .iter()
                .enumerate()
                .map(|(j, t)| (format!("{base}/{i}/args/{j}"), t.as_str()))
                .collect(),
        };
        if let Some((at, flag)) = texts.into_iter().find(|(_, t)| kind.runs_script(t)) {
            sink.add(
                Rule::ShellProgram,
                at,
                format!(
                    "`{} {flag}` runs a script through a shell: a shell reads arguments as code, \
                     which is the injection path declared tools exist to close",
                    file_name(program)
                ),
                SHELL_FIX,
            );
            return;
        }
    }
}

/// The text of an element that is one argument.
fn literal(e: &ArgvElement) -> Option<&str> {
    match e {
        ArgvElement::One(t) => Some(t),
        _ => None,
    }
}

fn file_name(program: &str) -> &str {
    program.rsplit(['/', '\\']).next().unwrap_or(program)
}

fn known(input: &InputInfo) -> String {
    if input.properties.is_empty() {
        "inputSchema has no properties".to_owned()
    } else {
        let names: Vec<&str> = input.properties.keys().map(String::as_str).collect();
        format!("its properties are: {}", names.join(", "))
    }
}

/// A path inside a tool as a JSON Pointer.
fn pointer(at: &[Seg]) -> String {
    let mut p = String::new();
    for s in at {
        p = match s {
            Seg::Key(k) => push_pointer(&p, k),
            Seg::Index(i) => push_pointer(&p, &i.to_string()),
        };
    }
    p
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
