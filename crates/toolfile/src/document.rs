//! Reading a tool file: YAML, JSON or TOML by extension, one model, every problem placed by
//! file, line and column.

use crate::error::{FileProblem, Location, Problem, ReadError, Seg};
use crate::locate::{self, Index};
use crate::model::{FILE_KEYS, FileSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.yaml`, `.yml`.
    Yaml,
    /// `.json`.
    Json,
    /// `.toml`.
    Toml,
}

impl Format {
    /// The format a file's extension names.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            "toml" => Some(Format::Toml),
            _ => None,
        }
    }
}

/// The tools of one file as written: each item's value, where the list is, and the text
/// (to place problems: its places are read once, on the first problem placed, so `text`
/// must not change after that).
#[derive(Debug, Clone)]
pub struct Document {
    /// The file.
    pub file: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its text.
    pub text: String,
    /// The items of its tool list, as values.
    pub tools: Vec<Value>,
    /// Whether the list is the whole file (`[...]`) rather than under `tools`.
    pub bare: bool,
    /// The entries of `servers:`, name and value, in file order (each is read into a
    /// [`ServerSpec`](crate::servers::ServerSpec) on its own by [`Document::read_servers`]).
    pub servers: Vec<(String, Value)>,
    /// `gateway:` as written.
    pub gateway: Option<Value>,
    /// Where each member and item of `text` is, read on first use.
    index: OnceLock<Arc<Index>>,
    /// `builtins:` as written (`all`, or a list of built-in tools' names).
    pub builtins: Option<Value>,
    /// `views:` as written.
    pub views: Option<Value>,
    /// `limits:` as written.
    pub limits: Option<Value>,
    /// The entries of `sources:`, name and value, in file order (each read into a
    /// [`SourceSpec`](crate::sql::SourceSpec) by the runtime).
    pub sources: Vec<(String, Value)>,
    /// `api_keys:` as written.
    pub api_keys: Option<Value>,
    /// `skills:` as written.
    pub skills: Option<Value>,
}

impl Document {
    /// Parses a file's text.
    ///
    /// # Errors
    ///
    /// A [`FileProblem`] (boxed) for text that does not parse or holds no tool list.
    pub fn parse(file: &Path, format: Format, text: String) -> Result<Document, Box<FileProblem>> {
        let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let value = syntax(file, format, body)?;
        check_top_level(file, format, &text, &value)?;
        let (tools, bare, servers, gateway, (builtins, views, api_keys, limits), sources, skills) =
            match serde_json::from_value::<FileSpec>(value) {
                Ok(FileSpec::Bare(v)) => (
                    v,
                    true,
                    Vec::new(),
                    None,
                    (None, None, None, None),
                    Vec::new(),
                    None,
                ),
                Ok(FileSpec::Tools(f)) => (
                    f.tools,
                    false,
                    f.servers.unwrap_or_default().into_iter().collect(),
                    f.gateway,
                    (f.builtins, f.views, f.api_keys, f.limits),
                    f.sources.unwrap_or_default().into_iter().collect(),
                    f.skills,
                ),
                Err(_) => return Err(shape_error(file)),
            };
        Ok(Document {
            file: file.to_owned(),
            format,
            text,
            tools,
            bare,
            servers,
            gateway,
            builtins,
            views,
            limits,
            sources,
            api_keys,
            skills,
            index: OnceLock::new(),
        })
    }

    /// Reads and parses a file: a regular file only (see [`read_regular`]).
    ///
    /// # Errors
    ///
    /// A [`FileProblem`] (boxed) when it cannot be read, is not a regular file, has no known
    /// extension or does not parse.
    pub fn read(file: &Path) -> Result<Document, Box<FileProblem>> {
        let problem = |message: String| {
            Box::new(FileProblem {
                file: file.to_owned(),
                location: None,
                tool: None,
                problem: Problem::new(Vec::<Seg>::new(), message),
            })
        };
        let format = Format::of(file).ok_or_else(|| {
            problem("the file's extension says neither YAML (.yaml, .yml), JSON (.json) nor TOML (.toml)".into())
        })?;
        let text = read_regular(file).map_err(|e| problem(e.to_string()))?;
        Document::parse(file, format, text)
    }

    /// The full path of `at` inside tool `index`.
    pub fn path_of(&self, index: usize, at: &[Seg]) -> Vec<Seg> {
        let mut path = Vec::with_capacity(at.len() + 2);
        if !self.bare {
            path.push(Seg::Key("tools".into()));
        }
        path.push(Seg::Index(index));
        path.extend_from_slice(at);
        path
    }

    /// Where `at` inside tool `index` is.
    pub fn locate(&self, index: usize, at: &[Seg]) -> Option<Location> {
        self.locate_path(&self.path_of(index, at))
    }

    /// Where `path` (from the file's root: `servers.NAME.command`) is.
    pub fn locate_path(&self, path: &[Seg]) -> Option<Location> {
        self.index
            .get_or_init(|| Arc::new(Index::of(self.format, &self.text)))
            .locate(path)
    }

    /// A problem whose path starts at the file's root (`servers.NAME.url`), placed.
    pub fn root_problem(&self, problem: Problem) -> FileProblem {
        FileProblem {
            file: self.file.clone(),
            location: self.locate_path(&problem.at),
            tool: None,
            problem,
        }
    }

    /// A problem in server `name` (its path from the server's own value), placed.
    pub fn server_problem(&self, name: &str, problem: Problem) -> FileProblem {
        self.root_problem(problem.under(name).under("servers"))
    }

    /// A problem in tool `index`, placed.
    pub fn problem(&self, index: usize, problem: Problem) -> FileProblem {
        let name = self.tools[index]
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        FileProblem {
            file: self.file.clone(),
            location: self.locate(index, &problem.at),
            tool: Some((index, name)),
            problem,
        }
    }
}

/// A problem of the whole file, at `location` when known.
fn file_problem(file: &Path, location: Option<Location>, message: String) -> Box<FileProblem> {
    Box::new(FileProblem {
        file: file.to_owned(),
        location,
        tool: None,
        problem: Problem::new(Vec::<Seg>::new(), message),
    })
}

/// The file's `body` (without a byte order mark) read in its format, as a JSON value.
fn syntax(file: &Path, format: Format, body: &str) -> Result<Value, Box<FileProblem>> {
    let problem = |location, message| file_problem(file, location, message);
    Ok(match format {
        Format::Json => crate::json::to_value(body)
            .map_err(|e| problem(e.location, format!("not valid JSON: {}", e.message)))?,
        Format::Yaml => crate::yaml::to_json(body).map_err(|e| {
            let location = Location {
                line: e.line,
                column: e.column,
            };
            problem(Some(location), format!("not valid YAML: {}", e.message))
        })?,
        Format::Toml => toml::from_str(body).map_err(|e| {
            let location = e.span().map(|s| locate::location_of(body, s.start));
            problem(location, format!("not valid TOML: {}", e.message()))
        })?,
    })
}

/// A file that is none of the shapes a tool file has.
fn shape_error(file: &Path) -> Box<FileProblem> {
    file_problem(
        file,
        Some(Location { line: 1, column: 1 }),
        "expected `tools:` (a list of tools), `servers:` (a map of upstream servers) or `gateway:`, or a list of tools".to_owned(),
    )
}

/// A map at the top must hold known members, each of its kind; the problem is placed at
/// the member (found in `text`).
fn check_top_level(
    file: &Path,
    format: Format,
    text: &str,
    value: &Value,
) -> Result<(), Box<FileProblem>> {
    let Value::Object(members) = value else {
        return Ok(());
    };
    let placed = |key: &str, message: String| {
        let path = [Seg::Key(key.to_owned())];
        file_problem(file, Index::of(format, text).locate(&path), message)
    };
    if members.is_empty() {
        return Err(shape_error(file));
    }
    if let Some(key) = members.keys().find(|k| !FILE_KEYS.contains(&k.as_str())) {
        return Err(placed(
            key,
            format!(
                "unknown member `{key}`: a file holds `tools:`, `servers:`, `gateway:`, `builtins:` and `sources:`"
            ),
        ));
    }
    for (key, ok, what) in [
        (
            "tools",
            Value::is_array as fn(&Value) -> bool,
            "a list of tools",
        ),
        ("servers", Value::is_object, "a map: server name -> server"),
        (
            "gateway",
            Value::is_object,
            "a map of settings (separator, state_file)",
        ),
    ] {
        if members.get(key).is_some_and(|v| !ok(v)) {
            return Err(placed(key, format!("`{key}` must be {what}")));
        }
    }
    Ok(())
}

/// The text of `file`, when it is a regular file (followed through symbolic links). It is
/// opened without blocking and checked on the open descriptor before anything is read, so
/// a FIFO, a device or a socket put in its place is refused at once instead of holding the
/// reader (the hot-reload watcher, a start-up) forever.
///
/// # Errors
///
/// [`ReadError`]: it cannot be opened or read, or it is not a regular file.
pub fn read_regular(file: &Path) -> Result<String, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(file)
        .map_err(ReadError::Io)?;
    let meta = f.metadata().map_err(ReadError::Io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "something else"
        };
        return Err(ReadError::NotRegular { what });
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(ReadError::Io)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<Document, Box<FileProblem>> {
        let path = Path::new(name);
        Document::parse(path, Format::of(path).unwrap(), text.to_owned())
    }

    /// The placed problem's text.
    fn refused(name: &str, text: &str) -> String {
        parse(name, text).unwrap_err().to_string()
    }

    #[test]
    fn a_file_holds_tools_servers_and_gateway_in_any_subset() {
        let d = parse(
            "f.yaml",
            "servers:\n  a: {command: [x]}\n  b: {url: 'http://h'}\n",
        )
        .unwrap();
        assert!(d.tools.is_empty() && !d.bare);
        let names: Vec<&str> = d.servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let d = parse("f.json", r#"{"gateway": {"separator": "."}}"#).unwrap();
        assert!(d.gateway.is_some() && d.servers.is_empty());
        let d = parse(
            "f.toml",
            "[[tools]]\nname = \"t\"\n\n[servers.s]\nurl = \"http://h\"\n",
        )
        .unwrap();
        assert_eq!((d.tools.len(), d.servers.len()), (1, 1));
        let d = parse("f.yaml", "- name: t\n").unwrap();
        assert!(d.bare && d.servers.is_empty());
    }

    #[test]
    fn a_wrong_top_level_is_placed() {
        assert_eq!(
            refused("f.yaml", "tools: []\nserver:\n  a: {}\n"),
            "f.yaml:2:1: unknown member `server`: a file holds `tools:`, `servers:`, `gateway:`, `builtins:` and `sources:`"
        );
        assert_eq!(
            refused("f.yaml", "servers:\n  - a\n"),
            "f.yaml:1:1: `servers` must be a map: server name -> server"
        );
        assert_eq!(
            refused("f.toml", "x = 1\ntools = 3\n"),
            "f.toml:1:1: unknown member `x`: a file holds `tools:`, `servers:`, `gateway:`, `builtins:` and `sources:`"
        );
        assert!(refused("f.json", "{}").starts_with("f.json:1:1: expected `tools:`"));
        assert!(refused("f.json", "3").starts_with("f.json:1:1: expected `tools:`"));
    }
}
