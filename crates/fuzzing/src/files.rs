//! The bodies over tool files: one file through the loader's checks ([`toolfile`]),
//! templates parsed and filled ([`template`]), and files of mixed formats checked as one set
//! ([`config_merge`]).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolwright_declared::load::check_documents;
use toolwright_toolfile::template::{Part, Template};
use toolwright_toolfile::{Document, FileProblem, Format};

/// The format the byte `b` picks, and a file name of that format in `dir`.
fn format_of(b: u8, dir: &str) -> (Format, PathBuf) {
    let (format, name) = match b % 3 {
        0 => (Format::Yaml, "toolwright.yaml"),
        1 => (Format::Json, "toolwright.json"),
        _ => (Format::Toml, "toolwright.toml"),
    };
    (format, Path::new("/fuzz").join(dir).join(name))
}

/// The lines of `text` as the problems' locations count them (`\n` ends a line; a BOM is
/// not a character of the first line's columns).
fn line_lengths(text: &str) -> Vec<usize> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    body.split('\n').map(|l| l.chars().count()).collect()
}

/// A problem's place, when it has one, is a line of its file's text and a column of that
/// line (or just past its end).
fn assert_placed(problem: &FileProblem, text: &str) {
    let Some(at) = problem.location else { return };
    let lines = line_lengths(text);
    assert!(
        at.line >= 1 && at.line <= lines.len(),
        "{problem} is placed on line {}; the text has {} lines",
        at.line,
        lines.len()
    );
    let width = lines[at.line - 1];
    assert!(
        at.column >= 1 && at.column <= width + 1,
        "{problem} is placed at column {}; line {} has {width} characters",
        at.column,
        at.line
    );
}

/// What a parse reads, to compare two parses of one text.
fn parsed_shape(parsed: &Result<Document, Box<FileProblem>>) -> String {
    match parsed {
        Ok(d) => format!(
            "{:?} {} {:?} {:?} {:?}",
            d.tools, d.bare, d.servers, d.gateway, d.builtins
        ),
        Err(p) => format!("{p:?}"),
    }
}

/// One tool file: the first byte picks YAML, JSON or TOML, the rest is its text. It parses
/// the same way twice; a parse error and every problem the loader's checks find are placed
/// inside the text; a tool problem names a tool of the file.
pub fn toolfile(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (format, file) = format_of(pick, "one");
    let parsed = Document::parse(&file, format, text.to_owned());
    let again = Document::parse(&file, format, text.to_owned());
    assert_eq!(
        parsed_shape(&parsed),
        parsed_shape(&again),
        "one text parsed two ways"
    );
    let doc = match parsed {
        Ok(doc) => doc,
        Err(p) => {
            assert_eq!(p.file, file);
            assert_placed(&p, text);
            return;
        }
    };
    let docs = [doc];
    let checked = check_documents(&docs, toolwright_tools::NAMES);
    for p in &checked.problems {
        assert_eq!(p.file, file, "{p} names another file");
        assert_placed(p, text);
        if let Some((i, _)) = &p.tool {
            assert!(*i < docs[0].tools.len(), "{p} names a tool the file lacks");
        }
    }
    assert!(
        !checked.problems.is_empty() || (checked.config.is_some() && checked.builtins.is_some()),
        "a reader refused the file without a problem"
    );
}

