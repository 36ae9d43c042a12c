//! Hot reload: the tool files are watched, and a valid edit swaps the declared tools in one
//! step (clients are told: `notifications/tools/list_changed` for legacy sessions, the
//! `toolsListChanged` event on modern `subscriptions/listen` streams). An edit that does not
//! load keeps the tools being served and logs every problem with file, line and column.
//! Calls already running finish on the definition they started with (they hold it).
//!
//! The directories holding the files are watched rather than the files, since editors save
//! by writing a new file and renaming it over the old one; events are gathered until the
//! directory has been quiet for [`QUIET`].

use crate::load::load_files;
use notify::{RecursiveMode, Watcher as _};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;
use toolwright_server::{Server, Tool};

/// How long the files must be left alone before they are read again.
pub const QUIET: Duration = Duration::from_millis(150);

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
        .spawn(move || reload_loop(&server, &files, &names, served, &rx))
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

fn reload_loop(
    server: &Server,
    files: &[PathBuf],
    names: &BTreeSet<PathBuf>,
    mut served: Vec<String>,
    rx: &mpsc::Receiver<notify::Result<notify::Event>>,
) {
    while let Ok(event) = rx.recv() {
        if !touches(&event, names) {
            continue;
        }
        // Let the editor finish: wait until nothing has happened for QUIET.
        while rx.recv_timeout(QUIET).is_ok() {}
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
    }
}
