//! Finding a program to start: a name looked up on a `PATH` value, the way a shell would,
//! but without one. `take_screenshot` looks for Chromium on the server's `PATH`; declared
//! command tools look for their program on the `PATH` the program itself will get.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The first `DIR/name` along `path` (a `PATH` value) that is an executable file.
pub fn on_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// Whether `p` is a file with an execute bit set.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
