//! The file's model: what a person writes, as serde reads it from YAML, JSON or TOML.
//!
//! Nothing here is checked beyond its shape; `toolwright_declared::DeclaredTool::compile` turns a [`ToolSpec`] into a
//! tool the server can run, refusing what cannot run safely.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// A whole file: `{tools: [...], servers: {...}, gateway: {...}}` (any of the three), or a
/// bare array of tools (the seeds' `TOOLS` list).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FileSpec {
    /// `tools: [...]`, `servers: {...}`, `gateway: {...}`.
    Tools(Box<ToolsFile>),
    /// `[...]`.
    Bare(Vec<Value>),
}

impl FileSpec {
    /// The tools, still as values (each is read into a [`ToolSpec`] on its own, so one bad
    /// tool is reported with its index and the others still are).
    pub fn into_tools(self) -> Vec<Value> {
        match self {
            FileSpec::Tools(f) => f.tools,
            FileSpec::Bare(v) => v,
        }
    }
}

/// The members of a file that is a mapping.
pub const FILE_KEYS: &[&str] = &[
    "tools", "servers", "gateway", "builtins", "views", "limits", "sources", "api_keys", "skills",
];

/// `{tools: [...], servers: {...}, gateway: {...}}`: declared tools, upstream servers
/// (each read into a [`crate::servers::ServerSpec`] on its own) and the gateway's settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    /// The declared tools.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// The upstream servers, by name, in file order.
    #[serde(default)]
    pub servers: Option<Map<String, Value>>,
    /// `gateway:` as written.
    #[serde(default)]
    pub gateway: Option<Value>,
    /// `builtins:` as written: which built-in tools the file asks for (read by
    /// [`crate::builtins::read`]).
    #[serde(default)]
    pub builtins: Option<Value>,
    /// `views:` as written (read by [`crate::config::read_config`]).
    #[serde(default)]
    pub views: Option<Value>,
    /// `limits:` as written (read by [`crate::config::read_config`]).
    #[serde(default)]
    pub limits: Option<Value>,
    /// `sources:`: the databases `sql` tools name (each read into a
    /// [`crate::sql::SourceSpec`] on its own).
    #[serde(default)]
    pub sources: Option<Map<String, Value>>,
    /// `api_keys:` as written (read by [`crate::config::read_config`]).
    #[serde(default)]
    pub api_keys: Option<Value>,
    /// `skills:` as written: a directory of skills (read by [`crate::skills::read`]).
    #[serde(default)]
    pub skills: Option<Value>,
}

/// One declared tool: the MCP `Tool` fields, an action and how its output is shaped.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// A human-readable name.
    #[serde(default)]
    pub title: Option<String>,
    /// What the tool does, what it returns and when to use it.
    #[serde(default)]
    pub description: Option<String>,
    /// The arguments' JSON Schema (root `type: object`) [default: an object with no
    /// properties].
    #[serde(default, rename = "inputSchema", alias = "input_schema")]
    pub input_schema: Option<Value>,
    /// The structured result's JSON Schema.
    #[serde(default, rename = "outputSchema", alias = "output_schema")]
    pub output_schema: Option<Value>,
    /// Behaviour hints, untrusted by clients. Absent hints take the spec's defaults: not
    /// read-only, destructive, not idempotent, open-world.
    #[serde(default)]
    pub annotations: Option<Map<String, Value>>,
    /// Icons, as the latest spec defines them.
    #[serde(default)]
    pub icons: Option<Value>,
    /// `_meta`, passed through.
    #[serde(default, rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Run a program.
    #[serde(default)]
    pub command: Option<CommandSpec>,
    /// Send an HTTP request.
    #[serde(default)]
    pub http: Option<HttpSpec>,
    /// Run one SQL statement against a source of the file's `sources:`.
    #[serde(default)]
    pub sql: Option<crate::sql::SqlSpec>,
    /// How stdout or the response body becomes the result [default: text].
    #[serde(default)]
    pub output: Option<OutputSpec>,
    /// How long the action may run [default: 30s]; the server's --call-timeout still caps it.
    #[serde(default)]
    pub timeout: Option<DurationSpec>,
    /// Whether a call may run as a task (the Tasks extension): `forbidden` (the default),
    /// `optional` or `required`. Served as the definition's `execution.taskSupport`.
    #[serde(default)]
    pub task: Option<toolwright_protocol::TaskSupport>,
    /// Arguments bound to the caller's identity, `{NAME: "{claims.CLAIM}"}`
    /// ([`crate::bound`]): each a property of `inputSchema`, taken out of the advertised one.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

