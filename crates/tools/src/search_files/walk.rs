//! The parallel walk: each worker thread keeps the smallest `max_results` matches it saw in
//! a bounded max-heap, and the heaps are merged when the walk ends, so memory is bounded by
//! `max_results` (times the number of threads) however many entries match.

use super::pattern::{Pattern, Target};
use super::sandbox::inside;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use parking_lot::Mutex;
use std::collections::BinaryHeap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Entries a worker counts before it adds them to the shared total.
const FLUSH_EVERY: u64 = 256;
/// Entries between two progress reports.
pub(crate) const PROGRESS_EVERY: u64 = 4096;

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
    pub roots: Arc<Vec<PathBuf>>,
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
    /// Ignore files of the directories above `dir` (inside its root), outermost first.
    pub ancestor_ignores: Vec<PathBuf>,
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
    /// Other unreadable entries: broken links, link loops, entries that vanished.
    pub errors: u64,
}

impl Skipped {
    fn add(&mut self, o: &Skipped) {
        self.permission_denied += o.permission_denied;
        self.outside_roots += o.outside_roots;
        self.symlinks_not_followed += o.symlinks_not_followed;
        self.errors += o.errors;
    }
}

/// What a finished walk found.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The first `max_results` matches in order, `/`-separated, directories ending in `/`.
    pub matches: Vec<String>,
    /// Matches in all.
    pub matched: u64,
    /// Entries visited.
    pub scanned: u64,
    /// Entries passed over.
    pub skipped: Skipped,
}

/// One match. Ordered by `key`: the relative path with every `/` replaced by a NUL byte,
/// which orders paths component by component (`a/b` before `a.b`), bytewise within one.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    key: Box<[u8]>,
    is_dir: bool,
}

impl Hit {
    fn display(&self) -> String {
        let bytes: Vec<u8> = self
            .key
            .iter()
            .map(|&b| if b == 0 { b'/' } else { b })
            .collect();
        // Names that are not UTF-8 cannot travel in JSON as they are; they are shown with
        // U+FFFD in place of the bytes that do not decode.
        let mut s = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        if self.is_dir {
            s.push('/');
        }
        s
    }
}

/// Writes the sort key of `rel` into `buf`.
fn key_of(rel: &Path, buf: &mut Vec<u8>) {
    buf.clear();
    let bytes = rel.as_os_str().as_encoded_bytes();
    buf.extend(bytes.iter().map(|&b| if b == b'/' { 0 } else { b }));
}

/// A max-heap that keeps the `cap` smallest hits offered to it.
struct Bounded {
    heap: BinaryHeap<Hit>,
    cap: usize,
}

impl Bounded {
    fn new(cap: usize) -> Self {
        Bounded {
            heap: BinaryHeap::with_capacity(cap.min(1024) + 1),
            cap,
        }
    }

    /// Offers the hit whose key is in `key`; allocates only when it is kept.
    fn offer(&mut self, key: &[u8], is_dir: bool) {
        if self.heap.len() >= self.cap {
            match self.heap.peek() {
                Some(top) if key < &*top.key => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        self.heap.push(Hit {
            key: key.into(),
            is_dir,
        });
    }
}

struct Shared<'a> {
    spec: &'a Spec,
    stop: &'a AtomicBool,
    progress: &'a (dyn Fn(u64, u64) + Sync),
    progress_lock: Mutex<()>,
    scanned: AtomicU64,
    matched: AtomicU64,
    merged: Mutex<(Vec<Hit>, Skipped)>,
}

struct Worker<'a> {
    shared: &'a Shared<'a>,
    best: Bounded,
    skipped: Skipped,
    scanned: u64,
    matched: u64,
    key: Vec<u8>,
}

impl Worker<'_> {
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

    fn error(&mut self, err: &ignore::Error) {
        match err.io_error().map(std::io::Error::kind) {
            Some(ErrorKind::PermissionDenied) => self.skipped.permission_denied += 1,
            _ => self.skipped.errors += 1,
        }
    }

    fn entry(&mut self, dent: &DirEntry) {
        let spec = self.shared.spec;
        let Some(ft) = dent.file_type() else { return };
        let mut is_dir = ft.is_dir();
        if ft.is_symlink() {
            // Not followed (the filter already refused links that lead out): classify by
            // the target so `type` and the trailing `/` describe what the link points to.
            match std::fs::metadata(dent.path()) {
                Ok(m) => is_dir = m.is_dir(),
                Err(_) => {
                    self.skipped.errors += 1;
                    return;
                }
            }
            if is_dir {
                self.skipped.symlinks_not_followed += 1;
            }
        }
        if !spec.kind.accepts(is_dir) || (spec.pattern.dirs_only() && !is_dir) {
            return;
        }
        // Name patterns look at the name alone; the relative path is worked out for matches.
        if spec.pattern.target() == Target::Name && !spec.pattern.is_match_name(dent.file_name()) {
            return;
        }
        let Ok(rel) = dent.path().strip_prefix(&spec.dir) else {
            return;
        };
        if spec.pattern.target() == Target::Path && !spec.pattern.is_match_path(rel) {
            return;
        }
        self.matched += 1;
        key_of(rel, &mut self.key);
        self.best.offer(&self.key, is_dir);
    }
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.stop.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        match entry {
            Err(e) => self.error(&e),
            Ok(dent) if dent.depth() == 0 => {}
            Ok(dent) => {
                self.scanned += 1;
                self.entry(&dent);
                if self.scanned >= FLUSH_EVERY {
                    self.flush_counts();
                }
            }
        }
        WalkState::Continue
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        self.flush_counts();
        let mut merged = self.shared.merged.lock();
        merged
            .0
            .extend(std::mem::take(&mut self.best.heap).into_vec());
        merged.1.add(&self.skipped);
    }
}

