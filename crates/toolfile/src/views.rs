//! `views:`: named sets of the exposed tools, each chosen by the caller's token or served
//! at its own path (`/mcp/NAME`).
//!
//! ```yaml
//! views:
//!   support:
//!     include: ["tickets__get_*", "tickets__search"]
//!     when: {scope: tickets:read}
//!     tools:
//!       tickets__search: {description: "Search the tickets of your team."}
//!   admin:
//!     exclude: ["*_debug"]
//!     when: {claim: {groups: admins}}
//! ```
//!
//! A view selects tools by their exposed names: `include` globs (none: every tool) less
//! `exclude` globs; one of the two must be there. `tools:` overrides the title, the
//! description or the annotations of tools the view selects. `when:` is `{scope: S}` or
//! `{claim: {NAME: VALUE}}`; a view without it is served only at its own path. How the
//! server chooses among views is `toolwright_server::view`'s rule.

use crate::config::NameFilter;
use crate::document::Document;
use crate::error::{FileProblem, Problem, Seg};
use crate::rules::read_value;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolwright_protocol::tool::ToolAnnotations;

/// Which callers a view is chosen for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ViewWhen {
    /// `{scope: S}`: callers granted scope `S`.
    Scope(String),
    /// `{claim: {NAME: VALUE}}`: callers whose token's claim `NAME` is `VALUE` (or, an
    /// array, holds it).
    Claim(String, Value),
}

/// What a view says of one tool instead of the tool's own words.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOverride {
    /// `title`, replaced.
    pub title: Option<String>,
    /// `description`, replaced.
    pub description: Option<String>,
    /// `annotations`, replaced as a whole.
    pub annotations: Option<ToolAnnotations>,
}

