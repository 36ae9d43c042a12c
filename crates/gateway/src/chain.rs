//! A gateway never starts itself: the chain of gateways a process was started by.
//!
//! Each stdio upstream gets [`CHAIN_VAR`] in its environment: the chain of the gateway
//! that starts it (every gateway above it, each with the identity of its config files and
//! the server entry it started) plus one hop for itself. A gateway that finds one of its
//! own config files in the chain it was started under (the same file, by device and inode
//! where the system has them, else by canonical path) refuses to start, naming the loop:
//! so a gateway saved as `./toolwright.yaml` whose upstream is `toolwright serve` starts
//! that upstream once, which refuses, instead of starting itself without end. A chain
//! deeper than [`MAX_DEPTH`] is refused as well, whatever its files.
//!
//! However a gateway was started, it runs at most [`MAX_UPSTREAM_PROCESSES`] upstream
//! processes at once.

use crate::error::GatewayError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable carrying the chain to a gateway's stdio upstreams.
pub const CHAIN_VAR: &str = "TOOLWRIGHT_GATEWAY_CHAIN";

/// The most gateways in one chain (each an upstream of the one before).
pub const MAX_DEPTH: usize = 4;

/// The most upstream processes one gateway runs at once; a server started beyond it is
/// unavailable until another's process ends.
pub const MAX_UPSTREAM_PROCESSES: usize = 64;

/// One config file, as the chain identifies it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileId {
    /// Canonical path.
    path: PathBuf,
    /// Device and inode, where the system has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<(u64, u64)>,
}

impl FileId {
    fn of(path: &Path) -> FileId {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        FileId {
            node: node_of(&canonical),
            path: canonical,
        }
    }

    fn same(&self, other: &FileId) -> bool {
        match (self.node, other.node) {
            (Some(a), Some(b)) => a == b,
            _ => self.path == other.path,
        }
    }
}

#[cfg(unix)]
fn node_of(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn node_of(_: &Path) -> Option<(u64, u64)> {
    None
}

/// One gateway of a chain, and the upstream it started.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Hop {
    /// Its config files.
    files: Vec<FileId>,
    /// The server entry that started the next process.
    server: String,
    /// The file that entry is declared in.
    declared_in: PathBuf,
}

/// The chain this gateway was started under, and its own config files.
#[derive(Debug, Clone)]
pub struct Chain {
    above: Vec<Hop>,
    own: Vec<FileId>,
}

impl Chain {
    /// The chain of this process (from [`CHAIN_VAR`]) for a gateway of `files`.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Loop`] when one of `files` is a config file of a gateway above,
    /// or the chain is [`MAX_DEPTH`] long already, or the variable cannot be read.
    pub fn check(files: &[PathBuf]) -> Result<Chain, GatewayError> {
        let marker = std::env::var(CHAIN_VAR).ok();
        Chain::check_under(files, marker.as_deref())
    }

    fn check_under(files: &[PathBuf], marker: Option<&str>) -> Result<Chain, GatewayError> {
        let mut own: Vec<FileId> = Vec::new();
        for f in files {
            let id = FileId::of(f);
            if !own.iter().any(|o| o.same(&id)) {
                own.push(id);
            }
        }
        let above: Vec<Hop> = match marker.filter(|m| !m.is_empty()) {
            None => Vec::new(),
            Some(m) => serde_json::from_str(m).map_err(|e| {
                GatewayError::Loop(format!(
                    "{CHAIN_VAR} is set, but not by a toolwright gateway ({e}); it says which gateways started this one, so that none starts itself: unset it"
                ))
            })?,
        };
        for hop in &above {
            if let Some(file) = own.iter().find(|o| hop.files.iter().any(|h| h.same(o))) {
                return Err(GatewayError::Loop(format!(
                    "{} is served already by the gateway that started this process, as its upstream `{}` (declared in {}): a gateway whose upstream loads its own config would start itself without end, so this one does not start; give servers.{} a command that loads another file (such as `--config OTHER.yaml`, or a `cwd:` without a toolwright.yaml)",
                    file.path.display(),
                    hop.server,
                    hop.declared_in.display(),
                    hop.server,
                )));
            }
        }
        if above.len() >= MAX_DEPTH {
            let started_by: Vec<String> = above
                .iter()
                .map(|h| format!("{} ({})", h.server, h.declared_in.display()))
                .collect();
            return Err(GatewayError::Loop(format!(
                "gateways nest at most {MAX_DEPTH} deep, and this one was started by {}: it does not start",
                started_by.join(" → ")
            )));
        }
        Ok(Chain { above, own })
    }

    /// The value of [`CHAIN_VAR`] for upstream `server`, declared in `file`.
    pub fn marker_for(&self, server: &str, file: &Path) -> String {
        let mut hops = self.above.clone();
        hops.push(Hop {
            files: self.own.clone(),
            server: server.to_owned(),
            declared_in: FileId::of(file).path,
        });
        serde_json::to_string(&hops).expect("a chain serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "servers: {}\n").unwrap();
        p
    }

    #[test]
    fn a_gateway_under_its_own_file_refuses_and_names_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let a = file(dir.path(), "a.yaml");
        let top = Chain::check_under(std::slice::from_ref(&a), None).unwrap();
        let marker = top.marker_for("up", &a);
        // The same file by another path (a relative one, a symlink) is the same file.
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        for same in [a.clone(), link] {
            let e = Chain::check_under(&[same], Some(&marker)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("upstream `up`"), "{text}");
            assert!(text.contains("a.yaml"), "{text}");
        }
    }

    #[test]
    fn another_file_nests_and_a_cycle_through_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (file(dir.path(), "a.yaml"), file(dir.path(), "b.yaml"));
        let top = Chain::check_under(std::slice::from_ref(&a), None).unwrap();
        let second = Chain::check_under(std::slice::from_ref(&b), Some(&top.marker_for("b", &a)))
            .expect("another file nests");
        let back = second.marker_for("a", &b);
        assert!(Chain::check_under(&[a], Some(&back)).is_err());
    }

    #[test]
    fn chains_end_at_the_depth_limit_and_foreign_markers_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut marker = None;
        for i in 0..MAX_DEPTH {
            let f = file(dir.path(), &format!("{i}.yaml"));
            let c = Chain::check_under(std::slice::from_ref(&f), marker.as_deref()).unwrap();
            marker = Some(c.marker_for("next", &f));
        }
        let last = file(dir.path(), "last.yaml");
        let e = Chain::check_under(std::slice::from_ref(&last), marker.as_deref()).unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
        assert!(Chain::check_under(&[last], Some("not json")).is_err());
    }
}
