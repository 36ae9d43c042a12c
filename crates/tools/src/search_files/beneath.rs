//! Opening files beneath an open root, never by a path that a concurrent rename could
//! redirect.
//!
//! - [`Roots`]: the roots, each opened once per search (`openat2` with
//!   `RESOLVE_NO_SYMLINKS`: a canonical root has no links to follow).
//! - [`open_beneath`]: a path below an open directory, reached without any symlink
//!   (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` where
//!   the kernel has it, else one `openat(O_NOFOLLOW)` per component).
//! - [`Roots::resolve_link`]: where a symbolic link leads, resolved one component at a time
//!   from open directories (`openat(O_PATH | O_NOFOLLOW)`, `readlinkat` on the link that
//!   was opened, `..` by going back up the chain of directories already open), so the
//!   answer ("inside a root, and here is its descriptor" or "outside") describes the very
//!   object the walk goes on to read. Nothing outside the roots is ever opened: a target
//!   that leaves them is judged from the canonical root paths alone.

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags, fstat, openat, readlinkat};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use toolwright_toolfile::paths::openat2;

/// Flags to open a directory for reading: never through a link at the last component.
pub(crate) const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// Flags to hold a directory only as a base for further `*at` calls.
const PATH_DIR: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// Flags to open an entry itself, whatever it is, links included.
const PATH_ENTRY: OFlags = OFlags::PATH.union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
/// How many links one resolution may go through (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Set once `openat2` turned out to be missing (an old kernel, or a seccomp filter that
/// refuses it); from then on every open walks component by component.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `rel` below `base` with `flags`. `rel` is relative and made of plain names (a
/// canonical path below a canonical root); none of them may be a symbolic link, so a link
/// swapped in anywhere along the way makes this fail (`ELOOP`) instead of leading away.
pub(crate) fn open_beneath(
    base: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
) -> Result<OwnedFd, Errno> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if rel.as_os_str().is_empty() {
        return openat(base, ".", flags, Mode::empty());
    }
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match openat2(base, rel, flags, Mode::empty(), how) {
            Err(Errno::NOSYS | Errno::PERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
            other => return other,
        }
    }
    open_by_components(base, rel, flags)
}

/// The fallback of [`open_beneath`]: one `openat(O_NOFOLLOW)` per component.
fn open_by_components(base: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let names: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            // Only plain names: `..` or an absolute path could leave `base`.
            _ => Err(Errno::XDEV),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, dirs)) = names.split_last() else {
        return openat(base, ".", flags, Mode::empty());
    };
    let mut cur: Option<OwnedFd> = None;
    for name in dirs {
        let at = cur.as_ref().map_or(base, AsFd::as_fd);
        cur = Some(openat(at, *name, PATH_DIR, Mode::empty())?);
    }
    let at = cur.as_ref().map_or(base, AsFd::as_fd);
    openat(at, *last, flags, Mode::empty())
}

/// The roots of one search, opened.
pub(crate) struct Roots {
    /// Canonical paths, as the sandbox resolved them.
    paths: Vec<PathBuf>,
    /// Each root opened for reading, or why it could not be (it then counts as outside).
    fds: Vec<Result<OwnedFd, Errno>>,
}

/// Where a symbolic link leads.
pub(crate) enum Link {
    /// Inside a root: the target, opened (`O_PATH`), and what it is.
    Inside(Target),
    /// Outside every root (or through a directory outside them).
    Outside,
    /// Nowhere: a dangling link, a loop, a component that is not a directory, a
    /// directory that cannot be searched.
    Broken(Errno),
}

/// A link's target inside a root.
pub(crate) struct Target {
    /// The target itself, opened with `O_PATH`.
    pub fd: OwnedFd,
    /// It is a directory.
    pub is_dir: bool,
    /// Its device and inode, to detect loops.
    pub id: (u64, u64),
    /// The root it is in.
    pub root: usize,
    /// Its path below that root, as resolved (directories only; empty for other targets).
    pub phys: PathBuf,
}

/// The directory a resolution stands in.
enum Pos<'a> {
    /// Below root `root`, at `names` (from the root down), open as `top` (or to be
    /// reopened from the root when `top` is `None`, after a `..`).
    Inside {
        root: usize,
        names: Vec<OsString>,
        top: Option<Fd<'a>>,
    },
    /// Outside the roots, at a proper ancestor of one of them. Only the canonical root
    /// paths are consulted here; nothing is opened.
    Outside(PathBuf),
}

