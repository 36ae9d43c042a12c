//! A declared tool as a server tool: compiled once from its spec, then each call runs the
//! action and shapes what it produced.

use crate::command::CommandAction;
use crate::error::{Problem, Seg};
use crate::http::HttpAction;
use crate::shape::{Shaped, Shaper};
use crate::sql::SqlAction;
use crate::sql::source::Sources;
use crate::{Output, RunContext};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use toolwright_protocol::{CallToolResult, Content, Tool as ToolDefinition};
use toolwright_protocol::{TaskSupport, ToolExecution};
use toolwright_server::registry::Entry;
use toolwright_server::{RegisterError, Tool, ToolContext, ToolFuture};
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::model::ToolSpec;

/// How long an action may run when the tool does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The key under which a result's `_meta` carries the action's facts (exit code, HTTP
/// status).
pub const META_KEY: &str = "toolwright/declared";

/// What a declared tool does.
#[derive(Debug)]
pub enum Action {
    /// Runs a program.
    Command(CommandAction),
    /// Sends an HTTP request.
    Http(HttpAction),
    /// Runs a SQL statement.
    Sql(SqlAction),
}

impl Action {
    /// The arguments the action names.
    pub fn args_used(&self) -> BTreeSet<String> {
        match self {
            Action::Command(c) => c.args_used(),
            Action::Http(h) => h.args_used(),
            Action::Sql(s) => s.args_used(),
        }
    }

    async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &RunContext<'_>,
    ) -> Result<Output, crate::RunError> {
        match self {
            Action::Command(c) => c.run(args, ctx).await,
            Action::Http(h) => h.run(args, ctx).await,
            // Run by `DeclaredTool::run` itself: its output is rows, not bytes to shape.
            Action::Sql(_) => Ok(Output::default()),
        }
    }
}

/// A tool declared in a file.
#[derive(Debug)]
pub struct DeclaredTool {
    definition: ToolDefinition,
    action: Action,
    shaper: Shaper,
    timeout: Duration,
    input: InputInfo,
    /// `outputSchema`, compiled: shaped output comes from outside (a program, an API), so a
    /// value that breaks it is the tool's failure, reported as `isError` with the
    /// violations, not a protocol error.
    output: Option<toolwright_schema::Validator>,
    /// Arguments bound to the caller's identity: (argument, claim), in file order.
    bound: Vec<(String, String)>,
}

impl DeclaredTool {
    /// Compiles one tool from its value in the file (an item of `tools`).
    ///
    /// # Errors
    ///
    /// The first [`Problem`] found, with where in the tool it is.
    pub fn compile(value: &Value) -> Result<DeclaredTool, Problem> {
        DeclaredTool::compile_with(value, &Sources::default())
    }

    /// Compiles one tool whose `sql` action may name one of `sources`.
    ///
    /// # Errors
    ///
    /// The first [`Problem`] found, with where in the tool it is.
    pub fn compile_with(value: &Value, sources: &Sources) -> Result<DeclaredTool, Problem> {
        let spec: ToolSpec = toolwright_toolfile::rules::read_spec(value)?;
        let (mut definition, output) = definition_of(&spec)?;
        let input = InputInfo::of(&definition.input_schema);
        let bound = bound_of(&spec, &definition.input_schema)?;
        let names: Vec<&str> = bound.iter().map(|(a, _)| a.as_str()).collect();
        toolwright_toolfile::bound::hide(&mut definition.input_schema, &names);
        let read_only = definition
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let action = match (&spec.command, &spec.http, &spec.sql) {
            (Some(c), None, None) => Action::Command(CommandAction::compile(c, &input)?),
            (None, Some(h), None) => Action::Http(HttpAction::compile(h, &input)?),
            (None, None, Some(s)) => {
                Action::Sql(SqlAction::compile(s, &input, read_only, sources)?)
            }
            (None, None, None) => {
                return Err(Problem::new(
                    Vec::<Seg>::new(),
                    toolwright_toolfile::rules::NO_ACTION,
                ));
            }
            _ => {
                let second = if spec.sql.is_some() { "sql" } else { "http" };
                return Err(Problem::new(
                    [second],
                    toolwright_toolfile::rules::TWO_ACTIONS,
                ));
            }
        };
        // A sql tool's result is its rows, structured already: nothing to shape.
        let shaper = if matches!(action, Action::Sql(_)) {
            if spec.output.is_some() {
                return Err(Problem::new(
                    ["output"],
                    "a `sql` tool's result is its rows ({rows: [...]} or one row); `output` does not apply",
                ));
            }
            Shaper::compile(None, None)?
        } else {
            Shaper::compile(spec.output.as_ref(), definition.output_schema.as_ref())?
        };
        if let Some(support) = spec.task.filter(|s| *s != TaskSupport::Forbidden) {
            definition.execution = Some(ToolExecution {
                task_support: Some(support),
            });
        }
        Ok(DeclaredTool {
            definition,
            action,
            shaper,
            timeout: spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
            input,
            output,
            bound,
        })
    }

