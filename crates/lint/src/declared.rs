//! Files of declared tools (`toolwright serve --config FILE`): each tool's MCP definition
//! is linted with every rule, its action with the rules of `actions.rs`, and each finding
//! is placed by line and column in the file.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use toolwright_toolfile::error::{FileProblem, Seg};
use toolwright_toolfile::{Document, Format};

use crate::finding::push_pointer;
use crate::keywords::TOOL_FIELDS;
use crate::{Finding, Options, Report, Rule, Severity, actions, lint_set};

/// The members of a declared tool that are not part of its MCP definition.
const ACTION_FIELDS: &[&str] = &[
    "command",
    "http",
    "sql",
    "output",
    "timeout",
    "task",
    "arguments",
];

/// Other spellings the loader accepts for definition members, and the member they mean.
const ALIASES: &[(&str, &str)] = &[
    ("input_schema", "inputSchema"),
    ("output_schema", "outputSchema"),
];

/// Whether `doc` is a file of declared tools rather than bare definitions: a TOML file
/// (only declared tools come in TOML), a config file with `servers:`, `gateway:` or
/// `builtins:`, or one where some tool has an action, `output` or `timeout`, or a member
/// that no MCP tool has (`cmd:` for `command:`: only the loader knows it is wrong). A seed-style list of
/// definitions without actions is linted as definitions ([`crate::lint`]), as before.
pub fn is_declared(doc: &Document) -> bool {
    doc.format == Format::Toml
        || !doc.servers.is_empty()
        || doc.gateway.is_some()
        || doc.builtins.is_some()
        || !doc.sources.is_empty()
        || doc.tools.iter().any(looks_declared)
}

/// Whether a document that [`Document::parse`] refused is still meant as a tool file (so
/// its problem is the loader's to report, not the definitions' reader's): a mapping with a
/// member only tool files have (`servers:`, `gateway:`), or tools of which one looks
/// declared (see [`is_declared`]).
pub fn looks_like_a_tool_file(doc: &Value) -> bool {
    let tools = match doc {
        Value::Object(m) => {
            if m.keys().any(|k| {
                k != "tools" && toolwright_toolfile::model::FILE_KEYS.contains(&k.as_str())
            }) {
                return true;
            }
            m.get("tools")
        }
        Value::Array(_) => Some(doc),
        _ => None,
    };
    tools
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(looks_declared))
}

/// The report of a tool file that the loader refuses as a whole (`problem`, from
/// [`Document::read`] or [`Document::parse`]): that one error, placed.
pub fn refused_file(problem: &FileProblem, options: &Options) -> Report {
    let mut report = Report {
        file: Some(problem.file.display().to_string()),
        ..Report::default()
    };
    if !options.disabled.contains(&Rule::DeclaredInvalid) {
        let fix = "`toolwright serve --config` refuses the file until this is fixed";
        report.outside.push(refusal(
            0,
            String::new(),
            pointer_of(&problem.problem.at),
            problem,
            fix,
        ));
    }
    report
}

/// A tool with an action's member, or a named tool with a member outside the MCP tool's
/// (and not a vendor's `x-` one).
fn looks_declared(tool: &Value) -> bool {
    tool.as_object().is_some_and(|m| {
        let named = m.get("name").is_some_and(Value::is_string);
        m.keys().any(|k| {
            ACTION_FIELDS.contains(&k.as_str())
                || named
                    && !(TOOL_FIELDS.contains(&k.as_str())
                        || ALIASES.iter().any(|(alias, _)| alias == k)
                        || k.starts_with("x-"))
        })
    })
}

