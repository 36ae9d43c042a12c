//! Files of declared tools (`toolwright serve --config FILE`): each tool's MCP definition
//! is linted with every rule, its action with the rules of `actions.rs`, and each finding
//! is placed by line and column in the file.

use serde_json::{Map, Value, json};
use toolwright_toolfile::error::Seg;
use toolwright_toolfile::{Document, Format};

use crate::{Options, Report, actions, lint_set};

/// The members of a declared tool that are not part of its MCP definition.
const ACTION_FIELDS: &[&str] = &["command", "http", "output", "timeout"];

/// Other spellings the loader accepts for definition members, and the member they mean.
const ALIASES: &[(&str, &str)] = &[
    ("input_schema", "inputSchema"),
    ("output_schema", "outputSchema"),
];

/// Whether `doc` is a file of declared tools rather than bare definitions: a TOML file
/// (only declared tools come in TOML), a config file with `servers:` or `gateway:`, or one
/// where some tool has an action, `output` or `timeout`. A seed-style list of definitions
/// without actions is linted as definitions ([`crate::lint`]), as before.
pub fn is_declared(doc: &Document) -> bool {
    doc.format == Format::Toml
        || !doc.servers.is_empty()
        || doc.gateway.is_some()
        || doc
            .tools
            .iter()
            .any(|t| ACTION_FIELDS.iter().any(|k| t.get(*k).is_some()))
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
        ] {
            assert_eq!(is_declared(&doc(name, text)), declared, "{text}");
        }
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
