//! HTTP-backed tools: one request per call, each argument encoded for where it lands.
//!
//! (Being written: see the module's owner. The interface below is fixed.)

use crate::error::{Problem, RunError};
use crate::input::InputInfo;
use crate::model::HttpSpec;
use crate::{Output, RunContext};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// A compiled `http:`.
#[derive(Debug)]
pub struct HttpAction {
    method: String,
}

impl HttpAction {
    /// Compiles `http:`; problems are reported under `http`.
    ///
    /// # Errors
    ///
    /// A [`Problem`] for anything that cannot run safely.
    pub fn compile(spec: &HttpSpec, input: &InputInfo) -> Result<HttpAction, Problem> {
        let _ = input;
        Err(Problem::new(
            ["http"],
            format!("not implemented yet ({})", spec.url),
        ))
    }

    /// The arguments the action names.
    pub fn args_used(&self) -> BTreeSet<String> {
        BTreeSet::new()
    }

    /// The method, upper case.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Sends the request with `args` (already valid against `inputSchema`).
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
        Err(RunError::Http("not implemented yet".into()))
    }
}
