//! Finding, starting and keeping one headless Chromium.
//!
//! The browser starts on the first call, with DevTools on an ephemeral loopback port (read
//! from the `DevTools listening on ws://…` line it prints, or from the `DevToolsActivePort`
//! file it writes). Later calls reuse it; a browser whose process exited or whose
//! connection closed is replaced on the next call.
//!
//! Everything it writes stays in one directory of ours, `toolwright-chromium-<server
//! pid>-…` (created 0700, its name random) in the server's temporary directory, or, when
//! that path is too long for the Unix sockets Chromium makes beneath it (107 bytes at most:
//! CI runners, nix shells and private temporary directories have long ones), in
//! `$XDG_RUNTIME_DIR` or `/tmp` ([`base_dir`]): the profile, and its `TMPDIR`,
//! `XDG_CACHE_HOME` and `XDG_CONFIG_HOME` (where Chromium puts its
//! `org.chromium.Chromium.*` scratch directories, dconf's cache and its config). Dropping
//! a [`Browser`] asks it to quit (SIGTERM, then SIGKILL after a short wait) and removes the
//! directory; at start-up, directories left by a server that is gone (killed, say) are
//! removed too, and a browser still running from one is killed.
//!
//! The browser's network goes through proxies (`proxy`): `--proxy-server` names one that
//! refuses everything, for the browser-wide network context that Chromium's own services
//! use; each capture's browser context gets a proxy of its own. `--host-resolver-rules`
//! makes every name but the proxies' address fail to resolve, so nothing can connect
//! around them, and WebRTC may use no UDP that does not go through the proxy.

use super::cdp::Cdp;
use super::error::ScreenshotError;
use super::proxy::{Proxy, Rules, SystemResolver};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// How long Chromium may take to open its DevTools port.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Executable names tried on `PATH`, in order, when no path is configured.
pub(crate) const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

/// Lines of Chromium's stderr kept for error messages.
const STDERR_KEPT: usize = 12;

/// Flags for a quiet, offline-friendly, reproducible headless browser.
const FLAGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-quic",
    // With the proxies, the browser resolves no name itself; these rules make sure of it
    // (IP literals too: only the proxies' address is left to connect to).
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    // WebRTC otherwise sends STUN over UDP straight from the renderer's network service.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--password-store=basic",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-color-profile=srgb",
    "--remote-debugging-port=0",
];

/// Finds the browser: `configured` (a path, or a bare name looked up on `PATH`), else the
/// first of [`CANDIDATES`] on `PATH`.
pub(crate) fn locate(configured: Option<&Path>) -> Result<PathBuf, ScreenshotError> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let on_path = |name: &str| toolwright_net::on_path(name, &path_var);
    match configured {
        Some(p) if p.components().count() == 1 && !p.is_absolute() => on_path(&p.to_string_lossy())
            .ok_or_else(|| ScreenshotError::BrowserMissing {
                looked: format!("--chromium {}: not on PATH", p.display()),
            }),
        Some(p) if toolwright_net::programs::is_executable(p) => Ok(p.to_path_buf()),
        Some(p) => Err(ScreenshotError::BrowserMissing {
            looked: format!("--chromium {}: no such executable file", p.display()),
        }),
        None => CANDIDATES.iter().find_map(|c| on_path(c)).ok_or_else(|| {
            ScreenshotError::BrowserMissing {
                looked: format!("none of {} is on PATH", CANDIDATES.join(", ")),
            }
        }),
    }
}

