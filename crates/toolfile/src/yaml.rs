//! YAML text as a JSON value, built from `yaml-rust2`'s events (the parser `locate.rs`
//! walks for positions, so the binary carries one YAML implementation).
//!
//! Scalars resolve by the YAML 1.2 core schema (`Yaml::from_str`: `null`/`~`, `true`,
//! decimal, `0x` and `0o` integers, floats); a quoted or block scalar, or one tagged
//! `!!str`, is a string. Anchors and aliases are followed. Only the first document is
//! read, and a second one is an error. A mapping key must be a scalar (a number or boolean
//! key becomes its text) and may appear once. Nesting is limited to [`MAX_DEPTH`] levels
//! and the whole document to [`MAX_VALUES`] values, aliases counting every value they
//! repeat, so that a small file cannot expand into gigabytes.

use serde_json::{Map, Number, Value};
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// How deeply sequences and mappings may nest (as serde_json allows).
pub const MAX_DEPTH: usize = 128;

/// How many values a document may hold, counting those an alias repeats.
pub const MAX_VALUES: usize = 1_000_000;

/// Why a text is not a YAML document of JSON values, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.message, self.line, self.column
        )
    }
}

impl std::error::Error for YamlError {}

fn error(at: Marker, message: impl Into<String>) -> YamlError {
    YamlError {
        line: at.line().max(1),
        column: at.col() + 1,
        message: message.into(),
    }
}

/// A sequence or mapping being read, with how many values it holds so far.
enum Open {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<String>),
}

struct Frame {
    open: Open,
    anchor: usize,
    values: usize,
}

/// Parses the first document of `text` (an empty text is `null`).
///
/// # Errors
///
/// [`YamlError`] for text that is not YAML, or YAML that is not a JSON value (a float that
/// is infinite or not a number, a sequence or mapping as a key, a key twice), past the
/// limits, or a second document.
pub fn to_json(text: &str) -> Result<Value, YamlError> {
    read(text).map_err(|e| placed(text, e))
}

/// `e` placed as the rest of the crate places things ([`crate::locate::YamlPlaces`]).
fn placed(text: &str, mut e: YamlError) -> YamlError {
    let at = crate::locate::YamlPlaces::of(text).place(e.line, e.column);
    e.line = at.line;
    e.column = at.column;
    e
}

fn read(text: &str) -> Result<Value, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, (Value, usize)> = Default::default();
    let mut total = 0usize;
    let mut document: Option<Value> = None;
    loop {
        let (event, at) = parser
            .next_token()
            .map_err(|e| error(*e.marker(), e.info()))?;
        // `values`: how many the value holds; `added`: how many of them are new to `total`
        // (a container's were counted as they came, an alias repeats all of its anchor's).
        let (value, values, added, anchor) = match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => continue,
            Event::DocumentStart => {
                if document.is_some() {
                    return Err(error(
                        at,
                        "a second document: only one may be given (remove the `---` before it)",
                    ));
                }
                continue;
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(error(
                        at,
                        format!("nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
                let open = if matches!(event, Event::SequenceStart(..)) {
                    Open::Seq(Vec::new())
                } else {
                    Open::Map(Map::new(), None)
                };
                stack.push(Frame {
                    open,
                    anchor,
                    values: 1,
                });
                total += 1;
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let frame = stack.pop().expect("the parser pairs starts and ends");
                let value = match frame.open {
                    Open::Seq(items) => Value::Array(items),
                    Open::Map(members, _) => Value::Object(members),
                };
                (value, frame.values, 0, frame.anchor)
            }
            Event::Scalar(text, style, anchor, tag) => {
                (scalar(text, style, tag.as_ref(), at)?, 1, 1, anchor)
            }
            Event::Alias(id) => {
                let (value, values) = anchors
                    .get(&id)
                    .ok_or_else(|| error(at, "an alias of an anchor not defined before it"))?;
                (value.clone(), *values, *values, 0)
            }
        };
        total += added;
        if total > MAX_VALUES {
            return Err(error(
                at,
                format!("more than {MAX_VALUES} values (aliases count what they repeat)"),
            ));
        }
        if anchor != 0 {
            anchors.insert(anchor, (value.clone(), values));
        }
        match stack.last_mut() {
            None => document = Some(value),
            Some(frame) => attach(frame, value, values, at)?,
        }
    }
    Ok(document.unwrap_or(Value::Null))
}

/// Puts a finished `value` (holding `values` values) into the open container `frame`: an
/// item of a sequence, or a mapping's key (refused when the mapping has it already) or the
/// value for the key before it.
fn attach(frame: &mut Frame, value: Value, values: usize, at: Marker) -> Result<(), YamlError> {
    frame.values += values;
    match &mut frame.open {
        Open::Seq(items) => items.push(value),
        Open::Map(members, key @ None) => {
            let k = key_text(value, at)?;
            if members.contains_key(&k) {
                return Err(error(at, format!("the key `{k}` appears twice")));
            }
            *key = Some(k);
        }
        Open::Map(members, key) => {
            let k = key.take().expect("matched as Some");
            members.insert(k, value);
        }
    }
    Ok(())
}

fn key_text(key: Value, at: Marker) -> Result<String, YamlError> {
    match key {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok("null".to_owned()),
        Value::Array(_) | Value::Object(_) => Err(error(
            at,
            "a sequence or mapping as a key: keys must be text",
        )),
    }
}

fn scalar(
    text: String,
    style: TScalarStyle,
    tag: Option<&Tag>,
    at: Marker,
) -> Result<Value, YamlError> {
    let core = tag.filter(|t| t.handle == "tag:yaml.org,2002:" || t.handle == "!!");
    if style != TScalarStyle::Plain || core.is_some_and(|t| t.suffix == "str") {
        return Ok(Value::String(text));
    }
    Ok(match Yaml::from_str(&text) {
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => {
            if let Ok(u) = r.parse::<u64>() {
                Value::from(u)
            } else {
                let f = Yaml::Real(r).as_f64().unwrap_or(f64::NAN);
                Value::Number(
                    Number::from_f64(f).ok_or_else(|| {
                        error(at, format!("{text} is not a number JSON can hold"))
                    })?,
                )
            }
        }
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Null => Value::Null,
        _ => Value::String(text),
    })
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
