//! `search_files`: the seed lesson's file search (`directory`, `pattern`, `recursive`,
//! `max_results`), sandboxed to the server's roots, deterministic, and walked in parallel.
//!
//! - `pattern`: how a glob is read (name or path, depth, pruning).
//! - `sandbox`: roots (the server's, narrowed by a client's) and resolving
//!   `directory` without revealing anything outside them.
//! - `beneath`: opening directories beneath an open root and resolving links without
//!   leaving the roots (`openat2`, `openat(O_NOFOLLOW)`, `readlinkat`).
//! - `ignores`: `.gitignore`, `.ignore` and `.git/info/exclude`, read through descriptors.
//! - `walk`: the parallel walk on descriptors; `queue`: how its threads share work;
//!   `hits`: each worker's bounded heap of matches and the order results are reported in.
//! - `names`: how names that are not UTF-8 are reported (an escape that cannot collide).
//!
//! The walk runs on tokio's blocking pool; the async side only waits for it, and raises a
//! stop flag the walker checks on every entry when the call is cancelled, times out, or
//! its future is dropped.

mod beneath;
mod hits;
mod ignores;
mod names;
mod pattern;
mod queue;
mod sandbox;
mod walk;

use pattern::Pattern;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use toolwright_protocol::{CallToolResult, TaskSupport, ToolAnnotations};
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};
use walk::Kind;

const DESCRIPTION: &str = "\
Search for files matching a glob pattern in a directory. Returns a list of matching file paths, \
relative to the directory. Use this when you need to find files by name, extension, or path pattern.\n\
\n\
Patterns: a pattern without '/' is matched against each entry's name ('*.py', 'test_*.txt'); a \
pattern with '/' or '**' is matched against the entry's path relative to `directory` \
('src/*.rs', '**/tests/*.py'). '*' and '?' never match '/', '**' matches any number of \
directories, '[abc]' and '{a,b}' work as in shells, '\\' escapes, and a trailing '/' matches \
directories only. With recursive=false a name pattern looks only at entries directly in \
`directory`, and a path pattern is anchored there like a shell glob ('src/*.rs' looks in src/ \
only; '**' still descends); with recursive=true every subdirectory is searched and a path \
pattern may start at any depth ('tests/*.py' also finds 'pkg/tests/a.py').\n\
\n\
What is searched: hidden entries (names starting with '.') are skipped unless include_hidden is \
true; entries excluded by .gitignore, .ignore and .git/info/exclude files are skipped unless \
respect_gitignore is false; symbolic links are reported but not descended into unless \
follow_symlinks is true. Only directories inside the server's roots can be searched (a relative \
`directory` starts from the first root); links that lead outside the roots are neither followed \
nor reported. Links are resolved one component at a time beneath the roots, and every directory is opened \
relative to its already-open parent, so a directory swapped for a link during the search is \
skipped (counted in errors), never read through the link. Unreadable entries are skipped and \
counted, never fatal.\n\
\n\
Result: {directory, matches, truncated, matched, scanned, skipped}. `matches` are sorted (path \
components compared bytewise, so the same call on the same tree always gives the same list), \
directories end with '/', and at most max_results are returned: the first in that order. \
`truncated` is true when more entries matched (`matched` says how many).\n\
\n\
Names that are not UTF-8: paths are JSON text, so U+FFFD is an escape: each byte that is not \
valid UTF-8 is written as U+FFFD and two lowercase hex digits (a file named bad\\xffname.txt is \
reported as 'bad\u{FFFD}ffname.txt'), and a real U+FFFD in a name is written twice. No two names \
share a reported form, and each decodes back to its exact bytes; `directory` is read the same \
way.";

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "directory": {
                "type": "string",
                "description": "Directory path to search in: absolute, or relative to the server's first root. It must be inside the server's roots. U+FFFD escapes as in results (U+FFFD + two hex digits is a byte, U+FFFD twice is U+FFFD)."
            },
            "pattern": {
                "type": "string",
                "description": "Glob pattern to match (e.g., '*.py', 'test_*.txt', 'src/**/*.rs'). Without '/' it matches names; with '/' or '**' it matches paths relative to `directory`."
            },
            "recursive": {
                "type": "boolean",
                "description": "Search subdirectories recursively",
                "default": default::recursive()
            },
            "max_results": {
                "type": "integer",
                "description": "Maximum number of results to return (the first ones in sorted order)",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": default::max_results()
            },
            "type": {
                "type": "string",
                "enum": ["any", "file", "directory"],
                "description": "Which entries may match: files and directories alike, files only (everything but directories), or directories only",
                "default": default::kind()
            },
            "include_hidden": {
                "type": "boolean",
                "description": "Also search entries whose name starts with '.' (and descend into such directories)",
                "default": default::include_hidden()
            },
            "respect_gitignore": {
                "type": "boolean",
                "description": "Skip entries excluded by .gitignore, .ignore and .git/info/exclude files in the searched tree and in the directories between the root and `directory`",
                "default": default::respect_gitignore()
            },
            "follow_symlinks": {
                "type": "boolean",
                "description": "Descend into symbolic links to directories (only those that stay inside the server's roots)",
                "default": default::follow_symlinks()
            },
            "case_sensitive": {
                "type": "boolean",
                "description": "Match letter case exactly; false makes '*.PY' match 'a.py'",
                "default": default::case_sensitive()
            }
        },
        "required": ["directory", "pattern"],
        "additionalProperties": false
    })
}

