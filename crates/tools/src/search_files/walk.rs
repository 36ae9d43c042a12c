//! The parallel walk, on descriptors: every directory is opened relative to its parent's
//! open descriptor (`openat(O_DIRECTORY | O_NOFOLLOW)`, read with `getdents64`), the start
//! directory beneath its root ([`open_beneath`]), and links only through
//! [`Roots::resolve_link`]. A directory replaced by a link between being listed and being
//! opened fails to open (and is counted in `errors`); it is never read through the link.
//!
//! Work sharing: each worker thread walks depth first from its own stack of directories and
//! hands the older half of it to a shared queue whenever another worker waits there. Each
//! worker keeps the smallest `max_results` matches it saw in a bounded max-heap; the heaps
//! are merged when the walk ends, so memory is bounded by `max_results` (times the number
//! of threads) however many entries match. Pending directories hold their parent's
//! descriptor, not their own, so a wide directory costs no descriptor per subdirectory.

use super::beneath::{DIR, Link, Roots, open_beneath};
use super::hits::{Bounded, Hit, key_of};
use super::ignores::{self, Found, Level};
use super::pattern::{Pattern, Target};
use super::queue::Queue;
use ignore::gitignore::Gitignore;
use parking_lot::Mutex;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, fstat, openat, statat};
use rustix::io::Errno;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Entries a worker counts before it adds them to the shared total.
const FLUSH_EVERY: u64 = 256;
/// Entries between two progress reports.
pub(crate) const PROGRESS_EVERY: u64 = 4096;
/// The `getdents64` buffer of each worker.
const DIRENT_BUFFER: usize = 32 * 1024;

/// Which kinds of entries may match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// Files and directories alike.
    Any,
    /// Everything but directories.
    File,
    /// Directories only.
    Directory,
}

impl Kind {
    fn accepts(self, is_dir: bool) -> bool {
        match self {
            Kind::Any => true,
            Kind::File => !is_dir,
            Kind::Directory => is_dir,
        }
    }
}

/// Everything the walk needs.
pub(crate) struct Spec {
    /// The canonical directory to search.
    pub dir: PathBuf,
    /// The canonical roots nothing may leave.
    pub roots: Vec<PathBuf>,
    /// The pattern.
    pub pattern: Arc<Pattern>,
    /// Which entries may match.
    pub kind: Kind,
    /// How many matches to keep.
    pub max_results: usize,
    /// Visit entries whose name starts with `.`.
    pub include_hidden: bool,
    /// Honor `.gitignore`, `.ignore` and `.git/info/exclude`.
    pub respect_gitignore: bool,
    /// Descend into symlinked directories inside the roots.
    pub follow_symlinks: bool,
    /// Worker threads.
    pub threads: usize,
}

/// Entries passed over, by reason.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// Entries or directories that could not be read: permission denied.
    pub permission_denied: u64,
    /// Symbolic links that lead outside the roots: neither reported nor followed.
    pub outside_roots: u64,
    /// Symbolic links to directories inside the roots, not descended into.
    pub symlinks_not_followed: u64,
    /// Other unreadable entries: broken links, link loops, entries that vanished or were
    /// replaced during the walk.
    pub errors: u64,
}

impl Skipped {
    fn add(&mut self, o: &Skipped) {
        self.permission_denied += o.permission_denied;
        self.outside_roots += o.outside_roots;
        self.symlinks_not_followed += o.symlinks_not_followed;
        self.errors += o.errors;
    }

    fn failed(&mut self, e: Errno) {
        match e {
            Errno::ACCESS | Errno::PERM => self.permission_denied += 1,
            _ => self.errors += 1,
        }
    }
}

/// What a finished walk found.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The first `max_results` matches in order, `/`-separated, directories ending in `/`,
    /// names escaped as [`names`] says.
    pub matches: Vec<String>,
    /// Matches in all.
    pub matched: u64,
    /// Entries visited.
    pub scanned: u64,
    /// Entries passed over.
    pub skipped: Skipped,
}

/// The device and inode of each directory on the path from the start to one directory
/// (kept only when links are followed, to detect loops).
struct Chain {
    id: (u64, u64),
    parent: Option<Arc<Chain>>,
}

