//! toolwright's built-in tools, one file each.
//!
//! - [`arith`]: `add` and `multiply`, the seed lesson's example tools.
//! - [`search_files`]: the lesson's file search, sandboxed to the server's roots.
//! - [`screenshot`]: `take_screenshot`, the tool-type seed's example, on headless Chromium.
//!
//! The address policy, resolution and programs on `PATH` that `take_screenshot` uses are
//! `toolwright-net`'s; the roots a call may use are `toolwright_server::roots`.
//!
//! Every tool here has a title, a description a model can act on (what it does, what it
//! returns, when to use it), an `outputSchema`, and honest annotations. [`builtin`] lists
//! them ([`NAMES`] names them); [`register_all`] registers them on a server, [`register_where`]
//! those a filter accepts.

pub mod arith;
mod integers;
pub mod screenshot;
pub mod search_files;

use std::sync::Arc;
use toolwright_server::{RegisterError, Server, Tool};

/// Settings the built-in tools need from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Limits of `add` and `multiply`.
    pub arith: arith::Settings,
    /// Settings of `take_screenshot`.
    pub screenshot: screenshot::Settings,
}

/// The built-in tools, in registration order.
pub fn builtin(options: &Options) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(arith::Add::new(options.arith)),
        Arc::new(arith::Multiply::new(options.arith)),
        Arc::new(search_files::SearchFiles::default()),
        Arc::new(screenshot::TakeScreenshot::new(options.screenshot.clone())),
    ]
}

/// The built-in tools' names, in registration order (what a tool file's `builtins:` may
/// name).
pub const NAMES: &[&str] = &["add", "multiply", "search_files", "take_screenshot"];

/// Registers every built-in tool on `server`.
pub fn register_all(server: &Server, options: &Options) -> Result<(), RegisterError> {
    register_where(server, options, |_| true)
}

/// Registers the built-in tools whose names `wanted` accepts.
pub fn register_where(
    server: &Server,
    options: &Options,
    wanted: impl Fn(&str) -> bool,
) -> Result<(), RegisterError> {
    for tool in builtin(options) {
        if wanted(&tool.definition().name) {
            server.register_arc(tool)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_the_builtin_tools_in_order() {
        let tools = super::builtin(&super::Options::default());
        let names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
        assert_eq!(names, super::NAMES);
    }
}
