//! Command-backed tools: argv built from templates, never a shell.
//!
//! (Being written: see the module's owner. The interface below is fixed.)

use crate::error::{Problem, RunError};
use crate::input::InputInfo;
use crate::model::CommandSpec;
use crate::{Output, RunContext};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// A compiled `command:`.
#[derive(Debug)]
pub struct CommandAction {
    program: String,
}

impl CommandAction {
    /// Compiles `command:`; problems are reported under `command`.
    ///
    /// # Errors
    ///
    /// A [`Problem`] for anything that cannot run safely.
    pub fn compile(spec: &CommandSpec, input: &InputInfo) -> Result<CommandAction, Problem> {
        let _ = input;
        let o = spec.options();
        Err(Problem::new(
            ["command"],
            format!("not implemented yet ({} elements)", o.argv.len()),
        ))
    }

    /// The arguments the action names.
    pub fn args_used(&self) -> BTreeSet<String> {
        BTreeSet::new()
    }

    /// The program.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Runs the program with `args` (already valid against `inputSchema`).
    ///
    /// # Errors
    ///
    /// [`RunError`] for every failure.
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
    ) -> Result<Output, RunError> {
        let _ = (args, ctx);
        Err(RunError::Missing(self.program.clone()))
    }
}
