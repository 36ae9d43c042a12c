//! The process tree of a call, owned by one value that ends it on every path.
//!
//! A [`Tree`] is made right after the program is spawned and ends everything the program
//! started when [`Tree::end`] is called or, failing that, when it is dropped: after a
//! result, an error, the tool's timeout, the server's `--call-timeout` or a cancellation
//! that drops the call's future, and when the runtime is shut down as the server exits.
//!
//! The program runs in its own process group, but a descendant may leave it (`setsid`,
//! `setpgid`), and one whose parent exits is an orphan that the kernel hands to the nearest
//! *child subreaper*. The server makes itself one ([`become_subreaper`], before its first
//! program starts), so no descendant of a call is ever handed to init out of reach. Ending a
//! call then takes three steps:
//!
//! 1. **While the program lives** (its status not yet collected): its descendants are found
//!    through `/proc/PID/task/TID/children`, stopped top-down as they are found (a stopped
//!    process neither forks nor reaps, so the walk is complete and no pid is reused under
//!    it), then all killed. This reaches every descendant, in whatever group or session.
//! 2. **The group** is killed (`kill(-pgid)`), which reaches members whose parent is gone.
//! 3. **Orphans handed to the server** (its children that it did not spawn) are swept: those
//!    of the call's group, and those that left it for a session of their own (`setsid`),
//!    which belong to this call when they started after it and no other live call is older
//!    than them. They are killed, and every process killed here is reaped once it is the
//!    server's (a background thread waits a bounded time for the stragglers).
//!
//! What is not reached: a descendant that, within the server's own session, moved to a new
//! group (`setpgid`) and whose parent then exited before the call ended looks like a
//! program the server started itself, and is left alone; and nothing runs when the server
//! is killed with SIGKILL.

use rustix::process::{Pid, Signal, WaitOptions, kill_process, kill_process_group};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Most processes one call's walk stops (a fork bomb is cut there, then killed by group).
const MAX_WALK: usize = 4096;

/// Clock ticks a second in `/proc` (USER_HZ).
const TICKS: u64 = 100;

/// How long the background reaper waits for killed processes to become reapable.
const REAP_FOR: Duration = Duration::from_secs(5);

/// Live calls: the leader's pid and its start time (clock ticks since boot, as in
/// `/proc/PID/stat`).
static LIVE: Mutex<Vec<(Pid, u64)>> = Mutex::new(Vec::new());

/// Makes this process a child subreaper (once; later calls do nothing), so that orphaned
/// descendants of its programs are handed to it rather than to init. Returns whether it is
/// one.
pub fn become_subreaper() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        let ok = rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok();
        if !ok {
            tracing::warn!(
                "cannot become a child subreaper: a program's descendant that leaves its process group may outlive its call"
            );
        }
        ok
    })
}

/// The process tree of one call (see the module documentation).
#[derive(Debug)]
pub(super) struct Tree {
    leader: Option<Pid>,
    start: u64,
    reaped: bool,
    done: bool,
}

