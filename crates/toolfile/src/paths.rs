//! `{name:path}`: a path argument opened beneath the server's roots, handed to the program as
//! a descriptor it inherits.
//!
//! The path (relative to the first root, or absolute inside one of them) is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the open root, so `..` and
//! symbolic links may move around inside the root but never out of it. The descriptor
//! (`O_PATH | O_CLOEXEC`) is kept in [`Paths`], and the program is given `/dev/fd/N`: the
//! caller maps each kept descriptor to its number `N` in the child only (from
//! [`FIRST_CHILD_FD`] on, in order). What the program opens is then the very file or
//! directory that was checked: a link swapped in after the check cannot redirect it.
//!
//! A path that does not exist yet is allowed when its parent directory opens beneath the
//! root (an output file): that directory is kept and the program is given `/dev/fd/N/NAME`,
//! which the kernel resolves to the directory checked and then the plain name in it, so that
//! case cannot be redirected either.

use crate::error::PathError;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// The descriptor number, in the program, of the first path a call opens; the next one
/// gets the next number.
pub const FIRST_CHILD_FD: i32 = 3;

/// At most this many `{name:path}` values in one call (each holds a descriptor until the
/// program starts).
pub const MAX_PATHS: usize = 256;

/// The roots a call's paths are opened beneath, and the descriptors opened so far.
#[derive(Debug)]
pub struct Paths<'r> {
    roots: &'r [PathBuf],
    held: Vec<OwnedFd>,
}

impl<'r> Paths<'r> {
    /// Paths beneath `roots` (canonical directories; with none, every path is refused).
    pub fn new(roots: &'r [PathBuf]) -> Paths<'r> {
        Paths {
            roots,
            held: Vec::new(),
        }
    }

    /// Whether no path has been opened (the program needs no descriptor).
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The descriptors opened, each with its number in the program.
    pub fn into_held(self) -> impl Iterator<Item = (i32, OwnedFd)> {
        (FIRST_CHILD_FD..).zip(self.held)
    }

    /// Opens `value` beneath the roots and keeps it: the text is the name the program uses,
    /// `/dev/fd/N` (or `/dev/fd/N/NAME` for a file that does not exist yet).
    ///
    /// # Errors
    ///
    /// [`PathError`]: what is wrong, for the call's error text.
    pub fn open(&mut self, value: &str) -> Result<String, PathError> {
        if self.held.len() >= MAX_PATHS {
            return Err(PathError::TooMany { max: MAX_PATHS });
        }
        let (fd, name) = open_beneath(value, self.roots)?;
        let n = FIRST_CHILD_FD + i32::try_from(self.held.len()).unwrap_or(i32::MAX - 3);
        self.held.push(fd);
        Ok(match name {
            Some(name) => format!("/dev/fd/{n}/{name}"),
            None => format!("/dev/fd/{n}"),
        })
    }
}

/// Opens `value` beneath `roots`: the path itself, or its parent and the name to create.
fn open_beneath(value: &str, roots: &[PathBuf]) -> Result<(OwnedFd, Option<String>), PathError> {
    let Some(first) = roots.first() else {
        return Err(PathError::NoRoots);
    };
    if value.is_empty() {
        return Err(PathError::Empty);
    }
    let value_owned = || value.to_owned();
    let path = Path::new(value);
    let (root, rel) = if path.is_absolute() {
        let found = roots
            .iter()
            .find_map(|r| path.strip_prefix(r).ok().map(|rel| (r, rel.to_path_buf())));
        found.ok_or_else(|| PathError::Outside {
            value: value_owned(),
        })?
    } else {
        (first, path.to_path_buf())
    };
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| PathError::Root {
        root: root.clone(),
        errno,
    })?;
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    match openat2(&dir, or_dot(&rel), flags, Mode::empty(), how) {
        Ok(fd) => Ok((fd, None)),
        Err(Errno::NOENT) => {
            // Not there yet: its parent must be, beneath the root, and the name plain.
            let (Some(parent), Some(Component::Normal(name))) =
                (rel.parent(), rel.components().next_back())
            else {
                return Err(PathError::Missing {
                    value: value_owned(),
                });
            };
            let name = name.to_str().ok_or_else(|| PathError::NotUtf8 {
                value: value_owned(),
            })?;
            let fd = openat2(
                &dir,
                or_dot(parent),
                flags | OFlags::DIRECTORY,
                Mode::empty(),
                how,
            )
            .map_err(|e| explain(value, e))?;
            Ok((fd, Some(name.to_owned())))
        }
        Err(e) => Err(explain(value, e)),
    }
}

/// How many times [`openat2`] asks again after `EAGAIN`.
const AGAIN_TRIES: usize = 32;

