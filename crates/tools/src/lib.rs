//! toolwright's built-in tools, one file each.
//!
//! - [`arith`]: `add` and `multiply`, the seed lesson's example tools.
//! - [`search_files`]: the lesson's file search, sandboxed to the server's roots.
//! - [`screenshot`]: `take_screenshot`, the tool-type seed's example, on headless Chromium.
//! - [`net`]: the address policy for outgoing connections (screenshot, declared HTTP tools).
//! - [`programs`]: finding a program on a `PATH` (screenshot's browser, declared commands).
//!
//! Every tool here has a title, a description a model can act on (what it does, what it
//! returns, when to use it), an `outputSchema`, and honest annotations. [`builtin`] lists
//! them; [`register_all`] registers them on a server.

pub mod arith;
mod integers;
pub mod net;
pub mod programs;
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

/// Registers every built-in tool on `server`.
pub fn register_all(server: &Server, options: &Options) -> Result<(), RegisterError> {
    for tool in builtin(options) {
        server.register_arc(tool)?;
    }
    Ok(())
}
