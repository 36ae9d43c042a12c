//! The working directory, opened beneath a root without a race.
//!
//! The root is opened, then the directory below it with `openat2(RESOLVE_BENEATH)`: the
//! kernel refuses any `..` or symbolic link that would leave the root, at the moment of the
//! open. The child then changes into `/proc/self/fd/N` of that open directory (the
//! descriptor is inherited until exec), so it lands on the very directory that was checked,
//! whatever is renamed or swapped in meanwhile.

use crate::error::RunError;
use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, openat, openat2};
use rustix::io::Errno;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// A working directory, open.
#[derive(Debug)]
pub(super) struct Cwd {
    fd: OwnedFd,
}

impl Cwd {
    /// The path by which the child reaches it (valid while `self` lives, in this process and
    /// in a child forked from it).
    pub(super) fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Whether it is the directory this process is in (the same inode on the same device),
    /// so a child may simply inherit it. A child that needs no directory change can be
    /// started with `posix_spawn` (a vfork), where a change of directory makes std fall back
    /// to `fork` in static builds: about half of a short program's start-up here.
    pub(super) fn is_inherited(&self) -> bool {
        let (Ok(here), Ok(open)) = (rustix::fs::stat("."), rustix::fs::fstat(&self.fd)) else {
            return false;
        };
        here.st_dev == open.st_dev && here.st_ino == open.st_ino
    }
}

/// Opens `dir` (a rendered `cwd`, `None` for the first root): relative to the first root,
/// or absolute inside one of `roots` (canonical paths).
pub(super) fn open(dir: Option<&str>, roots: &[PathBuf]) -> Result<Cwd, RunError> {
    let text = dir.unwrap_or("");
    let fail = |reason: &str| RunError::Cwd {
        dir: text.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(first) = roots.first() else {
        return Err(fail("the server has no roots to run a program in"));
    };
    let path = Path::new(text);
    let candidates: Vec<(&Path, &Path)> = if path.is_absolute() {
        roots
            .iter()
            .filter_map(|r| Some((r.as_path(), path.strip_prefix(r).ok()?)))
            .collect()
    } else {
        vec![(first.as_path(), path)]
    };
    if candidates.is_empty() {
        return Err(fail("it is outside the server's roots"));
    }
    let mut first_err = None;
    for (root, rel) in candidates {
        match open_root(root).and_then(|r| open_beneath(r.as_fd(), rel)) {
            Ok(fd) => {
                let cwd = Cwd { fd };
                if !cwd.path().is_dir() {
                    return Err(fail(
                        "it cannot be reached through /proc/self/fd (is /proc mounted?)",
                    ));
                }
                return Ok(cwd);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let reason = match first_err.unwrap_or(Errno::NOENT) {
        Errno::XDEV => "it leads outside the root (through `..` or a symbolic link)".to_owned(),
        Errno::NOENT => "no such directory".to_owned(),
        Errno::NOTDIR => "not a directory".to_owned(),
        Errno::LOOP => "too many symbolic links".to_owned(),
        Errno::ACCESS => "permission denied".to_owned(),
        e => e.to_string(),
    };
    Err(fail(&reason))
}

fn open_root(root: &Path) -> Result<OwnedFd, Errno> {
    openat(CWD, root, DIR, Mode::empty())
}

/// Opens `rel` below `base`, never leaving it.
fn open_beneath(base: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, Errno> {
    if rel.as_os_str().is_empty() {
        return openat(base, ".", DIR, Mode::empty());
    }
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match openat2(base, rel, DIR, Mode::empty(), how) {
        Err(Errno::NOSYS | Errno::PERM) => open_by_components(base, rel),
        other => other,
    }
}

/// Without `openat2` (an old kernel, a seccomp filter): one `openat(O_NOFOLLOW)` per plain
/// component, so no `..` and no symbolic link at all.
fn open_by_components(base: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, Errno> {
    let mut cur: Option<OwnedFd> = None;
    for c in rel.components() {
        let name = match c {
            Component::Normal(n) => n,
            Component::CurDir => continue,
            _ => return Err(Errno::XDEV),
        };
        let at = cur.as_ref().map_or(base, AsFd::as_fd);
        cur = Some(openat(at, name, DIR | OFlags::NOFOLLOW, Mode::empty())?);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => openat(base, ".", DIR, Mode::empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn stays_beneath_the_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        for d in ["root/sub/deep", "other", "outside"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        fs::write(base.join("root/file"), "").unwrap();
        symlink("sub/deep", base.join("root/inner")).unwrap();
        symlink("../outside", base.join("root/out")).unwrap();
        symlink(base.join("root/sub"), base.join("root/abs")).unwrap();
        let roots = [base.join("root"), base.join("other")];
        let abs = |p: &str| base.join(p).to_str().unwrap().to_owned();
        // `dir` opened: the directory below `base` it lands on, or the start of the reason.
        let check = |dir: Option<&str>, want: Result<&str, &str>| {
            let got = open(dir, &roots).map(|c| fs::canonicalize(c.path()).unwrap());
            match (got, want) {
                (Ok(p), Ok(w)) => assert_eq!(p, base.join(w), "{dir:?}"),
                (Err(RunError::Cwd { reason, .. }), Err(w)) => {
                    assert!(reason.starts_with(w), "{dir:?}: {reason}");
                }
                (got, want) => panic!("{dir:?}: got {got:?}, want {want:?}"),
            }
        };
        table! { check;
            (None, Ok("root"));
            (Some(""), Ok("root"));
            (Some("sub"), Ok("root/sub"));
            (Some("sub/deep/../.."), Ok("root"));
            (Some("inner"), Ok("root/sub/deep"));
            (Some(&abs("root/sub")), Ok("root/sub"));
            (Some(&abs("other")), Ok("other"));
            (Some(".."), Err("it leads outside the root"));
            (Some("../outside"), Err("it leads outside the root"));
            (Some("sub/../../outside"), Err("it leads outside the root"));
            (Some("out"), Err("it leads outside the root"));
            (Some("abs"), Err("it leads outside the root"));
            (Some(&abs("root/../outside")), Err("it leads outside the root"));
            (Some(&abs("outside")), Err("it is outside the server's roots"));
            (Some("/etc"), Err("it is outside the server's roots"));
            (Some("nothing"), Err("no such directory"));
            (Some("file"), Err("not a directory"));
        }
        assert!(matches!(open(None, &[]), Err(RunError::Cwd { .. })));
    }
}