impl Tree {
    /// The moment a call starts, taken before its program is spawned: no process of the
    /// call started earlier.
    pub(super) fn now() -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        // `/proc/PID/stat` counts the boot time in USER_HZ ticks, 100 a second on Linux.
        u64::try_from(t.tv_sec).unwrap_or(0) * TICKS
            + u64::try_from(t.tv_nsec).unwrap_or(0) / (1_000_000_000 / TICKS)
    }

    /// Takes charge of the tree whose leader (and group) is `leader`, just spawned and not
    /// yet waited for; `start` is [`Tree::now`] from before the spawn.
    pub(super) fn new(leader: Option<Pid>, start: u64) -> Tree {
        if let Some(p) = leader {
            lock(&LIVE).push((p, start));
        }
        Tree {
            leader,
            start,
            reaped: false,
            done: false,
        }
    }

    /// The leader's status was collected: its pid may now be reused, so only its group (still
    /// held by any member) is reached through it.
    pub(super) fn leader_reaped(&mut self) {
        self.reaped = true;
    }

    /// Ends everything the call started (idempotent).
    pub(super) fn end(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let Some(leader) = self.leader else {
            return;
        };
        let mut killed = Vec::new();
        if !self.reaped {
            killed = stop_descendants(leader);
            for &p in &killed {
                let _ = kill_process(p, Signal::KILL);
            }
            // The leader too (its Child reaps it), continued so a stopped one is not left.
            let _ = kill_process(leader, Signal::KILL);
        }
        // ESRCH: no member of the group is left (the sweep's first look need not ask again).
        let group_left = kill_process_group(leader, Signal::KILL).is_ok();
        lock(&LIVE).retain(|&(p, _)| p != leader);
        let mut sweep = Sweep {
            group: leader,
            start: self.start,
            waiting: killed.into_iter().collect(),
        };
        if sweep.look(group_left) {
            let _ = std::thread::Builder::new()
                .name("toolwright-reaper".into())
                .spawn(move || sweep.finish());
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.end();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Stops `leader` and all its descendants, top-down; returns the descendants.
fn stop_descendants(leader: Pid) -> Vec<Pid> {
    let _ = kill_process(leader, Signal::STOP);
    let mut seen: HashSet<Pid> = HashSet::from([leader]);
    let mut found = Vec::new();
    // Twice over the whole tree: a process may fork between the signal and its stop.
    for _ in 0..2 {
        let mut frontier = vec![leader];
        while let Some(p) = frontier.pop() {
            for c in children(p) {
                if seen.len() >= MAX_WALK {
                    return found;
                }
                if seen.insert(c) {
                    let _ = kill_process(c, Signal::STOP);
                    found.push(c);
                }
                frontier.push(c);
            }
        }
    }
    found
}

/// Orphans of one ended call, still to kill or reap.
struct Sweep {
    group: Pid,
    start: u64,
    /// Killed, not yet reaped.
    waiting: HashSet<Pid>,
}

impl Sweep {
    /// Kills the group, then [looks](Sweep::look) at the server's children. Returns whether
    /// something may still need doing.
    fn pass(&mut self) -> bool {
        let group_left = kill_process_group(self.group, Signal::KILL).is_ok();
        self.look(group_left)
    }

    /// One look at the server's children, the group just killed (`group_left`: a member
    /// was still there to kill): kills what is the call's, reaps what is dead. Returns
    /// whether something may still need doing.
    fn look(&mut self, group_left: bool) -> bool {
        // Most calls leave no orphan, and then nothing more is read.
        let children = own_children();
        if children.is_empty() {
            self.forget_gone();
            return group_left || !self.waiting.is_empty();
        }
        let Some(mine) = own_stat() else {
            return !self.waiting.is_empty();
        };
        let group = self.group.as_raw_nonzero().get();
        let live = lock(&LIVE).clone();
        let mut more = group_left;
        for c in children {
            let Some(s) = stat(c) else { continue };
            if live.iter().any(|&(p, _)| p == c) {
                continue;
            }
            // Not a program the server spawned: those lead their own group (process_group(0))
            // or share the server's.
            let orphan = s.group != c.as_raw_nonzero().get() && s.group != mine.group;
            let ours = s.group == group
                || (s.session != mine.session
                    && s.start >= self.start
                    && !live.iter().any(|&(_, t)| t <= s.start));
            if s.zombie {
                if orphan || self.waiting.contains(&c) {
                    reap(c);
                    self.waiting.remove(&c);
                }
            } else if ours {
                let _ = kill_process(c, Signal::KILL);
                self.waiting.insert(c);
                more = true;
            }
        }
        self.forget_gone();
        more || !self.waiting.is_empty()
    }

    /// A killed process that is not (yet) the server's child: its parent may still reap
    /// it; once it is gone, it is no longer waited for.
    fn forget_gone(&mut self) {
        if !self.waiting.is_empty() {
            self.waiting
                .retain(|&p| std::fs::metadata(format!("/proc/{}", p.as_raw_nonzero())).is_ok());
        }
    }

    /// Passes until nothing is left, for at most [`REAP_FOR`].
    fn finish(mut self) {
        let until = Instant::now() + REAP_FOR;
        let mut pause = Duration::from_millis(1);
        while Instant::now() < until {
            std::thread::sleep(pause);
            if !self.pass() {
                return;
            }
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

/// Collects the status of `pid`, a dead child of this process that no `Child` owns.
fn reap(pid: Pid) {
    let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
}

/// The children of `pid`, over all its threads.
fn children(pid: Pid) -> Vec<Pid> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", pid.as_raw_nonzero())) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| Pid::from_raw(t.file_name().to_str()?.parse().ok()?))
        .flat_map(|tid| thread_children(pid, tid))
        .collect()
}

/// The children of one thread `tid` of `pid`.
fn thread_children(pid: Pid, tid: Pid) -> Vec<Pid> {
    std::fs::read_to_string(children_file(pid, tid))
        .map(|text| pids(&text))
        .unwrap_or_default()
}

fn children_file(pid: Pid, tid: Pid) -> String {
    format!(
        "/proc/{}/task/{}/children",
        pid.as_raw_nonzero(),
        tid.as_raw_nonzero()
    )
}

fn pids(text: &str) -> Vec<Pid> {
    text.split_ascii_whitespace()
        .filter_map(|n| Pid::from_raw(n.parse().ok()?))
        .collect()
}

/// The server's children that are orphans handed to it or its programs: those of its main
/// thread (orphans go to the subreaper's first live thread). Read at every call's end, so
/// through one descriptor kept open and read again from offset 0 (which makes the kernel
/// list them afresh), rather than a path looked up, opened and closed each time.
fn own_children() -> Vec<Pid> {
    static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);
    let mut file = lock(&FILE);
    if file.is_none() {
        let me = rustix::process::getpid();
        *file = std::fs::File::open(children_file(me, me)).ok();
    }
    let Some(f) = file.as_ref() else {
        return Vec::new();
    };
    match read_from_start(f) {
        Ok(text) => pids(&String::from_utf8_lossy(&text)),
        Err(_) => {
            // Opened again next time.
            *file = None;
            Vec::new()
        }
    }
}

/// All of `f`, read from offset 0 whatever was read of it before.
fn read_from_start(f: &std::fs::File) -> std::io::Result<Vec<u8>> {
    let mut text = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match std::os::unix::fs::FileExt::read_at(f, &mut buf, text.len() as u64) {
            Ok(0) => return Ok(text),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What the sweep reads of `/proc/PID/stat`. The group and session are raw ids: 0 when
/// their leader is outside this PID namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    zombie: bool,
    group: i32,
    session: i32,
    start: u64,
}

/// The server's own group and session, read once: the server never changes them, and
/// `/proc/self/stat` of a process with many threads costs tens of microseconds to read
/// (the kernel sums every thread's times for it), which every call would pay otherwise.
/// Read from /proc, not asked of the kernel through `Pid`: in a PID namespace whose session
/// (or group) leader lives outside it, the id is 0, which no `Pid` holds.
fn own_stat() -> Option<Stat> {
    static MINE: OnceLock<Stat> = OnceLock::new();
    if let Some(s) = MINE.get() {
        return Some(*s);
    }
    let s = stat(rustix::process::getpid())?;
    Some(*MINE.get_or_init(|| s))
}

fn stat(pid: Pid) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).ok()?;
    parse_stat(&text)
}

/// `PID (COMM) STATE PPID PGRP SESSION ...` with the start time 22nd; COMM may hold spaces
/// and parentheses, so fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let pid = |i: usize| f.get(i)?.parse::<i32>().ok();
    Some(Stat {
        zombie: *f.first()? == "Z",
        group: pid(2)?,
        session: pid(3)?,
        start: f.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn reads_stat() {
        let line = "4242 (a b) c)) Z 1 4240 4200 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
        let s = parse_stat(line).unwrap();
        assert!(s.zombie);
        assert_eq!(s.group, 4240);
        assert_eq!(s.session, 4200);
        assert_eq!(s.start, 987_654);
        assert_eq!(parse_stat("1 (x) S 0"), None);
        // A session led from outside the PID namespace reads as 0, and is still read.
        let outside = parse_stat("7 (sh) S 1 7 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0").unwrap();
        assert_eq!((outside.group, outside.session), (7, 0));
        let me = stat(rustix::process::getpid()).unwrap();
        // A child that leads its own group reads as such (rustix's getpgrp is not asked:
        // it asserts an id above 0, which is not so in every container).
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let its = stat(pid).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(its.group, pid.as_raw_nonzero().get());
        assert_eq!(its.session, me.session);
        assert!(!me.zombie);
        // The same clock as /proc's start times.
        assert!(Tree::now() >= me.start);
        assert!(Tree::now() < me.start + 3600 * TICKS);
    }

    /// The kept descriptor of a children file, read again from offset 0, lists the children
    /// of that moment (the file is the kernel's, generated afresh from offset 0).
    #[test]
    fn children_read_again_are_current() {
        // This test's thread: the children of a thread are those it spawned.
        let file = std::fs::File::open("/proc/thread-self/children").unwrap();
        let now = || pids(&String::from_utf8_lossy(&read_from_start(&file).unwrap()));
        let before = now();
        let mut a = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pa = Pid::from_raw(i32::try_from(a.id()).unwrap()).unwrap();
        assert!(now().contains(&pa));
        let mut b = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pb = Pid::from_raw(i32::try_from(b.id()).unwrap()).unwrap();
        let both = now();
        assert!(both.contains(&pa) && both.contains(&pb), "{both:?}");
        for c in [&mut a, &mut b] {
            let _ = c.kill();
            let _ = c.wait();
        }
        let after = now();
        assert!(!after.contains(&pa) && !after.contains(&pb), "{after:?}");
        assert!(after.iter().all(|p| before.contains(p)));
    }
}