fn count(description: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": description})
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "directory": {
                "type": "string",
                "description": "The directory searched, as a canonical absolute path (escaped like `matches`); every match is relative to it"
            },
            "matches": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Matching paths relative to `directory`, '/'-separated, sorted; directories end with '/'. A byte that is not UTF-8 is written as U+FFFD and two lowercase hex digits, a real U+FFFD as two U+FFFD; every other character as it is"
            },
            "truncated": {
                "type": "boolean",
                "description": "True when more entries matched than max_results allowed"
            },
            "matched": count("How many entries matched in all"),
            "scanned": count("How many entries were examined (hidden and ignored entries the rules skip are not counted)"),
            "skipped": {
                "type": "object",
                "description": "Entries passed over, by reason",
                "properties": {
                    "permission_denied": count("Entries or directories that could not be read: permission denied"),
                    "outside_roots": count("Symbolic links leading outside the server's roots: neither reported nor followed"),
                    "symlinks_not_followed": count("Symbolic links to directories inside the roots that were not descended into (follow_symlinks is false)"),
                    "errors": count("Other unreadable entries: broken links, link loops, entries that vanished or were replaced (a directory swapped for a link) during the search")
                },
                "required": ["permission_denied", "outside_roots", "symlinks_not_followed", "errors"],
                "additionalProperties": false
            }
        },
        "required": ["directory", "matches", "truncated", "matched", "scanned", "skipped"],
        "additionalProperties": false
    })
}

/// The largest `max_results` the schema allows.
const MAX_RESULTS: usize = 1000;

/// The defaults of the optional arguments, in one place: the input schema advertises them
/// and serde fills them in.
mod default {
    use super::Kind;

    pub(super) const fn recursive() -> bool {
        false
    }
    pub(super) const fn max_results() -> usize {
        100
    }
    pub(super) const fn kind() -> Kind {
        Kind::Any
    }
    pub(super) const fn include_hidden() -> bool {
        false
    }
    pub(super) const fn respect_gitignore() -> bool {
        true
    }
    pub(super) const fn follow_symlinks() -> bool {
        false
    }
    pub(super) const fn case_sensitive() -> bool {
        true
    }
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    directory: String,
    pattern: String,
    #[serde(default = "default::recursive")]
    recursive: bool,
    #[serde(
        default = "default::max_results",
        deserialize_with = "crate::integers::deserialize_usize"
    )]
    max_results: usize,
    #[serde(default = "default::kind", rename = "type")]
    kind: Kind,
    #[serde(default = "default::include_hidden")]
    include_hidden: bool,
    #[serde(default = "default::respect_gitignore")]
    respect_gitignore: bool,
    #[serde(default = "default::follow_symlinks")]
    follow_symlinks: bool,
    #[serde(default = "default::case_sensitive")]
    case_sensitive: bool,
}

