//! How a `search_files` pattern is read: name or path glob, which depth it needs, and which
//! directories can be pruned before they are read.

use globset::{GlobBuilder, GlobMatcher};
use std::path::Path;
use toolwright_server::ToolError;

/// What a glob is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The entry's own name (the pattern has no `/` and is not `**`).
    Name,
    /// The entry's path relative to the searched directory, `/`-separated.
    Path,
}

/// A compiled pattern and the walk it calls for.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    matcher: GlobMatcher,
    target: Target,
    /// The deepest level that can hold a match (1 = entries directly in the directory);
    /// `None` when any depth can.
    max_depth: Option<usize>,
    /// For an anchored path pattern without `**`: `prefixes[k]` matches the first `k + 1`
    /// components, so a directory at depth `k + 1` that fails it cannot lead to a match.
    prefixes: Vec<GlobMatcher>,
    /// The pattern ended with `/`: only directories match.
    dirs_only: bool,
}

fn glob(text: &str, case_sensitive: bool) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(!case_sensitive)
        .empty_alternates(true)
        .build()?
        .compile_matcher())
}

fn refuse(pattern: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("invalid pattern {pattern:?}: {why}"))
}

impl Pattern {
    /// Reads `pattern` under the rules the tool's description documents.
    pub(crate) fn compile(
        pattern: &str,
        recursive: bool,
        case_sensitive: bool,
    ) -> Result<Pattern, ToolError> {
        let mut text = pattern;
        while let Some(rest) = text.strip_prefix("./") {
            text = rest;
        }
        if text.starts_with('/') {
            return Err(refuse(
                pattern,
                "it must be relative to `directory`; put the absolute part in `directory`",
            ));
        }
        let dirs_only = text.len() > 1 && text.ends_with('/') && !text.ends_with("\\/");
        let text = if dirs_only {
            text.trim_end_matches('/')
        } else {
            text
        };
        if text.is_empty() {
            return Err(refuse(
                pattern,
                "it is empty; use \"*\" to match every name",
            ));
        }
        if text.split('/').any(|c| c == "..") {
            return Err(refuse(
                pattern,
                "`..` cannot match anything below `directory`; search a higher directory instead",
            ));
        }
        // `**` only means "any directories" as a whole component; alone it matches every path.
        let target = if text.contains('/') || text == "**" {
            Target::Path
        } else {
            Target::Name
        };
        let matcher = glob(text, case_sensitive).map_err(|e| refuse(pattern, e.kind()))?;
        let mut p = Pattern {
            matcher,
            target,
            max_depth: None,
            prefixes: Vec::new(),
            dirs_only,
        };
        match (target, recursive) {
            (Target::Name, false) => p.max_depth = Some(1),
            (Target::Name, true) => {}
            (Target::Path, true) => {
                if !(text == "**" || text.starts_with("**/")) {
                    p.matcher = glob(&format!("**/{text}"), case_sensitive)
                        .map_err(|e| refuse(pattern, e.kind()))?;
                }
            }
            (Target::Path, false) if text.contains("**") => {}
            (Target::Path, false) => {
                let parts: Vec<&str> = text.split('/').collect();
                p.max_depth = Some(parts.len());
                // Splitting is only sound when each piece is a glob of its own: `{a/b,c}` or
                // `[/]` split into invalid pieces, and then nothing is pruned.
                let prefixes: Result<Vec<GlobMatcher>, _> = (1..parts.len())
                    .map(|k| glob(&parts[..k].join("/"), case_sensitive))
                    .collect();
                let whole_pieces = parts.iter().all(|c| glob(c, case_sensitive).is_ok());
                if let (Ok(prefixes), true) = (prefixes, whole_pieces) {
                    p.prefixes = prefixes;
                }
            }
        }
        Ok(p)
    }

    /// What the glob is matched against.
    pub(crate) fn target(&self) -> Target {
        self.target
    }

    /// The deepest level that can hold a match, if bounded.
    pub(crate) fn max_depth(&self) -> Option<usize> {
        self.max_depth
    }

    /// True when only directories can match (the pattern ended with `/`).
    pub(crate) fn dirs_only(&self) -> bool {
        self.dirs_only
    }

    /// Does the entry match? `name` is its file name, `rel` its path below the directory.
    #[cfg(test)]
    fn is_match(&self, name: &std::ffi::OsStr, rel: &Path) -> bool {
        match self.target {
            Target::Name => self.is_match_name(name),
            Target::Path => self.is_match_path(rel),
        }
    }

    /// Does a name pattern match this file name?
    pub(crate) fn is_match_name(&self, name: &std::ffi::OsStr) -> bool {
        self.matcher.is_match(name)
    }

