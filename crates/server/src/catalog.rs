//! Resources, resource templates and prompts: the traits a user implements and the
//! registries the server keeps them in.
//!
//! These are not on the hot path of tool calls, so the registries are plain `RwLock`ed
//! vectors, kept sorted for a stable order.
//!
//! A part of the catalog that something else keeps (a gateway's upstream items) is swapped
//! in one step with [`Server::replace_catalog`], which tells clients once per list that
//! changed. A [`CatalogSource`] fills the catalog on demand: it is asked to prepare before a
//! client's catalog request is answered, and the capabilities it may offer are announced at
//! `initialize` even while nothing is listed yet.

use crate::context::ToolContext;
use crate::error::{RegisterError, ToolError};
use crate::server::{Event, Server};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};
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
    /// The skills served (the Skills extension), if any.
    pub(crate) skills: arc_swap::ArcSwapOption<crate::skills::SkillSet>,
    /// What fills the catalog on demand, and what it may offer.
    source: OnceLock<Source>,
}

/// Fills a server's catalog on demand (a gateway whose upstreams start on first use).
pub trait CatalogSource: Send + Sync + 'static {
    /// Called on the thread that answers a client's resources, prompts or completion
    /// request, before it is answered: returns once what should be listed by then is. It
    /// may block (bounded), the first time; afterwards it should return at once.
    fn prepare(&self);
}

struct Source {
    handler: Arc<dyn CatalogSource>,
    resources: bool,
    prompts: bool,
}

/// Items swapped into the catalog in one step ([`Server::replace_catalog`]).
#[derive(Default)]
pub struct CatalogItems {
    /// Fixed-URI resources.
    pub resources: Vec<Arc<dyn ResourceHandler>>,
    /// Resource templates.
    pub templates: Vec<Arc<dyn TemplateHandler>>,
    /// Prompts.
    pub prompts: Vec<Arc<dyn PromptHandler>>,
}

/// What names catalog items: resource URIs, URI templates and prompt names.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CatalogKeys {
    /// Resource URIs.
    pub resources: Vec<String>,
    /// URI templates.
    pub templates: Vec<String>,
    /// Prompt names.
    pub prompts: Vec<String>,
}

/// What [`Server::replace_catalog`] did.
#[derive(Debug, Default)]
pub struct Replaced {
    /// The keys of the items added (what to remove next time).
    pub registered: CatalogKeys,
    /// The items refused, and why (a key taken by an item that stays, a bad template).
    pub refused: Vec<RegisterError>,
}

impl Catalog {
    /// Asks the source, if there is one, to fill the catalog before a client reads it.
    pub(crate) fn prepare(&self) {
        if let Some(s) = self.source.get() {
            s.handler.prepare();
        }
    }