impl Chain {
    fn contains(this: Option<&Arc<Chain>>, id: (u64, u64)) -> bool {
        let mut cur = this;
        while let Some(c) = cur {
            if c.id == id {
                return true;
            }
            cur = c.parent.as_ref();
        }
        false
    }
}

/// How a pending directory is to be opened.
enum Open {
    /// Already open (the start directory), at `phys` below root `root`.
    Fd {
        fd: OwnedFd,
        root: usize,
        phys: PathBuf,
    },
    /// The subdirectory `name` of an open directory, not through a link.
    Child {
        parent: Arc<OwnedFd>,
        name: CString,
        root: usize,
        phys: PathBuf,
    },
    /// The link `name` in an open directory, resolved again when it is opened (the walk
    /// reads whatever the resolution opened, so what it judged is what it reads).
    Link {
        parent: Arc<OwnedFd>,
        name: CString,
        root: usize,
        parent_phys: PathBuf,
    },
}

/// A directory waiting to be read.
struct Dir {
    open: Open,
    /// Its path below the searched directory, as reported (through links).
    rel: Vec<u8>,
    /// Its depth (the searched directory is 0).
    depth: usize,
    /// The ignore rules in force in it (from its ancestors).
    rules: Option<Arc<Level>>,
    /// Its ancestors (when following links).
    chain: Option<Arc<Chain>>,
}

struct Shared<'a> {
    spec: &'a Spec,
    roots: &'a Roots,
    ancestors: &'a [Gitignore],
    queue: &'a Queue<Dir>,
    stop: &'a AtomicBool,
    progress: &'a (dyn Fn(u64, u64) + Sync),
    progress_lock: Mutex<()>,
    scanned: AtomicU64,
    matched: AtomicU64,
}

/// One entry of the directory being read: where its name is in the arena, its type.
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    len: usize,
    ft: FileType,
}

struct Worker<'a> {
    shared: &'a Shared<'a>,
    best: Bounded,
    skipped: Skipped,
    scanned: u64,
    matched: u64,
    /// Directories this worker will read next (depth first).
    stack: Vec<Dir>,
    dirents: Vec<u8>,
    names: Vec<u8>,
    entries: Vec<Entry>,
    key: Vec<u8>,
    rel: Vec<u8>,
    abs: Vec<u8>,
}

