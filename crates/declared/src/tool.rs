//! A declared tool as a server tool.
//!
//! (Being written.)

/// A tool declared in a file.
#[derive(Debug)]
pub struct DeclaredTool;
