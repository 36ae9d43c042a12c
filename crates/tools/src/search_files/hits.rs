//! The matches a walk keeps: each worker's bounded heap of the smallest, in the order
//! results are reported.

use super::names;
use std::collections::BinaryHeap;

/// One match. Ordered by `key`: the relative path with every `/` replaced by a NUL byte,
/// which orders paths component by component (`a/b` before `a.b`), bytewise within one.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Hit {
    key: Box<[u8]>,
    is_dir: bool,
}

impl Hit {
    pub(super) fn display(&self) -> String {
        let bytes: Vec<u8> = self
            .key
            .iter()
            .map(|&b| if b == 0 { b'/' } else { b })
            .collect();
        let mut s = names::escape(&bytes);
        if self.is_dir {
            s.push('/');
        }
        s
    }
}

/// Writes the sort key of the relative path `rel` into `buf`.
pub(super) fn key_of(rel: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend(rel.iter().map(|&b| if b == b'/' { 0 } else { b }));
}

/// A max-heap that keeps the `cap` smallest hits offered to it.
pub(super) struct Bounded {
    pub(super) heap: BinaryHeap<Hit>,
    cap: usize,
}

impl Bounded {
    pub(super) fn new(cap: usize) -> Self {
        Bounded {
            heap: BinaryHeap::with_capacity(cap.min(1024) + 1),
            cap,
        }
    }

    /// Offers the hit whose key is in `key`; allocates only when it is kept.
    pub(super) fn offer(&mut self, key: &[u8], is_dir: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_component() {
        let k = |s: &str| {
            let mut b = Vec::new();
            key_of(s.as_bytes(), &mut b);
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
    fn display_restores_separators_and_escapes_names() {
        let hit = |s: &[u8], is_dir| {
            let mut b = Vec::new();
            key_of(s, &mut b);
            Hit {
                key: b.into(),
                is_dir,
            }
            .display()
        };
        assert_eq!(hit(b"x/y/z", false), "x/y/z");
        assert_eq!(hit(b"x/y/z", true), "x/y/z/");
        assert_eq!(hit(b"d\xff/f", false), "d\u{FFFD}ff/f");
    }
}