/// `command:` as a bare argv list or as an object with more settings.
#[derive(Debug, Clone)]
pub enum CommandSpec {
    /// `["wc", "-w", "{path}"]`.
    Argv(Vec<ArgvElement>),
    /// `{argv: [...], env: {...}, ...}`.
    Full(CommandOptions),
}

impl CommandSpec {
    /// The options, with defaults for the bare form.
    pub fn options(&self) -> CommandOptions {
        match self {
            CommandSpec::Argv(argv) => CommandOptions {
                argv: argv.clone(),
                ..CommandOptions::default()
            },
            CommandSpec::Full(o) => o.clone(),
        }
    }
}

/// Everything about running a program.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandOptions {
    /// The program and its arguments. The first element is the program (a path, or a name
    /// looked up on the allowed `PATH`) and holds no placeholder.
    pub argv: Vec<ArgvElement>,
    /// Variables set for the program: values are templates (`{arg}` is an argument's
    /// value, `${VAR}` the server's own variable).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's variables passed through besides the default allow-list.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// The working directory, a template resolved beneath the first root [default: the
    /// first root]. It must stay inside the server's roots.
    #[serde(default)]
    pub cwd: Option<String>,
    /// What the program reads on stdin, a template [default: nothing, /dev/null].
    #[serde(default)]
    pub stdin: Option<String>,
    /// Exit statuses that count as success [default: `[0]`].
    #[serde(default)]
    pub ok_exit: Option<Vec<i32>>,
    /// Most bytes kept of stdout; more fails the call [default: 1MiB].
    #[serde(default)]
    pub max_stdout: Option<ByteSize>,
    /// Most bytes kept of stderr (its tail goes into a failure's text) [default: 64KiB].
    #[serde(default)]
    pub max_stderr: Option<ByteSize>,
}

/// One element of argv.
#[derive(Debug, Clone)]
pub enum ArgvElement {
    /// A template that becomes exactly one argument (or, for `{name...}`, one per item).
    One(String),
    /// A group kept only when every argument it names is present (not absent, not null).
    Group(Vec<String>),
    /// A group kept only when the argument `when` is present and not `false`.
    When(WhenGroup),
}

// Written by hand rather than `untagged` so that an error inside one form says what is
// wrong there (with its path) instead of "did not match any variant".
impl<'de> Deserialize<'de> for CommandSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CommandSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an argv list such as [\"wc\", \"-w\", \"{path}\"] or an object with `argv`",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                a: A,
            ) -> Result<CommandSpec, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(a))
                    .map(CommandSpec::Argv)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                a: A,
            ) -> Result<CommandSpec, A::Error> {
                CommandOptions::deserialize(serde::de::value::MapAccessDeserializer::new(a))
                    .map(CommandSpec::Full)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ArgvElement {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ArgvElement;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a string (one argument), a list (an optional group) or {when: name, args: [...]}",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ArgvElement, E> {
                Ok(ArgvElement::One(v.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                a: A,
            ) -> Result<ArgvElement, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(a))
                    .map(ArgvElement::Group)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                a: A,
            ) -> Result<ArgvElement, A::Error> {
                WhenGroup::deserialize(serde::de::value::MapAccessDeserializer::new(a))
                    .map(ArgvElement::When)
            }
        }
        d.deserialize_any(V)
    }
}

/// `{when: name, args: [...]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhenGroup {
    /// The argument deciding whether the group is kept.
    pub when: String,
    /// The elements (templates) of the group.
    pub args: Vec<String>,
}

/// `http:`: one request per call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// The method [default: GET].
    #[serde(default)]
    pub method: Option<String>,
    /// The URL template: placeholders are allowed in the path (each encoded as one path
    /// segment's text) and in the query (encoded as a query component), nowhere else.
    pub url: String,
    /// Query parameters added to the URL; a parameter whose placeholders are absent is left
    /// out.
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Request headers; values are templates (`{arg}`, `${VAR}` for secrets from the
    /// environment, which never appear in errors or logs). A header whose placeholders are
    /// absent is left out.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body built as a value: a string that is exactly `"{name}"` becomes the
    /// argument's JSON value (of any type); other strings are templates; a member whose
    /// argument is absent is left out.
    #[serde(default)]
    pub body: Option<Value>,
    /// Redirects: followed on the same host (scheme, host and port) up to `max` times;
    /// other hosts only when listed in `hosts`.
    #[serde(default)]
    pub redirects: Option<RedirectSpec>,
    /// Allow private, link-local and other non-public addresses [default: false].
    #[serde(default)]
    pub allow_private: bool,
    /// Allow loopback addresses [default: true].
    #[serde(default)]
    pub allow_loopback: Option<bool>,
    /// Most bytes of the response body; more fails the call [default: 4MiB].
    #[serde(default)]
    pub max_response: Option<ByteSize>,
}