/// True when this process runs as root, where Chromium's sandbox cannot start.
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Prefix of the per-launch directories (followed by the server's pid and a dash).
const DIR_PREFIX: &str = "toolwright-chromium-";

/// Random characters at the end of a per-launch directory's name.
const DIR_RANDOM: usize = 6;

/// The longest path a Unix socket can have (`sun_path`'s 108 bytes, less the NUL).
const SOCKET_PATH_MAX: usize = 107;

/// What Chromium's longest socket path adds to the per-launch directory: its `TMPDIR`
/// (ours, `tmp`), its scratch directory there, and the singleton socket in it.
const SOCKET_TAIL: &str = "/tmp/org.chromium.Chromium.XXXXXX/SingletonSocket";

/// Whether Chromium's socket paths fit beneath a per-launch directory made in `base`.
fn fits(base: &Path) -> bool {
    let name = DIR_PREFIX.len() + std::process::id().to_string().len() + 1 + DIR_RANDOM;
    base.as_os_str().len() + 1 + name + SOCKET_TAIL.len() <= SOCKET_PATH_MAX
}

/// Where the per-launch directories may be, in order of preference: the server's
/// temporary directory (`TMPDIR`), `$XDG_RUNTIME_DIR` when it is a directory of this user's
/// that no one else may enter, and `/tmp`.
fn base_candidates() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let tmp = std::env::temp_dir();
    let mut out = vec![std::path::absolute(&tmp).unwrap_or(tmp)];
    if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && run.is_absolute()
        && std::fs::metadata(&run).is_ok_and(|m| {
            m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o077 == 0
        })
    {
        out.push(run);
    }
    out.push(PathBuf::from("/tmp"));
    out.dedup();
    out
}

/// No temporary directory is short enough for Chromium's socket paths.
#[derive(Debug, thiserror::Error)]
#[error(
    "no temporary directory is short enough for Chromium's sockets ({SOCKET_PATH_MAX} bytes at most); tried {}",
    .tried.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
)]
struct NoShortDir {
    /// The candidates, in order.
    tried: Vec<PathBuf>,
}

/// The first of [`base_candidates`] beneath which Chromium's socket paths fit.
fn base_dir() -> Result<PathBuf, NoShortDir> {
    let candidates = base_candidates();
    match candidates.iter().find(|b| fits(b)) {
        Some(b) => Ok(b.clone()),
        None => Err(NoShortDir { tried: candidates }),
    }
}

/// How long a browser asked to quit may take before it is killed.
const QUIT_GRACE: Duration = Duration::from_millis(1500);

/// A running browser and its DevTools connection.
pub(crate) struct Browser {
    /// The process id.
    pub pid: u32,
    /// Which start this is (1 for the first browser of the server, 2 after a restart…).
    pub instance: u64,
    /// The DevTools connection.
    pub cdp: Cdp,
    /// The DevTools port (refused to pages, whatever the policy).
    pub devtools_port: u16,
    /// The proxy that refuses the browser's own connections.
    refuser: Proxy,
    child: Mutex<Child>,
    dir: Mutex<Option<tempfile::TempDir>>,
}

/// Every browser this process started and has not closed yet, so that
/// [`close_all`] can close them at exit whatever still holds them.
static LIVE: Mutex<Vec<std::sync::Weak<Browser>>> = Mutex::new(Vec::new());

/// Closes every browser this process started (asking each to quit, killing it after a
/// short wait) and removes its directory. For the end of the process: a browser in use
/// fails its capture.
pub(crate) fn close_all() {
    let live: Vec<_> = std::mem::take(&mut *LIVE.lock());
    for b in live.iter().filter_map(std::sync::Weak::upgrade) {
        b.close();
    }
}

impl Browser {
    /// True while the process runs and the connection is open.
    pub fn is_alive(&self) -> bool {
        let mut child = self.child.lock();
        !self.cdp.is_closed() && matches!(child.try_wait(), Ok(None))
    }

