//! Output shaping: stdout or a response body read as text, JSON or a regex's named groups,
//! then optionally reshaped by a jq expression (jaq), into the call's result.
//!
//! - `text` (the default): UTF-8, invalid bytes replaced by U+FFFD. The result is one text
//!   block, unless a jq expression runs on that string.
//! - `json`: serde_json, whose recursion limit (128, as the server's own JSON-RPC limit;
//!   127 levels of arrays and objects) refuses absurdly deep input with an error rather
//!   than a stack overflow.
//! - `regex`: the pattern's first match; each named group that took part becomes a member
//!   (a string). Without a jq expression, a group whose `outputSchema` property says
//!   `integer`, `number` or `boolean` is converted to it (a failed conversion fails the call,
//!   naming the group). With one, the schema describes the expression's output, so the
//!   expression converts (`tonumber`).
//! - `jq`: applied to the parsed value; it must give exactly one output, within
//!   `jq_timeout` (default 1s), in a child process the binary enables with
//!   [`use_child_runner`] (killed at the deadline, with CPU and memory limits), else on a
//!   thread of this process (the deadline checked between outputs only: weaker). jaq's
//!   standard library is there except `env` (and `$ENV`): the server's environment holds
//!   secrets; `stderr` writes nothing.
//!
//! A structured result that is not an object is wrapped as `{"result": value}`, since
//! `structuredContent` is an object.

mod child;
mod jq;
#[cfg(test)]
mod tests;

pub use child::{CHILD_ARG, CHILD_MEMORY, jq_child_main, use_child_runner, use_child_runner_at};

use crate::error::{Problem, RunError};
use regex::Regex;
use serde_json::{Map, Value};
use std::time::Duration;
use toolwright_toolfile::model::{OutputSpec, Parse};

/// A jq expression's time limit when `jq_timeout` is not given.
pub const DEFAULT_JQ_TIMEOUT: Duration = Duration::from_secs(1);

/// What shaping made of the bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Shaped {
    /// Plain text: one text block, no `structuredContent`.
    Text(String),
    /// A structured result (an object), sent as `structuredContent` with its JSON text.
    Structured(Value),
}

/// A compiled `output:`.
#[derive(Debug)]
pub struct Shaper {
    read: Read,
    jq: Option<Jq>,
}

#[derive(Debug)]
enum Read {
    Text,
    Json,
    Regex {
        regex: Regex,
        /// Named groups and what their text becomes.
        groups: Vec<(String, Convert)>,
    },
}

/// What a regex group's text is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convert {
    String,
    Integer,
    Number,
    Boolean,
}

#[derive(Debug)]
struct Jq {
    /// The program, checked by compiling it at load.
    code: String,
    timeout: Duration,
}

impl Shaper {
    /// Compiles `output:` (absent: text) for a tool with this `outputSchema`; problems are
    /// reported under `output`.
    ///
    /// # Errors
    ///
    /// A [`Problem`] for a pattern or expression that does not compile, or an `outputSchema`
    /// with text output.
    pub fn compile(
        spec: Option<&OutputSpec>,
        output_schema: Option<&Value>,
    ) -> Result<Shaper, Problem> {
        let default = OutputSpec::default();
        let spec = spec.unwrap_or(&default);
        let jq = match &spec.jq {
            None => {
                if spec.jq_timeout.is_some() {
                    return Err(Problem::new(
                        ["output", "jq_timeout"],
                        "`jq_timeout` is the time limit of a jq expression, and there is no `jq`",
                    ));
                }
                None
            }
            Some(code) => {
                jq::compile(code).map_err(|m| Problem::new(["output", "jq"], m.to_string()))?;
                Some(Jq {
                    code: code.clone(),
                    timeout: spec.jq_timeout.map_or(DEFAULT_JQ_TIMEOUT, |d| d.0),
                })
            }
        };
        if spec.parse != Parse::Regex && spec.pattern.is_some() {
            return Err(Problem::new(
                ["output", "pattern"],
                "`pattern` is used only with `parse: regex`",
            ));
        }
        let read = match spec.parse {
            Parse::Text => Read::Text,
            Parse::Json => Read::Json,
            Parse::Regex => {
                let Some(pattern) = &spec.pattern else {
                    return Err(Problem::new(
                        ["output", "parse"],
                        "`parse: regex` needs a `pattern` whose named groups ((?P<name>...)) \
                         become the result's members",
                    ));
                };
                let regex = Regex::new(pattern)
                    .map_err(|e| Problem::new(["output", "pattern"], e.to_string()))?;
                let schema = if jq.is_some() { None } else { output_schema };
                let groups: Vec<_> = regex
                    .capture_names()
                    .flatten()
                    .map(|name| (name.to_owned(), convert_for(schema, name)))
                    .collect();
                if groups.is_empty() {
                    return Err(Problem::new(
                        ["output", "pattern"],
                        "the pattern has no named group ((?P<name>...)); its named groups \
                         become the result's members",
                    ));
                }
                Read::Regex { regex, groups }
            }
        };
        if output_schema.is_some() && matches!(read, Read::Text) && jq.is_none() {
            return Err(Problem::new(
                ["outputSchema"],
                "an `outputSchema` needs a structured result, and this tool's output is text; \
                 add `output: {parse: json}` (or `parse: regex`, or a `jq` expression)",
            ));
        }
        Ok(Shaper { read, jq })
    }

