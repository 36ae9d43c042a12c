//! From an upstream's tool list to the tools the gateway exposes: `include`/`exclude`,
//! `rename`, the prefix and separator, the spec's name rule, title and description
//! overrides, the effective annotations and policy ([`crate::policy`]), and fixed arguments
//! taken out of the advertised `inputSchema` ([`expose`]); then the tools of every server
//! merged with the built-in and declared names, collisions dropped with their reason
//! ([`merge`]).
//!
//! Every member of an upstream definition the gateway does not rewrite (`icons`, `_meta`,
//! `execution`, `outputSchema`, members of later spec versions) is passed on untouched.

use crate::policy::{self, Decision, Hints};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use toolwright_toolfile::config::Server;

/// The name clients see: `prefix + separator + name`, or `name` when the prefix is empty.
pub fn exposed_name(prefix: &str, separator: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}{separator}{name}")
    }
}

/// One upstream tool as the gateway exposes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposed {
    /// The name clients see.
    pub name: String,
    /// The server it belongs to.
    pub server: String,
    /// Its name upstream (what a forwarded call names).
    pub upstream: String,
    /// The definition clients see: the upstream's with `name`, `title`, `description`,
    /// `annotations` and `inputSchema` rewritten, every other member as received.
    pub definition: Value,
    /// The definition as the upstream listed it (what is pinned, and whose `inputSchema`
    /// and `outputSchema` calls are checked against).
    pub original: Value,
    /// Fixed arguments, injected into every call.
    pub fixed: Map<String, Value>,
    /// What a call needs (allow, confirm, deny) and why.
    pub decision: Decision,
    /// Things worth logging that did not stop the tool (a fixed argument the upstream's
    /// schema does not declare).
    pub notes: Vec<String>,
}

impl Exposed {
    /// The arguments forwarded upstream: the caller's, with the fixed ones set over them.
    pub fn arguments(&self, mut args: Map<String, Value>) -> Map<String, Value> {
        for (k, v) in &self.fixed {
            args.insert(k.clone(), v.clone());
        }
        args
    }
}

/// Why an upstream tool is not exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// The definition is not an object with a string `name`.
    NoName,
    /// The upstream lists two tools with this name.
    DuplicateUpstream,
    /// The exposed name breaks the spec's rule (1–128 of `A-Za-z0-9_.-`).
    InvalidName(String),
    /// A built-in or declared tool has the name.
    Reserved,
    /// Other upstream tools would be exposed with the same name (server, upstream name).
    Collision(Vec<(String, String)>),
}

/// An upstream tool that is not exposed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The server.
    pub server: String,
    /// Its upstream name (`#INDEX` in the list when it has none).
    pub upstream: String,
    /// The name it would have had, when it got that far.
    pub exposed: Option<String>,
    /// Why.
    pub reason: DropReason,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server {:?}: tool {:?} ", self.server, self.upstream)?;
        let exposed = self.exposed.as_deref().unwrap_or("");
        match &self.reason {
            DropReason::NoName => write!(f, "is not listed: the definition has no string name"),
            DropReason::DuplicateUpstream => {
                write!(f, "is not listed: the server lists two tools of that name")
            }
            DropReason::InvalidName(why) => write!(
                f,
                "is not listed: its name {exposed:?} is not a valid tool name ({why}); rename it (`rename:`) or shorten the prefix"
            ),
            DropReason::Reserved => write!(
                f,
                "is not listed: {exposed:?} is the name of a built-in or declared tool; rename it (`rename:`) or change the prefix"
            ),
            DropReason::Collision(others) => {
                let others: Vec<String> = others
                    .iter()
                    .map(|(s, t)| format!("tool {t:?} of server {s:?}"))
                    .collect();
                write!(
                    f,
                    "is not listed: it would be {exposed:?}, like {}; neither is listed until one is renamed (`rename:`)",
                    others.join(", ")
                )
            }
        }
    }
}

/// The tools of one server, as exposed, and those left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTools {
    /// The server.
    pub server: String,
    /// The tools exposed, in the upstream's order.
    pub tools: Vec<Exposed>,
    /// The tools dropped (not those `include`/`exclude` hide: that is the operator's
    /// choice, not a problem).
    pub dropped: Vec<Dropped>,
}