/// Adds what the loader refuses in `doc` (the problems `toolwright serve --config` prints,
/// placed as it places them) to `doc`'s report, as `declared-invalid` errors. A problem
/// that the report already has an error for (the same tool, at the same place or pointer)
/// is not repeated: that error is placed where the loader places the problem. Problems of
/// other files are left out.
pub fn add_refusals(
    report: &mut Report,
    doc: &Document,
    problems: &[FileProblem],
    options: &Options,
) {
    let fix = "`toolwright serve --config` refuses the file until this is fixed; the README's reference of declared tools says how each field is written";
    // Where each tool's findings are (lint's own, before any refusal joins them).
    let mut of_tool: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, f) in report.findings.iter().enumerate() {
        of_tool.entry(f.index).or_default().push(i);
    }
    for p in problems.iter().filter(|p| p.file == doc.file) {
        let pointer = pointer_of(&p.problem.at);
        let Some((index, _)) = &p.tool else {
            let subject = match p.problem.at.as_slice() {
                [Seg::Key(s), Seg::Key(name), ..] if s == "servers" => format!("server {name}"),
                [Seg::Key(g), ..] if g == "gateway" => "gateway".to_owned(),
                _ => String::new(),
            };
            let known = report.outside.iter().any(|f| {
                f.severity == Severity::Error
                    && (f.location == p.location && p.location.is_some() || f.pointer == pointer)
            });
            if !known && !options.disabled.contains(&Rule::DeclaredInvalid) {
                report.outside.push(refusal(0, subject, pointer, p, fix));
            }
            continue;
        };
        let index = *index;
        let same = of_tool
            .get(&index)
            .into_iter()
            .flatten()
            .copied()
            .find(|&i| {
                let f = &report.findings[i];
                f.severity == Severity::Error
                    && (f.location == p.location && p.location.is_some() || f.pointer == pointer)
            });
        if let Some(i) = same {
            if p.location.is_some() {
                report.findings[i].location = p.location;
            }
            continue;
        }
        if options.disabled.contains(&Rule::DeclaredInvalid) {
            continue;
        }
        let tool = report
            .tools
            .get(index)
            .filter(|t| t.index == index)
            .map_or_else(|| format!("#{index}"), |t| t.name.clone());
        report.findings.push(refusal(index, tool, pointer, p, fix));
    }
    report.findings.sort_by(|a, b| {
        (a.index, a.rule, &a.pointer, &a.message).cmp(&(b.index, b.rule, &b.pointer, &b.message))
    });
}

fn refusal(index: usize, tool: String, pointer: String, p: &FileProblem, fix: &str) -> Finding {
    Finding {
        rule: Rule::DeclaredInvalid,
        severity: Rule::DeclaredInvalid.severity(),
        index,
        tool,
        pointer,
        message: format!(
            "the loader refuses {}: {}",
            if p.tool.is_some() {
                "the tool"
            } else {
                "the file"
            },
            p.problem.message
        ),
        fix: fix.to_owned(),
        location: p.location,
    }
}

/// A path as a JSON Pointer.
fn pointer_of(at: &[Seg]) -> String {
    at.iter().fold(String::new(), |p, s| match s {
        Seg::Key(k) => push_pointer(&p, k),
        Seg::Index(i) => push_pointer(&p, &i.to_string()),
    })
}

/// Lints the tools of a file of declared tools as one server's set: every rule on each
/// tool's MCP definition (the tool without `command`, `http`, `output` and `timeout`, with
/// the loader's default `inputSchema`), and the action rules. Each finding carries its
/// line and column, and the report names the file.
pub fn lint_declared(doc: &Document, options: &Options) -> Report {
    let definitions: Vec<Value> = doc.tools.iter().map(definition_of).collect();
    let mut report = lint_set(&definitions, options, |index, sink| {
        actions::check(&doc.tools[index], sink);
    });
    for f in &mut report.findings {
        let tool = &doc.tools[f.index];
        let mut path = path_of(tool, &f.pointer);
        // A finding on the tool as a whole, or on a member it lacks: its name's line.
        if !resolves(tool, &path) && tool.get("name").is_some() {
            path = vec![Seg::Key("name".into())];
        }
        f.location = doc.locate(f.index, &path);
    }
    report.file = Some(doc.file.display().to_string());
    report
}

