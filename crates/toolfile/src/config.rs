//! The gateway's part of a set of files, checked: every `servers:` entry read into a
//! [`ServerSpec`] and checked, the `gateway:` settings resolved, the files merged. As for
//! declared tools, a set loads as a whole or not at all, and every problem is placed by
//! file, line and column ([`read_config`]).
//!
//! What cannot be known at load (an upstream's tool list) is checked when the list arrives
//! (`toolwright-gateway`'s naming); a setting that could only apply to tools the filters hide
//! is a warning here.

use crate::document::Document;
use crate::error::{FileProblem, LoadError, Problem, Seg};
use crate::rules::read_value;
use crate::servers::{GatewaySpec, RootsSpec, ServerSpec, TrustSpec};
use crate::template::Template;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use transport::{check_http, check_stdio};

/// The separators a server's prefix and a tool's name may be joined with.
pub const SEPARATORS: &[&str] = &["__", "_", ".", "-"];

/// The separator when `gateway.separator` is absent.
pub const DEFAULT_SEPARATOR: &str = "__";

/// The state file's name when `gateway.state_file` is absent (next to the first file).
pub const DEFAULT_STATE_FILE: &str = ".toolwright-pins.json";

/// The longest server name.
pub const MAX_SERVER_NAME: usize = 32;

/// The longest prefix.
pub const MAX_PREFIX: usize = 64;

/// The hints of `annotations`, each a boolean.
const HINTS: &[&str] = &[
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// Everything the gateway needs of a set of files, checked.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Between a prefix and a tool's name (one of [`SEPARATORS`]).
    pub separator: String,
    /// Where pins are kept: `gateway.state_file` relative to its file's directory, or
    /// [`DEFAULT_STATE_FILE`] next to the first file.
    pub state_file: PathBuf,
    /// The upstream servers, in file order.
    pub servers: Vec<Server>,
    /// What is suspicious but loads (a per-tool setting no tool can reach).
    pub warnings: Vec<FileProblem>,
    /// The files read, in order (as named).
    pub files: Vec<PathBuf>,
    /// `views:` of every file, in file order ([`crate::views`]).
    pub views: Vec<crate::views::ViewConfig>,
    /// `api_keys:` of every file, in file order ([`crate::api_keys`]).
    pub api_keys: Vec<crate::api_keys::ApiKeyConfig>,
    /// `limits:` of the files, if one sets it ([`crate::limits`]).
    pub limits: Option<crate::limits::LimitsConfig>,
    /// `skills:` of the files, relative to its file's directory ([`crate::skills`]).
    pub skills: Option<PathBuf>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            separator: DEFAULT_SEPARATOR.to_owned(),
            state_file: PathBuf::from(DEFAULT_STATE_FILE),
            servers: Vec::new(),
            warnings: Vec::new(),
            files: Vec::new(),
            views: Vec::new(),
            api_keys: Vec::new(),
            limits: None,
            skills: None,
        }
    }
}

impl GatewayConfig {
    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// One upstream server, checked.
#[derive(Debug, Clone)]
pub struct Server {
    /// Its name (`[a-z0-9_-]{1,32}`).
    pub name: String,
    /// The file it is declared in.
    pub file: PathBuf,
    /// Its settings as written.
    pub spec: ServerSpec,
    /// The namespace of its tools: `prefix`, or the name; `""` for none.
    pub prefix: String,
    /// How it is reached.
    pub transport: Transport,
    /// Which upstream tools are exposed (`include`, `exclude`), compiled.
    pub filter: NameFilter,
    /// What it gets when it asks `roots/list`.
    pub roots: Roots,
    /// How its calls are authorized with the caller's identity (`exchange:`), if they are.
    pub exchange: Option<crate::exchange::Exchange>,
}

/// What an upstream is given when it asks `roots/list` (its entry's `roots:`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Roots {
    /// Nothing: the `roots` capability is not declared to it, so it keeps what its own
    /// settings name (a filesystem server, the directories of its argv).
    #[default]
    None,
    /// These directories, absolute (resolved against the config file's directory).
    Dirs(Vec<PathBuf>),
    /// The roots of the client whose call it is serving; none outside a call.
    Client,
}

