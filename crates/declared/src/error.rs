//! The runtime's errors: a call that fails ([`RunError`], which becomes an `isError`
//! result). The file's errors (load, compile, templates) are the tool file crate's, re-exported
//! here.

use std::fmt;
use std::time::Duration;
pub use toolwright_toolfile::error::*;
use toolwright_toolfile::template::RenderError;

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
    /// An HTTP response body.
    Body,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Body => "the response body",
        })
    }
}

/// Why a call failed; the message becomes the text of an `isError` result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// An argument could not be filled into the action.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A required part of the action has an absent argument.
    #[error("argument `{0}` is needed here and was not given")]
    Missing(String),
    /// The working directory is not inside the server's roots, or cannot be opened.
    #[error("working directory {dir:?}: {reason}")]
    Cwd {
        /// The directory as rendered.
        dir: String,
        /// Why.
        reason: String,
    },
    /// The program could not be started.
    #[error("could not start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The action ran past its time limit (the program's whole process group was killed).
    #[error("timed out after {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// The call was cancelled (the program's whole process group was killed).
    #[error("cancelled")]
    Cancelled,
    /// The program exited with a status not counted as success.
    #[error("{program} {status}{}", tail_text(.stderr_tail))]
    Exit {
        /// The program.
        program: String,
        /// "exited with status 2", "was killed by signal 9".
        status: String,
        /// The end of stderr (of stdout when stderr was empty).
        stderr_tail: String,
    },
    /// An output stream passed its byte cap.
    #[error("{stream} passed its limit of {limit} bytes")]
    TooLarge {
        /// Which.
        stream: Stream,
        /// The cap.
        limit: u64,
    },
    /// The HTTP request could not be made or answered (the message never holds a header
    /// value or a secret).
    #[error("{0}")]
    Http(String),
    /// A request header could not be sent as filled in (the message names the header and
    /// where its text came from, never the value).
    #[error("header {header}: {reason}")]
    Header {
        /// The header's name.
        header: String,
        /// Why.
        reason: String,
    },
    /// The HTTP response had a status not counted as success.
    #[error("HTTP {status}{}", tail_text(.body_head))]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body_head: String,
    },
    /// The address policy refused where the request would go.
    #[error("refused: {0}")]
    Refused(String),
    /// The output could not be shaped (parsed, matched, selected) or did not fit
    /// `outputSchema`.
    #[error("{0}")]
    Shape(String),
    /// The database refused or failed the statement (its message, never the source's URL).
    #[error("{0}")]
    Sql(String),
    /// I/O with the program failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn tail_text(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!(":\n{}", tail.trim_end())
    }
}
