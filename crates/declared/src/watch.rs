//! Hot reload: the tool files are watched, and a valid edit swaps the declared tools in one
//! step (clients are told: `notifications/tools/list_changed` for legacy sessions, the
//! `toolsListChanged` event on modern `subscriptions/listen` streams). An edit that does not
//! load keeps the tools being served and logs every problem with file, line and column.
//! Calls already running finish on the definition they started with (they hold it).
//!
//! The directories holding the files are watched rather than the files, since editors save
//! by writing a new file and renaming it over the old one. Only events that change one of
//! the files count (not opening or reading them, not other entries of the directory: a
//! file inside a served root sees every call that opens the root): they are gathered until
//! the files have been left alone for [`QUIET`], and never for longer than [`MAX_WAIT`], so
//! that steady traffic, or a file rewritten without pause, cannot postpone a reload.
//! The files are read by [`Document::read`](toolwright_toolfile::Document::read), which
//! opens nothing but a regular file (a FIFO put in the file's place is refused and logged,
//! and the watcher keeps watching).

use crate::load::load_files;
use notify::{RecursiveMode, Watcher as _};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use toolwright_server::{Server, Tool};

/// How long the files must be left alone before they are read again.
pub const QUIET: Duration = Duration::from_millis(150);

/// The longest a reload waits for the files to be left alone, from the first change.
pub const MAX_WAIT: Duration = Duration::from_secs(2);

/// Keeps the files watched while it lives.
pub struct Watch {
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// Starts watching `files`, whose tools `served` the server serves now.
///
/// # Errors
///
/// When the operating system refuses to watch a directory.
pub fn watch(server: Server, files: Vec<PathBuf>, served: Vec<String>) -> notify::Result<Watch> {
    watch_then(server, files, served, || {})
}

/// [`watch`], and `then` after each reload of the declared tools (whether they loaded or
/// not), on the watcher's thread: what else the files configure (the gateway's `servers:`)
/// is read again there, from the same settled edit.
///
/// # Errors
///
/// When the operating system refuses to watch a directory.
pub fn watch_then(
    server: Server,
    files: Vec<PathBuf>,
    served: Vec<String>,
    mut then: impl FnMut() + Send + 'static,
) -> notify::Result<Watch> {
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })?;
    let names: BTreeSet<PathBuf> = files.iter().map(|f| absolute(f)).collect();
    let dirs: BTreeSet<PathBuf> = names
        .iter()
        .map(|f| {
            f.parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
        })
        .collect();
    for d in &dirs {
        watcher.watch(d, RecursiveMode::NonRecursive)?;
    }
    std::thread::Builder::new()
        .name("toolwright-watch".into())
        .spawn(move || reload_loop(&server, &files, &names, served, &rx, &mut then))
        .map_err(notify::Error::io)?;
    Ok(Watch { _watcher: watcher })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn touches(event: &notify::Result<notify::Event>, names: &BTreeSet<PathBuf>) -> bool {
    match event {
        Ok(e) => !e.kind.is_access() && e.paths.iter().any(|p| names.contains(&absolute(p))),
        Err(_) => false,
    }
}

/// Lets the editor finish after a change: waits until no change to the files has come for
/// [`QUIET`], or [`MAX_WAIT`] has passed since the first. `false`: the watcher is gone.
fn settle(rx: &mpsc::Receiver<notify::Result<notify::Event>>, names: &BTreeSet<PathBuf>) -> bool {
    let deadline = Instant::now() + MAX_WAIT;
    let mut quiet_until = Instant::now() + QUIET;
    loop {
        let left = quiet_until
            .min(deadline)
            .saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match rx.recv_timeout(left) {
            Ok(event) if touches(&event, names) => quiet_until = Instant::now() + QUIET,
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
}

fn reload_loop(
    server: &Server,
    files: &[PathBuf],
    names: &BTreeSet<PathBuf>,
    mut served: Vec<String>,
    rx: &mpsc::Receiver<notify::Result<notify::Event>>,
    then: &mut dyn FnMut(),
) {
    while let Ok(event) = rx.recv() {
        if !touches(&event, names) {
            continue;
        }
        if !settle(rx, names) {
            return;
        }
        server.wait_ready();
        match load_files(files) {
            Ok(tools) => {
                let new: Vec<String> = tools
                    .iter()
                    .map(|t| t.definition_ref().name.clone())
                    .collect();
                let add: Vec<Arc<dyn Tool>> =
                    tools.into_iter().map(|t| t as Arc<dyn Tool>).collect();
                match server.replace_tools(&served, add) {
                    Ok(()) => {
                        tracing::info!(tools = new.len(), "reloaded the tool files");
                        served = new;
                    }
                    Err(e) => tracing::error!(
                        "the tool files were not reloaded: {e}; the previous tools are still served"
                    ),
                }
            }
            Err(e) => {
                for p in e.problems() {
                    tracing::error!("{p}");
                }
                tracing::error!(
                    "the tool files were not reloaded; the previous tools are still served"
                );
            }
        }
        then();
    }
}