    /// Shapes the bytes an action produced.
    ///
    /// # Errors
    ///
    /// [`RunError::Shape`] when they do not parse, match or select.
    pub async fn shape(&self, bytes: Vec<u8>) -> Result<Shaped, RunError> {
        let value = match &self.read {
            Read::Text => {
                let text = match String::from_utf8(bytes) {
                    Ok(t) => t,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                };
                if self.jq.is_none() {
                    return Ok(Shaped::Text(text));
                }
                Value::String(text)
            }
            Read::Json => parse_json(&bytes)?,
            Read::Regex { regex, groups } => {
                let text = String::from_utf8_lossy(&bytes);
                captures(regex, groups, &text)?
            }
        };
        let value = match &self.jq {
            None => value,
            Some(jq) => child::evaluate(&jq.code, value, jq.timeout).await?,
        };
        Ok(Shaped::Structured(wrap(value)))
    }
}

/// An object as is; any other value as `{"result": value}`.
fn wrap(value: Value) -> Value {
    match value {
        Value::Object(_) => value,
        other => {
            let mut m = Map::new();
            m.insert("result".to_owned(), other);
            Value::Object(m)
        }
    }
}

fn parse_json(bytes: &[u8]) -> Result<Value, RunError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let text = e.to_string();
        if text.starts_with("recursion limit exceeded") {
            RunError::Shape(format!(
                "the output is not usable JSON: {text} (nesting deeper than {} levels is refused)",
                jq::MAX_DEPTH
            ))
        } else {
            RunError::Shape(format!("the output is not JSON: {text}"))
        }
    })
}

/// What `outputSchema` says a group's property is, when it is one of the converted types.
fn convert_for(schema: Option<&Value>, name: &str) -> Convert {
    let Some(ty) = schema
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("type"))
    else {
        return Convert::String;
    };
    let one = |t: &str| match t {
        "integer" => Some(Convert::Integer),
        "number" => Some(Convert::Number),
        "boolean" => Some(Convert::Boolean),
        _ => None,
    };
    match ty {
        Value::String(t) => one(t).unwrap_or(Convert::String),
        // A list of types that admits a string keeps the text; otherwise the first
        // converted type in it.
        Value::Array(ts) if ts.iter().any(|t| t == "string") => Convert::String,
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find_map(one)
            .unwrap_or(Convert::String),
        _ => Convert::String,
    }
}

fn captures(regex: &Regex, groups: &[(String, Convert)], text: &str) -> Result<Value, RunError> {
    let Some(caps) = regex.captures(text) else {
        return Err(RunError::Shape(format!(
            "the output does not match the pattern {:?}",
            regex.as_str()
        )));
    };
    let mut out = Map::new();
    for (name, convert) in groups {
        let Some(m) = caps.name(name) else { continue };
        out.insert(name.clone(), converted(name, *convert, m.as_str())?);
    }
    Ok(Value::Object(out))
}

fn converted(name: &str, convert: Convert, text: &str) -> Result<Value, RunError> {
    let fail = |what: &str| {
        let shown: String = text.chars().take(64).collect();
        RunError::Shape(format!(
            "group `{name}` matched {shown:?}, which is not {what} (outputSchema says so)"
        ))
    };
    Ok(match convert {
        Convert::String => Value::String(text.to_owned()),
        Convert::Integer => {
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else if let Ok(u) = text.parse::<u64>() {
                Value::from(u)
            } else {
                return Err(fail("an integer"));
            }
        }
        Convert::Number => {
            let f = text
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| fail("a number"))?;
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
        }
        Convert::Boolean => match text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(fail("a boolean (true or false)")),
        },
    })
}
