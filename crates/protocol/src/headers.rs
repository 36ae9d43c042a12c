//! The header rules both ends of modern (2026-07-28) Streamable HTTP share: header values,
//! which travel as `=?base64?<UTF-8 in base64>?=` when they are not plain visible ASCII,
//! and the `x-mcp-header` keyword, with which a tool's input schema asks for an argument to
//! be mirrored in an `Mcp-Param-<Name>` header so that gateways can route on it.
//!
//! [`ParamHeaders::compile`] reads a tool's declarations once (at registration, or when a
//! client lists the tools) and refuses the tool when one breaks the spec's rules (clients
//! must drop such tools): the name must be a non-empty RFC 9110 token, unique
//! case-insensitively; the property must be reached from the root through `properties`
//! only and be of type `string`, `integer` or `boolean` (an integer's bounds within
//! ±(2^53−1)). Then a client builds the headers of a call with [`ParamHeaders::headers`],
//! and a server checks the headers it received with [`ParamHeader::argument`] and
//! [`ParamHeader::matches`].
//!
//! ```
//! use serde_json::json;
//! use toolwright_protocol::headers::ParamHeaders;
//!
//! let schema = json!({"type": "object", "properties": {
//!     "region": {"type": "string", "x-mcp-header": "Region"}
//! }});
//! let params = ParamHeaders::compile(&schema)?;
//! let headers = params.headers(&json!({"region": "eu-west"}))?;
//! assert_eq!(headers, [("Mcp-Param-Region".to_owned(), "eu-west".to_owned())]);
//! # Ok::<(), toolwright_protocol::ParamHeaderError>(())
//! ```

use std::borrow::Cow;
use std::collections::HashMap;

use base64::Engine;
use serde_json::Value;
use toolwright_schema::walk_subschemas;

use crate::ParamHeaderError;

/// The schema keyword: `"x-mcp-header": "<Name>"` on a property schema.
pub const PARAM_KEYWORD: &str = "x-mcp-header";
/// What the header of a mirrored argument is called before its `<Name>`.
pub const PARAM_PREFIX: &str = "Mcp-Param-";
/// Largest integer magnitude a header may carry (2^53 − 1, exact in JSON everywhere).
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

const BASE64_START: &str = "=?base64?";
const BASE64_END: &str = "?=";

/// A header value as the spec wants it sent: as is when it is plain visible ASCII (inner
/// spaces allowed) or empty; else (non-ASCII, controls, a leading or trailing space, or
/// text that starts like the encoded form) `=?base64?<UTF-8 in base64>?=`.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?");
    if plain {
        Cow::Borrowed(value)
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value);
        Cow::Owned(format!("{BASE64_START}{b64}{BASE64_END}"))
    }
}

/// A received header value, with the `=?base64?…?=` form undone. `None` when that form
/// does not hold base64 of UTF-8.
pub fn decode_value(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix(BASE64_START)
        .and_then(|r| r.strip_suffix(BASE64_END))
    {
        Some(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

/// The JSON Schema type of a mirrored property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// `"type": "string"`.
    String,
    /// `"type": "integer"`.
    Integer,
    /// `"type": "boolean"`.
    Boolean,
}

/// One valid `x-mcp-header` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    name: String,
    header: String,
    path: Vec<String>,
    param_type: ParamType,
}

impl ParamHeader {
    /// The `<Name>` as declared, e.g. `Region`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header, e.g. `Mcp-Param-Region` (compare case-insensitively).
    pub fn header(&self) -> &str {
        &self.header
    }

    /// Property names from the arguments' root to the mirrored value.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The declared type of the property.
    pub fn param_type(&self) -> ParamType {
        self.param_type
    }

    /// The mirrored argument in `arguments`; `None` when it is absent or `null` (then no
    /// header is sent, and none may be received).
    pub fn argument<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let mut v = arguments;
        for key in &self.path {
            v = v.get(key)?;
        }
        (!v.is_null()).then_some(v)
    }

    /// The header value that carries `argument`.
    ///
    /// # Errors
    ///
    /// [`ParamHeaderError::UnsafeInteger`] for a number that is not an integer within
    /// ±(2^53−1), [`ParamHeaderError::NotScalar`] for an array, an object or `null`.
    pub fn value(&self, argument: &Value) -> Result<String, ParamHeaderError> {
        match argument {
            Value::String(s) => Ok(encode_value(s).into_owned()),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Number(n) => match n.as_i64() {
                Some(i) if i.abs() <= MAX_SAFE_INTEGER => Ok(i.to_string()),
                _ => Err(ParamHeaderError::UnsafeInteger {
                    header: self.header.clone(),
                    value: n.clone(),
                }),
            },
            other => Err(ParamHeaderError::NotScalar {
                header: self.header.clone(),
                value: other.clone(),
            }),
        }
    }

    /// Whether a received header value (already [decoded](decode_value)) carries
    /// `argument`: strings compare exactly, booleans as `true`/`false`, integers
    /// numerically (`007` is 7).
    pub fn matches(&self, header: &str, argument: &Value) -> bool {
        match argument {
            Value::String(s) => header == s,
            Value::Bool(b) => header == if *b { "true" } else { "false" },
            Value::Number(n) => match (n.as_i64(), header.trim().parse::<i64>()) {
                (Some(a), Ok(b)) => a == b,
                _ => false,
            },
            _ => false,
        }
    }
}

