//! Reading tool files: YAML, JSON or TOML by extension, one model, every problem reported
//! with file, line and column.
//!
//! A set of files loads as a whole or not at all: [`load_files`] returns the tools only when
//! every tool of every file compiled and no two share a name, so a server swapping in a new
//! set never serves half of an edit.

use crate::error::{FileProblem, LoadError, Location, Problem, Seg};
use crate::locate;
use crate::model::FileSpec;
use crate::tool::DeclaredTool;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
/// (to place problems).
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
}

impl Document {
    /// Parses a file's text.
    ///
    /// # Errors
    ///
    /// A [`FileProblem`] (boxed) for text that does not parse or holds no tool list.
    pub fn parse(file: &Path, format: Format, text: String) -> Result<Document, Box<FileProblem>> {
        let problem = |location: Option<Location>, message: String| {
            Box::new(FileProblem {
                file: file.to_owned(),
                location,
                tool: None,
                problem: Problem::new(Vec::<Seg>::new(), message),
            })
        };
        let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let value: Value = match format {
            Format::Json => serde_json::from_str(body).map_err(|e| {
                problem(
                    Some(Location {
                        line: e.line(),
                        column: e.column(),
                    }),
                    format!("not valid JSON: {e}"),
                )
            })?,
            Format::Yaml => serde_norway::from_str(body).map_err(|e| {
                let location = e.location().map(|l| Location {
                    line: l.line(),
                    column: l.column(),
                });
                problem(location, format!("not valid YAML: {e}"))
            })?,
            Format::Toml => toml::from_str(body).map_err(|e| {
                let location = e.span().map(|s| locate::location_of(body, s.start));
                problem(location, format!("not valid TOML: {}", e.message()))
            })?,
        };
        let shape_error = || {
            problem(
                Some(Location { line: 1, column: 1 }),
                "expected `tools:` with a list of tools, or a list of tools".to_owned(),
            )
        };
        let (tools, bare) = match serde_json::from_value::<FileSpec>(value) {
            Ok(FileSpec::Bare(v)) => (v, true),
            Ok(f) => (f.into_tools(), false),
            Err(_) => return Err(shape_error()),
        };
        Ok(Document {
            file: file.to_owned(),
            format,
            text,
            tools,
            bare,
        })
    }

    /// Reads and parses a file.
    ///
    /// # Errors
    ///
    /// A [`FileProblem`] (boxed) when it cannot be read, has no known extension or does not parse.
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
        let text =
            std::fs::read_to_string(file).map_err(|e| problem(format!("cannot read it: {e}")))?;
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
        let path = self.path_of(index, at);
        match self.format {
            Format::Yaml | Format::Json => locate::in_yaml(&self.text, &path),
            Format::Toml => locate::in_toml(&self.text, &path),
        }
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

    /// Compiles every tool; the problems of those that do not compile are placed.
    pub fn compile(&self) -> (Vec<(usize, DeclaredTool)>, Vec<FileProblem>) {
        let mut tools = Vec::new();
        let mut problems = Vec::new();
        for (i, value) in self.tools.iter().enumerate() {
            match DeclaredTool::compile(value) {
                Ok(t) => tools.push((i, t)),
                Err(p) => problems.push(self.problem(i, p)),
            }
        }
        (tools, problems)
    }
}

/// Loads every tool of `files`, all or nothing.
///
/// # Errors
///
/// [`LoadError::Problems`] with every problem found: files that cannot be read or parsed,
/// tools that do not compile, two tools with one name.
pub fn load_files(files: &[PathBuf]) -> Result<Vec<Arc<DeclaredTool>>, LoadError> {
    let mut problems = Vec::new();
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in files {
        let doc = match Document::read(file) {
            Ok(d) => d,
            Err(p) => {
                problems.push(*p);
                continue;
            }
        };
        let (tools, bad) = doc.compile();
        problems.extend(bad);
        for (i, tool) in tools {
            let name = tool.definition_ref().name.clone();
            if let Some(first) = seen.get(&name) {
                problems.push(doc.problem(
                    i,
                    Problem::new(
                        ["name"],
                        format!("another tool is named {name:?} (in {})", first.display()),
                    ),
                ));
                continue;
            }
            seen.insert(name, file.clone());
            out.push(Arc::new(tool));
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(LoadError::Problems(problems))
    }
}