/// The MCP definition of a declared tool, as the loader serves it.
fn definition_of(tool: &Value) -> Value {
    let Value::Object(map) = tool else {
        return tool.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        if ACTION_FIELDS.contains(&k.as_str()) {
            continue;
        }
        let key = ALIASES
            .iter()
            .find(|(alias, canonical)| *alias == k.as_str() && !map.contains_key(*canonical))
            .map_or(k.as_str(), |(_, canonical)| canonical);
        out.insert(key.to_owned(), v.clone());
    }
    out.entry("inputSchema")
        .or_insert_with(|| json!({"type": "object"}));
    Value::Object(out)
}

/// The path in the file of a JSON Pointer into a tool's definition (or the tool itself):
/// tokens are array indices where the tool has an array, and an alias the file uses
/// replaces the member it stands for.
fn path_of(tool: &Value, pointer: &str) -> Vec<Seg> {
    let mut path = Vec::new();
    let mut here = Some(tool);
    for (i, raw) in pointer.split('/').skip(1).enumerate() {
        let token = raw.replace("~1", "/").replace("~0", "~");
        let seg = match here {
            Some(Value::Array(_)) => match token.parse::<usize>() {
                Ok(n) => Seg::Index(n),
                Err(_) => Seg::Key(token),
            },
            Some(Value::Object(m)) if i == 0 && !m.contains_key(&token) => ALIASES
                .iter()
                .find(|(alias, canonical)| *canonical == token && m.contains_key(*alias))
                .map_or(Seg::Key(token), |(alias, _)| Seg::Key((*alias).to_owned())),
            _ => Seg::Key(token),
        };
        here = match (&seg, here) {
            (Seg::Index(n), Some(Value::Array(a))) => a.get(*n),
            (Seg::Key(k), Some(Value::Object(m))) => m.get(k),
            _ => None,
        };
        path.push(seg);
    }
    path
}