/// `search_files`: finds files by glob under the server's roots.
///
/// See the module documentation and the tool's description for the rules. The default
/// walks with one thread per available CPU (at most 8).
#[derive(Debug, Clone)]
pub struct SearchFiles {
    threads: usize,
}

impl Default for SearchFiles {
    fn default() -> Self {
        SearchFiles {
            threads: default_threads(),
        }
    }
}

impl SearchFiles {
    /// A `search_files` that walks with `threads` worker threads (at least 1).
    pub fn with_threads(threads: usize) -> Self {
        SearchFiles {
            threads: threads.max(1),
        }
    }
}

impl Tool for SearchFiles {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("search_files", input_schema())
            .with_title("Search files")
            .with_description(DESCRIPTION)
            .with_output_schema(output_schema())
            .with_annotations(ToolAnnotations::read_only_closed_world("Search files"))
            .with_task_support(TaskSupport::Optional)
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(search(args, ctx, self.threads))
    }
}

/// Raises the stop flag when dropped: the walk ends with the call, however the call ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

async fn search(
    args: Value,
    ctx: ToolContext,
    threads: usize,
) -> Result<CallToolResult, ToolError> {
    let args: Args =
        serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
    let pattern = Arc::new(Pattern::compile(
        &args.pattern,
        args.recursive,
        args.case_sensitive,
    )?);
    let roots = toolwright_server::roots::for_call(&ctx).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(stop.clone());
    let job = {
        let (ctx, stop) = (ctx.clone(), stop.clone());
        tokio::task::spawn_blocking(move || blocking(args, pattern, roots, threads, &stop, &ctx))
    };
    tokio::select! {
        biased;
        _ = ctx.cancellation().cancelled() => Err(ToolError::Cancelled),
        r = job => r.map_err(|e| ToolError::Internal(format!("the search stopped unexpectedly: {e}")))?,
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(8)
}

fn blocking(
    args: Args,
    pattern: Arc<Pattern>,
    roots: Vec<PathBuf>,
    threads: usize,
    stop: &AtomicBool,
    ctx: &ToolContext,
) -> Result<CallToolResult, ToolError> {
    let dir = sandbox::resolve(&args.directory, &roots)?;
    let spec = walk::Spec {
        dir,
        roots,
        pattern,
        kind: args.kind,
        max_results: args.max_results.max(1),
        include_hidden: args.include_hidden,
        respect_gitignore: args.respect_gitignore,
        follow_symlinks: args.follow_symlinks,
        threads,
    };
    let report = |scanned: u64, matched: u64| {
        let msg = format!("scanned {scanned} entries, {matched} matches so far");
        ctx.progress(scanned as f64, None, Some(&msg));
    };
    let out = match walk::run(&spec, stop, &report) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(ToolError::Cancelled),
        Err(walk::StartError(e)) => return Err(sandbox::unreadable(&args.directory, e)),
    };
    let truncated = out.matched > out.matches.len() as u64;
    Ok(CallToolResult::structured(json!({
        "directory": names::escape(spec.dir.as_os_str().as_encoded_bytes()),
        "matches": out.matches,
        "truncated": truncated,
        "matched": out.matched,
        "scanned": out.scanned,
        "skipped": {
            "permission_denied": out.skipped.permission_denied,
            "outside_roots": out.skipped.outside_roots,
            "symlinks_not_followed": out.skipped.symlinks_not_followed,
            "errors": out.skipped.errors,
        }
    })))
}

#[cfg(test)]
mod tests;
