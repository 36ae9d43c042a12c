//! The `toolwright` binary: a thin shell over the library crates.
//!
//! Exit codes ([`args::EXIT_CODES`], in every `--help`): 0 success; 1 findings (lint), a
//! tool that failed (an `isError` result, an error reply, or a result that breaks the tool's
//! `outputSchema`, whoever's server ran it) or nothing to accept (trust accept); 2 usage,
//! I/O or connection error. A broken pipe on stdout exits 0, whichever command was writing.

mod args;
mod auth_cmd;
mod call_args;
mod call_cmd;
mod client_cmd;
mod commands;
mod http_settings;
mod import_cmd;
mod keys_cmd;
mod limits;
mod lint_cmd;
mod logging;
mod skills_cmd;
mod trust_cmd;
mod views;

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
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolwright: {}", render(&e));
            ExitCode::from(2)
        }
    }
}

/// Whether the error is a write to a closed pipe (`toolwright tools | head -1`): the reader
/// has all it wanted, which is success. JSON written straight to stdout fails with a
/// `serde_json::Error` that holds the I/O error without naming it as its source.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let kind = c
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| c.downcast_ref::<serde_json::Error>()?.io_error_kind());
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes, `: `-separated, each said once: a cause whose text its parent
/// already includes (an error type that both prints its source and returns it) is left out.
fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[derive(Debug)]
    struct Echoes(std::io::Error);

    impl std::fmt::Display for Echoes {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot start \"x\": {}", self.0)
        }
    }

    impl std::error::Error for Echoes {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(Echoes(io())).context("connecting to x");
        assert_eq!(
            render(&e),
            "connecting to x: cannot start \"x\": entity not found"
        );
        let e = anyhow::Error::new(io()).context("reading y");
        assert_eq!(render(&e), "reading y: entity not found");
        assert_eq!(render(&anyhow::anyhow!("alone")), "alone");
    }

    #[test]
    fn broken_pipes_are_recognised_through_serde_json() {
        struct Closed;
        impl std::io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let json = serde_json::to_writer(Closed, &[1, 2]).unwrap_err();
        assert!(is_broken_pipe(
            &anyhow::Error::from(json).context("printing")
        ));
        let io = std::io::Write::write_all(&mut Closed, b"x").context("printing");
        assert!(is_broken_pipe(&io.unwrap_err()));
        assert!(!is_broken_pipe(&anyhow::anyhow!("Broken pipe")));
    }
}