/// Whether every step of `path` is in `tool` (and the path is not the tool itself).
fn resolves(tool: &Value, path: &[Seg]) -> bool {
    let mut here = tool;
    for seg in path {
        let next = match (seg, here) {
            (Seg::Index(n), Value::Array(a)) => a.get(*n),
            (Seg::Key(k), Value::Object(m)) => m.get(k),
            _ => None,
        };
        match next {
            Some(v) => here = v,
            None => return false,
        }
    }
    !path.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn doc(name: &str, text: &str) -> Document {
        let format = Format::of(Path::new(name)).unwrap();
        Document::parse(Path::new(name), format, text.to_owned()).unwrap()
    }

    #[test]
    fn which_files_are_declared() {
        for (name, text, declared) in [
            (
                "a.yaml",
                "tools:\n  - name: a\n    command: [\"true\"]\n",
                true,
            ),
            (
                "a.json",
                r#"[{"name": "a", "http": {"url": "http://h/"}}]"#,
                true,
            ),
            (
                "a.json",
                r#"[{"name": "a", "inputSchema": {"type": "object"}}]"#,
                false,
            ),
            ("a.yaml", "tools:\n  - name: a\n", false),
            ("a.toml", "[[tools]]\nname = \"a\"\n", true),
            (
                "a.yaml",
                "tools:\n  - name: a\nservers:\n  s: {url: 'http://h'}\n",
                true,
            ),
            ("a.json", r#"{"gateway": {}}"#, true),
            // `cmd` is no member of an MCP tool: only the loader knows what is wrong.
            ("a.yaml", "tools:\n  - name: a\n    cmd: [ls]\n", true),
            (
                "a.json",
                r#"[{"name": "a", "x-vendor": 1, "input_schema": {}}]"#,
                false,
            ),
        ] {
            assert_eq!(is_declared(&doc(name, text)), declared, "{text}");
        }
    }

    #[test]
    fn which_refused_documents_are_tool_files() {
        for (doc, tool_file) in [
            (
                json!({"tools": [{"name": "a", "command": ["ls"]}], "server": {}}),
                true,
            ),
            (json!({"servers": 3}), true),
            (json!([{"name": "a", "cmd": ["ls"]}]), true),
            (json!({"tools": [{"name": "a"}], "nextCursor": "2"}), false),
            (json!({"name": "a", "inputSchema": {}}), false),
            (json!("a"), false),
        ] {
            assert_eq!(looks_like_a_tool_file(&doc), tool_file, "{doc}");
        }
    }

    #[test]
    fn refusals_join_the_report_once_at_the_loaders_place() {
        use toolwright_toolfile::error::{Location, Problem};
        let d = doc(
            "a.yaml",
            "tools:\n  - name: a\n    command: [\"wc\", \"{x}\"]\n    output: {parse: regex, pattern: '('}\n",
        );
        let mut report = lint_declared(&d, &Options::default());
        let unknown = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::PlaceholderUnknown)
            .cloned()
            .unwrap();
        let placed = |at: Vec<Seg>, message: &str| {
            let p = d.problem(0, Problem::new(at, message));
            assert!(p.location.is_some());
            p
        };
        let outside = FileProblem {
            file: d.file.clone(),
            location: Some(Location { line: 9, column: 1 }),
            tool: None,
            problem: Problem::new(["servers", "s", "url"], "not a URL"),
        };
        let mut other_file = outside.clone();
        other_file.file = "b.yaml".into();
        let problems = [
            placed(vec!["command".into(), 1.into()], "names no property"),
            placed(vec!["output".into(), "pattern".into()], "regex parse error"),
            outside,
            other_file,
        ];
        let errors = report.count(Severity::Error);
        add_refusals(&mut report, &d, &problems, &Options::default());
        // The argv's problem is lint's placeholder-unknown; the pattern's is new.
        assert_eq!(report.count(Severity::Error), errors + 2);
        let pattern = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::DeclaredInvalid)
            .unwrap();
        assert_eq!(pattern.pointer, "/output/pattern");
        assert_eq!(pattern.location.map(|l| l.line), Some(4));
        assert!(
            pattern.message.ends_with("regex parse error"),
            "{}",
            pattern.message
        );
        assert!(report.findings.contains(&unknown));
        assert_eq!(report.outside.len(), 1);
        assert_eq!(report.outside[0].tool, "server s");
        let human = report.render_human(false);
        assert!(
            human.starts_with("server s\n  error[declared-invalid] a.yaml:9:1 /servers/s/url\n"),
            "{human}"
        );
        let json = report.to_json();
        assert_eq!(json["findings"][0]["in"], "server s");
        assert_eq!(json["findings"][0]["tool"], Value::Null);
        // --ignore declared-invalid leaves the refusals out.
        let mut quiet = lint_declared(&d, &Options::default());
        let ignoring = Options {
            disabled: vec![Rule::DeclaredInvalid],
        };
        add_refusals(&mut quiet, &d, &problems, &ignoring);
        assert_eq!(quiet.count(Severity::Error), errors);
    }

    #[test]
    fn definitions_drop_the_action_and_take_the_defaults() {
        assert_eq!(
            definition_of(&json!({"name": "a", "command": ["x"], "output": {}, "timeout": "5s"})),
            json!({"name": "a", "inputSchema": {"type": "object"}})
        );
        assert_eq!(
            definition_of(&json!({"name": "a", "input_schema": {"type": "object", "x": 1}})),
            json!({"name": "a", "inputSchema": {"type": "object", "x": 1}})
        );
        assert_eq!(definition_of(&json!("a")), json!("a"));
    }

    #[test]
    fn pointers_become_paths_in_the_file() {
        let tool = json!({"name": "a", "command": ["x", ["-n", "{n}"]], "input_schema": {"properties": {"0": {}}}});
        let text = |p: &str| toolwright_toolfile::error::path_text(&path_of(&tool, p));
        assert_eq!(text("/command/1/1"), "command[1][1]");
        assert_eq!(
            text("/inputSchema/properties/0"),
            "input_schema.properties.0"
        );
        assert_eq!(text("/annotations"), "annotations");
        assert_eq!(text(""), "");
        assert!(resolves(&tool, &path_of(&tool, "/command/1/1")));
        assert!(!resolves(&tool, &path_of(&tool, "/annotations")));
        assert!(!resolves(&tool, &[]));
        assert_eq!(
            toolwright_toolfile::error::path_text(&path_of(&json!({}), "/a~1b")),
            "a/b"
        );
    }
}
