//! One operation as one declared `http` tool: its arguments (path, query and header
//! parameters and the JSON request body, each mapped to where the `http` action puts it),
//! the URL template, the result's schema and the annotations its method implies. What the
//! action cannot send is refused ([`Skip`]) when the operation needs it, and noted when it
//! is optional and left out.

use crate::load::{Found, Spec};
use crate::payload::{request_body, response};
use crate::schema::{Converter, Side, describe_property};
use crate::security::Auth;
use crate::text::{cut, placeholder_name};
use serde_json::{Map, Value, json};

/// The longest tool description written, before the sentence naming the request.
pub const MAX_DESCRIPTION: usize = 1000;

/// Headers an OpenAPI parameter may not set (the specification ignores `Accept`,
/// `Content-Type` and `Authorization` parameters; the action writes the framing headers).
const IGNORED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Why an operation is not written as a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Skip {
    /// Why, in one line.
    pub reason: String,
}

pub(crate) fn skip(reason: impl Into<String>) -> Skip {
    Skip {
        reason: reason.into(),
    }
}

/// An operation of the description.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    /// The method, lower case (`get`).
    pub method: &'a str,
    /// The path template (`/pets/{petId}`).
    pub path: &'a str,
    /// The path item (for its parameters).
    pub item: &'a Value,
    /// The operation object.
    pub op: &'a Value,
    /// The document both are in.
    pub doc: &'a str,
}

impl Operation<'_> {
    /// `GET /pets/{petId} (showPetById)`, as lists of skipped operations name it.
    pub fn label(&self) -> String {
        let id = self
            .op
            .get("operationId")
            .and_then(Value::as_str)
            .map(|id| format!(" ({id})"))
            .unwrap_or_default();
        format!("{} {}{id}", self.method.to_ascii_uppercase(), self.path)
    }
}

/// A tool made of an operation, and what was left out of it.
#[derive(Debug, Clone)]
pub struct Built {
    /// The tool, as the tool file holds it (without its name, given later).
    pub tool: Map<String, Value>,
    /// Optional pieces left out, each with why.
    pub notes: Vec<String>,
}

/// The arguments being collected: the schema's properties and which are required.
#[derive(Default)]
pub(crate) struct Args {
    properties: Map<String, Value>,
    required: Vec<String>,
}

impl Args {
    /// A property name not yet taken: `name`, else `{prefix}_{name}`, else with a number.
    pub(crate) fn fresh(&self, name: &str, prefix: &str) -> String {
        if !self.properties.contains_key(name) {
            return name.to_owned();
        }
        let prefixed = format!("{prefix}_{name}");
        if !self.properties.contains_key(&prefixed) {
            return prefixed;
        }
        (2..)
            .map(|n| format!("{prefixed}_{n}"))
            .find(|c| !self.properties.contains_key(c))
            .unwrap_or_default()
    }

    pub(crate) fn add(&mut self, name: &str, schema: Value, required: bool) {
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(name.to_owned());
        }
    }
}