enum Fd<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl Fd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Fd::Borrowed(b) => *b,
            Fd::Owned(o) => o.as_fd(),
        }
    }
}

impl Roots {
    /// Opens every root. A root that cannot be opened is kept (so indexes stay) but counts
    /// as outside.
    pub(crate) fn open(paths: &[PathBuf]) -> Roots {
        let fds = paths.iter().map(|p| open_root(p)).collect();
        Roots {
            paths: paths.to_vec(),
            fds,
        }
    }

    /// Root `i`, open, if it could be opened.
    pub(crate) fn fd(&self, i: usize) -> Option<BorrowedFd<'_>> {
        self.opened(i).ok()
    }

    /// Root `i`, open, or why it could not be opened.
    pub(crate) fn opened(&self, i: usize) -> Result<BorrowedFd<'_>, Errno> {
        match self.fds.get(i) {
            Some(Ok(fd)) => Ok(fd.as_fd()),
            Some(Err(e)) => Err(*e),
            None => Err(Errno::NOENT),
        }
    }

    /// The canonical path of root `i`.
    pub(crate) fn path(&self, i: usize) -> &Path {
        &self.paths[i]
    }

    /// The outermost root that holds `dir` (a canonical path), and `dir` below it.
    pub(crate) fn locate<'p>(&self, dir: &'p Path) -> Option<(usize, &'p Path)> {
        self.paths
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, dir.strip_prefix(r).ok()?)))
            .max_by_key(|(_, rest)| rest.as_os_str().len())
    }

    /// The root whose path is exactly `p`, preferring the outermost (the first found: a
    /// path reached one component at a time meets the outer root first).
    fn root_at(&self, p: &Path) -> Option<usize> {
        self.paths.iter().position(|r| r == p)
    }

    fn ancestor_of_a_root(&self, p: &Path) -> bool {
        self.paths.iter().any(|r| r.starts_with(p) && r != p)
    }

    /// Where the link `name` in the directory `parent` leads. `parent` is below root
    /// `root` at `parent_phys` (as it was reached: `..` in the link's target goes back up
    /// that chain).
    pub(crate) fn resolve_link(
        &self,
        root: usize,
        parent: BorrowedFd<'_>,
        parent_phys: &Path,
        name: &OsStr,
    ) -> Link {
        match self.resolve(root, parent, parent_phys, name) {
            Ok(Some(t)) => Link::Inside(t),
            Ok(None) => Link::Outside,
            Err(e) => Link::Broken(e),
        }
    }

    /// Where `name` in `parent` (below root `root` at `parent_phys`) leads: the target
    /// inside a root, `None` outside them. Components are taken one at a time from a queue
    /// that a link's target is put in front of, and `pos` says where the resolution stands.
    ///
    /// Long on purpose: the loop is one state machine over `pos` (inside a root, or above
    /// them on the canonical paths), whose arms move between the two states; read in one
    /// place, every way out of the roots and back in can be checked at once.
    fn resolve(
        &self,
        root: usize,
        parent: BorrowedFd<'_>,
        parent_phys: &Path,
        name: &OsStr,
    ) -> Result<Option<Target>, Errno> {
        let mut pos = Pos::Inside {
            root,
            names: parent_phys
                .components()
                .map(|c| c.as_os_str().to_owned())
                .collect(),
            top: Some(Fd::Borrowed(parent)),
        };
        let mut pending: VecDeque<OsString> = VecDeque::from([name.to_owned()]);
        let mut links = 0;
        while let Some(c) = pending.pop_front() {
            let c = c.as_os_str();
            if c.is_empty() || c == "." {
                continue;
            }
            match &mut pos {
                Pos::Outside(at) => {
                    if c == ".." {
                        at.pop();
                        continue;
                    }
                    at.push(c);
                    if let Some(i) = self.root_at(at) {
                        pos = Pos::Inside {
                            root: i,
                            names: Vec::new(),
                            top: None,
                        };
                    } else if !self.ancestor_of_a_root(at) {
                        return Ok(None);
                    }
                }
                Pos::Inside { root, names, top } => {
                    if c == ".." {
                        if names.pop().is_none() {
                            let mut up = self.paths[*root].clone();
                            up.pop();
                            pos = Pos::Outside(up);
                        } else {
                            *top = None;
                        }
                        continue;
                    }
                    let (fd, st) = self.open_entry(*root, names, top, c)?;
                    let ft = FileType::from_raw_mode(st.st_mode);
                    if ft == FileType::Symlink {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(Errno::LOOP);
                        }
                        if queue_link_target(&fd, &mut pending)? {
                            pos = Pos::Outside(PathBuf::from("/"));
                        }
                        continue;
                    }
                    let id = (st.st_dev, st.st_ino);
                    if ft == FileType::Directory {
                        names.push(c.to_owned());
                        *top = Some(Fd::Owned(fd));
                        if pending.is_empty() {
                            break;
                        }
                        continue;
                    }
                    if !pending.is_empty() {
                        return Err(Errno::NOTDIR);
                    }
                    return Ok(Some(Target {
                        fd,
                        is_dir: false,
                        id,
                        root: *root,
                        phys: PathBuf::new(),
                    }));
                }
            }
        }
        // Every component was a directory (or `.`/`..`): the target is where we stand.
        self.standing_at(pos)
    }

    /// Opens the entry `c` itself (`O_PATH | O_NOFOLLOW`) in the directory a resolution
    /// stands in (`names` below root `root`, open as `top`, or reopened from the root first
    /// after a `..`), and says what it is.
    fn open_entry<'a>(
        &self,
        root: usize,
        names: &[OsString],
        top: &mut Option<Fd<'a>>,
        c: &OsStr,
    ) -> Result<(OwnedFd, rustix::fs::Stat), Errno> {
        if top.is_none() {
            *top = Some(Fd::Owned(self.reopen(root, names)?));
        }
        let at = top.as_ref().map(Fd::as_fd).ok_or(Errno::NOENT)?;
        let fd = openat(at, c, PATH_ENTRY, Mode::empty())?;
        let st = fstat(&fd)?;
        Ok((fd, st))
    }

    /// The directory a resolution ended in, as its target: opened (`O_PATH`) when inside a
    /// root, `None` when outside them.
    fn standing_at(&self, pos: Pos<'_>) -> Result<Option<Target>, Errno> {
        match pos {
            Pos::Outside(_) => Ok(None),
            Pos::Inside { root, names, top } => {
                let fd = match top {
                    Some(Fd::Owned(fd)) => fd,
                    Some(Fd::Borrowed(b)) => openat(b, ".", PATH_DIR, Mode::empty())?,
                    None => self.reopen(root, &names)?,
                };
                let st = fstat(&fd)?;
                Ok(Some(Target {
                    fd,
                    is_dir: true,
                    id: (st.st_dev, st.st_ino),
                    root,
                    phys: names.iter().collect(),
                }))
            }
        }
    }

    /// Opens `names` below root `root` again, one plain component at a time.
    fn reopen(&self, root: usize, names: &[OsString]) -> Result<OwnedFd, Errno> {
        let base = self.fd(root).ok_or(Errno::NOENT)?;
        let rel: PathBuf = names.iter().collect();
        open_by_components(base, &rel, PATH_DIR)
    }
}