impl<'a> Worker<'a> {
    fn new(shared: &'a Shared<'a>) -> Self {
        Worker {
            shared,
            best: Bounded::new(shared.spec.max_results),
            skipped: Skipped::default(),
            scanned: 0,
            matched: 0,
            stack: Vec::new(),
            dirents: Vec::with_capacity(DIRENT_BUFFER),
            names: Vec::with_capacity(4096),
            entries: Vec::with_capacity(256),
            key: Vec::with_capacity(256),
            rel: Vec::with_capacity(256),
            abs: Vec::with_capacity(512),
        }
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn run(mut self) -> (Vec<Hit>, Skipped) {
        let queue = self.shared.queue;
        loop {
            if self.stopped() {
                queue.stop();
                break;
            }
            let dir = match self.stack.pop() {
                Some(d) => d,
                None => match queue.take() {
                    Some(d) => d,
                    None => break,
                },
            };
            self.visit(dir);
            if self.stack.len() > 1 && queue.hungry() {
                let half = self.stack.len() / 2;
                queue.give(self.stack.drain(..half));
            }
        }
        self.flush_counts();
        (self.best.heap.into_vec(), self.skipped)
    }

    fn flush_counts(&mut self) {
        let s = self.shared;
        let before = s.scanned.fetch_add(self.scanned, Ordering::Relaxed);
        let matched = s.matched.fetch_add(self.matched, Ordering::Relaxed) + self.matched;
        let after = before + self.scanned;
        self.scanned = 0;
        self.matched = 0;
        if before / PROGRESS_EVERY != after / PROGRESS_EVERY {
            // Serialized, so reports go out in increasing order (the context drops any
            // that would not increase).
            let _g = s.progress_lock.lock();
            (s.progress)(after, matched);
        }
    }

    /// Opens a pending directory: the descriptor to read, its root and path below it.
    fn open(
        &mut self,
        open: Open,
        chain: Option<&Arc<Chain>>,
    ) -> Option<(OwnedFd, usize, PathBuf)> {
        let r = match open {
            Open::Fd { fd, root, phys } => Ok((fd, root, phys)),
            Open::Child {
                parent,
                name,
                root,
                phys,
            } => openat(&*parent, &*name, DIR, Mode::empty()).map(|fd| (fd, root, phys)),
            Open::Link {
                parent,
                name,
                root,
                parent_phys,
            } => {
                let name = OsStr::from_bytes(name.as_bytes());
                match self
                    .shared
                    .roots
                    .resolve_link(root, parent.as_fd(), &parent_phys, name)
                {
                    Link::Inside(t) if t.is_dir && !Chain::contains(chain, t.id) => {
                        let reopen = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                        openat(&t.fd, ".", reopen, Mode::empty()).map(|fd| (fd, t.root, t.phys))
                    }
                    // Changed since it was listed: no longer a directory inside the roots.
                    Link::Inside(_) | Link::Outside => Err(Errno::NOTDIR),
                    Link::Broken(e) => Err(e),
                }
            }
        };
        r.map_err(|e| self.skipped.failed(e)).ok()
    }

    fn visit(&mut self, dir: Dir) {
        let Some((fd, root, phys)) = self.open(dir.open, dir.chain.as_ref()) else {
            return;
        };
        let spec = self.shared.spec;
        let chain = if spec.follow_symlinks {
            match fstat(&fd) {
                Ok(st) => Some(Arc::new(Chain {
                    id: (st.st_dev, st.st_ino),
                    parent: dir.chain,
                })),
                Err(e) => {
                    self.skipped.failed(e);
                    return;
                }
            }
        } else {
            None
        };
        let found = self.list(&fd);
        let rules = if spec.respect_gitignore {
            self.abs_path(&dir.rel, b"");
            let path = Path::new(OsStr::from_bytes(&self.abs));
            ignores::level(fd.as_fd(), path, found, dir.rules.as_ref())
        } else {
            None
        };
        let check_rules = rules.is_some() || !self.shared.ancestors.is_empty();
        let fd = Arc::new(fd);
        let names = std::mem::take(&mut self.names);
        let entries = std::mem::take(&mut self.entries);
        let parent = Parent {
            rel: &dir.rel,
            fd: &fd,
            root,
            phys: &phys,
            rules: rules.as_ref(),
            check_rules,
            chain: chain.as_ref(),
            depth: dir.depth + 1,
        };
        for e in &entries {
            if self.stopped() {
                break;
            }
            let name = &names[e.start..e.start + e.len];
            self.entry(&parent, name, e.ft);
        }
        self.names = names;
        self.entries = entries;
    }

    /// Reads the directory's entries into `names` and `entries`; notes its ignore files.
    fn list(&mut self, fd: &OwnedFd) -> Found {
        self.names.clear();
        self.entries.clear();
        let mut found = Found::default();
        let mut rd = RawDir::new(fd, self.dirents.spare_capacity_mut());
        while let Some(e) = rd.next() {
            let e = match e {
                Ok(e) => e,
                Err(e) => {
                    self.skipped.failed(e);
                    break;
                }
            };
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            found.note(name);
            self.entries.push(Entry {
                start: self.names.len(),
                len: name.len(),
                ft: e.file_type(),
            });
            self.names.extend_from_slice(name);
        }
        found
    }

    /// `abs` = the searched directory / `rel` / `name` (either may be empty).
    fn abs_path(&mut self, rel: &[u8], name: &[u8]) {
        self.abs.clear();
        self.abs
            .extend_from_slice(self.shared.spec.dir.as_os_str().as_bytes());
        for part in [rel, name] {
            if !part.is_empty() {
                self.abs.push(b'/');
                self.abs.extend_from_slice(part);
            }
        }
    }

    /// Looks at one entry of `parent`: skips it when it is hidden, ignored, a link outside
    /// the roots or a loop of links; otherwise counts it, offers it as a match, and pushes
    /// it to be walked when it is a directory to descend into. The search's inner loop: its
    /// pieces take the parent by reference and allocate nothing but what a pushed directory
    /// keeps.
    fn entry(&mut self, parent: &Parent<'_>, name: &[u8], ft: FileType) {
        let spec = self.shared.spec;
        // Hidden, and no rule could keep it: skipped before anything else is looked at.
        if !spec.include_hidden && !parent.check_rules && name.starts_with(b".") {
            return;
        }
        let Some((ft, link)) = self.file_type(parent, name, ft) else {
            return;
        };
        let link_to_dir = matches!(&link, Some(Link::Inside(t)) if t.is_dir);
        let enter_link = link_to_dir && spec.follow_symlinks;
        let Some(is_dir) = self.admit(parent, name, ft, link.as_ref(), enter_link) else {
            return;
        };
        self.rel.clear();
        self.rel.extend_from_slice(parent.rel);
        if !parent.rel.is_empty() {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name);
        let rel = Path::new(OsStr::from_bytes(&self.rel));
        let descend = ft.is_dir() || enter_link;
        if descend && spec.pattern.prunes() && !spec.pattern.may_descend(parent.depth, rel) {
            return;
        }
        self.scanned += 1;
        if link.is_some() && is_dir && !spec.follow_symlinks {
            self.skipped.symlinks_not_followed += 1;
        }
        self.offer(name, is_dir);
        if descend
            && spec.pattern.max_depth().is_none_or(|m| parent.depth < m)
            && self.push(parent, name, ft).is_none()
        {
            return;
        }
        if self.scanned >= FLUSH_EVERY {
            self.flush_counts();
        }
    }

    /// The entry's type (asked of the file system when the listing did not say), and where
    /// it leads when it is a link; `None` (counted) when it cannot be looked at.
    #[inline]
    fn file_type(
        &mut self,
        parent: &Parent<'_>,
        name: &[u8],
        mut ft: FileType,
    ) -> Option<(FileType, Option<Link>)> {
        let os_name = OsStr::from_bytes(name);
        if ft == FileType::Unknown {
            match statat(&**parent.fd, os_name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => ft = FileType::from_raw_mode(st.st_mode),
                Err(e) => {
                    self.skipped.failed(e);
                    return None;
                }
            }
        }
        let link = (ft == FileType::Symlink).then(|| {
            self.shared
                .roots
                .resolve_link(parent.root, parent.fd.as_fd(), parent.phys, os_name)
        });
        Some((ft, link))
    }

    /// Whether the entry is a directory, or `None` when it is left out: ignored or hidden
    /// (not counted anywhere), a link outside the roots or a broken one, or a link back to a
    /// directory being walked (each counted in `skipped`).
    #[inline]
    fn admit(
        &mut self,
        parent: &Parent<'_>,
        name: &[u8],
        ft: FileType,
        link: Option<&Link>,
        enter_link: bool,
    ) -> Option<bool> {
        let spec = self.shared.spec;
        // Hidden and ignored entries first: they are not counted anywhere.
        let mut kept = false;
        if parent.check_rules {
            self.abs_path(parent.rel, name);
            let path = Path::new(OsStr::from_bytes(&self.abs));
            let m = ignores::matched(
                parent.rules,
                self.shared.ancestors,
                path,
                ft.is_dir() || enter_link,
            );
            if m.is_ignore() {
                return None;
            }
            kept = m.is_whitelist();
        }
        if !spec.include_hidden && !kept && name.starts_with(b".") {
            return None;
        }
        let is_dir = match link {
            None => ft.is_dir(),
            Some(Link::Inside(t)) => t.is_dir,
            Some(Link::Outside) => {
                self.skipped.outside_roots += 1;
                return None;
            }
            Some(Link::Broken(e)) => {
                self.skipped.failed(*e);
                return None;
            }
        };
        if let (true, Some(Link::Inside(t))) = (enter_link, link)
            && Chain::contains(parent.chain, t.id)
        {
            self.skipped.errors += 1;
            return None;
        }
        Some(is_dir)
    }

    /// Keeps the entry (its path in `rel`) among the best results when the pattern and the
    /// kind accept it.
    #[inline]
    fn offer(&mut self, name: &[u8], is_dir: bool) {
        let pattern = &self.shared.spec.pattern;
        let rel = Path::new(OsStr::from_bytes(&self.rel));
        let matches = self.shared.spec.kind.accepts(is_dir)
            && (is_dir || !pattern.dirs_only())
            && match pattern.target() {
                Target::Name => pattern.is_match_name(OsStr::from_bytes(name)),
                Target::Path => pattern.is_match_path(rel),
            };
        if matches {
            self.matched += 1;
            key_of(&self.rel, &mut self.key);
            self.best.offer(&self.key, is_dir);
        }
    }

    /// Pushes the entry (its path in `rel`), a directory or a link to one, to be walked;
    /// `None` when its name cannot be one of a file.
    #[inline]
    fn push(&mut self, parent: &Parent<'_>, name: &[u8], ft: FileType) -> Option<()> {
        let os_name = OsStr::from_bytes(name);
        let name = CString::new(name).ok()?;
        let open = if ft.is_dir() {
            Open::Child {
                parent: parent.fd.clone(),
                name,
                root: parent.root,
                phys: parent.phys.join(os_name),
            }
        } else {
            Open::Link {
                parent: parent.fd.clone(),
                name,
                root: parent.root,
                parent_phys: parent.phys.to_path_buf(),
            }
        };
        self.stack.push(Dir {
            open,
            rel: self.rel.clone(),
            depth: parent.depth,
            rules: parent.rules.cloned(),
            chain: parent.chain.cloned(),
        });
        Some(())
    }
}

/// The directory whose entries are being looked at, as each of them needs it.
struct Parent<'a> {
    /// Its path relative to the searched directory.
    rel: &'a [u8],
    /// Its open descriptor.
    fd: &'a Arc<OwnedFd>,
    /// The root it is beneath.
    root: usize,
    /// Its physical path.
    phys: &'a Path,
    /// The ignore rules in force in it.
    rules: Option<&'a Arc<Level>>,
    /// True when some rule (its own or an ancestor's) could ignore or keep an entry.
    check_rules: bool,
    /// The directories being walked above it, when links are followed.
    chain: Option<&'a Arc<Chain>>,
    /// The depth of its entries.
    depth: usize,
}

