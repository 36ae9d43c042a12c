//! Views: named sets of tools, each served to the callers it is chosen for.
//!
//! A [`View`] shows the tools its name test admits (the `include`/`exclude` globs of a
//! tool file, compiled by whoever builds it), with its own title, description and
//! annotations for some of them. The transport chooses a session's view
//! ([`Views::for_path`], [`Views::choose`]) and sets it with [`Session::set_view`]; from
//! then on `tools/list` shows only the view's tools (paged as usual, over the filtered
//! list) and `tools/call` of any other tool is answered exactly as an unknown tool is.
//! Resources and prompts follow the same name test (a resource's URI, a template's URI
//! template, a prompt's name): their lists show what it selects, and `resources/read` or
//! `prompts/get` of anything else is answered as for what does not exist. (Resource
//! subscriptions and completion do not consult the view.)
//!
//! The selection rule: a request to a view's own path gets that view when its `when`
//! admits the caller (a view without `when` admits everyone); a request to the main path
//! gets the first view, in file order, that has a `when` admitting the caller, else the
//! view named `default` if there is one, else [`View::empty`], which shows no tool.
//!
//! [`Session::set_view`]: crate::Session::set_view

use crate::caller::Caller;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use toolwright_protocol::Tool as ToolDefinition;
use toolwright_protocol::tool::ToolAnnotations;

/// Which callers a view is chosen for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum When {
    /// Callers granted this scope.
    Scope(String),
    /// Callers whose token has this claim with this value (or, for an array claim, holding
    /// it).
    Claim(String, Value),
}

impl When {
    /// Whether `caller` is admitted (no caller: never).
    pub fn admits(&self, caller: Option<&Caller>) -> bool {
        let Some(caller) = caller else { return false };
        match self {
            When::Scope(s) => caller.has_scope(s),
            When::Claim(name, want) => match caller.claim(name) {
                Some(Value::Array(items)) if !want.is_array() => items.contains(want),
                Some(have) => have == want,
                None => false,
            },
        }
    }
}

/// What a view says of one of its tools instead of the tool's own words.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Override {
    /// `title`, replaced.
    pub title: Option<String>,
    /// `description`, replaced.
    pub description: Option<String>,
    /// `annotations`, replaced as a whole.
    pub annotations: Option<ToolAnnotations>,
}

impl Override {
    /// An override of these parts.
    pub fn new(
        title: Option<String>,
        description: Option<String>,
        annotations: Option<ToolAnnotations>,
    ) -> Self {
        Override {
            title,
            description,
            annotations,
        }
    }
}

/// The name test of a view: true for the names it shows.
pub type Selects = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A named set of tools.
pub struct View {
    name: String,
    selects: Selects,
    when: Option<When>,
    overrides: HashMap<String, Override>,
}

impl fmt::Debug for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("name", &self.name)
            .field("when", &self.when)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

impl View {
    /// The view `name`, showing the tools `selects` admits, chosen for callers `when`
    /// admits, with `overrides` by tool name.
    pub fn new(
        name: impl Into<String>,
        selects: Selects,
        when: Option<When>,
        overrides: HashMap<String, Override>,
    ) -> Self {
        View {
            name: name.into(),
            selects,
            when,
            overrides,
        }
    }

    /// The view of callers no view was chosen for: no tool at all.
    pub fn empty() -> Self {
        View::new("", Arc::new(|_| false), None, HashMap::new())
    }

    /// Its name (empty for [`View::empty`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the view shows the tool `name`.
    pub fn shows(&self, name: &str) -> bool {
        (self.selects)(name)
    }

    /// Whether the view is chosen for `caller` ([`When::admits`]; a view without `when`
    /// admits everyone at its own path).
    pub fn admits(&self, caller: Option<&Caller>) -> bool {
        self.when.as_ref().is_none_or(|w| w.admits(caller))
    }

    /// `definition` as the view shows it: with its override, if it has one.
    pub fn definition<'a>(&self, definition: &'a ToolDefinition) -> Cow<'a, ToolDefinition> {
        let Some(o) = self.overrides.get(&definition.name) else {
            return Cow::Borrowed(definition);
        };
        let mut d = definition.clone();
        if o.title.is_some() {
            d.title.clone_from(&o.title);
        }
        if o.description.is_some() {
            d.description.clone_from(&o.description);
        }
        if o.annotations.is_some() {
            d.annotations.clone_from(&o.annotations);
        }
        Cow::Owned(d)
    }
}

/// Every view of a server, in file order.
#[derive(Debug, Default)]
pub struct Views {
    views: Vec<Arc<View>>,
    empty: Arc<View>,
}

impl Views {
    /// These views, in order.
    pub fn new(views: Vec<View>) -> Self {
        Views {
            views: views.into_iter().map(Arc::new).collect(),
            empty: Arc::new(View::empty()),
        }
    }

    /// The view served at its own path `name`, when it admits `caller`; `None` (answered
    /// as a path that does not exist) for an unknown name or a caller it does not admit.
    pub fn for_path(&self, name: &str, caller: Option<&Caller>) -> Option<&Arc<View>> {
        self.views
            .iter()
            .find(|v| v.name == name)
            .filter(|v| v.admits(caller))
    }

    /// The view named `name`, whoever calls.
    pub fn named(&self, name: &str) -> Option<&Arc<View>> {
        self.views.iter().find(|v| v.name == name)
    }

    /// The names of the views, in order.
    pub fn names(&self) -> Vec<&str> {
        self.views.iter().map(|v| v.name.as_str()).collect()
    }

    /// The view of a request to the main path: the first whose `when` admits `caller`,
    /// else the view named `default`, else [`View::empty`].
    pub fn choose(&self, caller: Option<&Caller>) -> &Arc<View> {
        self.views
            .iter()
            .find(|v| v.when.as_ref().is_some_and(|w| w.admits(caller)))
            .or_else(|| self.views.iter().find(|v| v.name == "default"))
            .unwrap_or(&self.empty)
    }

    /// True when there is no view (every caller sees every tool).
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }
}

impl Default for View {
    fn default() -> Self {
        View::empty()
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
