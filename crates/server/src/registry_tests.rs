//! Tests of the registry (registry.rs).
use super::*;
use crate::tool::FnTool;
use serde_json::json;
use toolwright_protocol::CallToolResult;

fn tool(def: Value) -> Arc<dyn Tool> {
    Arc::new(FnTool::from_json(def, |_a, _c| async { Ok(CallToolResult::default()) }).unwrap())
}

fn named(name: &str) -> Arc<dyn Tool> {
    tool(json!({"name": name, "inputSchema": {"type": "object"}}))
}

/// Registers `def` in an empty registry and returns the error's text, if any.
fn refusal(def: Value) -> Option<String> {
    Registry::new(Paging {
        max_tools: 10,
        ..Paging::default()
    })
    .register(tool(def))
    .err()
    .map(|e| e.to_string())
}

#[test]
fn registration_rules() {
    let obj = json!({"type": "object"});
    let cases: [(Value, Option<&str>); 12] = [
        (json!({"name": "ok_tool", "inputSchema": obj}), None),
        (json!({"name": "a.b-c_D", "inputSchema": obj}), None),
        (
            json!({"name": "", "inputSchema": obj}),
            Some("the name is empty"),
        ),
        (
            json!({"name": "has space", "inputSchema": obj}),
            Some("' '"),
        ),
        (
            json!({"name": "x".repeat(129), "inputSchema": obj}),
            Some("129 characters"),
        ),
        (
            json!({"name": "t", "inputSchema": {"type": "array"}}),
            Some("\"type\": \"array\""),
        ),
        (json!({"name": "t", "inputSchema": {}}), Some("no \"type\"")),
        (
            json!({"name": "t", "inputSchema": true}),
            Some("not an object"),
        ),
        (
            json!({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {"type": "nope"}}}}),
            Some("does not compile"),
        ),
        (
            json!({"name": "t", "inputSchema": {"type": "object", "$ref": "https://example.com/s.json"}}),
            Some("does not compile"),
        ),
        (
            json!({"name": "t", "inputSchema": obj, "outputSchema": {"minimum": "x"}}),
            Some("outputSchema"),
        ),
        (
            json!({"name": "t", "inputSchema": {"$schema": "https://example.com/dialect", "type": "object"}}),
            Some("does not compile"),
        ),
    ];
    for (def, want) in cases {
        let got = refusal(def.clone());
        match (want, got) {
            (None, None) => {}
            (Some(w), Some(g)) => assert!(g.contains(w), "{def}: {g:?} should contain {w:?}"),
            (w, g) => panic!("{def}: wanted {w:?}, got {g:?}"),
        }
    }
}

/// A tool whose `listed` and `checks_own_output` are as given; its output schema is
/// `{type: object}`.
struct Flagged {
    name: &'static str,
    listed: bool,
    own_output: bool,
}
impl Tool for Flagged {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(self.name, json!({"type": "object"}))
            .with_output_schema(json!({"type": "object"}))
    }
    fn call(&self, _args: Value, _ctx: crate::ToolContext) -> crate::ToolFuture<'_> {
        Box::pin(async { Ok(CallToolResult::default()) })
    }
    fn listed(&self) -> bool {
        self.listed
    }
    fn checks_own_output(&self) -> bool {
        self.own_output
    }
}

fn unlisted(name: &'static str) -> Arc<dyn Tool> {
    Arc::new(Flagged {
        name,
        listed: false,
        own_output: false,
    })
}

