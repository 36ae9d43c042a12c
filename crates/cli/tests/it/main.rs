//! Integration tests: the real `toolwright` binary over real pipes.
//!
//! `util` spawns the binary and checks every message it writes against the official JSON
//! Schema of the request's protocol era.

mod util;

mod cli;
mod screenshot;
mod search_files;
mod stdio_legacy;
mod stdio_modern;
mod stdio_robustness;
