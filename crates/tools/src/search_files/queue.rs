//! Work sharing between the walk's threads: a stack of work that busy workers fill when
//! another waits, and the rule that the walk ends once every worker waits.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The shared queue: work handed over by busy workers, and who waits for it.
pub(super) struct Queue<T> {
    state: Mutex<QueueState<T>>,
    ready: Condvar,
    /// How many workers wait, readable without the lock.
    waiting: AtomicUsize,
    threads: usize,
}

struct QueueState<T> {
    dirs: Vec<T>,
    waiting: usize,
    done: bool,
}

impl<T> Queue<T> {
    /// A queue for `threads` workers, holding `start`.
    pub(super) fn new(threads: usize, start: T) -> Queue<T> {
        Queue {
            state: Mutex::new(QueueState {
                dirs: vec![start],
                waiting: 0,
                done: false,
            }),
            ready: Condvar::new(),
            waiting: AtomicUsize::new(0),
            threads,
        }
    }

    /// The next piece of work, waiting for one; `None` once every worker waits (the walk is
    /// over) or the walk was stopped.
    pub(super) fn take(&self) -> Option<T> {
        let mut s = self.state.lock();
        loop {
            if s.done {
                return None;
            }
            if let Some(d) = s.dirs.pop() {
                return Some(d);
            }
            s.waiting += 1;
            if s.waiting == self.threads {
                s.done = true;
                self.ready.notify_all();
                return None;
            }
            self.waiting.store(s.waiting, Ordering::Relaxed);
            self.ready.wait(&mut s);
            s.waiting -= 1;
            self.waiting.store(s.waiting, Ordering::Relaxed);
        }
    }

    /// True while a worker waits for work.
    pub(super) fn hungry(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// Hands work over, waking the waiting workers.
    pub(super) fn give(&self, dirs: impl Iterator<Item = T>) {
        let mut s = self.state.lock();
        s.dirs.extend(dirs);
        self.ready.notify_all();
    }

    /// Ends the walk for every worker.
    pub(super) fn stop(&self) {
        self.state.lock().done = true;
        self.ready.notify_all();
    }
}