#[test]
fn unlisted_tools_are_found_but_not_listed_and_pages_skip_them() {
    let r = Registry::new(Paging {
        max_tools: 2,
        ..Paging::default()
    });
    for t in [
        named("a"),
        unlisted("b"),
        named("c"),
        unlisted("d"),
        named("e"),
    ] {
        r.register(t).unwrap();
    }
    let snap = r.snapshot();
    assert!(snap.get("b").is_some() && !snap.get("b").unwrap().listed);
    let v = ProtocolVersion::LATEST;
    let names = |json: &str| -> Vec<String> {
        serde_json::from_str::<Vec<Value>>(json)
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let p1 = snap.page(None, v).unwrap();
    assert_eq!(names(&p1.tools_json), ["a", "c"]);
    let p2 = snap.page(p1.next_cursor.as_deref(), v).unwrap();
    assert_eq!(names(&p2.tools_json), ["e"]);
    assert!(p2.next_cursor.is_none());
}

#[test]
fn a_tool_that_checks_its_own_output_gets_no_server_validator() {
    let own = Entry::compile(Arc::new(Flagged {
        name: "s",
        listed: true,
        own_output: true,
    }))
    .unwrap();
    assert!(own.output.is_none());
    let plain = Entry::compile(tool(json!({"name": "p", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"}})))
    .unwrap();
    assert!(plain.output.is_some());
}

#[test]
fn duplicates_are_refused_and_order_is_by_name() {
    let r = Registry::new(Paging {
        max_tools: 10,
        ..Paging::default()
    });
    for n in ["b", "a", "c"] {
        r.register(named(n)).unwrap();
    }
    assert!(matches!(
        r.register(named("a")),
        Err(RegisterError::Duplicate { .. })
    ));
    let names: Vec<String> = r
        .snapshot()
        .entries()
        .iter()
        .map(|e| e.definition.name.clone())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(r.snapshot().get("b").is_some());
    assert!(r.snapshot().get("z").is_none());
}

#[test]
fn replace_is_all_or_nothing() {
    let r = Registry::new(Paging::default());
    for n in ["keep", "old_a", "old_b"] {
        r.register(named(n)).unwrap();
    }
    let before = r.snapshot();
    let old = ["old_a".to_owned(), "old_b".to_owned()];
    // A new tool colliding with one that stays: nothing changes.
    assert!(matches!(
        r.replace(&old, vec![named("new_a"), named("keep")]),
        Err(RegisterError::Duplicate { .. })
    ));
    assert!(Arc::ptr_eq(&before, &r.snapshot()));
    r.replace(&old, vec![named("new_a"), named("old_b")])
        .unwrap();
    let after = r.snapshot();
    let names: Vec<&str> = after
        .entries()
        .iter()
        .map(|e| e.definition.name.as_str())
        .collect();
    assert_eq!(names, ["keep", "new_a", "old_b"]);
    // The old snapshot, as a call in flight holds it, still has the old entries.
    assert!(before.get("old_a").is_some());
}

#[test]
fn unregister() {
    let r = Registry::new(Paging {
        max_tools: 10,
        ..Paging::default()
    });
    r.register(named("a")).unwrap();
    assert!(r.unregister("a"));
    assert!(!r.unregister("a"));
    assert!(r.snapshot().is_empty());
}

#[test]
fn pages_and_cursors() {
    let r = Registry::new(Paging {
        max_tools: 2,
        ..Paging::default()
    });
    for n in ["a", "b", "c", "d", "e"] {
        r.register(named(n)).unwrap();
    }
    let s = r.snapshot();
    let v = ProtocolVersion::V2025_06_18;
    let p1 = s.page(None, v).unwrap();
    let names = |json: &str| -> Vec<String> {
        serde_json::from_str::<Vec<Value>>(json)
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&p1.tools_json), ["a", "b"]);
    let p2 = s.page(p1.next_cursor.as_deref(), v).unwrap();
    assert_eq!(names(&p2.tools_json), ["c", "d"]);
    let p3 = s.page(p2.next_cursor.as_deref(), v).unwrap();
    assert_eq!(names(&p3.tools_json), ["e"]);
    assert!(p3.next_cursor.is_none());
    // A cursor survives a change: after removing "c", page two starts at "d".
    r.unregister("c");
    let p2b = r
        .snapshot()
        .page(p1.next_cursor.as_deref(), v)
        .unwrap()
        .tools_json
        .into_owned();
    assert_eq!(names(&p2b), ["d", "e"]);
    for bad in ["", "!!", "bm9wZQ"] {
        assert!(s.page(Some(bad), v).is_err(), "{bad:?}");
    }
}

#[test]
fn pages_are_cut_by_bytes_too() {
    let r = Registry::new(Paging {
        max_tools: usize::MAX,
        max_bytes: 120,
    });
    for n in ["a", "b", "c"] {
        r.register(named(n)).unwrap();
    }
    let s = r.snapshot();
    let v = ProtocolVersion::V2025_06_18;
    let mut cursor = None;
    let mut sizes = Vec::new();
    loop {
        let p = s.page(cursor.as_deref(), v).unwrap();
        assert!(p.tools_json.len() <= 120, "{}", p.tools_json);
        sizes.push(
            serde_json::from_str::<Vec<Value>>(&p.tools_json)
                .unwrap()
                .len(),
        );
        match p.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(sizes.iter().sum::<usize>(), 3);
    assert!(sizes.len() > 1, "{sizes:?}");
    // A single tool bigger than the budget still gets a page of its own.
    let tiny = Registry::new(Paging {
        max_tools: usize::MAX,
        max_bytes: 10,
    });
    tiny.register(named("a")).unwrap();
    tiny.register(named("b")).unwrap();
    let snap = tiny.snapshot();
    let p = snap.page(None, v).unwrap();
    assert_eq!(
        serde_json::from_str::<Vec<Value>>(&p.tools_json)
            .unwrap()
            .len(),
        1
    );
    assert!(p.next_cursor.is_some());
}

#[test]
fn an_empty_registry_has_one_empty_page() {
    let r = Registry::new(Paging::default());
    let p = r
        .snapshot()
        .page(None, ProtocolVersion::LATEST)
        .unwrap()
        .tools_json
        .into_owned();
    assert_eq!(p, "[]");
}

#[test]
fn a_view_pages_over_its_own_tools_and_cursors_name_only_them() {
    let r = Registry::new(Paging {
        max_tools: 2,
        ..Paging::default()
    });
    for n in ["a1", "b1", "a2", "b2", "a3", "b3"] {
        r.register(named(n)).unwrap();
    }
    let view = crate::view::View::new(
        "a",
        Arc::new(|n: &str| n.starts_with('a')),
        None,
        Default::default(),
    );
    let snapshot = r.snapshot();
    let v = ProtocolVersion::LATEST;
    let names = |json: &str| -> Vec<String> {
        let tools: Vec<Value> = serde_json::from_str(json).unwrap();
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = snapshot.page_in(&view, None, v).unwrap();
    assert_eq!(names(&first.tools_json), ["a1", "a2"]);
    let cursor = first.next_cursor.unwrap();
    assert_eq!(cursor, encode_cursor(snapshot.get("a2").unwrap()));
    let second = snapshot.page_in(&view, Some(&cursor), v).unwrap();
    assert_eq!(names(&second.tools_json), ["a3"]);
    assert_eq!(second.next_cursor, None);
    let none = crate::view::View::empty();
    let empty = snapshot.page_in(&none, None, v).unwrap();
    assert_eq!((&*empty.tools_json, empty.next_cursor), ("[]", None));
}