/// Builds the tool for `op`, sent to `server` (absolute, without a trailing `/`), with the
/// credentials `auth`.
///
/// # Errors
///
/// [`Skip`] when the action cannot send what the operation needs.
pub fn build(spec: &Spec, op: &Operation<'_>, server: &str, auth: &Auth) -> Result<Built, Skip> {
    let mut notes = Vec::new();
    let mut args = Args::default();
    let mut query = Map::new();
    let mut headers = Map::new();
    let mut path_args: Vec<(String, String)> = Vec::new();
    for p in parameters(spec, op)? {
        parameter(
            spec,
            &p,
            &mut args,
            &mut query,
            &mut headers,
            &mut path_args,
            &mut notes,
            auth,
        )?;
    }
    let url = url_template(server, op.path, &path_args)?;
    let body = request_body(spec, op, &mut args, &mut notes)?;
    for (name, value) in &auth.headers {
        headers.insert(name.clone(), Value::String(value.clone()));
    }
    for (name, value) in &auth.query {
        query.insert(name.clone(), Value::String(value.clone()));
    }
    let (output_schema, json_out) = response(spec, op)?;
    if json_out {
        headers
            .entry("Accept")
            .or_insert_with(|| Value::String("application/json".into()));
    }
    let mut http = Map::new();
    http.insert("method".into(), json!(op.method.to_ascii_uppercase()));
    http.insert("url".into(), Value::String(url));
    if !query.is_empty() {
        http.insert("query".into(), Value::Object(query));
    }
    if !headers.is_empty() {
        http.insert("headers".into(), Value::Object(headers));
    }
    if let Some(b) = body {
        http.insert("body".into(), b);
    }
    let mut input = Map::new();
    input.insert("type".into(), json!("object"));
    input.insert("properties".into(), Value::Object(args.properties));
    if !args.required.is_empty() {
        input.insert("required".into(), json!(args.required));
    }
    input.insert("additionalProperties".into(), json!(false));
    let mut tool = Map::new();
    if let Some(s) = op.op.get("summary").and_then(Value::as_str)
        && !s.trim().is_empty()
    {
        tool.insert("title".into(), Value::String(cut(s, 100)));
    }
    tool.insert(
        "description".into(),
        Value::String(description(spec, op, json_out)),
    );
    tool.insert("inputSchema".into(), Value::Object(input));
    if let Some(o) = output_schema {
        tool.insert("outputSchema".into(), o);
    }
    tool.insert("annotations".into(), annotations(op.method));
    tool.insert("http".into(), Value::Object(http));
    if json_out {
        tool.insert("output".into(), json!({"parse": "json"}));
    }
    Ok(Built { tool, notes })
}

/// The path item's parameters and the operation's (which replace those of the same name and
/// place), each dereferenced.
fn parameters<'a>(spec: &'a Spec, op: &Operation<'a>) -> Result<Vec<Found<'a>>, Skip> {
    let mut out: Vec<Found<'a>> = Vec::new();
    for list in [op.item.get("parameters"), op.op.get("parameters")] {
        let Some(Value::Array(items)) = list else {
            continue;
        };
        for p in items {
            let f = spec
                .deref(p, op.doc)
                .map_err(|e| skip(format!("a parameter: {e}")))?;
            let key = |v: &Value| {
                (
                    v.get("name").and_then(Value::as_str).map(str::to_owned),
                    v.get("in").and_then(Value::as_str).map(str::to_owned),
                )
            };
            out.retain(|o| key(o.value) != key(f.value));
            out.push(f);
        }
    }
    Ok(out)
}