/// The arguments and environment a template is filled with, read from the pieces of the
/// input after the template (each piece's first byte says what it is).
pub(crate) fn value_of(piece: &[u8]) -> Value {
    let Some((&kind, rest)) = piece.split_first() else {
        return Value::Null;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    match kind % 6 {
        0 => Value::Null,
        1 => json!(i64::from_le_bytes({
            let mut b = [0u8; 8];
            for (d, s) in b.iter_mut().zip(rest) {
                *d = *s;
            }
            b
        })),
        2 => Value::Bool(kind & 0x80 != 0),
        3 => Value::Array(text.split(',').map(|s| json!(s)).collect()),
        4 => text.parse::<f64>().ok().map_or(Value::Null, |f| json!(f)),
        _ => Value::String(text),
    }
}

/// `text` written as a template of literals only.
fn escaped(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// Templates: the template text, then (after each 0xFF byte) a value for its arguments and
/// variables in order. A parse is deterministic and its error points into the text; a text
/// written with every brace doubled parses to literals only and fills back to the text; a
/// fill is exactly the literals and the values in order (no placeholder is left in it or
/// made by it), has no NUL, and never starts with a value starting with `-` unless `:dash`.
pub fn template(data: &[u8]) {
    let mut pieces = data.split(|&b| b == 0xFF);
    let text = String::from_utf8_lossy(pieces.next().unwrap_or_default()).into_owned();
    literals_fill_back(&text);
    let Some(t) = parse_template(&text) else {
        return;
    };
    let (args, env) = values_for(&t, pieces);
    for dash in [false, true] {
        let t = if dash {
            t.clone().dash_allowed()
        } else {
            t.clone()
        };
        check_fill(&text, &t, &args, &env);
    }
}

/// Every text can be written as literals (braces doubled), and fills back to itself.
fn literals_fill_back(text: &str) {
    let literal = Template::parse(&escaped(text))
        .unwrap_or_else(|e| panic!("{text:?} written with doubled braces does not parse: {e}"));
    assert!(
        literal
            .parts()
            .iter()
            .all(|p| matches!(p, Part::Literal(_))),
        "{text:?} written with doubled braces has placeholders: {:?}",
        literal.parts()
    );
    let empty = serde_json::Map::new();
    let filled = literal.render(&empty, &|_| None, &|s| Ok(s.into()));
    assert!(
        text.contains('\0') || filled.as_ref().ok() == Some(&Some(text.to_owned())),
        "{text:?} as literals fills to {filled:?}"
    );
}

/// `text` parsed, the same way twice: the template, or `None` after checking that the
/// error points at a character of the text.
fn parse_template(text: &str) -> Option<Template> {
    let parsed = Template::parse(text);
    assert_eq!(
        parsed,
        Template::parse(text),
        "one template parsed two ways"
    );
    let t = match parsed {
        Ok(t) => t,
        Err(e) => {
            assert!(
                e.at < text.len().max(1) && text.is_char_boundary(e.at),
                "error at byte {} of {text:?}",
                e.at
            );
            return None;
        }
    };
    assert_eq!(t.source(), text);
    if !text.contains(['{', '}']) {
        assert_eq!(t.parts().len(), usize::from(!text.is_empty()));
    }
    Some(t)
}

/// The variables a fill reads, by name.
type Env = std::collections::BTreeMap<String, String>;

/// The values, in the order of the placeholders (one per distinct name) and variables.
fn values_for<'d>(
    t: &Template,
    mut pieces: impl Iterator<Item = &'d [u8]>,
) -> (serde_json::Map<String, Value>, Env) {
    let mut args = serde_json::Map::new();
    let mut env = Env::new();
    for part in t.parts() {
        match part {
            Part::Arg(a) if !args.contains_key(&a.name) => {
                if let Some(piece) = pieces.next() {
                    args.insert(a.name.clone(), value_of(piece));
                }
            }
            Part::Env(var) if !env.contains_key(var) => {
                if let Some(piece) = pieces.next() {
                    env.insert(var.clone(), String::from_utf8_lossy(piece).into_owned());
                }
            }
            _ => {}
        }
    }
    (args, env)
}

/// Fills `t` (parsed from `text`) and checks the fill: `None` only when incomplete, no NUL,
/// exactly its pieces in order, no placeholder left in it.
fn check_fill(text: &str, t: &Template, args: &serde_json::Map<String, Value>, env: &Env) {
    let result = t.render(args, &|v| env.get(v).cloned(), &|s| Ok(s.into()));
    let Ok(Some(out)) = result else {
        if let Ok(None) = result {
            assert!(!t.is_complete(args), "a complete template filled to None");
        }
        return;
    };
    assert!(t.is_complete(args));
    assert!(!out.contains('\0'), "a fill holds a NUL");
    let (expected, data_braces) = pieces_in_order(t, args, env, &out);
    assert_eq!(
        out, expected,
        "the fill of {text:?} is not its pieces in order"
    );
    if !data_braces {
        for a in t.args() {
            assert!(
                !out.contains(&format!("{{{}}}", a.name))
                    || t.parts()
                        .iter()
                        .any(|p| matches!(p, Part::Literal(l) if l.contains(['{', '}']))),
                "the fill {out:?} still holds the placeholder of {:?}",
                a.name
            );
        }
    }
}

/// What the fill `out` of `t` should be: its literals and values in order (checking that a
/// value starting with `-` starts it only where `:dash` allows), and whether any value
/// holds a brace.
fn pieces_in_order(
    t: &Template,
    args: &serde_json::Map<String, Value>,
    env: &Env,
    out: &str,
) -> (String, bool) {
    let mut expected = String::new();
    let mut data_braces = false;
    for part in t.parts() {
        match part {
            Part::Literal(l) => expected.push_str(l),
            Part::Env(v) => {
                let value = env.get(v).expect("a fill used a variable that is unset");
                data_braces |= value.contains(['{', '}']);
                expected.push_str(value);
            }
            Part::Arg(a) => {
                let value = toolwright_toolfile::template::scalar_text(&a.name, &args[&a.name])
                    .expect("a fill used a value that is not one");
                assert!(
                    a.dash || !expected.is_empty() || !value.starts_with('-'),
                    "{out:?} starts with a dash value where {:?} is not `:dash`",
                    a.name
                );
                data_braces |= value.contains(['{', '}']);
                expected.push_str(&value);
            }
        }
    }
    (expected, data_braces)
}

/// What the loader makes of a set, in a form to compare across orders: whether it loads,
/// and when it does the tools' names, the servers and the built-in tools.
fn outcome(checked: &toolwright_declared::load::Checked) -> String {
    if !checked.problems.is_empty() {
        return "refused".to_owned();
    }
    let mut tools: Vec<String> = checked
        .tools
        .iter()
        .map(|t| t.definition_ref().name.clone())
        .collect();
    tools.sort();
    let mut servers: Vec<String> = checked
        .config
        .iter()
        .flat_map(|c| &c.servers)
        .map(|s| format!("{} {}", s.name, s.prefix))
        .collect();
    servers.sort();
    format!(
        "tools {tools:?} servers {servers:?} separator {:?} builtins {:?}",
        checked.config.as_ref().map(|c| c.separator.clone()),
        checked.builtins
    )
}

/// Two or three files checked as one set (`serve --config A --config B ...`): the first
/// byte says how many and their formats, 0xFF bytes separate their texts. Every problem
/// names one of the files and is placed inside that file's text; the set loads (and to the
/// same tools, servers and built-in tools) in either order; a server named in two files is
/// refused in the later one whichever that is; checking twice finds the same problems.
pub fn config_merge(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let count = 2 + usize::from(pick & 1);
    let mut docs = Vec::new();
    for (i, piece) in rest.splitn(count, |&b| b == 0xFF).enumerate() {
        let Ok(text) = std::str::from_utf8(piece) else {
            return;
        };
        let (format, file) = format_of((pick >> (1 + 2 * i)) & 3, ["a", "b", "c"][i]);
        match Document::parse(&file, format, text.to_owned()) {
            Ok(d) => docs.push(d),
            Err(_) => return,
        }
    }
    if docs.len() < 2 {
        return;
    }
    let check = |docs: &[Document]| {
        let checked = check_documents(docs, toolwright_tools::NAMES);
        for p in &checked.problems {
            let doc = docs
                .iter()
                .find(|d| d.file == p.file)
                .unwrap_or_else(|| panic!("{p} names a file not in the set"));
            assert_placed(p, &doc.text);
            if let Some((i, _)) = &p.tool {
                assert!(*i < doc.tools.len(), "{p} names a tool its file lacks");
            }
        }
        // A server written in two files is refused where it is written again.
        for (j, later) in docs.iter().enumerate() {
            for (name, _) in &later.servers {
                if docs[..j]
                    .iter()
                    .any(|d| d.servers.iter().any(|(n, _)| n == name))
                {
                    let needle = format!("another server is named {name:?}");
                    assert!(
                        checked
                            .problems
                            .iter()
                            .any(|p| p.file == later.file && p.problem.message.starts_with(&needle)),
                        "server {name:?} of {} is not refused as a second one",
                        later.file.display()
                    );
                }
            }
        }
        let config = toolwright_toolfile::read_config(docs);
        let builtins = toolwright_toolfile::builtins::read(docs, toolwright_tools::NAMES);
        assert_eq!(
            checked.config.is_some(),
            config.is_ok(),
            "read_config disagrees with itself"
        );
        assert_eq!(checked.builtins, builtins.ok());
        checked
    };
    let forward = check(&docs);
    assert_eq!(
        forward.problems,
        check(&docs).problems,
        "one set checked two ways"
    );
    let mut reversed = docs.clone();
    reversed.reverse();
    let backward = check(&reversed);
    assert_eq!(
        outcome(&forward),
        outcome(&backward),
        "the set loads differently in the other order"
    );
}
