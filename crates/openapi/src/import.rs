//! The whole import: the operations selected, one tool each (named, deduplicated), the
//! server URL, and the check that what is written lints clean: a tool the linter would
//! warn about is moved to the skipped list with the finding, never written.

use crate::error::Error;
use crate::load::{Location, Spec};
use crate::operation::{Operation, build};
use crate::security::{EnvVar, auth_for};
use crate::text::{one_line, snake_case};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use url::Url;

/// The HTTP methods of a path item, in the order tools are written.
const METHODS: &[&str] = &[
    "get", "head", "post", "put", "patch", "delete", "options", "trace",
];

/// Which operations to import, and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only operations with one of these tags [default: any].
    pub include_tags: Vec<String>,
    /// No operation with one of these tags.
    pub exclude_tags: Vec<String>,
    /// Only these operations, by `operationId` or by the tool name made of it [default: all].
    pub operations: Vec<String>,
    /// Only operations whose path template matches one of these globs (`/pets/*`,
    /// `/repos/**`) [default: all].
    pub paths: Vec<String>,
    /// The server URL, instead of the description's `servers[0]`.
    pub server: Option<String>,
    /// The prefix of the environment variables credentials come from [default: made of the
    /// API's title].
    pub env_prefix: Option<String>,
}

/// An operation not written, or a part of one left out, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `GET /pets/{petId} (showPetById)`.
    pub operation: String,
    /// Why, in one line.
    pub reason: String,
}

/// What an import made.
#[derive(Debug, Clone)]
pub struct Import {
    /// The tools, as the tool file holds them.
    pub tools: Vec<Value>,
    /// Operations selected but not written.
    pub skipped: Vec<Skipped>,
    /// Optional parts left out of written tools.
    pub notes: Vec<Skipped>,
    /// The environment variables the tools read.
    pub env: Vec<EnvVar>,
    /// Where the description was read from.
    pub source: String,
    /// `info.title` and `info.version`.
    pub title: String,
    /// The server URL the tools call.
    pub server: String,
}

/// Imports the operations of `spec` that `options` select.
///
/// # Errors
///
/// [`Error::Server`] when no absolute http(s) server URL is known; [`Error::Pattern`] for a
/// bad `--path` glob.
pub fn import(spec: &Spec, options: &Options) -> Result<Import, Error> {
    let globs = path_globs(&options.paths)?;
    let doc = spec.doc();
    let title = doc
        .pointer("/info/title")
        .and_then(Value::as_str)
        .unwrap_or("API")
        .to_owned();
    let prefix = options
        .env_prefix
        .clone()
        .unwrap_or_else(|| default_prefix(&title));
    let base_server = match &options.server {
        Some(s) => absolute_server(&spec.root, s, &Map::new())?,
        None => server_of(spec, doc)?,
    };
    let mut out = Import {
        tools: Vec::new(),
        skipped: Vec::new(),
        notes: Vec::new(),
        env: Vec::new(),
        source: spec.root.display(),
        title: one_line(&format!(
            "{title} {}",
            doc.pointer("/info/version")
                .and_then(Value::as_str)
                .unwrap_or("")
        ))
        .trim()
        .to_owned(),
        server: base_server.clone(),
    };
    let mut names = BTreeSet::new();
    // Each written tool's operation, for the skipped list should the lint pass drop it.
    let mut labels = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (path, raw_item) in paths {
        let item = match spec.deref(raw_item, &spec.root_key) {
            Ok(f) => f,
            Err(e) => {
                out.skipped.push(Skipped {
                    operation: one_line(path),
                    reason: one_line(&e.to_string()),
                });
                continue;
            }
        };
        for method in METHODS {
            let Some(op_value) = item.value.get(*method).filter(|v| v.is_object()) else {
                continue;
            };
            let op = Operation {
                method,
                path,
                item: item.value,
                op: op_value,
                doc: item.doc,
            };
            if !selected(&op, options, &globs) {
                continue;
            }
            let label = one_line(&op.label());
            let server = match (&options.server, own_servers(&op)) {
                (None, Some(servers)) => match absolute_from(spec, servers) {
                    Ok(s) => s,
                    Err(e) => {
                        out.skipped.push(Skipped {
                            operation: label,
                            reason: one_line(&e.to_string()),
                        });
                        continue;
                    }
                },
                _ => base_server.clone(),
            };
            let auth = auth_for(spec, op_value, &prefix);
            match build(spec, &op, &server, &auth) {
                Ok(built) => {
                    let name = unique_name(&tool_name(&op), &mut names);
                    let mut tool = Map::new();
                    tool.insert("name".into(), Value::String(name));
                    tool.extend(built.tool);
                    out.tools.push(Value::Object(tool));
                    labels.push(label.clone());
                    for n in built.notes {
                        out.notes.push(Skipped {
                            operation: label.clone(),
                            reason: one_line(&n),
                        });
                    }
                    if let Some(unmet) = &auth.unmet {
                        out.notes.push(Skipped {
                            operation: label.clone(),
                            reason: one_line(&format!(
                                "written without credentials, none of its security schemes can be sent: {unmet}"
                            )),
                        });
                    }
                    for v in auth.vars {
                        if !out.env.iter().any(|e| e.name == v.name) {
                            out.env.push(v);
                        }
                    }
                }
                Err(skip) => out.skipped.push(Skipped {
                    operation: label,
                    reason: one_line(&skip.reason),
                }),
            }
        }
    }
    crate::check::keep_lint_clean(&mut out, &labels)?;
    Ok(out)
}

