//! The crate's errors: a file that cannot be loaded ([`LoadError`], with file, line and
//! column), a tool that cannot be compiled ([`Problem`], with where in the tool), a template
//! that does not parse ([`TemplateError`]), a `{name:path}` value that is not opened
//! ([`PathError`]), a file that cannot be read ([`ReadError`]).

use std::fmt;
use std::path::PathBuf;

/// A template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template {template:?}, at byte {at}: {reason}")]
pub struct TemplateError {
    /// The template as written.
    pub template: String,
    /// Where in it.
    pub at: usize,
    /// What is wrong.
    pub reason: String,
}

/// Why a tool file's text cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Opening or reading it failed.
    #[error("cannot read it: {0}")]
    Io(#[source] std::io::Error),
    /// It is not a regular file (`what` it is: "a FIFO", "a directory", ...).
    #[error("cannot read it: it is {what}, not a regular file")]
    NotRegular {
        /// What it is.
        what: &'static str,
    },
}

/// Why a `{name:path}` value is not opened beneath the server's roots.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// One call names more paths than it may hold descriptors for.
    #[error("more than {max} paths in one call")]
    TooMany {
        /// The limit ([`crate::paths::MAX_PATHS`]).
        max: usize,
    },
    /// The server has no roots.
    #[error("the server has no roots to resolve a path in")]
    NoRoots,
    /// The value is empty.
    #[error("an empty path")]
    Empty,
    /// An absolute path in none of the roots.
    #[error("{value:?} is outside the server's roots")]
    Outside {
        /// The value.
        value: String,
    },
    /// The root itself cannot be opened.
    #[error("cannot open the root {}: {errno}", root.display())]
    Root {
        /// The root.
        root: PathBuf,
        /// What the kernel said.
        errno: rustix::io::Errno,
    },
    /// Resolving it left the root (`..` or a symbolic link pointing out).
    #[error("{value:?} leads outside the server's roots")]
    LeadsOutside {
        /// The value.
        value: String,
    },
    /// Neither it nor (for a file to create) its parent exists.
    #[error("{value:?} does not exist")]
    Missing {
        /// The value.
        value: String,
    },
    /// A file to create whose name is not UTF-8.
    #[error("{value:?} is not UTF-8")]
    NotUtf8 {
        /// The value.
        value: String,
    },
    /// A part of it is not a directory.
    #[error("{value:?}: a part of it is not a directory")]
    NotDirectory {
        /// The value.
        value: String,
    },
    /// Too many symbolic links on the way.
    #[error("{value:?}: too many symbolic links")]
    Loop {
        /// The value.
        value: String,
    },
    /// The kernel has no `openat2` (or a sandbox refuses it).
    #[error("{value:?}: this kernel cannot resolve paths beneath a directory (openat2)")]
    Unsupported {
        /// The value.
        value: String,
    },
    /// Any other error of the kernel's.
    #[error("{value:?}: {errno}")]
    Other {
        /// The value.
        value: String,
        /// What the kernel said.
        errno: rustix::io::Errno,
    },
}

/// One step of a path into a tool's definition (`command`, `3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A member.
    Key(String),
    /// An array item.
    Index(usize),
}

impl From<&str> for Seg {
    fn from(k: &str) -> Self {
        Seg::Key(k.to_owned())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Self {
        Seg::Index(i)
    }
}

/// Why a tool cannot be served, and where in its definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where, from the tool's own object (empty: the tool as a whole).
    pub at: Vec<Seg>,
    /// What is wrong, as one sentence.
    pub message: String,
}

impl Problem {
    /// A problem at `at`.
    pub fn new<I, S>(at: I, message: impl Into<String>) -> Problem
    where
        I: IntoIterator<Item = S>,
        S: Into<Seg>,
    {
        Problem {
            at: at.into_iter().map(Into::into).collect(),
            message: message.into(),
        }
    }

    /// The same problem, one level further out (`inner` under `outer`).
    pub fn under(mut self, outer: impl Into<Seg>) -> Problem {
        self.at.insert(0, outer.into());
        self
    }

    /// The path as written in messages: `command[3]`, `http.headers.Authorization`.
    pub fn path_text(&self) -> String {
        path_text(&self.at)
    }
}

/// A path as written in messages.
pub fn path_text(at: &[Seg]) -> String {
    let mut out = String::new();
    for s in at {
        match s {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path_text(), self.message)
        }
    }
}

/// A place in a file (ordered by line, then column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// One thing wrong in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The file.
    pub file: PathBuf,
    /// Where in it, when known.
    pub location: Option<Location>,
    /// The tool's index and name, when the problem is in one tool.
    pub tool: Option<(usize, Option<String>)>,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.location {
            write!(f, ":{}:{}", l.line, l.column)?;
        }
        f.write_str(": ")?;
        match &self.tool {
            Some((i, Some(name))) => write!(f, "tool {name:?} (tools[{i}]): ")?,
            Some((i, None)) => write!(f, "tools[{i}]: ")?,
            None => {}
        }
        write!(f, "{}", self.problem)
    }
}

/// A set of files that cannot be served as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Every problem found, in file order.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Problems(Vec<FileProblem>),
}

impl LoadError {
    /// The problems.
    pub fn problems(&self) -> &[FileProblem] {
        match self {
            LoadError::Problems(p) => p,
        }
    }
}