/// One parameter as an argument and where it goes.
#[allow(clippy::too_many_arguments)]
fn parameter(
    spec: &Spec,
    p: &Found<'_>,
    args: &mut Args,
    query: &mut Map<String, Value>,
    headers: &mut Map<String, Value>,
    path_args: &mut Vec<(String, String)>,
    notes: &mut Vec<String>,
    auth: &Auth,
) -> Result<(), Skip> {
    let name = p.value.get("name").and_then(Value::as_str).unwrap_or("");
    let place = p.value.get("in").and_then(Value::as_str).unwrap_or("");
    let required =
        place == "path" || p.value.get("required").and_then(Value::as_bool) == Some(true);
    let what = format!("{place} parameter `{name}`");
    // Refused when needed, noted and left out when optional.
    let mut refuse = |why: String| -> Result<(), Skip> {
        if required {
            Err(skip(format!("{what}: {why}")))
        } else {
            notes.push(format!("{what} left out: {why}"));
            Ok(())
        }
    };
    if name.is_empty() {
        return Err(skip("a parameter has no name"));
    }
    if place == "header" && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Ok(());
    }
    // A parameter that carries the credentials is sent from the environment instead.
    if place == "header"
        && auth
            .headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case(name))
    {
        return Ok(());
    }
    if place == "query" && auth.query.iter().any(|(q, _)| q == name) {
        return Ok(());
    }
    if !matches!(place, "path" | "query" | "header") {
        return refuse(format!(
            "the http action sends path, query and header parameters, not `in: {place}`"
        ));
    }
    let Some(raw) = p.value.get("schema") else {
        return refuse(
            "its value is described by `content`, which the action cannot encode".into(),
        );
    };
    let schema = Converter::new(spec, Side::Input)
        .convert(raw, p.doc)
        .map_err(|e| skip(format!("{what}: {e}")))?;
    if !is_scalar(&schema) {
        return refuse(
            "it is an array or object, and a URL or header placeholder takes one value".into(),
        );
    }
    if place == "header" && !is_token(name) {
        return refuse("its name is not an HTTP header name".into());
    }
    let prop = args.fresh(&placeholder_name(name), place);
    let mut schema = schema;
    if let Some(d) = p.value.get("description").and_then(Value::as_str)
        && !d.trim().is_empty()
        && let Value::Object(m) = &mut schema
    {
        m.insert(
            "description".into(),
            Value::String(cut(d, crate::schema::MAX_PROPERTY_DESCRIPTION)),
        );
    }
    describe_property(name, &mut schema);
    if p.value.get("deprecated").and_then(Value::as_bool) == Some(true)
        && let Value::Object(m) = &mut schema
    {
        m.insert("deprecated".into(), json!(true));
    }
    let placeholder = Value::String(format!("{{{prop}}}"));
    match place {
        "path" => path_args.push((name.to_owned(), prop.clone())),
        "query" => {
            query.insert(name.to_owned(), placeholder);
        }
        _ => {
            headers.insert(name.to_owned(), placeholder);
        }
    }
    args.add(&prop, schema, required);
    Ok(())
}

/// Whether a converted schema holds one value (what a URL or header placeholder takes).
fn is_scalar(schema: &Value) -> bool {
    const SCALAR: &[&str] = &["string", "number", "integer", "boolean", "null"];
    if let Some(t) = schema.get("type") {
        let ts: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        return ts.iter().all(|t| SCALAR.contains(t)) && !ts.is_empty();
    }
    let values = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|e| e.iter().collect::<Vec<_>>())
        .or_else(|| schema.get("const").map(|c| vec![c]));
    if let Some(values) = values {
        return values.iter().all(|v| !v.is_array() && !v.is_object());
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(members)) = schema.get(key) {
            return key != "allOf" && members.iter().all(is_scalar)
                || key == "allOf" && members.iter().any(is_scalar);
        }
    }
    false
}

/// An HTTP token (a header name).
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The URL template: the server, then the path with each `{param}` as its argument's
/// placeholder and every other brace written `{{`/`}}`.
fn url_template(server: &str, path: &str, path_args: &[(String, String)]) -> Result<String, Skip> {
    let mut out = escape_braces(server.trim_end_matches('/'));
    if !path.starts_with('/') {
        out.push('/');
    }
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&escape_braces(&rest[..open]));
        let Some(close) = rest[open..].find('}') else {
            return Err(skip("the path has an unclosed `{`"));
        };
        let name = &rest[open + 1..open + close];
        let Some((_, prop)) = path_args.iter().find(|(n, _)| n == name) else {
            return Err(skip(format!(
                "the path names {{{name}}}, which no path parameter describes"
            )));
        };
        out.push('{');
        out.push_str(prop);
        out.push('}');
        rest = &rest[open + close + 1..];
    }
    out.push_str(&escape_braces(rest));
    if let Some((name, _)) = path_args
        .iter()
        .find(|(n, _)| !path.contains(&format!("{{{n}}}")))
    {
        return Err(skip(format!(
            "path parameter `{name}` is not in the path {path}"
        )));
    }
    Ok(out)
}