/// How an upstream is reached.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process speaking over stdin and stdout.
    Stdio {
        /// The program and its arguments (no shell).
        argv: Vec<String>,
        /// Variables set for it: each value's `${VAR}` is the gateway's variable.
        env: Vec<(String, Template)>,
        /// The gateway's variables passed through besides the default allow-list.
        inherit_env: Vec<String>,
        /// Its working directory, resolved against the file's directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint (`http://` or `https://`).
        url: String,
        /// The variable holding a bearer token.
        bearer_env: Option<String>,
        /// `ca_cert`, resolved against the file's directory: extra trusted CAs.
        ca_cert: Option<PathBuf>,
    },
}

/// `include` and `exclude`, compiled: which upstream names are exposed.
#[derive(Debug, Clone, Default)]
pub struct NameFilter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl NameFilter {
    /// Compiles the globs; a problem for each that does not compile, at `include[i]` or
    /// `exclude[i]`.
    ///
    /// # Errors
    ///
    /// Every glob that does not compile.
    pub fn compile(include: Option<&[String]>, exclude: &[String]) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut set = |key: &str, globs: &[String]| {
            let mut b = GlobSetBuilder::new();
            for (i, g) in globs.iter().enumerate() {
                match Glob::new(g) {
                    Ok(glob) => {
                        b.add(glob);
                    }
                    Err(e) => problems.push(Problem::new(
                        [Seg::from(key), Seg::Index(i)],
                        format!("not a glob: {}", e.kind()),
                    )),
                }
            }
            b.build().ok()
        };
        let include = include.and_then(|g| set("include", g));
        let exclude = if exclude.is_empty() {
            None
        } else {
            set("exclude", exclude)
        };
        if problems.is_empty() {
            Ok(NameFilter { include, exclude })
        } else {
            Err(problems)
        }
    }

    /// Whether upstream tool `name` is exposed: matched by `include` (when there is one)
    /// and by no `exclude`.
    pub fn allows(&self, name: &str) -> bool {
        self.include.as_ref().is_none_or(|s| s.is_match(name))
            && !self.exclude.as_ref().is_some_and(|s| s.is_match(name))
    }
}

/// Reads the `servers:`, `gateway:`, `views:` and `limits:` of every document, all or nothing: the servers of
/// every file (a name used twice is refused, naming both places), each checked, no two with
/// one prefix, no declared tool inside a server's namespace.
///
/// # Errors
///
/// [`LoadError::Problems`] with every problem found.
pub fn read_config(docs: &[Document]) -> Result<GatewayConfig, LoadError> {
    let mut config = GatewayConfig {
        files: docs.iter().map(|d| d.file.clone()).collect(),
        ..GatewayConfig::default()
    };
    let mut problems = Vec::new();
    if let Some(first) = docs.first() {
        config.state_file = dir_of(&first.file).join(DEFAULT_STATE_FILE);
    }
    read_gateway(docs, &mut config, &mut problems);
    read_all_servers(docs, &mut config, &mut problems);
    crate::views::read(docs, &mut config.views, &mut problems);
    crate::api_keys::read(docs, &mut config.api_keys, &mut problems);
    config.limits = crate::limits::read(docs, &config.views, &mut problems);
    config.skills = crate::skills::read(docs, &mut problems);
    check_namespaces(docs, &config, &mut problems);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(LoadError::Problems(problems))
    }
}

/// The one `gateway:` of the files (a second one is a problem): its separator and state
/// file into `config`.
fn read_gateway(docs: &[Document], config: &mut GatewayConfig, problems: &mut Vec<FileProblem>) {
    let mut gateway_in: Option<&Document> = None;
    for doc in docs {
        let Some(raw) = &doc.gateway else { continue };
        if let Some(first) = gateway_in {
            problems.push(doc.root_problem(Problem::new(
                ["gateway"],
                format!(
                    "`gateway:` is set in {} already; it belongs in one file",
                    place(first, &[Seg::from("gateway")])
                ),
            )));
            continue;
        }
        gateway_in = Some(doc);
        let g = match read_value::<GatewaySpec>(raw) {
            Err(p) => {
                problems.push(doc.root_problem(p.under("gateway")));
                continue;
            }
            Ok(g) => g,
        };
        if let Some(sep) = &g.separator {
            if SEPARATORS.contains(&sep.as_str()) {
                config.separator.clone_from(sep);
            } else {
                problems.push(doc.root_problem(Problem::new(
                    ["gateway", "separator"],
                    format!("{sep:?} is not a separator: say \"__\", \"_\", \".\" or \"-\""),
                )));
            }
        }
        if let Some(path) = &g.state_file {
            if path.as_os_str().is_empty() {
                problems.push(
                    doc.root_problem(Problem::new(["gateway", "state_file"], "an empty path")),
                );
            } else {
                config.state_file = dir_of(&doc.file).join(path);
            }
        }
    }
}