/// Applies a server's settings to the tools its upstream listed (as received).
pub fn expose(server: &Server, separator: &str, upstream: &[Value]) -> ServerTools {
    let mut out = ServerTools {
        server: server.name.clone(),
        ..ServerTools::default()
    };
    let named: Vec<Option<&str>> = upstream
        .iter()
        .map(|d| d.get("name").and_then(Value::as_str))
        .collect();
    for (i, definition) in upstream.iter().enumerate() {
        let drop = |upstream: String, exposed: Option<String>, reason| Dropped {
            server: server.name.clone(),
            upstream,
            exposed,
            reason,
        };
        let Some(name) = named[i].filter(|_| definition.is_object()) else {
            out.dropped
                .push(drop(format!("#{i}"), None, DropReason::NoName));
            continue;
        };
        if !server.filter.allows(name) {
            continue;
        }
        if named.iter().filter(|n| **n == Some(name)).count() > 1 {
            out.dropped
                .push(drop(name.to_owned(), None, DropReason::DuplicateUpstream));
            continue;
        }
        let exposed = exposed_as(server, separator, name);
        if let Some(why) = toolwright_protocol::tool::name_errors(&exposed).first() {
            out.dropped.push(drop(
                name.to_owned(),
                Some(exposed),
                DropReason::InvalidName(why.to_string()),
            ));
            continue;
        }
        out.tools
            .push(expose_one(server, name, exposed, definition.clone()));
    }
    drop_renamed_together(server, separator, &named, &mut out);
    out
}

/// The name clients see of `server`'s upstream tool `name`: renamed, then prefixed.
fn exposed_as(server: &Server, separator: &str, name: &str) -> String {
    let local = server.spec.rename.get(name).map_or(name, String::as_str);
    exposed_name(&server.prefix, separator, local)
}

/// Drops every tool of `out` that shares its exposed name with another of the same server
/// (two upstream tools renamed to one name), each with the others it collides with.
/// `named` is the upstream's list of names, in order.
fn drop_renamed_together(
    server: &Server,
    separator: &str,
    named: &[Option<&str>],
    out: &mut ServerTools,
) {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &out.tools {
        *count.entry(t.name.as_str()).or_default() += 1;
    }
    let clashing: BTreeSet<String> = count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(k, _)| k.to_owned())
        .collect();
    if clashing.is_empty() {
        return;
    }
    out.tools.retain(|t| !clashing.contains(&t.name));
    for (i, name) in named.iter().enumerate() {
        let Some(name) = name else { continue };
        if !server.filter.allows(name) {
            continue;
        }
        let exposed = exposed_as(server, separator, name);
        if !clashing.contains(&exposed) {
            continue;
        }
        let others = named
            .iter()
            .enumerate()
            .filter_map(|(j, n)| {
                let n = (*n)?;
                (j != i && exposed_as(server, separator, n) == exposed)
                    .then(|| (server.name.clone(), n.to_owned()))
            })
            .collect();
        out.dropped.push(Dropped {
            server: server.name.clone(),
            upstream: (*name).to_owned(),
            exposed: Some(exposed),
            reason: DropReason::Collision(others),
        });
    }
}

fn expose_one(server: &Server, upstream: &str, name: String, original: Value) -> Exposed {
    let over = server.spec.tools.get(upstream);
    let mut definition = original.clone();
    let mut notes = Vec::new();
    let fixed = over.map(|o| o.arguments.clone()).unwrap_or_default();
    let annotations = policy::effective_annotations(
        server.spec.trust,
        original.get("annotations"),
        server.spec.annotations.as_ref(),
        over.and_then(|o| o.annotations.as_ref()),
    );
    let decision = policy::decide(
        &server.spec.policy,
        over.and_then(|o| o.policy),
        &Hints::of(&annotations),
    );
    if let Value::Object(d) = &mut definition {
        d.insert("name".into(), Value::String(name.clone()));
        if let Some(title) = over.and_then(|o| o.title.clone()) {
            d.insert("title".into(), Value::String(title));
        }
        if let Some(text) = over.and_then(|o| o.description.clone()) {
            d.insert("description".into(), Value::String(text));
        }
        if annotations.is_empty() {
            d.remove("annotations");
        } else {
            d.insert("annotations".into(), Value::Object(annotations));
        }
        if !fixed.is_empty() {
            hide_fixed(d, &fixed, &mut notes);
        }
    }
    Exposed {
        name,
        server: server.name.clone(),
        upstream: upstream.to_owned(),
        definition,
        original,
        fixed,
        decision,
        notes,
    }
}