    /// Starts a browser.
    async fn launch(exe: &Path, sandbox: bool, instance: u64) -> Result<Browser, ScreenshotError> {
        let base = base_dir().map_err(|why| launch_error(exe, why.to_string(), vec![]))?;
        // 0700 (`/tmp` is shared), under a random name no one could have taken first.
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .rand_bytes(DIR_RANDOM)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&base)
            .map_err(|e| {
                launch_error(
                    exe,
                    format!("cannot create a profile directory: {e}"),
                    vec![],
                )
            })?;
        let profile = sub_dir(exe, &dir, "profile")?;
        let refuser = Proxy::start(Rules::RefuseAll, vec![], Arc::new(SystemResolver))
            .await
            .map_err(|e| launch_error(exe, format!("cannot start its proxy: {e}"), vec![]))?;
        let mut cmd = command(exe, &dir, &profile, &refuser, sandbox)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| launch_error(exe, e.to_string(), vec![]))?;
        let pid = child.id().unwrap_or_default();
        // For the sweep of a later server, should this one die without cleaning up.
        let _ = std::fs::write(dir.path().join("browser.pid"), pid.to_string());

        let (kept, url_rx) = watch_stderr(&mut child);
        let port_file = profile.join("DevToolsActivePort");
        let ws_url = wait_for_endpoint(exe, &mut child, url_rx, &port_file, &kept).await?;
        let devtools_port = url::Url::parse(&ws_url)
            .ok()
            .and_then(|u| u.port())
            .unwrap_or_default();
        let cdp = Cdp::connect(&ws_url).await?;
        tracing::debug!(pid, instance, %ws_url, "Chromium started");
        Ok(Browser {
            pid,
            instance,
            cdp,
            devtools_port,
            refuser,
            child: Mutex::new(child),
            dir: Mutex::new(Some(dir)),
        })
    }
}

/// A failure to start the browser at `exe`, with the last lines it printed.
fn launch_error(exe: &Path, reason: String, stderr: Vec<String>) -> ScreenshotError {
    ScreenshotError::Launch {
        path: exe.to_path_buf(),
        reason,
        stderr,
    }
}

/// Creates the directory `name` in the browser's directory `dir`.
fn sub_dir(exe: &Path, dir: &tempfile::TempDir, name: &str) -> Result<PathBuf, ScreenshotError> {
    let p = dir.path().join(name);
    std::fs::create_dir(&p)
        .map_err(|e| launch_error(exe, format!("cannot create {}: {e}", p.display()), vec![]))?;
    Ok(p)
}

/// The command that starts the browser: our flags, its profile and scratch directories
/// beneath `dir`, the proxy that refuses its own connections, and the sandbox unless it is
/// turned off (or we run as root, where Chromium refuses it).
fn command(
    exe: &Path,
    dir: &tempfile::TempDir,
    profile: &Path,
    refuser: &Proxy,
    sandbox: bool,
) -> Result<Command, ScreenshotError> {
    let mut cmd = Command::new(exe);
    cmd.args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server={}", refuser.url()))
        .env("TMPDIR", sub_dir(exe, dir, "tmp")?)
        .env("XDG_CACHE_HOME", sub_dir(exe, dir, "cache")?)
        .env("XDG_CONFIG_HOME", sub_dir(exe, dir, "config")?)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if !sandbox || running_as_root() {
        cmd.arg("--no-sandbox");
    }
    cmd.arg("about:blank");
    Ok(cmd)
}