/// Reads the link `fd` (opened with `O_PATH`) and puts the components of its target in
/// front of `pending`, in order (a leading `/` left out). True when the target is
/// absolute, so that resolution goes on from `/`.
fn queue_link_target(fd: &OwnedFd, pending: &mut VecDeque<OsString>) -> Result<bool, Errno> {
    let target = readlinkat(fd, "", Vec::new())?;
    let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
    for part in target.components().rev() {
        if part != Component::RootDir {
            pending.push_front(part.as_os_str().to_owned());
        }
    }
    Ok(target.is_absolute())
}

/// Opens a canonical root for reading, through no symbolic link.
fn open_root(path: &Path) -> Result<OwnedFd, Errno> {
    let rel = path.strip_prefix("/").map_err(|_| Errno::INVAL)?;
    let slash = openat(rustix::fs::CWD, "/", PATH_DIR, Mode::empty())?;
    open_beneath(slash.as_fd(), rel, DIR)
}

/// Reads a small regular file `name` in `dir` (not through a link), up to `limit` bytes.
pub(crate) fn read_file(dir: BorrowedFd<'_>, name: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    // Non-blocking, so a FIFO planted under an ignore file's name cannot stall the walk.
    let fd = open_beneath(dir, name, OFlags::RDONLY | OFlags::NONBLOCK).ok()?;
    let st = fstat(&fd).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut out = Vec::new();
    std::fs::File::from(fd)
        .take(limit)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    struct Tree {
        _tmp: tempfile::TempDir,
        base: PathBuf,
    }

    /// `<tmp>/{a/, b/}` as roots, `<tmp>/out/`, and links between them.
    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        for d in ["a/sub/deep", "b/x", "out/secret"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        fs::write(base.join("a/file"), "f").unwrap();
        let links: [(&str, PathBuf); 9] = [
            ("a/up", "..".into()),
            ("a/sub/rel", "../file".into()),
            ("a/sub/deep/two", "../../sub".into()),
            ("a/abs", base.join("a/sub")),
            ("a/to-b", "../b/x".into()),
            ("a/out", "../out/secret".into()),
            ("a/abs-out", base.join("out")),
            ("a/dangling", "nothing".into()),
            ("a/self", "self".into()),
        ];
        for (at, to) in links {
            symlink(to, base.join(at)).unwrap();
        }
        symlink(base.join("out/../a/file"), base.join("a/detour")).unwrap();
        Tree { _tmp: tmp, base }
    }

    fn resolve(t: &Tree, roots: &Roots, dir: &str, name: &str) -> Link {
        let dir = t.base.join(dir);
        let (root, phys) = roots.locate(&dir).unwrap();
        let parent = open_beneath(roots.fd(root).unwrap(), phys, DIR).unwrap();
        roots.resolve_link(root, parent.as_fd(), phys, OsStr::new(name))
    }

    fn verdict(l: &Link) -> String {
        match l {
            Link::Inside(t) => format!(
                "inside {} {}{}",
                t.root,
                t.phys.display(),
                if t.is_dir { "/" } else { "" }
            ),
            Link::Outside => "outside".into(),
            Link::Broken(e) => format!("broken {e:?}"),
        }
    }

    #[test]
    fn links_resolve_beneath_the_roots() {
        let t = tree();
        let roots = Roots::open(&[t.base.join("a"), t.base.join("b")]);
        let cases = [
            ("a", "up", "outside"),
            ("a/sub", "rel", "inside 0 "),
            ("a/sub/deep", "two", "inside 0 sub/"),
            ("a", "abs", "inside 0 sub/"),
            ("a", "to-b", "inside 1 x/"),
            ("a", "out", "outside"),
            ("a", "abs-out", "outside"),
            ("a", "detour", "outside"),
            ("a", "dangling", "broken"),
        ];
        for (dir, name, want) in cases {
            let got = verdict(&resolve(&t, &roots, dir, name));
            assert!(got.starts_with(want), "{dir}/{name}: {got}, want {want}");
        }
        assert!(matches!(
            resolve(&t, &roots, "a", "self"),
            Link::Broken(Errno::LOOP)
        ));
    }

    #[test]
    fn a_link_swapped_in_is_not_followed_by_open_beneath() {
        let t = tree();
        let roots = Roots::open(&[t.base.join("a")]);
        let root = roots.fd(0).unwrap();
        assert!(open_beneath(root, Path::new("sub/deep"), DIR).is_ok());
        // The link itself, by either way of opening: refused, not followed.
        for r in [
            open_beneath(root, Path::new("abs"), DIR),
            open_by_components(root, Path::new("abs"), DIR),
            open_beneath(root, Path::new("abs/deep"), DIR),
        ] {
            assert!(
                matches!(r, Err(Errno::LOOP | Errno::NOTDIR)),
                "{:?}",
                r.map(|_| ())
            );
        }
        assert_eq!(
            open_by_components(root, Path::new("abs/deep"), DIR).err(),
            Some(Errno::NOTDIR)
        );
        assert_eq!(
            open_by_components(root, Path::new("../out"), DIR).err(),
            Some(Errno::XDEV)
        );
    }
}