    /// The definition clients see.
    pub fn definition_ref(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The action.
    pub fn action(&self) -> &Action {
        &self.action
    }

    /// What the action needs of `inputSchema`.
    pub fn input(&self) -> &InputInfo {
        &self.input
    }

    /// The action's time limit.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs the action and shapes its output, as a call would (arguments already valid).
    pub async fn run(&self, args: &Map<String, Value>, ctx: &RunContext<'_>) -> CallToolResult {
        if let Action::Sql(sql) = &self.action {
            return match sql.run(args, ctx).await {
                Ok((value, text)) => self.structured(value, text),
                Err(e) => CallToolResult::error(e.to_string()),
            };
        }
        let out = match self.action.run(args, ctx).await {
            Ok(out) => out,
            Err(e) => return CallToolResult::error(e.to_string()),
        };
        let meta = out.meta;
        let mut result = match self.shaper.shape(out.bytes).await {
            Ok(Shaped::Text(text)) => CallToolResult::content(vec![Content::text(text)]),
            Ok(Shaped::Structured(value)) => match self.output.as_ref().map(|v| v.validate(&value))
            {
                Some(Err(violations)) => CallToolResult::error(format!(
                    "the output does not match the tool's outputSchema:\n{}",
                    toolwright_schema::format_violations(&violations)
                )),
                _ => CallToolResult::structured(value),
            },
            Err(e) => CallToolResult::error(e.to_string()),
        };
        if !meta.is_empty() {
            let mut m = Map::new();
            m.insert(META_KEY.to_owned(), Value::Object(meta));
            result.meta = Some(m);
        }
        result
    }
}

impl DeclaredTool {
    /// A structured result checked against `outputSchema`, with `text` beside it.
    fn structured(&self, value: Value, text: String) -> CallToolResult {
        if let Some(Err(violations)) = self.output.as_ref().map(|v| v.validate(&value)) {
            return CallToolResult::error(format!(
                "the output does not match the tool's outputSchema:\n{}",
                toolwright_schema::format_violations(&violations)
            ));
        }
        let mut result = CallToolResult::structured(value);
        result.content = vec![Content::text(text)];
        result
    }
}

impl Tool for DeclaredTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let mut args = match args {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let bound = self.bound.iter().map(|(a, c)| (a.as_str(), c.as_str()));
            let claim = |c: &str| ctx.identity().and_then(|id| id.claim_text(c));
            if let Err(e) = toolwright_toolfile::bound::fill(&mut args, bound, claim) {
                return Ok(CallToolResult::error(e.to_string()));
            }
            let args = &args;
            // A command's `cwd` and `{name:path}` arguments are beneath the roots every file
            // tool uses: the server's, narrowed by the client's.
            let roots = match &self.action {
                Action::Command(_) => toolwright_server::roots::for_call(&ctx).await?,
                Action::Http(_) | Action::Sql(_) => Vec::new(),
            };
            let rc = RunContext {
                roots: &roots,
                timeout: self.timeout,
                cancel: ctx.cancellation(),
                trace: ctx
                    .trace_context()
                    .map(|t| (t.traceparent(), t.state.clone())),
                observed: ctx.telemetry().cloned().zip(ctx.trace_context().cloned()),
            };
            Ok(self.run(args, &rc).await)
        })
    }
}

/// The MCP definition of a spec, checked as the registry will check it, with its
/// `outputSchema` compiled.
fn definition_of(
    spec: &ToolSpec,
) -> Result<(ToolDefinition, Option<toolwright_schema::Validator>), Problem> {
    let mut wire = Map::new();
    wire.insert("name".into(), json!(spec.name));
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            wire.insert(k.to_owned(), v);
        }
    };
    put("title", spec.title.clone().map(Value::String));
    put("description", spec.description.clone().map(Value::String));
    put(
        "inputSchema",
        Some(
            spec.input_schema
                .clone()
                .unwrap_or_else(|| json!({"type": "object"})),
        ),
    );
    put("outputSchema", spec.output_schema.clone());
    put("annotations", spec.annotations.clone().map(Value::Object));
    put("icons", spec.icons.clone());
    put("_meta", spec.meta.clone().map(Value::Object));
    let definition: ToolDefinition = toolwright_toolfile::rules::read_value(&Value::Object(wire))?;
    // The registry's own checks (name, root type, schemas that compile), run now so a
    // problem points into the file rather than surfacing at registration.
    let probe = Arc::new(DefinitionOnly(definition.clone()));
    match Entry::compile(probe) {
        Ok(entry) => Ok((definition, entry.output)),
        Err(e) => {
            let at: &[&str] = match &e {
                RegisterError::InvalidName { .. } => &["name"],
                RegisterError::InputRootNotObject { .. } => &["inputSchema"],
                RegisterError::Schema { which, .. } => &[*which],
                RegisterError::ParamHeader { .. } => &["inputSchema"],
                _ => &[],
            };
            Err(Problem::new(at.iter().copied(), e.to_string()))
        }
    }
}

/// The arguments `spec` binds to the caller's identity: each a `{claims.NAME}` template
/// naming a property of `schema`.
fn bound_of(spec: &ToolSpec, schema: &Value) -> Result<Vec<(String, String)>, Problem> {
    let mut bound = Vec::new();
    for (name, value) in spec.arguments.iter().flatten() {
        let Some(claim) = toolwright_toolfile::bound::claim_of(value) else {
            return Err(Problem::new(
                ["arguments", name.as_str()],
                "a declared tool's argument is bound to the caller's identity: \"{claims.NAME}\" (\"{claims.sub}\": the token's subject)",
            ));
        };
        if schema
            .pointer(&format!(
                "/properties/{}",
                name.replace('~', "~0").replace('/', "~1")
            ))
            .is_none()
        {
            return Err(Problem::new(
                ["arguments", name.as_str()],
                format!("{name:?} is not a property of inputSchema"),
            ));
        }
        bound.push((name.clone(), claim.to_owned()));
    }
    Ok(bound)
}

/// A definition with no call, to run the registry's checks on.
struct DefinitionOnly(ToolDefinition);

impl Tool for DefinitionOnly {
    fn definition(&self) -> ToolDefinition {
        self.0.clone()
    }
    fn call(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async { Ok(CallToolResult::error("not callable")) })
    }
}
