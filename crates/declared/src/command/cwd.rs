//! The working directory, opened beneath a root without a race.
//!
//! The root is opened, then the directory below it with `openat2(RESOLVE_BENEATH)`: the
//! kernel refuses any `..` or symbolic link that would leave the root, at the moment of the
//! open. The child then changes into `/proc/self/fd/N` of that open directory (the
//! descriptor is inherited until exec), so it lands on the very directory that was checked,
//! whatever is renamed or swapped in meanwhile.
//!
//! The directories are opened with `O_PATH`: a descriptor that names a directory without
//! reading it, which is all a working directory needs (search permission, not read), and
//! which the kernel does not report to inotify watchers. A plain open of the root was an
//! `IN_OPEN` event on every call, which woke the tool file's watcher twice per call (its
//! inotify thread and its reload loop) whenever the root is the tool file's directory.

use crate::error::RunError;
use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, openat};
use rustix::io::Errno;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use toolwright_toolfile::paths::openat2;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// A directory named, not read (see the module documentation).
const DIR_PATH: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// A working directory: open, or the server's own (which the child inherits).
#[derive(Debug)]
pub(super) struct Cwd {
    /// `None`: the directory this process is in, nothing to open or change into.
    fd: Option<OwnedFd>,
}

impl Cwd {
    /// The path by which the child reaches it (valid while `self` lives, in this process and
    /// in a child forked from it); `None` when the child simply inherits the directory this
    /// process is in. A child that needs no directory change can be started with
    /// `posix_spawn` (a vfork), where a change of directory makes std fall back to `fork` in
    /// static builds: about half of a short program's start-up here.
    pub(super) fn path(&self) -> Option<PathBuf> {
        let fd = self.fd.as_ref()?;
        Some(PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())))
    }

    /// `fd`, or nothing to keep if it is the directory this process is in.
    fn new(fd: OwnedFd) -> Cwd {
        let here = rustix::fs::fstat(&fd).is_ok_and(|open| is_here(&open));
        Cwd {
            fd: if here { None } else { Some(fd) },
        }
    }
}

/// Whether `st` is the directory this process is in (the same inode on the same device).
fn is_here(st: &rustix::fs::Stat) -> bool {
    rustix::fs::stat(".").is_ok_and(|here| here.st_dev == st.st_dev && here.st_ino == st.st_ino)
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
        // The common case, a program run in the root the server was started in: two stats,
        // nothing opened.
        if rel.as_os_str().is_empty() && rustix::fs::stat(root).is_ok_and(|st| is_here(&st)) {
            return Ok(Cwd { fd: None });
        }
        match open_root(root).and_then(|r| open_beneath(r, rel)) {
            Ok(fd) => {
                let cwd = Cwd::new(fd);
                if cwd.path().is_some_and(|p| !p.is_dir()) {
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
    openat(CWD, root, DIR_PATH, Mode::empty())
}

/// Opens `rel` below `base` (`base` itself when `rel` is empty), never leaving it.
fn open_beneath(base: OwnedFd, rel: &Path) -> Result<OwnedFd, Errno> {
    if rel.as_os_str().is_empty() {
        return Ok(base);
    }
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match openat2(&base, rel, DIR_PATH, Mode::empty(), how) {
        Err(Errno::NOSYS | Errno::PERM) => open_by_components(base.as_fd(), rel),
        other => other,
    }
}

/// Without `openat2` (an old kernel, a seccomp filter): one `openat(O_NOFOLLOW)` per plain
/// component, so no `..` and no symbolic link at all. These are plain opens (`O_PATH` with
/// `O_NOFOLLOW` would open a symbolic link itself rather than refuse it).
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
            let got = open(dir, &roots).map(|c| fs::canonicalize(c.path().unwrap()).unwrap());
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
        // The directory this process is in is inherited, not opened (as a root or below one).
        let here = fs::canonicalize(".").unwrap();
        assert_eq!(
            open(None, std::slice::from_ref(&here)).unwrap().path(),
            None
        );
        let parent = here.parent().unwrap().to_path_buf();
        let name = here.file_name().unwrap().to_str().unwrap();
        assert_eq!(open(Some(name), &[parent]).unwrap().path(), None);
    }
}