    pub(crate) fn has_resources(&self) -> bool {
        self.source.get().is_some_and(|s| s.resources)
            || self.has_skills()
            || !self
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
        self.source.get().is_some_and(|s| s.prompts)
            || !self
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

impl Server {
    /// Sets what fills the catalog on demand ([`CatalogSource`]) and the capabilities it
    /// may offer, announced from now on even while it has listed nothing. Once: false when
    /// a source was set already.
    pub fn set_catalog_source(
        &self,
        source: Arc<dyn CatalogSource>,
        resources: bool,
        prompts: bool,
    ) -> bool {
        let source = Source {
            handler: source,
            resources,
            prompts,
        };
        self.inner.catalog.source.set(source).is_ok()
    }

    /// Swaps a part of the catalog in one step: the items named in `remove` go, `add`
    /// come. An added item whose key another item keeps (or a template that does not
    /// parse) is refused alone; the rest is swapped in. Clients are told once for each
    /// list whose definitions changed (resources and templates, prompts), and not at all
    /// when none did.
    pub fn replace_catalog(&self, remove: &CatalogKeys, add: CatalogItems) -> Replaced {
        let c = &self.inner.catalog;
        let before = c.listing();
        let mut out = Replaced::default();
        let resources = add
            .resources
            .into_iter()
            .map(|h| (h.definition(), h))
            .collect();
        let (added, taken) = swap(&c.resources, &remove.resources, resources, |e| &e.0.uri);
        out.registered.resources = added;
        let duplicate = |uri| RegisterError::DuplicateResource { uri };
        out.refused.extend(taken.into_iter().map(duplicate));
        let mut templates = Vec::new();
        for handler in add.templates {
            let definition = handler.definition();
            match UriTemplate::parse(&definition.uri_template) {
                Some(matcher) => templates.push(Arc::new(TemplateEntry {
                    definition,
                    matcher,
                    handler,
                })),
                None => out.refused.push(RegisterError::InvalidTemplate {
                    template: definition.uri_template,
                }),
            }
        }
        let (added, taken) = swap(&c.templates, &remove.templates, templates, |t| {
            &t.definition.uri_template
        });
        out.registered.templates = added;
        out.refused.extend(taken.into_iter().map(duplicate));
        let prompts = add
            .prompts
            .into_iter()
            .map(|h| (h.definition(), h))
            .collect();
        let (added, taken) = swap(&c.prompts, &remove.prompts, prompts, |e| &e.0.name);
        out.registered.prompts = added;
        out.refused.extend(
            taken
                .into_iter()
                .map(|name| RegisterError::Duplicate { name }),
        );
        let after = c.listing();
        if before.0 != after.0 {
            self.publish(Event::ResourcesChanged);
        }
        if before.1 != after.1 {
            self.publish(Event::PromptsChanged);
        }
        out
    }
}

impl Catalog {
    /// What clients are shown, serialized: the resources with the templates, and the
    /// prompts (to tell whether a swap changed either).
    fn listing(&self) -> (String, String) {
        let resources = self.resources.read().unwrap_or_else(|p| p.into_inner());
        let templates = self.templates.read().unwrap_or_else(|p| p.into_inner());
        let prompts = self.prompts.read().unwrap_or_else(|p| p.into_inner());
        let r: Vec<&Resource> = resources.iter().map(|(r, _)| r).collect();
        let t: Vec<&ResourceTemplate> = templates.iter().map(|t| &t.definition).collect();
        let p: Vec<&Prompt> = prompts.iter().map(|(p, _)| p).collect();
        let text = |v: serde_json::Result<String>| v.unwrap_or_default();
        (
            text(serde_json::to_string(&(r, t))),
            text(serde_json::to_string(&p)),
        )
    }
}

/// Removes the entries of `list` whose key is in `remove` and adds those of `add` whose
/// key is free, in key order: the keys added, and the keys refused (taken).
fn swap<E>(
    list: &RwLock<Vec<E>>,
    remove: &[String],
    add: Vec<E>,
    key: fn(&E) -> &String,
) -> (Vec<String>, Vec<String>) {
    let mut list = list.write().unwrap_or_else(|p| p.into_inner());
    list.retain(|e| !remove.contains(key(e)));
    let (mut added, mut taken) = (Vec::new(), Vec::new());
    for e in add {
        let k = key(&e).clone();
        if list.iter().any(|x| *key(x) == k) {
            taken.push(k);
        } else {
            list.push(e);
            added.push(k);
        }
    }
    list.sort_by(|a, b| key(a).cmp(key(b)));
    (added, taken)
}

#[cfg(test)]
mod tests {
    use super::{CatalogItems, CatalogKeys, ResourceHandler, UriTemplate};
    use crate::{BoxFuture, Config, Server, ToolContext, ToolError};
    use std::sync::Arc;
    use toolwright_protocol::resources::Resource;
    use toolwright_protocol::{Implementation, ResourceContents};

    /// A resource that is only its definition.
    struct Fixed(&'static str, &'static str);

    impl ResourceHandler for Fixed {
        fn definition(&self) -> Resource {
            Resource::new(self.0, self.1)
        }
        fn read(&self, _: ToolContext) -> BoxFuture<'_, Result<Vec<ResourceContents>, ToolError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    fn items(resources: &[(&'static str, &'static str)]) -> CatalogItems {
        CatalogItems {
            resources: resources
                .iter()
                .map(|&(u, n)| Arc::new(Fixed(u, n)) as Arc<dyn ResourceHandler>)
                .collect(),
            ..CatalogItems::default()
        }
    }

    fn listed(server: &Server) -> Vec<String> {
        let list = server.inner.catalog.resources.read().unwrap();
        list.iter()
            .map(|(r, _)| format!("{} {}", r.uri, r.name))
            .collect()
    }

    #[test]
    fn replace_catalog_swaps_its_part_and_keeps_the_rest() {
        let server = Server::new(Implementation::new("t", "1"), Config::default());
        server.register_resource(Fixed("own://a", "own")).unwrap();
        let first = server.replace_catalog(&CatalogKeys::default(), items(&[("up://b", "b1")]));
        assert_eq!(first.registered.resources, ["up://b"]);
        assert!(first.refused.is_empty());
        // The part swapped again: its old item goes, a key the rest keeps is refused alone.
        let second = server.replace_catalog(
            &first.registered,
            items(&[("up://c", "c"), ("own://a", "taken"), ("up://b", "b2")]),
        );
        assert_eq!(second.registered.resources, ["up://c", "up://b"]);
        assert_eq!(second.refused.len(), 1, "{:?}", second.refused);
        assert!(second.refused[0].to_string().contains("own://a"));
        assert_eq!(listed(&server), ["own://a own", "up://b b2", "up://c c"]);
        // Removing the part leaves the rest.
        server.replace_catalog(&second.registered, CatalogItems::default());
        assert_eq!(listed(&server), ["own://a own"]);
    }

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
