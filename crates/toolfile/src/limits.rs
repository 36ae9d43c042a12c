//! `limits:`: how often and how many at once each caller may call each tool.
//!
//! ```yaml
//! limits:
//!   default: {calls_per_minute: 60, burst: 10, concurrent: 4}
//!   views:
//!     support: {calls_per_minute: 30}
//!   tools:
//!     "github__*": {calls_per_minute: 10}
//! ```
//!
//! Every caller (a token's subject, else the client's address) has its own budget for each
//! tool. A rule's fields are `calls_per_minute` (a token bucket refilled evenly), `burst`
//! (the bucket's size; default a minute's worth) and `concurrent` (calls in flight at once).
//! `views.NAME` applies to callers given that view, over `default`; `tools.GLOB` (over the
//! exposed names, the first that matches) over both, field by field. How the server counts
//! is `toolwright_server::limit`'s rule.

use crate::config::NameFilter;
use crate::document::Document;
use crate::error::{FileProblem, Problem, Seg};
use crate::rules::read_value;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One rule: each field bounds the calls when set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitRule {
    /// Calls a minute, refilled evenly.
    pub calls_per_minute: Option<u32>,
    /// Calls at once from a full bucket (default: `calls_per_minute`).
    pub burst: Option<u32>,
    /// Calls in flight at once.
    pub concurrent: Option<u32>,
}

/// The file's `limits:`, checked.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LimitsConfig {
    /// For every call.
    pub default: LimitRule,
    /// By view name, in file order.
    pub views: Vec<(String, LimitRule)>,
    /// By glob of exposed tool names, in file order (the first that matches applies): the
    /// glob as written, its test and the rule.
    pub tools: Vec<(String, NameFilter, LimitRule)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsSpec {
    #[serde(default)]
    default: Option<Value>,
    #[serde(default)]
    views: Map<String, Value>,
    #[serde(default)]
    tools: Map<String, Value>,
}

/// One rule's problems, from the rule's own value.
fn rule(value: &Value) -> Result<LimitRule, Problem> {
    let r: LimitRule = read_value(value)?;
    let zero = [
        ("calls_per_minute", r.calls_per_minute),
        ("burst", r.burst),
        ("concurrent", r.concurrent),
    ]
    .into_iter()
    .find(|(_, v)| *v == Some(0));
    if let Some((field, _)) = zero {
        return Err(Problem::new(
            [field],
            format!("`{field}` is at least 1 (leave it out for no bound)"),
        ));
    }
    if r.burst.is_some() && r.calls_per_minute.is_none() {
        return Err(Problem::new(
            ["burst"],
            "`burst` is the size of the `calls_per_minute` bucket; give `calls_per_minute` too",
        ));
    }
    Ok(r)
}

/// The one `limits:` of `docs` (a second is a problem), checked against the `views` read
/// before it; each problem into `problems`.
pub(crate) fn read(
    docs: &[Document],
    views: &[crate::views::ViewConfig],
    problems: &mut Vec<FileProblem>,
) -> Option<LimitsConfig> {
    let mut found: Option<(LimitsConfig, &Document)> = None;
    for doc in docs {
        let Some(raw) = &doc.limits else { continue };
        let at = |p: Problem| doc.root_problem(p.under("limits"));
        if let Some((_, first)) = &found {
            problems.push(at(Problem::new(
                Vec::<Seg>::new(),
                format!(
                    "`limits:` is set in {} already; it belongs in one file",
                    first.file.display()
                ),
            )));
            continue;
        }
        match read_one(raw, views) {
            Ok(l) => found = Some((l, doc)),
            Err(p) => problems.extend(p.into_iter().map(at)),
        }
    }
    found.map(|(l, _)| l)
}

/// One `limits:` value, or its problems (paths from the value).
fn read_one(raw: &Value, views: &[crate::views::ViewConfig]) -> Result<LimitsConfig, Vec<Problem>> {
    let spec: LimitsSpec = read_value(raw).map_err(|p| vec![p])?;
    let mut problems = Vec::new();
    let mut config = LimitsConfig::default();
    if let Some(d) = &spec.default {
        match rule(d) {
            Ok(r) => config.default = r,
            Err(p) => problems.push(p.under("default")),
        }
    }
    for (name, value) in &spec.views {
        let under = |p: Problem| p.under(name.as_str()).under("views");
        if !views.iter().any(|v| &v.name == name) {
            problems.push(under(Problem::new(
                Vec::<Seg>::new(),
                format!("no view is named {name:?} (`views:`)"),
            )));
            continue;
        }
        match rule(value) {
            Ok(r) => config.views.push((name.clone(), r)),
            Err(p) => problems.push(under(p)),
        }
    }
    for (glob, value) in &spec.tools {
        let under = |p: Problem| p.under(glob.as_str()).under("tools");
        let filter = match NameFilter::compile(Some(std::slice::from_ref(glob)), &[]) {
            Ok(f) => f,
            Err(found) => {
                // Its paths name `include`, which this file does not have.
                let why = found.first().map_or(String::new(), |p| p.message.clone());
                problems.push(under(Problem::new(Vec::<Seg>::new(), why)));
                continue;
            }
        };
        match rule(value) {
            Ok(r) => config.tools.push((glob.clone(), filter, r)),
            Err(p) => problems.push(under(p)),
        }
    }
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::ViewConfig;
    use serde_json::json;

    fn views() -> Vec<ViewConfig> {
        let doc = Document::parse(
            std::path::Path::new("f.yaml"),
            crate::Format::Yaml,
            "views:\n  support: {include: [\"a*\"]}\n".into(),
        )
        .unwrap();
        let mut views = Vec::new();
        crate::views::read(&[doc], &mut views, &mut Vec::new());
        views
    }

    #[test]
    fn limits_read() {
        let views = views();
        table! { |value: Value, problem: Option<&str>| {
                let got = read_one(&value, &views).err().map(|p| format!("{}", p[0]));
                match (got, problem) {
                    (None, None) => {}
                    (Some(g), Some(want)) => assert!(g.contains(want), "{value}: {g}"),
                    (g, want) => panic!("{value}: got {g:?}, want {want:?}"),
                }
            };
            (json!({"default": {"calls_per_minute": 60, "burst": 10, "concurrent": 4}}), None);
            (json!({"tools": {"gh__*": {"calls_per_minute": 10}}, "views": {"support": {"concurrent": 1}}}), None);
            (json!({}), None);
            (json!({"default": {"calls_per_minute": 0}}), Some("at least 1"));
            (json!({"default": {"burst": 5}}), Some("give `calls_per_minute` too"));
            (json!({"default": {"per_minute": 5}}), Some("per_minute"));
            (json!({"default": {"calls_per_minute": -1}}), Some("calls_per_minute"));
            (json!({"views": {"admin": {"concurrent": 1}}}), Some("no view is named \"admin\""));
            (json!({"tools": {"a[": {"concurrent": 1}}}), Some("not a glob"));
            (json!({"users": {}}), Some("users"));
        }
    }

    #[test]
    fn the_rule_read() {
        let l = read_one(
            &json!({"tools": {"gh__*": {"calls_per_minute": 10}}, "default": {"concurrent": 2}}),
            &[],
        )
        .unwrap();
        assert_eq!(l.default.concurrent, Some(2));
        let (glob, filter, r) = &l.tools[0];
        assert_eq!((glob.as_str(), r.calls_per_minute), ("gh__*", Some(10)));
        assert!(filter.allows("gh__issues") && !filter.allows("add"));
    }
}