    /// Does a path pattern match this path relative to the directory?
    pub(crate) fn is_match_path(&self, rel: &Path) -> bool {
        self.matcher.is_match(rel)
    }

    /// False when a directory at `depth` (relative path `rel`) cannot contain a match.
    pub(crate) fn may_descend(&self, depth: usize, rel: &Path) -> bool {
        match self.prefixes.get(depth.wrapping_sub(1)) {
            Some(m) => m.is_match(rel),
            None => true,
        }
    }

    /// True when directories can be pruned by prefix.
    pub(crate) fn prunes(&self) -> bool {
        !self.prefixes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn m(pattern: &str, recursive: bool, rel: &str) -> bool {
        let p = Pattern::compile(pattern, recursive, true).unwrap();
        let rel = Path::new(rel);
        p.is_match(rel.file_name().unwrap_or(OsStr::new("")), rel)
    }

    fn err(pattern: &str) -> String {
        match Pattern::compile(pattern, true, true) {
            Err(ToolError::Failed(m)) => m,
            other => panic!("{pattern}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn name_patterns_match_names_at_any_depth() {
        assert!(m("*.py", true, "a/b/c.py"));
        assert!(m("*.py", false, "c.py"));
        assert!(m("test_*.txt", true, "x/test_1.txt"));
        assert!(!m("test_*.txt", true, "x/test_1.txt.bak"));
        assert!(m("*.{rs,toml}", true, "Cargo.toml"));
        assert!(m("file?.[ch]", true, "d/file1.c"));
        assert!(!m("file?.[ch]", true, "d/file12.c"));
        assert!(m("\\*", true, "*"));
        assert!(!m("\\*", true, "x"));
    }

    #[test]
    fn path_patterns_match_relative_paths() {
        assert!(m("src/*.rs", false, "src/lib.rs"));
        assert!(!m("src/*.rs", false, "a/src/lib.rs"));
        assert!(m("src/*.rs", true, "a/src/lib.rs"));
        assert!(!m("src/*.rs", false, "src/a/lib.rs"));
        assert!(m("**/*.rs", false, "lib.rs"));
        assert!(m("**/*.rs", false, "a/b/lib.rs"));
        assert!(m("src/**", false, "src/a/b"));
        assert!(m("**", false, "anything/at/all"));
        assert!(m("./src/*.rs", false, "src/x.rs"));
    }

    #[test]
    fn case_insensitive_on_request() {
        let p = Pattern::compile("*.PY", true, false).unwrap();
        assert!(p.is_match(OsStr::new("a.py"), Path::new("a.py")));
        let p = Pattern::compile("*.PY", true, true).unwrap();
        assert!(!p.is_match(OsStr::new("a.py"), Path::new("a.py")));
    }

    #[test]
    fn depth_follows_the_pattern() {
        let depth = |p: &str, r: bool| Pattern::compile(p, r, true).unwrap().max_depth();
        assert_eq!(depth("*.py", false), Some(1));
        assert_eq!(depth("*.py", true), None);
        assert_eq!(depth("a/b/*.py", false), Some(3));
        assert_eq!(depth("a/b/*.py", true), None);
        assert_eq!(depth("a/**/*.py", false), None);
        assert_eq!(depth("**", false), None);
    }

    #[test]
    fn anchored_patterns_prune_directories() {
        let p = Pattern::compile("src/*/mod.rs", false, true).unwrap();
        assert!(p.prunes());
        assert!(p.may_descend(1, Path::new("src")));
        assert!(!p.may_descend(1, Path::new("docs")));
        assert!(p.may_descend(2, Path::new("src/x")));
        assert!(p.may_descend(3, Path::new("anything")));
        assert!(
            !Pattern::compile("{src/a,lib}/*.rs", false, true)
                .unwrap()
                .prunes()
        );
        assert!(!Pattern::compile("*.rs", false, true).unwrap().prunes());
    }

    #[test]
    fn trailing_slash_means_directories() {
        let p = Pattern::compile("build/", true, true).unwrap();
        assert!(p.dirs_only() && p.target() == Target::Name);
        assert!(!Pattern::compile("build", true, true).unwrap().dirs_only());
    }

    #[test]
    fn refusals_say_why() {
        assert!(
            err("[abc").contains("unclosed character class"),
            "{}",
            err("[abc")
        );
        assert!(
            err("{a,b").contains("unclosed alternate"),
            "{}",
            err("{a,b")
        );
        assert!(err("").contains("empty"));
        assert!(err("/etc/*").contains("relative"));
        assert!(err("../*.py").contains(".."));
        assert!(err("a/../b").contains(".."));
    }
}