/// The tool name: `operationId` in snake_case, else the method and the path's words.
fn tool_name(op: &Operation<'_>) -> String {
    let from_id = op
        .op
        .get("operationId")
        .and_then(Value::as_str)
        .map(snake_case)
        .filter(|n| n.chars().filter(char::is_ascii_alphabetic).count() >= 3);
    from_id.unwrap_or_else(|| {
        let n = snake_case(&format!("{} {}", op.method, op.path));
        if n.len() < 3 {
            format!("{}_root", op.method)
        } else {
            n
        }
    })
}

/// `name`, or `name_2`, `name_3`, … when taken (kept within [`crate::text::MAX_NAME`]).
fn unique_name(name: &str, taken: &mut BTreeSet<String>) -> String {
    let mut candidate = name.to_owned();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let mut base = name.to_owned();
        base.truncate(crate::text::MAX_NAME - suffix.len());
        candidate = format!("{}{suffix}", base.trim_end_matches('_'));
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// Whether the options select `op`.
fn selected(op: &Operation<'_>, options: &Options, globs: &Option<globset::GlobSet>) -> bool {
    let tags: Vec<&str> = op
        .op
        .get("tags")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !options.include_tags.is_empty()
        && !tags
            .iter()
            .any(|t| options.include_tags.iter().any(|i| i == t))
    {
        return false;
    }
    if tags
        .iter()
        .any(|t| options.exclude_tags.iter().any(|e| e == t))
    {
        return false;
    }
    if !options.operations.is_empty() {
        let id = op.op.get("operationId").and_then(Value::as_str);
        let name = tool_name(op);
        if !options
            .operations
            .iter()
            .any(|o| Some(o.as_str()) == id || *o == name)
        {
            return false;
        }
    }
    globs.as_ref().is_none_or(|g| g.is_match(op.path))
}

/// The `--path` globs, `*` not crossing a `/` (`**` does).
fn path_globs(patterns: &[String]) -> Result<Option<globset::GlobSet>, Error> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::Pattern {
                pattern: p.clone(),
                reason: e.kind().to_string(),
            })?;
        set.add(glob);
    }
    set.build().map(Some).map_err(|e| Error::Pattern {
        pattern: patterns.join(" "),
        reason: e.kind().to_string(),
    })
}

/// The environment variables' prefix: the title's first two words, upper case.
fn default_prefix(title: &str) -> String {
    let words: Vec<String> = snake_case(title)
        .split('_')
        .filter(|w| !w.is_empty())
        .take(2)
        .map(str::to_owned)
        .collect();
    if words.is_empty() {
        "API".into()
    } else {
        words.join("_").to_ascii_uppercase()
    }
}

/// The `servers` an operation or its path item names, when it names its own.
fn own_servers<'a>(op: &Operation<'a>) -> Option<&'a Value> {
    op.op
        .get("servers")
        .or_else(|| op.item.get("servers"))
        .filter(|s| s.as_array().is_some_and(|a| !a.is_empty()))
}

/// The description's server: `servers[0]` (or `/` when none), resolved.
fn server_of(spec: &Spec, doc: &Value) -> Result<String, Error> {
    match doc
        .get("servers")
        .filter(|s| s.as_array().is_some_and(|a| !a.is_empty()))
    {
        Some(servers) => absolute_from(spec, servers),
        None => absolute_server(&spec.root, "/", &Map::new()),
    }
}

/// `servers[0]` of a `servers` list, its variables at their defaults, made absolute.
fn absolute_from(spec: &Spec, servers: &Value) -> Result<String, Error> {
    let first = &servers[0];
    let url = first.get("url").and_then(Value::as_str).unwrap_or("/");
    let vars = first
        .get("variables")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    absolute_server(&spec.root, url, &vars)
}

