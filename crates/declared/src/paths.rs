//! `{name:path}`: a path argument resolved beneath the server's roots before a program sees
//! it.
//!
//! The path (relative to the first root, or absolute inside one of them) is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the open root, so `..` and
//! symbolic links may move around inside the root but never out of it; the program is given
//! the absolute path the kernel reached (read back from the open descriptor), which holds no
//! link and no `..`. A path that does not exist yet is allowed when its parent directory
//! resolves beneath the root (an output file). What is checked is the path at the time of
//! the call: a program that opens it later sees whatever is there then.

use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
use rustix::io::Errno;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

/// Resolves `value` beneath `roots`; the text is the absolute path reached.
///
/// # Errors
///
/// What is wrong, for the call's error text.
pub fn resolve(value: &str, roots: &[PathBuf]) -> Result<String, String> {
    let Some(first) = roots.first() else {
        return Err("the server has no roots to resolve a path in".into());
    };
    if value.is_empty() {
        return Err("an empty path".into());
    }
    let path = Path::new(value);
    let (root, rel) = if path.is_absolute() {
        let found = roots
            .iter()
            .find_map(|r| path.strip_prefix(r).ok().map(|rel| (r, rel.to_path_buf())));
        found.ok_or_else(|| format!("{value:?} is outside the server's roots"))?
    } else {
        (first, path.to_path_buf())
    };
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open the root {}: {e}", root.display()))?;
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let rel_or_dot = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &rel
    };
    let fd = match openat2(&dir, rel_or_dot, flags, Mode::empty(), how) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            // Not there yet: its parent must be, beneath the root, and the name plain.
            let (Some(parent), Some(Component::Normal(name))) =
                (rel.parent(), rel.components().next_back())
            else {
                return Err(format!("{value:?} does not exist"));
            };
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            let pfd = openat2(&dir, parent, flags | OFlags::DIRECTORY, Mode::empty(), how)
                .map_err(|e| explain(value, e))?;
            let base = std::fs::read_link(format!("/proc/self/fd/{}", pfd.as_raw_fd()))
                .map_err(|e| format!("{value:?}: {e}"))?;
            return text(base.join(name), value);
        }
        Err(e) => return Err(explain(value, e)),
    };
    let reached = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|e| format!("{value:?}: {e}"))?;
    text(reached, value)
}

fn text(p: PathBuf, value: &str) -> Result<String, String> {
    p.into_os_string()
        .into_string()
        .map_err(|_| format!("{value:?} resolves to a path that is not UTF-8"))
}

fn explain(value: &str, e: Errno) -> String {
    match e {
        Errno::XDEV => format!("{value:?} leads outside the server's roots"),
        Errno::NOENT => format!("{value:?} does not exist"),
        Errno::NOTDIR => format!("{value:?}: a part of it is not a directory"),
        Errno::LOOP => format!("{value:?}: too many symbolic links"),
        Errno::NOSYS | Errno::PERM => {
            format!("{value:?}: this kernel cannot resolve paths beneath a directory (openat2)")
        }
        other => format!("{value:?}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_beneath_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("in")).unwrap();
        std::os::unix::fs::symlink("../../../../../../etc/passwd", root.join("up")).unwrap();
        let roots = vec![root.clone()];
        let ok = |v: &str| resolve(v, &roots).unwrap();
        let bad = |v: &str| resolve(v, &roots).unwrap_err();
        let a = root.join("sub/a.txt").to_str().unwrap().to_owned();
        assert_eq!(ok("sub/a.txt"), a);
        assert_eq!(ok("in/a.txt"), a);
        assert_eq!(ok("sub/../sub/a.txt"), a);
        assert_eq!(ok(&a), a);
        assert_eq!(
            ok("sub/new.txt"),
            root.join("sub/new.txt").to_str().unwrap()
        );
        assert!(
            bad("../etc/passwd").contains("outside"),
            "{}",
            bad("../etc/passwd")
        );
        assert!(bad("out/passwd").contains("outside"));
        assert!(bad("up").contains("outside"));
        assert!(bad("/etc/passwd").contains("outside"));
        assert!(bad("nope/new.txt").contains("does not exist"));
        assert!(bad("").contains("empty"));
    }
}
