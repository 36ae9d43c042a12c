//! The MCP `Tool` definition, with every field of the latest spec.

use crate::{JsonObject, ParamHeaderError, ParamHeaders, ProtocolVersion, ToolNameError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool a server offers: its name, how to call it, and what it returns.
///
/// `input_schema` and `output_schema` are kept as given: every JSON Schema keyword passes
/// through untouched, known or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic identifier, unique within a server (1–128 of `A-Za-z0-9_.-`).
    pub name: String,
    /// Human-readable display name (takes precedence over `annotations.title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, what it returns and when to use it; read by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons a client may show (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// JSON Schema of the arguments; its root is `type: "object"`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behavioural hints. Untrusted unless the server is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Task support (2025-11-25 only; tasks became an extension in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Tool {
    /// A tool with a name and an input schema and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            input_schema,
            output_schema: None,
            annotations: None,
            execution: None,
            meta: None,
        }
    }

    /// Sets whether the tool may run as a task (`execution.taskSupport`; shown to
    /// 2025-11-25 clients, and what the server follows for every client).
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        self.execution = Some(ToolExecution {
            task_support: Some(support),
        });
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, s: Value) -> Self {
        self.output_schema = Some(s);
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, a: ToolAnnotations) -> Self {
        self.annotations = Some(a);
        self
    }

    /// The name to show a person: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }

    /// The `x-mcp-header` parameters of `input_schema`, compiled.
    ///
    /// # Errors
    ///
    /// When a declaration breaks the spec's rules: clients must not call such a tool.
    pub fn param_headers(&self) -> Result<ParamHeaders, ParamHeaderError> {
        ParamHeaders::compile(&self.input_schema)
    }

    /// The annotations, or the all-defaults set when none were given.
    pub fn hints(&self) -> ToolAnnotations {
        self.annotations.clone().unwrap_or_default()
    }

    /// The definition as a client of `version` expects it: fields that version does not
    /// know are left out, so older clients see a shape their schema accepts.
    pub fn to_wire(&self, version: ProtocolVersion) -> Value {
        use ProtocolVersion::*;
        let mut t = self.clone();
        if version < V2025_03_26 {
            t.annotations = None;
        }
        if version < V2025_06_18 {
            t.title = None;
            t.output_schema = None;
            t.meta = None;
        }
        if version < V2025_11_25 {
            t.icons = None;
        }
        if version != V2025_11_25 {
            t.execution = None;
        }
        serde_json::to_value(&t).expect("a Tool always serializes")
    }
}

/// An icon: a `https:` or `data:` URI with optional type, sizes and theme.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// `https:` or `data:` URI of the image.
    pub src: String,
    /// MIME type, when the URI does not make it clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`: the background the icon is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// Behavioural hints about a tool. Every field is optional; the accessors apply the
/// spec's defaults (read-only false, destructive true, idempotent false, open-world true).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (meaningful only when
    /// not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// `readOnlyHint`, default false.
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }
    /// `destructiveHint`, default true.
    pub fn destructive(&self) -> bool {
        self.destructive_hint.unwrap_or(true)
    }
    /// `idempotentHint`, default false.
    pub fn idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }
    /// `openWorldHint`, default true.
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }

    /// Hints for a tool that only reads and touches nothing outside the server:
    /// read-only, not destructive, idempotent, closed world.
    pub fn read_only_closed_world(title: impl Into<String>) -> Self {
        ToolAnnotations {
            title: Some(title.into()),
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }
    }
}

/// Execution properties of a tool (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool may be run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// Whether a tool can run as a task (2025-11-25).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never as a task (the default).
    #[default]
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
}

/// Most characters a tool name may have (SEP-986, in the spec text since 2025-11-25).
pub const MAX_NAME_LEN: usize = 128;

/// Whether `c` may appear in a tool name: `A-Z`, `a-z`, `0-9`, `_`, `-` or `.`.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Every way `name` breaks the spec's rule (1–128 characters of `A-Za-z0-9_.-`), in the
/// order [`ToolNameError`]'s variants are listed: empty when the name is fine. An empty
/// name gives [`ToolNameError::Empty`] alone.
pub fn name_errors(name: &str) -> Vec<ToolNameError> {
    if name.is_empty() {
        return vec![ToolNameError::Empty];
    }
    let mut out = Vec::new();
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        out.push(ToolNameError::TooLong {
            name: name.to_owned(),
            len,
        });
    }
    let chars: Vec<char> = name.chars().filter(|c| !is_name_char(*c)).collect();
    if !chars.is_empty() {
        out.push(ToolNameError::Charset {
            name: name.to_owned(),
            chars,
        });
    }
    out
}