/// A server URL with `{variable}`s at their defaults, resolved against the description's
/// own location (a URL description; a relative URL beside a file cannot be resolved), http
/// or https, without a trailing `/`, query or fragment.
fn absolute_server(root: &Location, url: &str, vars: &Map<String, Value>) -> Result<String, Error> {
    let mut text = String::new();
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        text.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| Error::Server {
            reason: format!("{url:?} has an unclosed `{{`"),
        })?;
        let name = &rest[open + 1..open + close];
        let default = vars
            .get(name)
            .and_then(|v| v.get("default"))
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Server {
                reason: format!("{url:?}: server variable `{name}` has no default"),
            })?;
        text.push_str(default);
        rest = &rest[open + close + 1..];
    }
    text.push_str(rest);
    let absolute = match Url::parse(&text) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => match root {
            Location::Url(base) => base.join(&text).map_err(|e| Error::Server {
                reason: format!("{text:?} against {base}: {e}"),
            })?,
            Location::File(_) => {
                return Err(Error::Server {
                    reason: format!(
                        "the server URL {text:?} is relative, and the description was read from a file"
                    ),
                });
            }
        },
        Err(e) => {
            return Err(Error::Server {
                reason: format!("{text:?}: {e}"),
            });
        }
    };
    if !matches!(absolute.scheme(), "http" | "https") || absolute.host_str().is_none() {
        return Err(Error::Server {
            reason: format!("{absolute} is not an http(s) URL with a host"),
        });
    }
    let mut absolute = absolute;
    absolute.set_query(None);
    absolute.set_fragment(None);
    Ok(absolute.as_str().trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn servers() {
        let file = Location::File("api.yaml".into());
        let url =
            Location::Url(Url::parse("https://api.example.com/specs/v1/openapi.json").unwrap());
        let vars = json!({"region": {"default": "eu"}, "v": {"default": "2"}});
        let vars = vars.as_object().unwrap();
        table! { |root: &Location, server: &str, want: Option<&str>| assert_eq!(absolute_server(root, server, vars).ok().as_deref(), want, "{server}");
            (&file, "https://a.example/v1/", Some("https://a.example/v1"));
            (&file, "https://{region}.example/v{v}", Some("https://eu.example/v2"));
            (&file, "/v1", None);
            (&file, "https://{nope}.example", None);
            (&file, "ftp://a.example", None);
            (&url, "/v1", Some("https://api.example.com/v1"));
            (&url, "../api", Some("https://api.example.com/specs/api"));
            (&url, "", Some("https://api.example.com/specs/v1/openapi.json"));
        }
    }

    #[test]
    fn a_parameter_carrying_the_credentials_is_sent_from_the_environment() {
        let doc = json!({"openapi": "3.0.0", "info": {"title": "Keys", "version": "1"},
            "servers": [{"url": "https://a.example"}], "security": [{"k": []}],
            "components": {"securitySchemes": {"k": {"type": "apiKey", "in": "query", "name": "key"}}},
            "paths": {"/invoices": {"get": {"operationId": "listInvoices", "summary": "List the invoices of the account",
                "parameters": [{"name": "key", "in": "query", "schema": {"type": "string"}},
                               {"name": "q", "in": "query", "description": "Text to find.", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}}}}});
        let spec =
            Spec::with_root(Location::File("a.json".into()), doc, &crate::FilesOnly).unwrap();
        let got = import(&spec, &Options::default()).unwrap();
        assert_eq!(got.skipped, Vec::new());
        let tool = &got.tools[0];
        assert_eq!(tool["name"], "list_invoices");
        assert_eq!(
            tool["http"]["query"],
            json!({"q": "{q}", "key": "${KEYS_K}"})
        );
        let props: Vec<&String> = tool["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(props, ["q"]);
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
    }

    #[test]
    fn names_are_unique() {
        let mut taken = BTreeSet::new();
        assert_eq!(unique_name("list_pets", &mut taken), "list_pets");
        assert_eq!(unique_name("list_pets", &mut taken), "list_pets_2");
        assert_eq!(unique_name("list_pets", &mut taken), "list_pets_3");
        let long = "a".repeat(64);
        assert_eq!(unique_name(&long, &mut taken), long);
        assert_eq!(unique_name(&long, &mut taken).len(), 64);
    }

    #[test]
    fn prefixes() {
        table! { |title: &str, want: &str| assert_eq!(default_prefix(title), want);
            ("Swagger Petstore", "SWAGGER_PETSTORE");
            ("GitHub v3 REST API", "GIT_HUB");
            ("", "API");
        }
    }
}
