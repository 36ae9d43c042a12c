//! Finding, starting and keeping one headless Chromium.
//!
//! The browser starts on the first call, with a fresh profile in a temporary directory and
//! DevTools on an ephemeral loopback port (read from the `DevTools listening on ws://…`
//! line it prints, or from the `DevToolsActivePort` file it writes). Later calls reuse it;
//! a browser whose process exited or whose connection closed is replaced on the next call.
//! Dropping a [`Browser`] kills the process and removes its profile.

use super::cdp::Cdp;
use super::error::ScreenshotError;
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
    "--no-proxy-server",
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
    let on_path = |name: &str| {
        std::env::split_paths(&path_var)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    };
    match configured {
        Some(p) if p.components().count() == 1 && !p.is_absolute() => on_path(&p.to_string_lossy())
            .ok_or_else(|| ScreenshotError::BrowserMissing {
                looked: format!("--chromium {}: not on PATH", p.display()),
            }),
        Some(p) if is_executable(p) => Ok(p.to_path_buf()),
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

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// True when this process runs as root, where Chromium's sandbox cannot start.
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A running browser and its DevTools connection.
pub(crate) struct Browser {
    /// The process id.
    pub pid: u32,
    /// Which start this is (1 for the first browser of the server, 2 after a restart…).
    pub instance: u64,
    /// The DevTools connection.
    pub cdp: Cdp,
    child: Mutex<Child>,
    profile: Option<tempfile::TempDir>,
}

impl Browser {
    /// True while the process runs and the connection is open.
    pub fn is_alive(&self) -> bool {
        let mut child = self.child.lock();
        !self.cdp.is_closed() && matches!(child.try_wait(), Ok(None))
    }

    /// Starts a browser.
    async fn launch(exe: &Path, sandbox: bool, instance: u64) -> Result<Browser, ScreenshotError> {
        let launch_err = |reason: String, stderr: Vec<String>| ScreenshotError::Launch {
            path: exe.to_path_buf(),
            reason,
            stderr,
        };
        let profile = tempfile::Builder::new()
            .prefix("toolwright-chromium-")
            .tempdir()
            .map_err(|e| launch_err(format!("cannot create a profile directory: {e}"), vec![]))?;
        let mut cmd = Command::new(exe);
        cmd.args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if !sandbox || running_as_root() {
            cmd.arg("--no-sandbox");
        }
        cmd.arg("about:blank");
        let mut child = cmd.spawn().map_err(|e| launch_err(e.to_string(), vec![]))?;
        let pid = child.id().unwrap_or_default();

        // Read stderr for the DevTools line; keep the last lines for error messages; keep
        // draining afterwards so the browser never blocks on a full pipe.
        let kept = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEPT)));
        let (url_tx, mut url_rx) = oneshot::channel::<String>();
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
        let stderr_tail = || -> Vec<String> { kept.lock().iter().cloned().collect() };

        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + LAUNCH_TIMEOUT;
        let ws_url = loop {
            if let Ok(url) = url_rx.try_recv() {
                break url;
            }
            if let Some(url) = read_port_file(&port_file) {
                break url;
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Let the stderr reader catch up before quoting it.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(launch_err(
                    format!("it exited with {status}"),
                    stderr_tail(),
                ));
            }
            if Instant::now() > deadline {
                return Err(launch_err(
                    format!("no DevTools endpoint after {} s", LAUNCH_TIMEOUT.as_secs()),
                    stderr_tail(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        let cdp = Cdp::connect(&ws_url).await?;
        tracing::debug!(pid, instance, %ws_url, "Chromium started");
        Ok(Browser {
            pid,
            instance,
            cdp,
            child: Mutex::new(child),
            profile: Some(profile),
        })
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

impl Drop for Browser {
    fn drop(&mut self) {
        let child = self.child.get_mut();
        let _ = child.start_kill();
        // Give the process a moment to go before removing its profile under it.
        for _ in 0..50 {
            if !matches!(child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(dir) = self.profile.take() {
            let path = dir.path().to_path_buf();
            if dir.close().is_err() {
                // Late writes by the dying browser; one more try.
                std::thread::sleep(Duration::from_millis(50));
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
}

/// The server's one browser, started on demand.
pub(crate) struct Pool {
    configured: Option<PathBuf>,
    sandbox: bool,
    current: tokio::sync::Mutex<Option<Arc<Browser>>>,
    launches: AtomicU64,
}

impl Pool {
    /// A pool that has not started anything yet.
    pub fn new(configured: Option<PathBuf>, sandbox: bool) -> Self {
        Pool {
            configured,
            sandbox,
            current: Default::default(),
            launches: AtomicU64::new(0),
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
        *current = None;
        let exe = locate(self.configured.as_deref())?;
        let instance = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        let browser = Arc::new(Browser::launch(&exe, self.sandbox, instance).await?);
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