/// Takes fixed arguments out of the advertised `inputSchema`: out of `properties` and
/// `required` (dropped when it empties). An argument the schema does not declare is still
/// injected; a note says so.
fn hide_fixed(d: &mut Map<String, Value>, fixed: &Map<String, Value>, notes: &mut Vec<String>) {
    let Some(Value::Object(schema)) = d.get_mut("inputSchema") else {
        notes.push(
            "the upstream's definition has no inputSchema object; the fixed arguments are injected anyway"
                .into(),
        );
        return;
    };
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for key in fixed.keys() {
        let declared = schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .and_then(|p| p.remove(key))
            .is_some();
        if !declared {
            notes.push(if closed {
                format!(
                    "fixed argument {key:?} is not declared by the upstream's inputSchema, which allows no other properties: calls will fail its validation"
                )
            } else {
                format!(
                    "fixed argument {key:?} is not declared by the upstream's inputSchema; it is injected anyway"
                )
            });
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !fixed.contains_key(r)));
        if required.is_empty() {
            schema.remove("required");
        }
    }
}

/// Every server's exposed tools in one set, by exposed name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSet {
    tools: Vec<Exposed>,
    index: BTreeMap<String, usize>,
    dropped: Vec<Dropped>,
}

impl ToolSet {
    /// The tool exposed as `name`.
    pub fn get(&self, name: &str) -> Option<&Exposed> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, server by server in the order given, each server's in its upstream's
    /// order (denied tools too: their calls are refused by name).
    pub fn tools(&self) -> &[Exposed] {
        &self.tools
    }

    /// Every tool dropped, by any server, and why.
    pub fn dropped(&self) -> &[Dropped] {
        &self.dropped
    }
}