/// `openat2(2)`, asked again when the kernel answers `EAGAIN`: with `RESOLVE_BENEATH` (or
/// `RESOLVE_IN_ROOT`) a path with `..` in it, or a link that has one, is refused with
/// `EAGAIN` when a rename or mount anywhere on the system raced its resolution, and the
/// caller is to retry (openat2(2), ERRORS). On a busy machine that is not rare. Every
/// `openat2` of the workspace goes through here; after 32 tries it gives up with
/// `EAGAIN`.
pub fn openat2<Fd: AsFd, P: rustix::path::Arg + Copy>(
    dirfd: Fd,
    path: P,
    flags: OFlags,
    mode: Mode,
    how: ResolveFlags,
) -> Result<OwnedFd, Errno> {
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dirfd.as_fd(), path, flags, mode, how) {
            Err(Errno::AGAIN) if tries + 1 < AGAIN_TRIES => tries += 1,
            other => return other,
        }
    }
}

/// `.` for an empty relative path (the root itself).
fn or_dot(p: &Path) -> &Path {
    if p.as_os_str().is_empty() {
        Path::new(".")
    } else {
        p
    }
}

fn explain(value: &str, e: Errno) -> PathError {
    let value = value.to_owned();
    match e {
        Errno::XDEV => PathError::LeadsOutside { value },
        Errno::NOENT => PathError::Missing { value },
        Errno::NOTDIR => PathError::NotDirectory { value },
        Errno::LOOP => PathError::Loop { value },
        Errno::NOSYS | Errno::PERM => PathError::Unsupported { value },
        errno => PathError::Other { value, errno },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// What the kernel reached for `value`: the descriptor's path, plus the name to create.
    fn reached(value: &str, roots: &[PathBuf]) -> Result<PathBuf, PathError> {
        let (fd, name) = open_beneath(value, roots)?;
        let at = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        Ok(name.map_or_else(|| at.clone(), |n| at.join(n)))
    }

    #[test]
    fn opens_beneath_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("in")).unwrap();
        std::os::unix::fs::symlink("../../../../../../etc/passwd", root.join("up")).unwrap();
        let roots = vec![root.clone()];
        let ok = |v: &str| reached(v, &roots).unwrap();
        let bad = |v: &str| reached(v, &roots).unwrap_err().to_string();
        let a = root.join("sub/a.txt");
        assert_eq!(ok("sub/a.txt"), a);
        assert_eq!(ok("in/a.txt"), a);
        assert_eq!(ok("sub/../sub/a.txt"), a);
        assert_eq!(ok(a.to_str().unwrap()), a);
        assert_eq!(ok("sub/new.txt"), root.join("sub/new.txt"));
        assert_eq!(ok("."), root);
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

    #[test]
    fn names_descriptors_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), "x").unwrap();
        let roots = vec![root.clone()];
        let mut paths = Paths::new(&roots);
        assert!(paths.is_empty());
        assert_eq!(paths.open("a").unwrap(), "/dev/fd/3");
        assert_eq!(paths.open("new.txt").unwrap(), "/dev/fd/4/new.txt");
        assert!(paths.open("../x").is_err());
        assert_eq!(paths.open(root.to_str().unwrap()).unwrap(), "/dev/fd/5");
        let held: Vec<(i32, PathBuf)> = paths
            .into_held()
            .map(|(n, fd)| {
                let at = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()));
                (n, at.unwrap())
            })
            .collect();
        assert_eq!(held, [(3, root.join("a")), (4, root.clone()), (5, root)]);
        assert_eq!(Paths::new(&[]).open("a"), Err(PathError::NoRoots));
    }

    /// Opens `a/../b` beneath a root while another thread renames files on the same
    /// filesystem: the kernel refuses some of those opens with `EAGAIN` (the `..` raced a
    /// rename), and [`openat2`] must ask again until it gets an answer. Counts the
    /// refusals of the bare call too, to show the race was there to be lost.
    #[test]
    fn a_rename_racing_a_dotdot_is_asked_again() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("b"), "x").unwrap();
        let root =
            rustix::fs::open(dir.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let renamer = {
            let (stop, base) = (stop.clone(), dir.path().to_path_buf());
            std::thread::spawn(move || {
                let (x, y) = (base.join("x"), base.join("y"));
                std::fs::write(&x, "").unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::fs::rename(&x, &y).unwrap();
                    std::fs::rename(&y, &x).unwrap();
                }
            })
        };
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let (mut bare_again, mut ours_failed) = (0, 0);
        for _ in 0..20_000 {
            let bare = rustix::fs::openat2(&root, "a/../b", OFlags::PATH, Mode::empty(), how);
            bare_again += usize::from(matches!(bare, Err(Errno::AGAIN)));
            ours_failed +=
                usize::from(openat2(&root, "a/../b", OFlags::PATH, Mode::empty(), how).is_err());
        }
        stop.store(true, Ordering::Relaxed);
        renamer.join().unwrap();
        assert_eq!(
            ours_failed, 0,
            "the bare call saw EAGAIN {bare_again} times"
        );
    }
}
