//! The sandbox: how a requested `directory` is resolved against the roots a call may use
//! (the server's, narrowed by the client's: [`toolwright_server::roots::for_call`]) without revealing
//! anything about paths outside.

use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use toolwright_server::ToolError;

/// True when `path` (canonical) is one of `roots` or below one.
pub(crate) fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

fn list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn outside(given: &str, roots: &[PathBuf]) -> ToolError {
    ToolError::Failed(format!(
        "directory {given:?} is outside the directories this server may search ({}); \
         pass a directory inside one of them",
        list(roots)
    ))
}

/// Resolves the requested directory to a canonical path inside `roots`.
///
/// A relative path is taken from the first root. The answer for a path outside the roots
/// is the same whether or not it exists: when the path does not resolve, the verdict comes
/// from its deepest ancestor that does (symlinks and `..` included), so a missing path
/// behind a link that leads out is "outside", never "does not exist".
pub(crate) fn resolve(given: &str, roots: &[PathBuf]) -> Result<PathBuf, ToolError> {
    let Some(first) = roots.first() else {
        return Err(ToolError::Failed(
            "no directory may be searched: the server's roots and the client's roots have \
             nothing in common"
                .into(),
        ));
    };
    let bytes = super::names::unescape(given).map_err(|e| {
        ToolError::Failed(format!(
            "directory {given:?} has an incomplete escape at byte {}: U+FFFD must be followed by \
             a second U+FFFD (for U+FFFD itself) or two hex digits (for a byte that is not UTF-8)",
            e.at
        ))
    })?;
    let requested = Path::new(OsStr::from_bytes(&bytes));
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        first.join(requested)
    };
    let canonical = match std::fs::canonicalize(&joined) {
        Ok(c) => c,
        Err(e) => {
            let mut ancestor = joined.parent();
            let known = loop {
                match ancestor {
                    Some(a) => match std::fs::canonicalize(a) {
                        Ok(c) => break Some(c),
                        Err(_) => ancestor = a.parent(),
                    },
                    None => break None,
                }
            };
            return Err(match known {
                Some(c) if inside(&c, roots) => match e.kind() {
                    ErrorKind::NotFound => ToolError::Failed(format!(
                        "directory {given:?} does not exist (searched from {})",
                        first.display()
                    )),
                    ErrorKind::PermissionDenied => ToolError::Failed(format!(
                        "directory {given:?} cannot be reached: permission denied"
                    )),
                    ErrorKind::NotADirectory => ToolError::Failed(format!(
                        "directory {given:?} does not exist: a component of it is a file"
                    )),
                    _ => ToolError::Failed(format!("directory {given:?} cannot be resolved: {e}")),
                },
                _ => outside(given, roots),
            });
        }
    };
    if !inside(&canonical, roots) {
        return Err(outside(given, roots));
    }
    let meta = std::fs::metadata(&canonical)
        .map_err(|e| ToolError::Failed(format!("directory {given:?} cannot be read: {e}")))?;
    if !meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{given:?} is a file, not a directory; pass the directory that contains it and a \
             pattern that matches its name"
        )));
    }
    Ok(canonical)
}

/// The refusal for a resolved directory that could not be opened for the walk (opened
/// beneath its root, through no link: `ELOOP`/`ENOTDIR` mean a component was replaced by
/// a link since it was resolved).
pub(crate) fn unreadable(given: &str, e: rustix::io::Errno) -> ToolError {
    use rustix::io::Errno;
    let why = match e {
        Errno::ACCESS | Errno::PERM => "permission denied".to_owned(),
        Errno::LOOP | Errno::NOTDIR | Errno::NOENT | Errno::XDEV => {
            "it changed during the search (a component was removed or replaced by a link); \
             try again"
                .to_owned()
        }
        e => std::io::Error::from(e).to_string(),
    };
    ToolError::Failed(format!("directory {given:?} cannot be read: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn msg(r: Result<PathBuf, ToolError>) -> String {
        match r {
            Err(ToolError::Failed(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    struct Tree {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    /// `<tmp>/root/{sub/, file.txt, out -> ../outside, in -> sub}`, `<tmp>/outside/secret/`.
    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(outside.join("secret")).unwrap();
        fs::write(root.join("file.txt"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("in")).unwrap();
        Tree {
            _tmp: tmp,
            root,
            outside,
        }
    }

    #[test]
    fn inside_paths_resolve() {
        let t = tree();
        let roots = vec![t.root.clone()];
        assert_eq!(resolve("sub", &roots).unwrap(), t.root.join("sub"));
        assert_eq!(resolve(".", &roots).unwrap(), t.root);
        assert_eq!(resolve("", &roots).unwrap(), t.root);
        assert_eq!(resolve("in", &roots).unwrap(), t.root.join("sub"));
        assert_eq!(
            resolve(t.root.join("sub/../sub").to_str().unwrap(), &roots).unwrap(),
            t.root.join("sub")
        );
    }

    #[test]
    fn outside_answers_do_not_depend_on_existence() {
        let t = tree();
        let roots = vec![t.root.clone()];
        let exists = msg(resolve("out/secret", &roots));
        let missing = msg(resolve("out/nothing-here", &roots));
        assert!(exists.contains("outside"), "{exists}");
        assert_eq!(
            exists.replace("secret", "X"),
            missing.replace("nothing-here", "X")
        );
        let up = msg(resolve("../outside", &roots));
        let up_missing = msg(resolve("../nowhere", &roots));
        assert!(up.contains("outside") && up_missing.contains("outside"));
        assert!(msg(resolve("in/../../outside/secret", &roots)).contains("outside"));
        assert!(msg(resolve(t.outside.to_str().unwrap(), &roots)).contains("outside"));
        assert!(msg(resolve("/definitely/not/here", &roots)).contains("outside"));
        assert!(!up.contains(t.outside.to_str().unwrap()), "{up}");
    }

    #[test]
    fn missing_and_file_are_explained() {
        let t = tree();
        let roots = vec![t.root.clone()];
        assert!(msg(resolve("nope", &roots)).contains("does not exist"));
        assert!(msg(resolve("file.txt", &roots)).contains("is a file"));
        assert!(msg(resolve("file.txt/x", &roots)).contains("does not exist"));
        assert!(msg(resolve(".", &[])).contains("nothing in common"));
    }
}