/// One view, checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ViewConfig {
    /// Its name (the last segment of its path).
    pub name: String,
    /// Which exposed names it shows.
    pub filter: NameFilter,
    /// Which callers it is chosen for; `None`: only its path serves it.
    pub when: Option<ViewWhen>,
    /// Overrides by tool name, in file order.
    pub tools: Vec<(String, ToolOverride)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewSpec {
    include: Option<Vec<String>>,
    #[serde(default)]
    exclude: Option<Vec<String>>,
    #[serde(default)]
    tools: Map<String, Value>,
    when: Option<WhenSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WhenSpec {
    scope: Option<String>,
    claim: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideSpec {
    title: Option<String>,
    description: Option<String>,
    annotations: Option<AnnotationsSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AnnotationsSpec {
    title: Option<String>,
    read_only_hint: Option<bool>,
    destructive_hint: Option<bool>,
    idempotent_hint: Option<bool>,
    open_world_hint: Option<bool>,
}

/// Whether `name` can be a view's name: a path segment of letters, digits, `_` and `-`.
fn good_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The views of every document, in file order, into `views`; each problem into `problems`.
pub(crate) fn read(
    docs: &[Document],
    views: &mut Vec<ViewConfig>,
    problems: &mut Vec<FileProblem>,
) {
    for doc in docs {
        let Some(raw) = &doc.views else { continue };
        let Value::Object(entries) = raw else {
            problems.push(doc.root_problem(Problem::new(
                ["views"],
                "`views` is a mapping of view names to views",
            )));
            continue;
        };
        for (name, value) in entries {
            let at = |p: Problem| doc.root_problem(p.under(name.as_str()).under("views"));
            if views.iter().any(|v| &v.name == name) {
                problems.push(at(Problem::new(
                    Vec::<Seg>::new(),
                    format!("the view {name:?} is defined twice"),
                )));
                continue;
            }
            match read_one(name, value) {
                Ok(view) => views.push(view),
                Err(found) => problems.extend(found.into_iter().map(at)),
            }
        }
    }
}

/// One view, or its problems (paths from the view's own value).
fn read_one(name: &str, value: &Value) -> Result<ViewConfig, Vec<Problem>> {
    let none: [Seg; 0] = [];
    if !good_name(name) {
        return Err(vec![Problem::new(
            none,
            format!(
                "{name:?} cannot be a view's name: it is the last segment of its path (/mcp/NAME), \
                 1 to 64 letters, digits, `_` or `-`"
            ),
        )]);
    }
    let spec: ViewSpec = read_value(value).map_err(|p| vec![p])?;
    if spec.include.is_none() && spec.exclude.is_none() {
        return Err(vec![Problem::new(
            none,
            "a view selects its tools with `include` (globs of exposed names), `exclude`, or both",
        )]);
    }
    let mut problems = Vec::new();
    let filter = NameFilter::compile(
        spec.include.as_deref(),
        spec.exclude.as_deref().unwrap_or(&[]),
    )
    .unwrap_or_else(|p| {
        problems.extend(p);
        NameFilter::default()
    });
    let when = spec.when.and_then(|w| match (w.scope, w.claim) {
        (Some(scope), None) if !scope.is_empty() => Some(ViewWhen::Scope(scope)),
        (None, Some(claim)) if claim.len() == 1 => {
            let (k, v) = claim.into_iter().next().expect("one entry");
            Some(ViewWhen::Claim(k, v))
        }
        _ => {
            problems.push(Problem::new(
                ["when"],
                "`when` is `{scope: SCOPE}` or `{claim: {NAME: VALUE}}`, one of the two",
            ));
            None
        }
    });
    let mut tools = Vec::new();
    for (tool, raw) in &spec.tools {
        match read_value::<OverrideSpec>(raw) {
            Err(p) => problems.push(p.under(tool.as_str()).under("tools")),
            Ok(_) if problems.is_empty() && !filter.allows(tool) => problems.push(Problem::new(
                ["tools", tool.as_str()],
                format!("the view does not select {tool:?} (its `include` and `exclude`)"),
            )),
            Ok(o) => tools.push((
                tool.clone(),
                ToolOverride {
                    title: o.title,
                    description: o.description,
                    annotations: o.annotations.map(|a| ToolAnnotations {
                        title: a.title,
                        read_only_hint: a.read_only_hint,
                        destructive_hint: a.destructive_hint,
                        idempotent_hint: a.idempotent_hint,
                        open_world_hint: a.open_world_hint,
                    }),
                },
            )),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(ViewConfig {
        name: name.to_owned(),
        filter,
        when,
        tools,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn views_read() {
        table! { |value: Value, problem: Option<&str>| {
                let got = read_one("v", &value).err().map(|p| format!("{}", p[0]));
                match (got, problem) {
                    (None, None) => {}
                    (Some(g), Some(want)) => assert!(g.contains(want), "{value}: {g}"),
                    (g, want) => panic!("{value}: got {g:?}, want {want:?}"),
                }
            };
            (json!({"include": ["a*"], "when": {"scope": "s"}}), None);
            (json!({"exclude": ["x"], "when": {"claim": {"groups": "admins"}}}), None);
            (json!({"include": ["a"], "tools": {"a": {"description": "d", "annotations": {"readOnlyHint": true}}}}), None);
            (json!({"when": {"scope": "s"}}), Some("selects its tools"));
            (json!({"include": ["a["]}), Some("not a glob"));
            (json!({"include": ["a"], "color": "red"}), Some("color"));
            (json!({"include": ["a"], "when": {"scope": "s", "claim": {"a": 1}}}), Some("one of the two"));
            (json!({"include": ["a"], "when": {"claim": {}}}), Some("one of the two"));
            (json!({"include": ["a"], "when": {"role": "x"}}), Some("role"));
            (json!({"include": ["a"], "tools": {"b": {"title": "B"}}}), Some("does not select \"b\""));
            (json!({"include": ["a"], "tools": {"a": {"annotations": {"readonly": true}}}}), Some("readonly"));
            (json!({"include": ["a"], "tools": {"a": {"name": "x"}}}), Some("name"));
        }
    }

    #[test]
    fn names() {
        table! { |name: &str, ok: bool| assert_eq!(good_name(name), ok, "{name}");
            ("support", true);
            ("team-a_2", true);
            ("", false);
            ("a/b", false);
            ("a b", false);
        }
    }
}