/// Literal text of a template: braces doubled.
fn escape_braces(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// Summary and description, cut, then the request it sends (and that it returns JSON).
fn description(spec: &Spec, op: &Operation<'_>, json_out: bool) -> String {
    let get = |k: &str| {
        op.op
            .get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let mut text = match (get("summary"), get("description")) {
        (Some(s), Some(d)) if d.starts_with(s) => d.to_owned(),
        (Some(s), Some(d)) => {
            let stop = if s.ends_with(['.', '!', '?']) {
                ""
            } else {
                "."
            };
            format!("{s}{stop} {d}")
        }
        (Some(s), None) | (None, Some(s)) => s.to_owned(),
        (None, None) => String::new(),
    };
    text = cut(&text, MAX_DESCRIPTION);
    if !text.is_empty() && !text.ends_with(['.', '!', '?', '…']) {
        text.push('.');
    }
    let title = spec
        .doc()
        .pointer("/info/title")
        .and_then(Value::as_str)
        .map(|t| cut(t, 80))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "the API".into());
    let method = op.method.to_ascii_uppercase();
    let tail = if json_out {
        format!(
            "Sends {method} {} to {title}; returns its JSON response.",
            op.path
        )
    } else {
        format!(
            "Sends {method} {} to {title}; returns the response text.",
            op.path
        )
    };
    if text.is_empty() {
        tail
    } else {
        format!("{text} {tail}")
    }
}

/// The hints a method implies: GET and HEAD read only; PUT and DELETE idempotent; PUT and
/// DELETE may overwrite or delete; every call reaches a service outside (open world).
fn annotations(method: &str) -> Value {
    let (read_only, destructive, idempotent) = match method {
        "get" | "head" => (true, false, true),
        "put" => (false, true, true),
        "delete" => (false, true, true),
        "options" | "trace" => (false, false, true),
        _ => (false, false, false),
    };
    if read_only {
        json!({"readOnlyHint": true, "idempotentHint": idempotent, "openWorldHint": true})
    } else {
        json!({"readOnlyHint": false, "destructiveHint": destructive, "idempotentHint": idempotent, "openWorldHint": true})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_templates() {
        let args = [("petId".to_owned(), "pet_id".to_owned())];
        table! { |server: &str, path: &str, want: Result<&str, &str>| {
                let got = url_template(server, path, &args);
                match want {
                    Ok(w) => assert_eq!(got.unwrap(), w, "{path}"),
                    Err(w) => assert!(got.unwrap_err().reason.contains(w), "{path}"),
                }
            };
            ("https://a.example/v1/", "/pets/{petId}", Ok("https://a.example/v1/pets/{pet_id}"));
            ("https://a.example", "/pets/{petId}:archive", Ok("https://a.example/pets/{pet_id}:archive"));
            ("https://a.example", "/x/{other}", Err("no path parameter"));
            ("https://a.example", "/pets", Err("not in the path"));
            ("https://a.example/{{odd}}", "/pets/{petId}", Ok("https://a.example/{{{{odd}}}}/pets/{pet_id}"));
        }
    }

    #[test]
    fn scalars() {
        table! { |schema: Value, want: bool| assert_eq!(is_scalar(&schema), want, "{schema}");
            (json!({"type": "string"}), true);
            (json!({"type": ["integer", "null"]}), true);
            (json!({"type": "array", "items": {}}), false);
            (json!({"enum": ["a", "b"]}), true);
            (json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}), true);
            (json!({"anyOf": [{"type": "string"}, {"type": "object"}]}), false);
            (json!({}), false);
        }
    }

    #[test]
    fn annotations_by_method() {
        table! { |method: &str, read_only: bool, destructive: Option<bool>, idempotent: bool| {
                let a = annotations(method);
                assert_eq!(a["readOnlyHint"], read_only, "{method}");
                assert_eq!(a.get("destructiveHint").and_then(Value::as_bool), destructive, "{method}");
                assert_eq!(a["idempotentHint"], idempotent, "{method}");
                assert_eq!(a["openWorldHint"], true);
            };
            ("get", true, None, true);
            ("head", true, None, true);
            ("put", false, Some(true), true);
            ("delete", false, Some(true), true);
            ("post", false, Some(false), false);
            ("patch", false, Some(false), false);
        }
    }
}