/// A tool's `x-mcp-header` declarations, checked and compiled once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamHeaders {
    params: Vec<ParamHeader>,
}

impl ParamHeaders {
    /// Reads the declarations of a tool's input schema, in document order.
    ///
    /// # Errors
    ///
    /// The first of [`violations`](Self::violations): a tool with any is to be dropped.
    pub fn compile(input_schema: &Value) -> Result<ParamHeaders, ParamHeaderError> {
        let (params, errors) = scan(input_schema);
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(ParamHeaders { params }),
        }
    }

    /// Every way the declarations of `input_schema` break the rules, in document order
    /// (one declaration may break several): empty when [`compile`](Self::compile)
    /// succeeds.
    pub fn violations(input_schema: &Value) -> Vec<ParamHeaderError> {
        scan(input_schema).1
    }

    /// Whether the tool declares no header parameter (the common case).
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// How many header parameters the tool declares.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// The declarations, in document order.
    pub fn iter(&self) -> std::slice::Iter<'_, ParamHeader> {
        self.params.iter()
    }

    /// The `(header, value)` pairs a client sends with a call with `arguments`: one for
    /// every declared argument present and not `null`.
    ///
    /// # Errors
    ///
    /// When an argument cannot travel in a header: see [`ParamHeader::value`].
    pub fn headers(&self, arguments: &Value) -> Result<Vec<(String, String)>, ParamHeaderError> {
        self.params
            .iter()
            .filter_map(|p| p.argument(arguments).map(|v| (p, v)))
            .map(|(p, v)| Ok((p.header.clone(), p.value(v)?)))
            .collect()
    }
}

impl<'a> IntoIterator for &'a ParamHeaders {
    type Item = &'a ParamHeader;
    type IntoIter = std::slice::Iter<'a, ParamHeader>;

    fn into_iter(self) -> Self::IntoIter {
        self.params.iter()
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Whether an integer schema lets values beyond ±(2^53−1) through its bounds.
fn bounds_exceed_safe(schema: &Value) -> bool {
    // 2^53 − 1 is exact as an f64.
    let limit = MAX_SAFE_INTEGER as f64;
    ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_f64))
        .any(|v| v.abs() > limit)
}

/// The valid declarations and every violation.
fn scan(input_schema: &Value) -> (Vec<ParamHeader>, Vec<ParamHeaderError>) {
    let mut params = Vec::new();
    let mut errors = Vec::new();
    // Lower-cased name to the pointer of its first declaration.
    let mut seen: HashMap<String, String> = HashMap::new();
    walk_subschemas(input_schema, "", &mut |node| {
        let Some(value) = node.schema.get(PARAM_KEYWORD) else {
            return;
        };
        let pointer = || node.rel.clone();
        let Some(name) = value.as_str() else {
            errors.push(ParamHeaderError::NotString {
                pointer: pointer(),
                value: value.clone(),
            });
            return;
        };
        if name.is_empty() || !name.chars().all(is_tchar) {
            errors.push(ParamHeaderError::NotToken {
                pointer: pointer(),
                name: name.to_owned(),
            });
            return;
        }
        let path = match &node.property_path {
            Some(path) if !path.is_empty() => path,
            _ => {
                errors.push(ParamHeaderError::NotOnProperty {
                    pointer: pointer(),
                    name: name.to_owned(),
                });
                return;
            }
        };
        let before = errors.len();
        let param_type = match node.schema.get("type").and_then(Value::as_str) {
            Some("string") => Some(ParamType::String),
            Some("integer") => Some(ParamType::Integer),
            Some("boolean") => Some(ParamType::Boolean),
            _ => {
                errors.push(ParamHeaderError::UnsupportedType {
                    pointer: pointer(),
                    name: name.to_owned(),
                    found: node.schema.get("type").cloned(),
                });
                None
            }
        };
        if param_type == Some(ParamType::Integer) && bounds_exceed_safe(node.schema) {
            errors.push(ParamHeaderError::UnsafeBounds {
                pointer: pointer(),
                name: name.to_owned(),
            });
        }
        let key = name.to_ascii_lowercase();
        if let Some(first) = seen.get(&key) {
            errors.push(ParamHeaderError::Duplicate {
                pointer: pointer(),
                name: name.to_owned(),
                first: first.clone(),
            });
        } else {
            seen.insert(key, pointer());
        }
        if let (Some(param_type), true) = (param_type, errors.len() == before) {
            params.push(ParamHeader {
                name: name.to_owned(),
                header: format!("{PARAM_PREFIX}{name}"),
                path: path.iter().map(|p| (*p).to_owned()).collect(),
                param_type,
            });
        }
    });
    (params, errors)
}

#[cfg(test)]
mod tests;
