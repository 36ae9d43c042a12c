//! The `toolwright` binary: a thin shell over the library crates.
//!
//! Exit codes: 0 success; 1 a tool reported failure (or findings, for commands that
//! report them); 2 usage or I/O error. A broken pipe on stdout exits 0.

mod args;
mod client_cmd;
mod commands;
mod lint_cmd;

use std::process::ExitCode;

fn main() -> ExitCode {
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