/// Every server of every file into `config`, each name once and each prefix once across
/// the files (the first keeps it; the others are problems).
fn read_all_servers(
    docs: &[Document],
    config: &mut GatewayConfig,
    problems: &mut Vec<FileProblem>,
) {
    // Every server, with the document it is in.
    let mut seen: BTreeMap<String, (&Document, usize)> = BTreeMap::new();
    let mut prefixes: BTreeMap<String, (&Document, String)> = BTreeMap::new();
    for doc in docs {
        for (i, (name, _)) in doc.servers.iter().enumerate() {
            if let Some((first, _)) = seen.get(name) {
                problems.push(doc.server_problem(
                    name,
                    Problem::new(
                        Vec::<Seg>::new(),
                        format!(
                            "another server is named {name:?} (at {})",
                            place(first, &server_path(name))
                        ),
                    ),
                ));
                continue;
            }
            seen.insert(name.clone(), (doc, i));
        }
        let (servers, bad, warnings) = doc.read_servers();
        problems.extend(bad);
        config.warnings.extend(warnings);
        for server in servers {
            if seen
                .get(&server.name)
                .is_some_and(|(d, _)| !std::ptr::eq(*d, doc))
            {
                continue;
            }
            if !server.prefix.is_empty() {
                if let Some((first, other)) = prefixes.get(&server.prefix) {
                    problems.push(doc.server_problem(
                        &server.name,
                        Problem::new(
                            prefix_at(&server.spec),
                            format!(
                                "server {other:?} (at {}) has the prefix {:?} too; two servers cannot share a namespace",
                                place(first, &server_path(other)),
                                server.prefix
                            ),
                        ),
                    ));
                    continue;
                }
                prefixes.insert(server.prefix.clone(), (doc, server.name.clone()));
            }
            config.servers.push(server);
        }
    }
}

/// Declared tools inside a server's namespace would collide with its tools.
fn check_namespaces(docs: &[Document], config: &GatewayConfig, problems: &mut Vec<FileProblem>) {
    for doc in docs {
        for (i, tool) in doc.tools.iter().enumerate() {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            for server in &config.servers {
                let ns = format!("{}{}", server.prefix, config.separator);
                if !server.prefix.is_empty() && name.starts_with(&ns) {
                    problems.push(doc.problem(
                        i,
                        Problem::new(
                            ["name"],
                            format!(
                                "{name:?} is in the namespace of server {:?} ({ns}…), whose tools it could collide with; rename the tool or give the server another prefix",
                                server.name
                            ),
                        ),
                    ));
                }
            }
        }
    }
}

impl Document {
    /// Reads and checks every server of the file: the servers that are fine, the problems of
    /// those that are not (every problem of each, placed), and warnings.
    pub fn read_servers(&self) -> (Vec<Server>, Vec<FileProblem>, Vec<FileProblem>) {
        let mut servers = Vec::new();
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        for (name, value) in &self.servers {
            match check_server(name, value, &self.file) {
                Ok((server, warned)) => {
                    warnings.extend(warned.into_iter().map(|p| self.server_problem(name, p)));
                    servers.push(server);
                }
                Err(bad) => problems.extend(bad.into_iter().map(|p| self.server_problem(name, p))),
            }
        }
        (servers, problems, warnings)
    }
}

/// `file:line:column` of `path` in `doc`.
fn place(doc: &Document, path: &[Seg]) -> String {
    match doc.locate_path(path) {
        Some(l) => format!("{}:{}:{}", doc.file.display(), l.line, l.column),
        None => doc.file.display().to_string(),
    }
}

fn server_path(name: &str) -> Vec<Seg> {
    vec![Seg::from("servers"), Seg::from(name)]
}

