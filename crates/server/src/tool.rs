//! The [`Tool`] trait, and two ways to make a tool without writing a type for it:
//! [`FnTool`] (a definition as data plus a closure) and [`TypedTool`] (schemas derived from
//! Rust types with `schemars`).

use crate::context::ToolContext;
use crate::error::ToolError;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use toolwright_protocol::{CallToolResult, ClientCapabilities, Tool as ToolDefinition};

/// The future a tool call returns.
pub type ToolFuture<'a> =
    Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send + 'a>>;

/// A tool: a definition (what clients see in `tools/list`) and an async call.
///
/// The server validates `args` against the definition's `inputSchema` before `call` runs,
/// and validates `structuredContent` against `outputSchema` after it returns, so an
/// implementation may rely on its schema. The [`ToolContext`] carries cancellation,
/// progress, logging and the sandbox roots.
///
/// `call` is polled once on the thread that read the request; a tool that blocks for a long
/// time before its first `.await` should move that work to `tokio::task::spawn_blocking`.
///
/// ```
/// use toolwright_server::{Tool, ToolContext, ToolFuture, ToolDefinition};
/// use toolwright_protocol::CallToolResult;
/// use serde_json::{json, Value};
///
/// struct Echo;
/// impl Tool for Echo {
///     fn definition(&self) -> ToolDefinition {
///         ToolDefinition::new("echo", json!({
///             "type": "object",
///             "properties": {"text": {"type": "string", "description": "What to echo"}},
///             "required": ["text"]
///         }))
///         .with_description("Returns the given text unchanged. Use it to test a connection.")
///     }
///     fn call(&self, args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
///         Box::pin(async move {
///             let text = args["text"].as_str().unwrap_or_default().to_owned();
///             Ok(CallToolResult::content(vec![toolwright_protocol::Content::text(text)]))
///         })
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The definition, read once when the tool is registered.
    fn definition(&self) -> ToolDefinition;

    /// Runs the tool with arguments that already passed the input schema.
    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_>;

    /// Client capabilities the tool cannot work without. A modern request that does not
    /// declare them is refused with -32021 before the tool runs; a legacy client that did
    /// not declare them at `initialize` gets an `isError` result.
    fn required_client_capabilities(&self) -> Option<ClientCapabilities> {
        None
    }

    /// Whether `tools/list` shows the tool [default: yes]. A tool that is registered but
    /// not listed can still be called; a gateway uses this for a tool it refuses (denied
    /// by policy, or quarantined) so the refusal can say why. Read once at registration.
    fn listed(&self) -> bool {
        true
    }

    /// Whether the tool validates its own `structuredContent` against its `outputSchema`
    /// [default: no, the server does]. A tool that says yes is trusted to have done it: a
    /// gateway turns an upstream's violation into an `isError` naming the upstream, or only
    /// logs it. Read once at registration.
    fn checks_own_output(&self) -> bool {
        false
    }
}

type BoxedFn = dyn Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync;

/// A tool defined as data (a JSON definition) plus a closure.
///
/// ```
/// use toolwright_server::FnTool;
/// use toolwright_protocol::CallToolResult;
/// use serde_json::json;
///
/// let tool = FnTool::from_json(
///     json!({"name": "negate", "inputSchema": {"type": "object",
///            "properties": {"x": {"type": "number"}}, "required": ["x"]}}),
///     |args, _ctx| async move {
///         Ok(CallToolResult::structured(json!({"result": -args["x"].as_f64().unwrap()})))
///     },
/// )
/// .unwrap();
/// ```
pub struct FnTool {
    definition: ToolDefinition,
    call: Arc<BoxedFn>,
}

impl FnTool {
    /// A tool from a typed definition and an async closure.
    pub fn new<F, Fut>(definition: ToolDefinition, f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        FnTool {
            definition,
            call: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
        }
    }

    /// A tool from a JSON definition (the `tools/list` shape) and an async closure.
    pub fn from_json<F, Fut>(definition: Value, f: F) -> Result<Self, serde_json::Error>
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        Ok(Self::new(serde_json::from_value(definition)?, f))
    }
}

impl Tool for FnTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }
    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        (self.call)(args, ctx)
    }
}

/// A tool whose input and output are Rust types; the schemas are derived with `schemars`.
///
/// Wrap it in [`Typed`] to register it.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments, deserialized after schema validation.
    type Input: DeserializeOwned + JsonSchema + Send;
    /// The structured result.
    type Output: Serialize + JsonSchema;

    /// The tool's name.
    fn name(&self) -> &str;
    /// What the tool does, what it returns and when to use it.
    fn description(&self) -> &str;
    /// Everything else of the definition (title, annotations…), applied to the derived one.
    fn customize(&self, definition: ToolDefinition) -> ToolDefinition {
        definition
    }
    /// Runs the tool.
    fn run(
        &self,
        input: Self::Input,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// Adapts a [`TypedTool`] to [`Tool`].
pub struct Typed<T>(pub T);

fn derived_schema<S: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(S)).expect("schemas serialize");
    if let Some(obj) = v.as_object_mut() {
        // The dialect is the default (2020-12); a `$schema` key adds nothing.
        obj.remove("$schema");
        obj.remove("title");
    }
    v
}

impl<T: TypedTool> Tool for Typed<T> {
    fn definition(&self) -> ToolDefinition {
        let def = ToolDefinition::new(self.0.name(), derived_schema::<T::Input>())
            .with_description(self.0.description())
            .with_output_schema(derived_schema::<T::Output>());
        self.0.customize(def)
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let input: T::Input = serde_json::from_value(args)
                .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            let out = self.0.run(input, ctx).await?;
            let value = serde_json::to_value(out)
                .map_err(|e| ToolError::Internal(format!("result does not serialize: {e}")))?;
            Ok(CallToolResult::structured(value))
        })
    }
}
