//! `builtins:`: which of the server's built-in tools a set of files asks for.
//!
//! A server started with tool files serves only the built-in tools they name: a pack of
//! declared tools, or a gateway in front of other servers, is exactly what its files say,
//! and a tool that can reach the host (`search_files`, `take_screenshot`) is never served
//! because nobody said otherwise. Without any file the server serves every built-in tool.
//!
//! `builtins: all` asks for every one; `builtins: [add, search_files]` for those named;
//! `builtins: []` (or no `builtins:`) for none. Several files ask for the union of what
//! each names. The names are checked against the ones the server has, which the caller
//! passes in (this crate knows nothing of the tools themselves).

use crate::document::Document;
use crate::error::{FileProblem, LoadError, Problem, Seg};
use serde_json::Value;

/// Which built-in tools to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builtins {
    /// Every one.
    All,
    /// Those named, in the order the server registers them.
    Named(Vec<String>),
}

impl Builtins {
    /// Whether the built-in tool `name` is served.
    pub fn serves(&self, name: &str) -> bool {
        match self {
            Builtins::All => true,
            Builtins::Named(names) => names.iter().any(|n| n == name),
        }
    }
}

/// What `docs` ask for: [`Builtins::All`] when there are no documents (a server without
/// files), else the union of their `builtins:` (none when no file says). `known` is the
/// server's built-in tools' names, in registration order.
///
/// # Errors
///
/// [`LoadError::Problems`], each placed: a `builtins:` that is neither `all` nor a list of
/// names, a name that is no built-in tool (the known ones are listed), a name given twice.
pub fn read(docs: &[Document], known: &[&str]) -> Result<Builtins, LoadError> {
    if docs.is_empty() {
        return Ok(Builtins::All);
    }
    let mut problems = Vec::new();
    let mut all = false;
    let mut wanted: Vec<&str> = Vec::new();
    let choices = || {
        let names: Vec<String> = known.iter().map(|n| format!("`{n}`")).collect();
        names.join(", ")
    };
    for doc in docs {
        let Some(value) = &doc.builtins else { continue };
        let at = |tail: Option<usize>, message: String| {
            let mut path = vec![Seg::from("builtins")];
            path.extend(tail.map(Seg::Index));
            doc.root_problem(Problem { at: path, message })
        };
        match value {
            Value::String(s) if s == "all" => all = true,
            Value::Array(items) => {
                let mut here: Vec<&str> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let Some(name) = item.as_str() else {
                        problems.push(at(Some(i), "a built-in tool's name is a string".to_owned()));
                        continue;
                    };
                    if !known.contains(&name) {
                        problems.push(at(
                            Some(i),
                            format!(
                                "{name:?} is not a built-in tool; they are {} (or say `builtins: all`)",
                                choices()
                            ),
                        ));
                    } else if here.contains(&name) {
                        problems.push(at(Some(i), format!("{name:?} is named twice")));
                    } else {
                        here.push(name);
                    }
                }
                wanted.extend(here);
            }
            _ => problems.push(at(
                None,
                format!(
                    "`builtins` is `all` or a list of built-in tools' names ({}); `[]` serves none",
                    choices()
                ),
            )),
        }
    }
    let chosen = match all {
        true => Builtins::All,
        false => Builtins::Named(
            known
                .iter()
                .filter(|k| wanted.contains(k))
                .map(|k| (*k).to_owned())
                .collect(),
        ),
    };
    check_shadowing(docs, known, &chosen, &mut problems);
    if !problems.is_empty() {
        return Err(LoadError::Problems(problems));
    }
    Ok(chosen)
}

/// A declared tool cannot take the name of a built-in tool that is served with it.
fn check_shadowing(
    docs: &[Document],
    known: &[&str],
    chosen: &Builtins,
    problems: &mut Vec<FileProblem>,
) {
    for doc in docs {
        for (i, tool) in doc.tools.iter().enumerate() {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if known.contains(&name) && chosen.serves(name) {
                problems.push(doc.problem(
                    i,
                    Problem::new(
                        ["name"],
                        format!(
                            "{name:?} is the name of a built-in tool that `builtins:` serves; rename the tool, or leave {name} out of `builtins:`"
                        ),
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Format;
    use std::path::Path;

    const KNOWN: &[&str] = &["add", "multiply", "search_files", "take_screenshot"];

    fn doc(name: &str, text: &str) -> Document {
        let path = Path::new(name);
        Document::parse(path, Format::of(path).unwrap(), text.to_owned()).unwrap()
    }

    fn errors(docs: &[Document]) -> Vec<String> {
        match read(docs, KNOWN) {
            Err(e) => e.problems().iter().map(ToString::to_string).collect(),
            Ok(b) => panic!("loaded: {b:?}"),
        }
    }

    #[test]
    fn no_file_serves_all_and_a_file_serves_what_it_names() {
        assert_eq!(read(&[], KNOWN).unwrap(), Builtins::All);
        let none = doc("a.yaml", "tools: []\n");
        assert_eq!(read(&[none], KNOWN).unwrap(), Builtins::Named(vec![]));
        let all = doc("a.yaml", "builtins: all\n");
        assert_eq!(read(&[all], KNOWN).unwrap(), Builtins::All);
        // The union of the files, in the server's order.
        let a = doc("a.yaml", "builtins: [search_files, add]\n");
        let b = doc(
            "b.json",
            r#"{"builtins": ["multiply", "add"], "tools": []}"#,
        );
        let got = read(&[a, b], KNOWN).unwrap();
        assert_eq!(
            got,
            Builtins::Named(vec!["add".into(), "multiply".into(), "search_files".into()])
        );
        assert!(got.serves("add") && !got.serves("take_screenshot"));
        let t = doc("c.toml", "builtins = [\"take_screenshot\"]\n");
        assert_eq!(
            read(&[t], KNOWN).unwrap(),
            Builtins::Named(vec!["take_screenshot".into()])
        );
    }

    #[test]
    fn wrong_names_and_shapes_are_placed() {
        let e = errors(&[doc(
            "a.yaml",
            "builtins:\n  - add\n  - screenshot\n  - add\n",
        )]);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with("a.yaml:3:5: builtins[1]: \"screenshot\" is not a built-in tool; they are `add`, `multiply`"),
            "{e:?}"
        );
        assert!(
            e[1].starts_with("a.yaml:4:5: builtins[2]: \"add\" is named twice"),
            "{e:?}"
        );
        let e = errors(&[doc("a.yaml", "builtins: yes\n")]);
        assert!(
            e[0].starts_with("a.yaml:1:1: builtins: `builtins` is `all` or a list"),
            "{e:?}"
        );
        let e = errors(&[doc("a.json", "{\"builtins\": [1]}")]);
        assert!(e[0].contains("a built-in tool's name is a string"), "{e:?}");
    }

    #[test]
    fn a_declared_tool_cannot_take_a_served_built_ins_name() {
        let text = "builtins: [add]\ntools:\n  - name: add\n    command: [echo]\n  - name: multiply\n    command: [echo]\n";
        let e = errors(&[doc("a.yaml", text)]);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("a.yaml:3:5: tool \"add\" (tools[0]): name: \"add\" is the name of a built-in tool that `builtins:` serves"),
            "{e:?}"
        );
        // Not served: the name is free.
        let free = doc("a.yaml", "tools:\n  - name: add\n    command: [echo]\n");
        assert_eq!(read(&[free], KNOWN).unwrap(), Builtins::Named(vec![]));
    }
}