/// Checks a tool name against the spec's rule: 1–128 characters of `A-Za-z0-9_.-`.
///
/// # Errors
///
/// The first of [`name_errors`].
pub fn check_name(name: &str) -> Result<(), ToolNameError> {
    match name_errors(name).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotation_defaults_follow_the_spec() {
        let a = ToolAnnotations::default();
        assert!(!a.read_only());
        assert!(a.destructive());
        assert!(!a.idempotent());
        assert!(a.open_world());
    }

    #[test]
    fn explicit_hints_win() {
        let a: ToolAnnotations = serde_json::from_value(json!({
            "readOnlyHint": true, "destructiveHint": false,
            "idempotentHint": true, "openWorldHint": false
        }))
        .unwrap();
        assert!(a.read_only() && !a.destructive() && a.idempotent() && !a.open_world());
    }

    #[test]
    fn schemas_pass_through_unknown_keywords() {
        let src = json!({
            "name": "t",
            "inputSchema": {"type": "object", "x-vendor": {"deep": [1, 2]}, "$comment": "kept"},
            "outputSchema": {"type": "object", "properties": {}, "x-other": true},
            "_meta": {"a/b": 1}
        });
        let tool: Tool = serde_json::from_value(src.clone()).unwrap();
        assert_eq!(serde_json::to_value(&tool).unwrap(), src);
    }

    #[test]
    fn wire_shape_follows_the_version() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "t", "title": "T", "icons": [{"src": "https://x/i.png"}],
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}, "execution": {"taskSupport": "optional"}
        }))
        .unwrap();
        let old = tool.to_wire(ProtocolVersion::V2024_11_05);
        assert_eq!(old, json!({"name": "t", "inputSchema": {"type": "object"}}));
        let mid = tool.to_wire(ProtocolVersion::V2025_06_18);
        assert!(mid.get("title").is_some() && mid.get("icons").is_none());
        let v11 = tool.to_wire(ProtocolVersion::V2025_11_25);
        assert!(v11.get("execution").is_some() && v11.get("icons").is_some());
        let modern = tool.to_wire(ProtocolVersion::V2026_07_28);
        assert!(modern.get("execution").is_none() && modern.get("icons").is_some());
    }

    #[test]
    fn display_name_precedence() {
        let mut t = Tool::new("n", json!({"type": "object"}));
        assert_eq!(t.display_name(), "n");
        t.annotations = Some(ToolAnnotations {
            title: Some("A".into()),
            ..Default::default()
        });
        assert_eq!(t.display_name(), "A");
        t.title = Some("T".into());
        assert_eq!(t.display_name(), "T");
    }

    macro_rules! names {
        ($($case:ident: $name:expr => $errors:expr;)*) => {$(
            #[test]
            fn $case() {
                let name: String = $name;
                let errors: Vec<String> = name_errors(&name).iter().map(ToString::to_string).collect();
                let want: &[&str] = &$errors;
                assert_eq!(errors, want, "{name:?}");
                assert_eq!(check_name(&name).is_ok(), want.is_empty());
                let first = check_name(&name).err().map(|e| e.to_string());
                assert_eq!(first.as_deref(), want.first().copied());
            }
        )*};
    }

    const CHARSET: &str = "only A-Z, a-z, 0-9, '_', '-' and '.' are allowed";

    names! {
        name_plain: "get_weather".into() => [];
        name_every_class: "a.b-c_D9".into() => [];
        name_longest: "x".repeat(128) => [];
        name_empty: String::new() => ["the name is empty"];
        name_space: "has space".into() => [&format!("the name contains ' '; {CHARSET}")];
        name_comma: "a,b".into() => [&format!("the name contains ','; {CHARSET}")];
        name_slashes: "ns/tool/x".into() => [&format!("the name contains '/' and more; {CHARSET}")];
        name_non_ascii: "é".into() => [&format!("the name contains 'é'; {CHARSET}")];
        name_too_long: "x".repeat(129) => ["the name is 129 characters long; the spec allows at most 128"];
        name_long_and_odd: " ".repeat(130) => ["the name is 130 characters long; the spec allows at most 128", &format!("the name contains ' ' and more; {CHARSET}")];
    }
}