struct Builder<'a> {
    shared: &'a Shared<'a>,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Worker {
            shared: self.shared,
            best: Bounded::new(self.shared.spec.max_results),
            skipped: Skipped::default(),
            scanned: 0,
            matched: 0,
            key: Vec::with_capacity(256),
        })
    }
}

/// Counters the entry filter fills (it runs before entries reach the workers).
#[derive(Default)]
struct FilterCounts {
    outside_roots: AtomicU64,
    permission_denied: AtomicU64,
    errors: AtomicU64,
}

/// Decides, before an entry is queued (so before a directory is opened), whether the walk
/// may touch it: links must resolve inside the roots; anchored patterns prune directories
/// that cannot lead to a match.
fn admit(
    dent: &DirEntry,
    dir: &Path,
    roots: &[PathBuf],
    pattern: &Pattern,
    counts: &FilterCounts,
) -> bool {
    if dent.path_is_symlink() {
        match std::fs::canonicalize(dent.path()) {
            Ok(target) if inside(&target, roots) => {}
            Ok(_) => {
                counts.outside_roots.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            Err(e) => {
                let c = if e.kind() == ErrorKind::PermissionDenied {
                    &counts.permission_denied
                } else {
                    &counts.errors
                };
                c.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
    }
    if pattern.prunes()
        && dent.file_type().is_some_and(|t| t.is_dir())
        && let Ok(rel) = dent.path().strip_prefix(dir)
    {
        return pattern.may_descend(dent.depth(), rel);
    }
    true
}

/// Runs the walk. Returns `None` when `stop` was raised before it finished. `progress` is
/// called with (entries scanned, matches) every [`PROGRESS_EVERY`] entries or so.
pub(crate) fn run(
    spec: &Spec,
    stop: &AtomicBool,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Option<Outcome> {
    let counts = Arc::new(FilterCounts::default());
    let mut b = WalkBuilder::new(&spec.dir);
    b.hidden(!spec.include_hidden)
        .parents(false)
        .ignore(spec.respect_gitignore)
        .git_ignore(spec.respect_gitignore)
        .git_exclude(spec.respect_gitignore)
        .git_global(false)
        .require_git(false)
        .follow_links(spec.follow_symlinks)
        .max_depth(spec.pattern.max_depth())
        .threads(spec.threads);
    if spec.respect_gitignore {
        for f in &spec.ancestor_ignores {
            // A file that does not parse in part still contributes its valid lines.
            let _ = b.add_ignore(f);
        }
    }
    {
        let (dir, roots, pattern, counts) = (
            spec.dir.clone(),
            spec.roots.clone(),
            spec.pattern.clone(),
            counts.clone(),
        );
        b.filter_entry(move |dent| admit(dent, &dir, &roots, &pattern, &counts));
    }
    let shared = Shared {
        spec,
        stop,
        progress,
        progress_lock: Mutex::new(()),
        scanned: AtomicU64::new(0),
        matched: AtomicU64::new(0),
        merged: Mutex::new((Vec::new(), Skipped::default())),
    };
    b.build_parallel().visit(&mut Builder { shared: &shared });
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    let (mut hits, mut skipped) = shared.merged.into_inner();
    skipped.outside_roots += counts.outside_roots.load(Ordering::Relaxed);
    skipped.permission_denied += counts.permission_denied.load(Ordering::Relaxed);
    skipped.errors += counts.errors.load(Ordering::Relaxed);
    hits.sort_unstable();
    hits.truncate(spec.max_results);
    Some(Outcome {
        matches: hits.iter().map(Hit::display).collect(),
        matched: shared.matched.into_inner(),
        scanned: shared.scanned.into_inner(),
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_component() {
        let k = |s: &str| {
            let mut b = Vec::new();
            key_of(Path::new(s), &mut b);
            b
        };
        assert!(k("a/b") < k("a.b"));
        assert!(k("a") < k("a/b"));
        assert!(k("a/z") < k("a0"));
        assert!(k("B") < k("a"));
    }

    #[test]
    fn the_heap_keeps_the_smallest() {
        let mut h = Bounded::new(3);
        for s in ["e", "b", "d", "a", "f", "c"] {
            h.offer(s.as_bytes(), false);
        }
        let mut got: Vec<String> = h.heap.into_vec().iter().map(Hit::display).collect();
        got.sort();
        assert_eq!(got, ["a", "b", "c"]);
    }

    #[test]
    fn display_restores_separators() {
        let mut b = Vec::new();
        key_of(Path::new("x/y/z"), &mut b);
        assert_eq!(
            Hit {
                key: b.clone().into(),
                is_dir: false
            }
            .display(),
            "x/y/z"
        );
        assert_eq!(
            Hit {
                key: b.into(),
                is_dir: true
            }
            .display(),
            "x/y/z/"
        );
    }

    #[test]
    fn kinds() {
        assert!(Kind::Any.accepts(true) && Kind::Any.accepts(false));
        assert!(Kind::File.accepts(false) && !Kind::File.accepts(true));
        assert!(Kind::Directory.accepts(true) && !Kind::Directory.accepts(false));
    }
}