fn prefix_at(spec: &ServerSpec) -> Vec<Seg> {
    if spec.prefix.is_some() {
        vec![Seg::from("prefix")]
    } else {
        Vec::new()
    }
}

fn dir_of(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Whether `name` is a server name: 1–32 of `a-z`, `0-9`, `_`, `-`.
pub fn is_server_name(name: &str) -> bool {
    (1..=MAX_SERVER_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn is_var_name(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Why a name cannot be a tool's name, or `None`.
fn tool_name_problem(name: &str) -> Option<String> {
    toolwright_protocol::tool::name_errors(name)
        .first()
        .map(ToString::to_string)
}

/// Reads and checks one server: every problem of it, or the server and its warnings.
fn check_server(
    name: &str,
    value: &Value,
    file: &Path,
) -> Result<(Server, Vec<Problem>), Vec<Problem>> {
    let mut problems = Vec::new();
    if !is_server_name(name) {
        problems.push(Problem::new(
            Vec::<Seg>::new(),
            format!(
                "{name:?} is not a server name: 1 to {MAX_SERVER_NAME} of a-z, 0-9, '_' and '-'"
            ),
        ));
    }
    let spec: ServerSpec = match read_value(value) {
        Ok(s) => s,
        Err(p) => {
            problems.push(p);
            return Err(problems);
        }
    };
    let transport = check_transport(&spec, file, &mut problems);
    let exchange = crate::exchange::check(&spec, spec.url.is_some(), &mut problems);
    let prefix = check_prefix(&spec, name, &mut problems);
    let filter = match NameFilter::compile(spec.include.as_deref(), &spec.exclude) {
        Ok(f) => f,
        Err(bad) => {
            problems.extend(bad);
            NameFilter::default()
        }
    };
    check_overrides(&spec, &mut problems);
    let roots = check_roots(spec.roots.as_ref(), file, &mut problems);
    check_tool_settings(&spec, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let warnings = server_warnings(&spec, &filter);
    let transport = transport.expect("no problems, so a transport");
    Ok((
        Server {
            name: name.to_owned(),
            file: file.to_owned(),
            spec,
            prefix,
            transport,
            filter,
            roots,
            exchange,
        },
        warnings,
    ))
}

/// How the server is reached: `command` (stdio) or `url` (HTTP), exactly one.
fn check_transport(
    spec: &ServerSpec,
    file: &Path,
    problems: &mut Vec<Problem>,
) -> Option<Transport> {
    match (&spec.command, &spec.url) {
        (Some(_), Some(_)) => {
            problems.push(Problem::new(
                ["url"],
                "a server is reached one way: `command` (stdio) or `url` (HTTP), not both",
            ));
            None
        }
        (None, None) => {
            problems.push(Problem::new(
                Vec::<Seg>::new(),
                "no way to reach it: add `command: [program, args...]` (stdio) or `url: http://…` (Streamable HTTP)",
            ));
            None
        }
        (Some(argv), None) => check_stdio(spec, argv, file, problems),
        (None, Some(url)) => check_http(spec, url, file, problems),
    }
}

/// The prefix of the server's tools (its name unless `prefix:` says otherwise), which
/// becomes part of tool names.
fn check_prefix(spec: &ServerSpec, name: &str, problems: &mut Vec<Problem>) -> String {
    let prefix = spec.prefix.clone().unwrap_or_else(|| name.to_owned());
    if spec.prefix.is_some() {
        if prefix.chars().count() > MAX_PREFIX {
            problems.push(Problem::new(
                ["prefix"],
                format!("a prefix is at most {MAX_PREFIX} characters"),
            ));
        } else if let Some(c) = prefix
            .chars()
            .find(|c| !toolwright_protocol::tool::is_name_char(*c))
        {
            problems.push(Problem::new(
                ["prefix"],
                format!(
                    "the prefix contains {c:?}; it becomes part of tool names, which are A-Z, a-z, 0-9, '_', '-' and '.'"
                ),
            ));
        }
    }
    prefix
}

/// `rename:` and `annotations:`.
fn check_overrides(spec: &ServerSpec, problems: &mut Vec<Problem>) {
    for (from, to) in &spec.rename {
        if let Some(why) = tool_name_problem(to) {
            problems.push(Problem::new(
                ["rename", from.as_str()],
                format!("{to:?} cannot be a tool's name: {why}"),
            ));
        }
    }
    if let Some(a) = &spec.annotations {
        check_annotations(a, &["annotations"], problems);
    }
}

/// The per-tool settings of `tools:`.
fn check_tool_settings(spec: &ServerSpec, problems: &mut Vec<Problem>) {
    for (tool, o) in &spec.tools {
        if let Some(a) = &o.annotations {
            check_annotations(a, &["tools", tool, "annotations"], problems);
        }
        for (arg, v) in &o.arguments {
            if holds_toml_datetime(v) {
                problems.push(Problem::new(
                    ["tools", tool.as_str(), "arguments", arg.as_str()],
                    "a TOML date-time has no JSON form: quote it to pass it as a string",
                ));
            }
        }
        if let Some(title) = &o.title
            && title.trim().is_empty()
        {
            problems.push(Problem::new(["tools", tool, "title"], "an empty title"));
        }
        if let Some(d) = &o.description
            && d.trim().is_empty()
        {
            problems.push(Problem::new(
                ["tools", tool, "description"],
                "an empty description",
            ));
        }
    }
}

/// What a good server's settings do not do: settings for tools the filter hides, and
/// `annotations:` on a trusted server.
fn server_warnings(spec: &ServerSpec, filter: &NameFilter) -> Vec<Problem> {
    let mut warnings = Vec::new();
    let unreachable = |key: &str, tool: &str| {
        Problem::new(
            [key, tool],
            format!(
                "no upstream tool named {tool:?} passes `include`/`exclude`, so this setting applies to nothing"
            ),
        )
    };
    for tool in spec.tools.keys() {
        if !filter.allows(tool) {
            warnings.push(unreachable("tools", tool));
        }
    }
    for tool in spec.rename.keys() {
        if !filter.allows(tool) {
            warnings.push(unreachable("rename", tool));
        }
    }
    if spec.trust == TrustSpec::Trusted && spec.annotations.is_some() {
        warnings.push(Problem::new(
            ["annotations"],
            "a trusted server's own annotations are used: the server's `annotations` apply to untrusted servers only (per-tool `annotations` apply to both)",
        ));
    }
    warnings
}

/// `roots:`, checked: each directory exists and is one (resolved against the file's
/// directory, made absolute); a problem at `roots[i]` for each that is not.
fn check_roots(spec: Option<&RootsSpec>, file: &Path, problems: &mut Vec<Problem>) -> Roots {
    let dirs = match spec {
        None => return Roots::None,
        Some(RootsSpec::Client) => return Roots::Client,
        Some(RootsSpec::Dirs(dirs)) => dirs,
    };
    if dirs.is_empty() {
        problems.push(Problem::new(
            ["roots"],
            "an empty list: name the directories the server may use, or leave `roots` out to give it none",
        ));
    }
    let mut out = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let at = [Seg::from("roots"), Seg::Index(i)];
        if dir.as_os_str().is_empty() {
            problems.push(Problem::new(at, "an empty directory"));
            continue;
        }
        let path = dir_of(file).join(dir);
        match std::fs::canonicalize(&path) {
            Ok(abs) if abs.is_dir() => out.push(abs),
            Ok(_) => problems.push(Problem::new(
                at,
                format!("{} is not a directory", path.display()),
            )),
            Err(e) => problems.push(Problem::new(
                at,
                format!("{} cannot be used: {e}", path.display()),
            )),
        }
    }
    Roots::Dirs(out)
}

/// Whether a value read from TOML holds a date-time (which `toml` hands serde as a private
/// one-member table, not as JSON).
fn holds_toml_datetime(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.starts_with("$__toml_private") || holds_toml_datetime(v)),
        Value::Array(a) => a.iter().any(holds_toml_datetime),
        _ => false,
    }
}

fn check_annotations(a: &Map<String, Value>, at: &[&str], problems: &mut Vec<Problem>) {
    for (k, v) in a {
        let path = at.iter().copied().chain([k.as_str()]);
        if HINTS.contains(&k.as_str()) && !v.is_boolean() {
            problems.push(Problem::new(path, format!("`{k}` is true or false")));
        } else if k == "title" && !v.is_string() {
            problems.push(Problem::new(path, "`title` is a string"));
        }
    }
}

#[path = "config_transport.rs"]
mod transport;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