/// The last lines of the browser's stderr, kept for error messages.
type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// Reads the browser's stderr for the DevTools line (sent on the channel), keeps its last
/// lines, and keeps draining it afterwards so the browser never blocks on a full pipe.
fn watch_stderr(child: &mut Child) -> (StderrTail, oneshot::Receiver<String>) {
    let kept = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEPT)));
    let (url_tx, url_rx) = oneshot::channel::<String>();
    if let Some(stderr) = child.stderr.take() {
        let kept = kept.clone();
        tokio::spawn(async move {
            let mut url_tx = Some(url_tx);
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("ws://")
                    && line.contains("DevTools listening on")
                    && let Some(tx) = url_tx.take()
                {
                    let _ = tx.send(line[at..].trim().to_owned());
                }
                tracing::debug!(target: "toolwright::chromium", "{line}");
                let mut kept = kept.lock();
                if kept.len() == STDERR_KEPT {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
    }
    (kept, url_rx)
}

/// The DevTools endpoint, from the stderr line or the port file, whichever comes first;
/// fails when the browser exits or [`LAUNCH_TIMEOUT`] passes first.
async fn wait_for_endpoint(
    exe: &Path,
    child: &mut Child,
    mut url_rx: oneshot::Receiver<String>,
    port_file: &Path,
    kept: &StderrTail,
) -> Result<String, ScreenshotError> {
    let stderr_tail = || -> Vec<String> { kept.lock().iter().cloned().collect() };
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    loop {
        if let Ok(url) = url_rx.try_recv() {
            return Ok(url);
        }
        if let Some(url) = read_port_file(port_file) {
            return Ok(url);
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Let the stderr reader catch up before quoting it.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(launch_error(
                exe,
                format!("it exited with {status}"),
                stderr_tail(),
            ));
        }
        if Instant::now() > deadline {
            return Err(launch_error(
                exe,
                format!("no DevTools endpoint after {} s", LAUNCH_TIMEOUT.as_secs()),
                stderr_tail(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The endpoint from a `DevToolsActivePort` file: the port, then the browser's path.
fn read_port_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let target = lines.next()?.trim();
    target
        .starts_with("/devtools/browser/")
        .then(|| format!("ws://127.0.0.1:{port}{target}"))
}

impl Browser {
    /// Ports on this machine that pages never reach: DevTools and the refusing proxy.
    pub fn guarded_ports(&self) -> Vec<u16> {
        vec![self.devtools_port, self.refuser.addr().port()]
    }

    /// How many of the browser's own connections were refused so far.
    pub fn own_connections_refused(&self) -> usize {
        self.refuser.attempts().1
    }
}

/// Waits up to `limit` for `child` to exit; true when it did.
fn wait_exit(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !matches!(child.try_wait(), Ok(None)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.close();
    }
}

impl Browser {
    /// Stops the process and removes its directory; does nothing the second time.
    fn close(&self) {
        // This may run with no runtime left (at exit), so no DevTools `Browser.close`:
        // SIGTERM makes Chromium shut down the same way, closing its children.
        let mut child = self.child.lock();
        let child = &mut *child;
        if matches!(child.try_wait(), Ok(None)) {
            let pid = child
                .id()
                .and_then(|p| rustix::process::Pid::from_raw(p as i32));
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            if !wait_exit(child, QUIT_GRACE) {
                tracing::debug!(
                    pid = self.pid,
                    "the browser did not quit in time; killing it"
                );
                let _ = child.start_kill();
                wait_exit(child, Duration::from_millis(500));
            }
        }
        if let Some(dir) = self.dir.lock().take() {
            let refused = self.refuser.attempts().1;
            tracing::debug!(
                pid = self.pid,
                "closed; {refused} connections of the browser's own were refused"
            );
            remove_dir(dir.path());
            // Anything left (late writes by the dying browser) goes with a second pass.
            let _ = dir.close();
        }
    }
}

/// Removes a directory tree, retrying once for files written while it was removed.
fn remove_dir(path: &Path) {
    if std::fs::remove_dir_all(path).is_err() && path.exists() {
        std::thread::sleep(Duration::from_millis(50));
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Whether a process with this pid exists.
fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|p| {
            !matches!(
                rustix::process::test_kill_process(p),
                Err(rustix::io::Errno::SRCH)
            )
        })
}

/// Removes the per-launch directories in `tmp` left by servers that are gone, killing a
/// browser still running from one (when its command line names the directory, so a
/// reused pid is never killed).
pub(crate) fn sweep(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(server) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if server == std::process::id() || pid_alive(server) {
            continue;
        }
        let path = entry.path();
        // Only a directory of this user's (`/tmp` is shared).
        let ours = entry.metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == rustix::process::geteuid().as_raw()
        });
        if !ours {
            continue;
        }
        let browser = std::fs::read_to_string(path.join("browser.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok());
        if let Some(b) = browser {
            let cmdline = std::fs::read(format!("/proc/{b}/cmdline")).unwrap_or_default();
            let needle = path.to_string_lossy();
            let ours = String::from_utf8_lossy(&cmdline).contains(needle.as_ref());
            let pid = i32::try_from(b)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let (true, Some(pid)) = (ours, pid) {
                tracing::debug!(pid = b, "killing a browser left by a server that is gone");
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        tracing::debug!("removing {}, left by server {server}", path.display());
        remove_dir(&path);
    }
}

/// The server's one browser, started on demand.
pub(crate) struct Pool {
    configured: Option<PathBuf>,
    sandbox: bool,
    current: tokio::sync::Mutex<Option<Arc<Browser>>>,
    launches: AtomicU64,
    swept: std::sync::Once,
}

impl Pool {
    /// A pool that has not started anything yet.
    pub fn new(configured: Option<PathBuf>, sandbox: bool) -> Self {
        Pool {
            configured,
            sandbox,
            current: Default::default(),
            launches: AtomicU64::new(0),
            swept: std::sync::Once::new(),
        }
    }

    /// The running browser, started (or restarted) if needed.
    pub async fn get(&self) -> Result<Arc<Browser>, ScreenshotError> {
        let mut current = self.current.lock().await;
        if let Some(b) = current.as_ref() {
            if b.is_alive() {
                return Ok(b.clone());
            }
            tracing::warn!(pid = b.pid, "the browser is gone; starting a new one");
        }
        // Drop the dead one now: its directory goes before a new one is made.
        *current = None;
        let exe = locate(self.configured.as_deref())?;
        self.swept
            .call_once(|| base_candidates().iter().for_each(|b| sweep(b)));
        let instance = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        let browser = Arc::new(Browser::launch(&exe, self.sandbox, instance).await?);
        let mut live = LIVE.lock();
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&browser));
        drop(live);
        *current = Some(browser.clone());
        Ok(browser)
    }

    /// Forgets `browser` if it is still the current one (it was found dead mid-call).
    pub async fn discard(&self, browser: &Arc<Browser>) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|b| Arc::ptr_eq(b, browser)) {
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_reports_what_it_tried() {
        let cases = [
            (
                Some("/nonexistent/chromium"),
                "--chromium /nonexistent/chromium: no such executable file",
            ),
            (
                Some("/etc/passwd"),
                "--chromium /etc/passwd: no such executable file",
            ),
            (
                Some("no-such-browser-xyz"),
                "--chromium no-such-browser-xyz: not on PATH",
            ),
        ];
        for (configured, want) in cases {
            let err = locate(configured.map(Path::new)).unwrap_err().to_string();
            assert!(
                err.contains(want) && err.contains("apt-get install chromium"),
                "{err}"
            );
        }
        assert_eq!(
            locate(Some(Path::new("/bin/sh"))).unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert!(locate(Some(Path::new("sh"))).unwrap().ends_with("sh"));
    }

    #[test]
    fn the_directory_goes_where_chromiums_sockets_fit() {
        assert!(fits(Path::new("/tmp")));
        assert!(!fits(Path::new(&format!("/{}", "t".repeat(60)))));
        // A candidate always fits on this machine: /tmp is one.
        assert!(fits(&base_dir().unwrap()));
    }

    #[test]
    fn port_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("DevToolsActivePort");
        assert_eq!(read_port_file(&p), None);
        std::fs::write(&p, "4711\n/devtools/browser/abc\n").unwrap();
        assert_eq!(
            read_port_file(&p).as_deref(),
            Some("ws://127.0.0.1:4711/devtools/browser/abc")
        );
        std::fs::write(&p, "4711\n").unwrap();
        assert_eq!(read_port_file(&p), None);
    }

    #[tokio::test]
    async fn a_browser_that_exits_at_once_is_a_launch_error() {
        let err = Browser::launch(Path::new("/bin/false"), false, 1)
            .await
            .err()
            .unwrap();
        assert!(matches!(err, ScreenshotError::Launch { .. }), "{err}");
    }
}
