//! Ignore rules, read through directory descriptors (never by path) and applied with the
//! precedence of the `ignore` crate (ripgrep's): for each entry, the nearest `.ignore`
//! rule wins over the nearest `.gitignore` rule, which wins over `.git/info/exclude`; the
//! `.gitignore` and `.ignore` files of the directories between the root and the searched
//! directory come last (innermost first). A `!pattern` rule that matches un-hides a hidden
//! entry, as there.
//!
//! Ignore files are read only when they are regular files reached without a link (a link
//! named `.gitignore` is passed over), and only `.git` directories are looked into (a
//! `.git` file, as in a linked worktree, names a directory elsewhere and is not followed).

use super::beneath::{Roots, read_file};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most of one ignore file that is read.
const MAX_FILE: u64 = 4 << 20;

/// Which ignore files a directory listing showed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Found {
    /// `.ignore`
    pub ignore: bool,
    /// `.gitignore`
    pub gitignore: bool,
    /// `.git`
    pub git: bool,
}

impl Found {
    /// Notes `name` if it is one of the files that hold rules.
    pub(crate) fn note(&mut self, name: &[u8]) {
        match name {
            b".ignore" => self.ignore = true,
            b".gitignore" => self.gitignore = true,
            b".git" => self.git = true,
            _ => {}
        }
    }

    fn any(self) -> bool {
        self.ignore || self.gitignore || self.git
    }
}

/// The rules of one directory that has some, and of the directories above it.
pub(crate) struct Level {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
    parent: Option<Arc<Level>>,
}

/// Builds a matcher rooted at `root` from the text of an ignore file.
fn parse(root: &Path, text: &[u8]) -> Gitignore {
    let mut b = GitignoreBuilder::new(root);
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // As `ignore` does: a line that is not UTF-8 is skipped, a leading BOM dropped.
        let Ok(mut line) = std::str::from_utf8(line) else {
            continue;
        };
        if i == 0 {
            line = line.trim_start_matches('\u{feff}');
        }
        // A line that does not parse is skipped; the others still apply.
        let _ = b.add_line(None, line);
    }
    b.build().unwrap_or_else(|_| Gitignore::empty())
}

fn read(dir: BorrowedFd<'_>, root: &Path, name: &str) -> Gitignore {
    match read_file(dir, Path::new(name), MAX_FILE) {
        Some(text) => parse(root, &text),
        None => Gitignore::empty(),
    }
}

/// The rules in force below the directory `dir` (open), whose path as the walk reports it
/// is `path`: its own files' (those `found` in its listing) on top of `parent`.
pub(crate) fn level(
    dir: BorrowedFd<'_>,
    path: &Path,
    found: Found,
    parent: Option<&Arc<Level>>,
) -> Option<Arc<Level>> {
    if !found.any() {
        return parent.cloned();
    }
    let pick = |wanted: bool, name: &str| {
        if wanted {
            read(dir, path, name)
        } else {
            Gitignore::empty()
        }
    };
    let level = Level {
        ignore: pick(found.ignore, ".ignore"),
        gitignore: pick(found.gitignore, ".gitignore"),
        exclude: pick(found.git, ".git/info/exclude"),
        parent: parent.cloned(),
    };
    if level.ignore.is_empty() && level.gitignore.is_empty() && level.exclude.is_empty() {
        return parent.cloned();
    }
    Some(Arc::new(level))
}

/// The `.gitignore` and `.ignore` rules of the directories from root `root` down to the
/// searched directory (`rel` below the root), exclusive, outermost first.
pub(crate) fn ancestors(roots: &Roots, root: usize, rel: &Path) -> Vec<Gitignore> {
    let Some(fd) = roots.fd(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = PathBuf::new();
    let parts: Vec<_> = rel.components().collect();
    // The root itself, then each directory below it, stopping short of `rel`.
    for k in 0..parts.len() {
        if k > 0 {
            at.push(parts[k - 1]);
        }
        let abs = roots.path(root).join(&at);
        for name in [".gitignore", ".ignore"] {
            if let Some(text) = read_file(fd, &at.join(name), MAX_FILE) {
                out.push(parse(&abs, &text));
            }
        }
    }
    out
}

/// Whether the entry at `path` (a directory when `is_dir`) is ignored, explicitly kept
/// (`!pattern`), or neither.
pub(crate) fn matched<'a>(
    level: Option<&'a Arc<Level>>,
    ancestors: &'a [Gitignore],
    path: &Path,
    is_dir: bool,
) -> Match<()> {
    let (mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None);
    let mut cur = level.map(|l| &**l);
    while let Some(l) = cur {
        if ignore.is_none() {
            ignore = l.ignore.matched(path, is_dir).map(|_| ());
        }
        if git.is_none() {
            git = l.gitignore.matched(path, is_dir).map(|_| ());
        }
        if exclude.is_none() {
            exclude = l.exclude.matched(path, is_dir).map(|_| ());
        }
        cur = l.parent.as_deref();
    }
    let mut outer = Match::None;
    for gi in ancestors.iter().rev() {
        outer = gi.matched(path, is_dir).map(|_| ());
        if !outer.is_none() {
            break;
        }
    }
    ignore.or(git).or(exclude).or(outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn precedence_follows_the_ignore_crate() {
        let root = Path::new("/r");
        let top = Arc::new(Level {
            ignore: parse(root, b"!keep.log\n"),
            gitignore: parse(root, b"*.log\nsub/\n"),
            exclude: parse(root, b"*.tmp\n"),
            parent: None,
        });
        let inner = Arc::new(Level {
            ignore: Gitignore::empty(),
            gitignore: parse(Path::new("/r/a"), b"!x.tmp\n\xff\n*.bak\r\n"),
            exclude: Gitignore::empty(),
            parent: Some(top.clone()),
        });
        let outer = [parse(Path::new("/"), b"*.old\n")];
        let m = |p: &str, dir: bool| matched(Some(&inner), &outer, Path::new(p), dir);
        assert!(m("/r/a/b.log", false).is_ignore());
        assert!(m("/r/a/keep.log", false).is_whitelist());
        assert!(m("/r/a/x.tmp", false).is_whitelist());
        assert!(m("/r/a/y.tmp", false).is_ignore());
        assert!(m("/r/a/z.bak", false).is_ignore());
        assert!(m("/r/sub", true).is_ignore());
        assert!(m("/r/sub", false).is_none());
        assert!(m("/r/a/q.old", false).is_ignore());
        assert!(m("/r/a/q.rs", false).is_none());
    }

    #[test]
    fn ancestor_files_between_root_and_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("sub/deep")).unwrap();
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        fs::write(root.join("sub/.ignore"), "x\n").unwrap();
        fs::write(root.join("sub/deep/.gitignore"), "not-an-ancestor\n").unwrap();
        std::os::unix::fs::symlink(root.join(".gitignore"), root.join("sub/.gitignore")).unwrap();
        let roots = Roots::open(std::slice::from_ref(&root));
        let got = ancestors(&roots, 0, Path::new("sub/deep"));
        assert_eq!(got.len(), 2, "the link named .gitignore is passed over");
        assert_eq!(got[0].path(), root);
        assert_eq!(got[1].path(), root.join("sub"));
        assert!(ancestors(&roots, 0, Path::new("")).is_empty());
    }
}
