//! The `toolwright` binary: a thin shell over the library crates.
//!
//! Exit codes: 0 success; 1 a tool reported failure (or findings, for commands that
//! report them); 2 usage or I/O error. A broken pipe on stdout exits 0.

mod args;
mod auth_cmd;
mod client_cmd;
mod commands;
mod lint_cmd;
mod trust_cmd;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The jq runner of declared tools' output shaping: this binary re-executed with a hidden
    // first argument, before any argument parsing (it never shows in --help).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == toolwright_declared::shape::CHILD_ARG)
    {
        return toolwright_declared::jq_child_main();
    }
    toolwright_declared::shape::use_child_runner();
    let args = match args::parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match commands::run(args) {
        Ok(code) => code,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("toolwright: {e:#}");
            ExitCode::from(2)
        }
    }
}