/// How redirects are followed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedirectSpec {
    /// Most redirects followed [default: 5]; 0 follows none.
    #[serde(default)]
    pub max: Option<u32>,
    /// Other hosts redirects may go to (`host` or `host:port`).
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// `output:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// How the bytes are read [default: text].
    #[serde(default)]
    pub parse: Parse,
    /// For `regex`: the pattern; its named groups become the members of the result.
    #[serde(default)]
    pub pattern: Option<String>,
    /// A jq expression applied to the parsed value (jaq's dialect); its single output is the
    /// result.
    #[serde(default)]
    pub jq: Option<String>,
    /// How long the jq expression may run [default: 1s].
    #[serde(default)]
    pub jq_timeout: Option<DurationSpec>,
}

/// How the bytes are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Parse {
    /// As UTF-8 text: the result is one text block.
    #[default]
    Text,
    /// As JSON: the value is the structured result.
    Json,
    /// With a regular expression's named groups.
    Regex,
}

/// A duration: `5s`, `250ms`, `2m`, or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationSpec(pub Duration);

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(f64),
            Text(String),
        }
        let parsed = match Raw::deserialize(d)? {
            Raw::Secs(s) if s > 0.0 && s.is_finite() && s < 1e9 => Duration::from_secs_f64(s),
            Raw::Secs(s) => {
                return Err(serde::de::Error::custom(format!(
                    "{s} is not a positive number of seconds"
                )));
            }
            Raw::Text(t) => humantime::parse_duration(t.trim())
                .map_err(|e| serde::de::Error::custom(format!("{t:?}: {e} (say 5s, 250ms, 2m)")))?,
        };
        if parsed.is_zero() {
            return Err(serde::de::Error::custom(
                "a duration must be more than zero",
            ));
        }
        Ok(DurationSpec(parsed))
    }
}

/// A size in bytes: `64KiB`, `1MiB`, `500kB`, or a number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(b) => Ok(ByteSize(b)),
            Raw::Text(t) => parse_size(&t).map(ByteSize).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{t:?} is not a size (say 4096, 64KiB, 1MiB, 500kB)"
                ))
            }),
        }
    }
}

/// Parses `64KiB`, `1 MiB`, `500kB`, `12B`, `4096`.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (text, want) in [
            ("4096", Some(4096)),
            ("64KiB", Some(65536)),
            ("1 MiB", Some(1 << 20)),
            ("500kB", Some(500_000)),
            ("12B", Some(12)),
            ("1.5MiB", None),
            ("MiB", None),
            ("3 parsecs", None),
            ("99999999999999999999GiB", None),
        ] {
            assert_eq!(parse_size(text), want, "{text}");
        }
    }

    #[test]
    fn durations() {
        let d = |v: Value| serde_json::from_value::<DurationSpec>(v).map(|d| d.0);
        assert_eq!(d(Value::from("5s")).unwrap(), Duration::from_secs(5));
        assert_eq!(d(Value::from("250ms")).unwrap(), Duration::from_millis(250));
        assert_eq!(d(Value::from(1.5)).unwrap(), Duration::from_millis(1500));
        assert!(d(Value::from(0)).is_err());
        assert!(d(Value::from("0s")).is_err());
        assert!(d(Value::from("soon")).is_err());
    }

    #[test]
    fn argv_forms() {
        let spec: CommandSpec = serde_json::from_value(serde_json::json!(
            ["git", "log", ["--max-count", "{limit}"], {"when": "all", "args": ["--all"]}]
        ))
        .unwrap();
        let o = spec.options();
        assert_eq!(o.argv.len(), 4);
        assert!(matches!(&o.argv[2], ArgvElement::Group(g) if g.len() == 2));
        assert!(matches!(&o.argv[3], ArgvElement::When(w) if w.when == "all"));
    }
}
