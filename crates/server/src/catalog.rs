//! Resources, resource templates and prompts: the traits a user implements and the
//! registries the server keeps them in.
//!
//! These are not on the hot path of tool calls, so the registries are plain `RwLock`ed
//! vectors, kept sorted for a stable order.

use crate::context::ToolContext;
use crate::error::ToolError;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use toolwright_protocol::ResourceContents;
use toolwright_protocol::resources::{GetPromptResult, Prompt, Resource, ResourceTemplate};

/// A boxed future, as the traits here return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A resource with a fixed URI.
pub trait ResourceHandler: Send + Sync + 'static {
    /// The definition shown in `resources/list`.
    fn definition(&self) -> Resource;
    /// Reads the contents.
    fn read(&self, ctx: ToolContext) -> BoxFuture<'_, Result<Vec<ResourceContents>, ToolError>>;
}

/// A family of resources named by a URI template (`test://item/{id}`).
pub trait TemplateHandler: Send + Sync + 'static {
    /// The definition shown in `resources/templates/list`.
    fn definition(&self) -> ResourceTemplate;
    /// Reads the resource at `uri`, whose template variables are in `vars`.
    fn read<'a>(
        &'a self,
        uri: &'a str,
        vars: HashMap<String, String>,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>>;
    /// Suggestions for the variable `name` given what was typed so far.
    fn complete(&self, _name: &str, _value: &str) -> Vec<String> {
        Vec::new()
    }
}

/// A prompt template.
pub trait PromptHandler: Send + Sync + 'static {
    /// The definition shown in `prompts/list`.
    fn definition(&self) -> Prompt;
    /// Renders the prompt with these arguments (already checked for the required ones).
    fn get(
        &self,
        args: Map<String, Value>,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<GetPromptResult, ToolError>>;
    /// Suggestions for the argument `name` given what was typed so far and the arguments
    /// already resolved.
    fn complete(&self, _name: &str, _value: &str, _resolved: &Map<String, Value>) -> Vec<String> {
        Vec::new()
    }
}

/// Matches URIs against an RFC 6570 level-1 template (`{var}` expansions).
#[derive(Debug, Clone)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriTemplate {
    /// Parses a template; `None` if a brace is unbalanced or a variable is empty.
    pub fn parse(template: &str) -> Option<Self> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}')? + open;
            let name = &rest[open + 1..close];
            if name.is_empty() || name.contains('{') {
                return None;
            }
            parts.push(Part::Var(name.to_owned()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return None;
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Some(UriTemplate { parts })
    }

    /// The variables of `uri` if it matches. A variable matches one or more characters up
    /// to the next literal and never spans a `/`.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
            i += 1;
        }
        rest.is_empty().then_some(vars)
    }
}

pub(crate) struct TemplateEntry {
    pub definition: ResourceTemplate,
    pub matcher: UriTemplate,
    pub handler: Arc<dyn TemplateHandler>,
}

/// Resources, templates and prompts of a server.
#[derive(Default)]
pub struct Catalog {
    pub(crate) resources: RwLock<Vec<(Resource, Arc<dyn ResourceHandler>)>>,
    pub(crate) templates: RwLock<Vec<Arc<TemplateEntry>>>,
    pub(crate) prompts: RwLock<Vec<(Prompt, Arc<dyn PromptHandler>)>>,
}

impl Catalog {
    pub(crate) fn has_resources(&self) -> bool {
        !self
            .resources
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
            || !self
                .templates
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self
            .prompts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<Arc<dyn ResourceHandler>> {
        let list = self.resources.read().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .find(|(r, _)| r.uri == uri)
            .map(|(_, h)| h.clone())
    }

    pub(crate) fn template_for(
        &self,
        uri: &str,
    ) -> Option<(Arc<TemplateEntry>, HashMap<String, String>)> {
        let list = self.templates.read().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .find_map(|t| t.matcher.matches(uri).map(|vars| (t.clone(), vars)))
    }

    pub(crate) fn template_by_uri(&self, template: &str) -> Option<Arc<TemplateEntry>> {
        let list = self.templates.read().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .find(|t| t.definition.uri_template == template)
            .cloned()
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<(Prompt, Arc<dyn PromptHandler>)> {
        let list = self.prompts.read().unwrap_or_else(|p| p.into_inner());
        list.iter().find(|(p, _)| p.name == name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::UriTemplate;

    #[test]
    fn template_matching() {
        let cases = [
            (
                "test://template/{id}/data",
                "test://template/42/data",
                Some(vec![("id", "42")]),
            ),
            (
                "test://template/{id}/data",
                "test://template/42/other",
                None,
            ),
            ("test://template/{id}/data", "test://template//data", None),
            (
                "test://template/{id}/data",
                "test://template/a/b/data",
                None,
            ),
            (
                "file:///{path}",
                "file:///x.txt",
                Some(vec![("path", "x.txt")]),
            ),
            ("a://{x}-{y}", "a://1-2", Some(vec![("x", "1"), ("y", "2")])),
            ("plain://uri", "plain://uri", Some(vec![])),
        ];
        for (t, uri, want) in cases {
            let got = UriTemplate::parse(t).unwrap().matches(uri);
            let want = want.map(|v| {
                v.into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            });
            assert_eq!(got, want, "{t} vs {uri}");
        }
    }

    #[test]
    fn bad_templates() {
        for t in ["a://{", "a://{}", "a://}", "a://{x{y}}"] {
            assert!(UriTemplate::parse(t).is_none(), "{t}");
        }
    }
}