/// Merges the tools of every server: a tool whose name is `reserved` (a built-in or declared
/// tool's) is dropped, and tools of several servers that would share a name are all
/// dropped (none is preferred over another).
pub fn merge(servers: Vec<ServerTools>, reserved: &BTreeSet<String>) -> ToolSet {
    let mut owners: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for s in &servers {
        for t in &s.tools {
            owners
                .entry(t.name.clone())
                .or_default()
                .push((t.server.clone(), t.upstream.clone()));
        }
    }
    let mut set = ToolSet::default();
    for s in servers {
        set.dropped.extend(s.dropped);
        for t in s.tools {
            let reason = if reserved.contains(&t.name) {
                Some(DropReason::Reserved)
            } else {
                let all = &owners[&t.name];
                (all.len() > 1).then(|| {
                    DropReason::Collision(
                        all.iter()
                            .filter(|(srv, up)| *srv != t.server || *up != t.upstream)
                            .cloned()
                            .collect(),
                    )
                })
            };
            match reason {
                Some(reason) => set.dropped.push(Dropped {
                    server: t.server,
                    upstream: t.upstream,
                    exposed: Some(t.name),
                    reason,
                }),
                None => {
                    set.index.insert(t.name.clone(), set.tools.len());
                    set.tools.push(t);
                }
            }
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;
    use toolwright_toolfile::servers::Action;
    use toolwright_toolfile::{Document, Format, read_config};

    /// The servers of a YAML text, checked as the loader does.
    fn servers(yaml: &str) -> Vec<Server> {
        let doc = Document::parse(Path::new("gw.yaml"), Format::Yaml, yaml.to_owned()).unwrap();
        read_config(&[doc]).unwrap().servers
    }

    fn server(yaml: &str) -> Server {
        servers(yaml).remove(0)
    }

    fn names(t: &ServerTools) -> Vec<&str> {
        t.tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn list() -> Vec<Value> {
        vec![
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
            json!({"name": "get_a", "inputSchema": {"type": "object"}}),
            json!({"name": "get_b_dangerous", "inputSchema": {"type": "object"}}),
            json!({"name": "add", "inputSchema": {"type": "object"}}),
        ]
    }

    #[test]
    fn filters_renames_and_prefixes() {
        let s = server(
            "servers:\n  ev:\n    command: [x]\n    include: [echo, 'get_*']\n    exclude: ['*_dangerous']\n    rename: {echo: say}\n",
        );
        let t = expose(&s, "__", &list());
        assert_eq!(names(&t), ["ev__say", "ev__get_a"]);
        assert_eq!(t.tools[0].upstream, "echo");
        assert!(t.dropped.is_empty());
        let s = server("servers:\n  ev:\n    command: [x]\n    prefix: ''\n");
        assert_eq!(
            names(&expose(&s, "__", &list())),
            ["echo", "get_a", "get_b_dangerous", "add"]
        );
        let s = server("servers:\n  ev:\n    command: [x]\n    prefix: E\n");
        assert_eq!(names(&expose(&s, ".", &list()))[0], "E.echo");
    }

    #[test]
    fn invalid_and_nameless_tools_are_dropped_with_a_reason() {
        let s = server("servers:\n  ev:\n    command: [x]\n");
        let long = "x".repeat(126);
        let t = expose(
            &s,
            "__",
            &[
                json!({"name": "has space"}),
                json!({"name": long}),
                json!({"title": "no name"}),
                json!("not an object"),
                json!({"name": "dup"}),
                json!({"name": "dup"}),
                json!({"name": "ok"}),
            ],
        );
        assert_eq!(names(&t), ["ev__ok"]);
        let reasons: Vec<String> = t.dropped.iter().map(ToString::to_string).collect();
        assert_eq!(reasons.len(), 6, "{reasons:#?}");
        assert!(
            reasons[0].contains("\"ev__has space\" is not a valid tool name"),
            "{}",
            reasons[0]
        );
        assert!(reasons[1].contains("130 characters long"), "{}", reasons[1]);
        assert!(reasons[2].contains("\"#2\"") && reasons[2].contains("no string name"));
        assert!(reasons[3].contains("\"#3\""));
        assert!(reasons[4].contains("two tools of that name"));
    }

    #[test]
    fn overrides_and_unknown_members() {
        let s = server(
            "servers:\n  ev:\n    command: [x]\n    tools:\n      add:\n        title: Add\n        description: Adds.\n",
        );
        let def = json!({
            "name": "add", "title": "old", "description": "old", "icons": [{"src": "x.png"}],
            "_meta": {"k": 1}, "execution": {"taskSupport": "optional"}, "futureField": [1],
            "outputSchema": {"type": "object"}, "inputSchema": {"type": "object"}
        });
        let t = expose(&s, "__", std::slice::from_ref(&def));
        let d = &t.tools[0].definition;
        assert_eq!(d["name"], "ev__add");
        assert_eq!(d["title"], "Add");
        assert_eq!(d["description"], "Adds.");
        for k in ["icons", "_meta", "execution", "futureField", "outputSchema"] {
            assert_eq!(d[k], def[k], "{k}");
        }
        assert_eq!(t.tools[0].original, def);
    }

    #[test]
    fn fixed_arguments_are_hidden_and_injected() {
        let s = server(
            "servers:\n  ev:\n    command: [x]\n    tools:\n      add:\n        arguments: {precision: 3, ghost: true}\n      strict:\n        arguments: {ghost: 1}\n",
        );
        let t = expose(
            &s,
            "__",
            &[
                json!({"name": "add", "inputSchema": {"type": "object",
                    "properties": {"a": {"type": "number"}, "precision": {"type": "integer"}},
                    "required": ["a", "precision"]}}),
                json!({"name": "strict", "inputSchema": {"type": "object", "required": ["ghost"],
                    "additionalProperties": false}}),
            ],
        );
        let add = &t.tools[0];
        assert_eq!(
            add.definition["inputSchema"],
            json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]})
        );
        assert_eq!(
            add.original["inputSchema"]["required"],
            json!(["a", "precision"])
        );
        assert_eq!(add.notes.len(), 1);
        assert!(add.notes[0].contains("\"ghost\" is not declared"));
        let args = add.arguments(
            json!({"a": 1, "precision": 9})
                .as_object()
                .cloned()
                .unwrap(),
        );
        assert_eq!(
            Value::Object(args),
            json!({"a": 1, "precision": 3, "ghost": true})
        );
        let strict = &t.tools[1];
        assert_eq!(
            strict.definition["inputSchema"],
            json!({"type": "object", "additionalProperties": false})
        );
        assert!(strict.notes[0].contains("will fail its validation"));
    }

    #[test]
    fn annotations_and_policy_are_applied() {
        let s = server(
            "servers:\n  ev:\n    command: [x]\n    policy: {destructive: deny, not_read_only: confirm}\n    tools:\n      look:\n        annotations: {readOnlyHint: true}\n",
        );
        let t = expose(
            &s,
            "__",
            &[
                json!({"name": "look", "annotations": {"readOnlyHint": false}}),
                json!({"name": "rm", "annotations": {"readOnlyHint": true, "destructiveHint": false}}),
            ],
        );
        assert_eq!(t.tools[0].decision.action, Action::Allow);
        assert_eq!(t.tools[0].definition["annotations"]["readOnlyHint"], true);
        // The upstream's claim is not believed: the worst case, so denied.
        assert_eq!(t.tools[1].decision.action, Action::Deny);
        assert_eq!(
            t.tools[1].definition["annotations"]["destructiveHint"],
            true
        );
        let s = server(
            "servers:\n  ev:\n    command: [x]\n    trust: trusted\n    policy: {destructive: deny}\n",
        );
        let t = expose(
            &s,
            "__",
            &[json!({"name": "rm", "annotations": {"destructiveHint": false}})],
        );
        assert_eq!(t.tools[0].decision.action, Action::Allow);
        assert_eq!(
            t.tools[0].definition["annotations"],
            json!({"destructiveHint": false})
        );
        let t = expose(&s, "__", &[json!({"name": "bare"})]);
        assert_eq!(t.tools[0].decision.action, Action::Deny);
        assert!(t.tools[0].definition.get("annotations").is_none());
    }

    #[test]
    fn renames_onto_one_name_drop_both() {
        let s = server("servers:\n  ev:\n    command: [x]\n    rename: {a: c, b: c}\n");
        let t = expose(
            &s,
            "__",
            &[
                json!({"name": "a"}),
                json!({"name": "b"}),
                json!({"name": "d"}),
            ],
        );
        assert_eq!(names(&t), ["ev__d"]);
        assert_eq!(t.dropped.len(), 2);
        assert_eq!(
            t.dropped[0].reason,
            DropReason::Collision(vec![("ev".into(), "b".into())])
        );
    }

    #[test]
    fn collisions_across_servers_and_with_reserved_names() {
        let all = servers(
            "servers:\n  one:\n    command: [x]\n    prefix: ''\n  two:\n    command: [x]\n    prefix: ''\n  three:\n    command: [x]\n",
        );
        let tools = vec![
            expose(
                &all[0],
                "__",
                &[
                    json!({"name": "same"}),
                    json!({"name": "add"}),
                    json!({"name": "mine"}),
                ],
            ),
            expose(&all[1], "__", &[json!({"name": "same"})]),
            expose(&all[2], "__", &[json!({"name": "same"})]),
        ];
        let reserved: BTreeSet<String> = ["add".to_owned()].into();
        let set = merge(tools, &reserved);
        let listed: Vec<&str> = set.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(listed, ["mine", "three__same"]);
        assert_eq!(set.get("mine").unwrap().upstream, "mine");
        assert!(set.get("same").is_none());
        let reasons: Vec<String> = set.dropped().iter().map(ToString::to_string).collect();
        assert_eq!(reasons.len(), 3, "{reasons:#?}");
        assert!(
            reasons
                .iter()
                .any(|r| r.contains("\"add\" is the name of a built-in"))
        );
        assert!(reasons.iter().any(|r| r.starts_with("server \"one\"")
            && r.contains("like tool \"same\" of server \"two\"")));
        assert!(reasons.iter().any(|r| r.starts_with("server \"two\"")
            && r.contains("like tool \"same\" of server \"one\"")));
    }
}
