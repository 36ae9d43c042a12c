//! jq expressions through jaq: compiled to check them at load, and run on one input to
//! exactly one output, with no access to the server's environment.
//!
//! jaq's filters hold `Rc`s, so a compiled filter is not `Send`: the checked program text is
//! kept and compiled again where it runs (in the child process, or on the in-process
//! thread). Compiling is cheap next to starting a process.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::Value;

/// The value type jaq runs on here.
type D = data::JustLut<Val>;

/// A compiled filter.
pub(crate) type Filter = jaq_core::Filter<D>;

/// Native filters left out: `env` (and so `$ENV`) would put the server's environment (its
/// secrets) into a result; `stderr_empty` (behind `stderr`) would write into the server's
/// log stream, and is replaced by [`quiet`].
const LEFT_OUT: &[&str] = &["env", "stderr_empty", "input", "inputs"];

/// `stderr_empty` that writes nothing: `stderr` passes its input on, as without a stderr.
fn quiet() -> jaq_core::native::Fun<D> {
    jaq_core::native::run(("stderr_empty", jaq_core::native::v(0), |_| {
        Box::new(core::iter::empty())
    }))
}

/// Deepest nesting of arrays and objects a value may have: serde_json's own limit when it
/// parses (its recursion limit of 128 admits 127 levels), applied to jq outputs too.
pub(crate) const MAX_DEPTH: usize = 127;

/// Longest message taken from a jq error.
const MAX_MESSAGE: usize = 512;

/// Why a jq expression does not compile or does not give one JSON value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum JqError {
    /// The expression does not parse or compile (jaq's words, with where).
    #[error("{0}")]
    Compile(String),
    /// The input could not be made a jq value.
    #[error("{0}")]
    Input(String),
    /// No output.
    #[error("the jq expression gave no output (it must give exactly one)")]
    NoOutput,
    /// A second output.
    #[error("the jq expression gave more than one output (it must give exactly one)")]
    MoreThanOne,
    /// `keep_going` said stop (the in-process runner's deadline).
    #[error("jq: timed out")]
    TimedOut,
    /// `error(...)`, with its message (shortened).
    #[error("the jq expression failed: {0}")]
    Failed(String),
    /// `halt` or `halt_error`, with the status.
    #[error("the jq expression halted with status {0}")]
    Halted(String),
    /// Another exception.
    #[error("the jq expression failed")]
    Exception,
    /// An output deeper than [`MAX_DEPTH`].
    #[error("the jq output is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// An output JSON cannot hold (its text, shortened).
    #[error(
        "the jq output is not JSON (NaN, an infinite number, a byte string or a non-string key?): {0}"
    )]
    NotJson(String),
}

/// Compiles `code`, or says what is wrong in jaq's words with where (byte offset).
pub(crate) fn compile(code: &str) -> Result<Filter, JqError> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs::<D>()
        .chain(jaq_std::funs::<D>())
        .chain(jaq_json::funs::<D>())
        .filter(|(name, _, _)| !LEFT_OUT.contains(name))
        .chain([quiet()]);
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(&arena, File { code, path: () })
        .map_err(|errs| {
            let mut out = Vec::new();
            for (_, e) in errs {
                match e {
                    jaq_core::load::Error::Io(items) => {
                        for (path, why) in items {
                            out.push(format!("cannot load module {path:?}: {why}"));
                        }
                    }
                    jaq_core::load::Error::Lex(items) => {
                        for (expect, at) in items {
                            out.push(format!("expected {}{}", expect.as_str(), at_text(code, at)));
                        }
                    }
                    jaq_core::load::Error::Parse(items) => {
                        for (expect, at) in items {
                            out.push(format!("expected {}{}", expect.as_str(), at_text(code, at)));
                        }
                    }
                }
            }
            JqError::Compile(joined(out, "does not parse"))
        })?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| {
            let mut out = Vec::new();
            for (_, items) in errs {
                for (name, kind) in items {
                    out.push(format!(
                        "undefined {} `{name}`{}",
                        kind.as_str(),
                        at_text(code, name)
                    ));
                }
            }
            JqError::Compile(joined(out, "does not compile"))
        })
}

fn joined(parts: Vec<String>, fallback: &str) -> String {
    if parts.is_empty() {
        fallback.to_owned()
    } else {
        parts.join("; ")
    }
}

/// " at byte N (found `tok`)" for a slice of `code`, as jaq reports where.
fn at_text(code: &str, at: &str) -> String {
    let start = code.as_ptr() as usize;
    let here = at.as_ptr() as usize;
    let mut out = String::new();
    if here >= start && here <= start + code.len() {
        out.push_str(&format!(" at byte {}", here - start));
    }
    let tok: String = at.chars().take(20).collect();
    if tok.is_empty() {
        out.push_str(" (at the end)");
    } else {
        out.push_str(&format!(" (found `{tok}`)"));
    }
    out
}

/// The input value as jaq's value.
pub(crate) fn to_val(input: &Value) -> Result<Val, JqError> {
    let text = serde_json::to_vec(input).map_err(|e| JqError::Input(e.to_string()))?;
    jaq_json::read::parse_single(&text).map_err(|e| JqError::Input(format!("{e:?}")))
}

/// Runs `filter` on `input`: exactly one output, as JSON. `keep_going` is asked between
/// outputs (the in-process runner's deadline).
pub(crate) fn run(
    filter: &Filter,
    input: Val,
    keep_going: &dyn Fn() -> bool,
) -> Result<Value, JqError> {
    let ctx = Ctx::<D>::new(&filter.lut, Vars::new([]));
    let mut outputs = filter.id.run((ctx, input));
    let first = match outputs.next() {
        None => return Err(JqError::NoOutput),
        Some(r) => r.map_err(exception)?,
    };
    if !keep_going() {
        return Err(JqError::TimedOut);
    }
    if let Some(second) = outputs.next() {
        // A second output, or an error on the way to one: either way not exactly one.
        second.map_err(exception)?;
        return Err(JqError::MoreThanOne);
    }
    from_val(&first)
}

fn exception(e: jaq_core::Exn<'_, Val>) -> JqError {
    match e.get_err() {
        Ok(err) => {
            // `error("text")` reads as the text, not as a JSON string.
            let text = match err.into_val() {
                Val::TStr(b) => String::from_utf8_lossy(&b).into_owned(),
                other => other.to_string(),
            };
            JqError::Failed(short(&text))
        }
        Err(e) => match e.get_halt() {
            Ok(code) => JqError::Halted(code.to_string()),
            Err(_) => JqError::Exception,
        },
    }
}

fn short(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// jaq's value as JSON: refused when deeper than [`MAX_DEPTH`] (checked without recursion
/// before anything recurses over it) or not representable (NaN, infinity, byte strings,
/// non-string keys).
pub(crate) fn from_val(v: &Val) -> Result<Value, JqError> {
    if depth_exceeds(v, MAX_DEPTH) {
        return Err(JqError::TooDeep);
    }
    let text = v.to_string();
    serde_json::from_str(&text).map_err(|_| JqError::NotJson(short(&text)))
}

/// Whether `v` nests deeper than `max`, walked with a stack of its own.
fn depth_exceeds(v: &Val, max: usize) -> bool {
    let mut stack: Vec<(&Val, usize)> = vec![(v, 1)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Val>> = match v {
            Val::Arr(a) => Box::new(a.iter()),
            Val::Obj(o) => Box::new(o.iter().flat_map(|(k, v)| [k, v])),
            _ => continue,
        };
        if d > max {
            return true;
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    false
}