/// Why the walk could not start.
#[derive(Debug)]
pub(crate) struct StartError(pub Errno);

/// Runs the walk. Returns `Ok(None)` when `stop` was raised before it finished.
/// `progress` is called with (entries scanned, matches) every [`PROGRESS_EVERY`] entries
/// or so.
pub(crate) fn run(
    spec: &Spec,
    stop: &AtomicBool,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Option<Outcome>, StartError> {
    let roots = Roots::open(&spec.roots);
    let (root, rel) = roots.locate(&spec.dir).ok_or(StartError(Errno::XDEV))?;
    let root_fd = roots.opened(root).map_err(StartError)?;
    let fd = open_beneath(root_fd, rel, DIR).map_err(StartError)?;
    let ancestors = if spec.respect_gitignore {
        ignores::ancestors(&roots, root, rel)
    } else {
        Vec::new()
    };
    let start = Dir {
        open: Open::Fd {
            fd,
            root,
            phys: rel.to_path_buf(),
        },
        rel: Vec::new(),
        depth: 0,
        rules: None,
        chain: None,
    };
    let threads = spec.threads.max(1);
    let queue = Queue::new(threads, start);
    let shared = Shared {
        spec,
        roots: &roots,
        ancestors: &ancestors,
        queue: &queue,
        stop,
        progress,
        progress_lock: Mutex::new(()),
        scanned: AtomicU64::new(0),
        matched: AtomicU64::new(0),
    };
    let results: Vec<(Vec<Hit>, Skipped)> = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads)
            .map(|_| s.spawn(|| Worker::new(&shared).run()))
            .collect();
        let mut all = vec![Worker::new(&shared).run()];
        all.extend(others.into_iter().filter_map(|h| h.join().ok()));
        all
    });
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let mut hits = Vec::new();
    let mut skipped = Skipped::default();
    for (h, s) in results {
        hits.extend(h);
        skipped.add(&s);
    }
    hits.sort_unstable();
    hits.truncate(spec.max_results);
    Ok(Some(Outcome {
        matches: hits.iter().map(Hit::display).collect(),
        matched: shared.matched.into_inner(),
        scanned: shared.scanned.into_inner(),
        skipped,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert!(Kind::Any.accepts(true) && Kind::Any.accepts(false));
        assert!(Kind::File.accepts(false) && !Kind::File.accepts(true));
        assert!(Kind::Directory.accepts(true) && !Kind::Directory.accepts(false));
    }
}
