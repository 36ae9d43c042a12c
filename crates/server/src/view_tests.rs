use super::*;
use serde_json::json;
use toolwright_testkit::table;

fn caller(sub: &str, scopes: &[&str], claims: Value) -> Caller {
    let Value::Object(claims) = claims else {
        unreachable!()
    };
    Caller::new(
        Some(sub.into()),
        scopes.iter().map(|s| (*s).to_owned()).collect(),
        claims,
    )
}

fn prefix(p: &'static str) -> Selects {
    Arc::new(move |n: &str| n.starts_with(p))
}

fn views() -> Views {
    Views::new(vec![
        View::new(
            "read",
            prefix("get"),
            Some(When::Scope("tickets:read".into())),
            HashMap::new(),
        ),
        View::new(
            "admin",
            prefix(""),
            Some(When::Claim("groups".into(), json!("admins"))),
            HashMap::new(),
        ),
        View::new("open", prefix("ping"), None, HashMap::new()),
    ])
}

#[test]
fn when_admits() {
    let c = caller("u", &["a"], json!({"groups": ["x", "admins"], "tier": 2}));
    table! { |when: When, admitted: bool| assert_eq!(when.admits(Some(&c)), admitted, "{when:?}");
        (When::Scope("a".into()), true);
        (When::Scope("b".into()), false);
        (When::Claim("groups".into(), json!("admins")), true);
        (When::Claim("groups".into(), json!("ops")), false);
        (When::Claim("tier".into(), json!(2)), true);
        (When::Claim("tier".into(), json!("2")), false);
        (When::Claim("missing".into(), json!("x")), false);
    }
    assert!(!When::Scope("a".into()).admits(None));
}

#[test]
fn choose_and_for_path() {
    let v = views();
    let reader = caller("r", &["tickets:read"], json!({}));
    let admin = caller("a", &["tickets:read"], json!({"groups": "admins"}));
    let nobody = caller("n", &[], json!({}));
    table! { |who: Option<&Caller>, main: &str, read: bool, admin_path: bool, open: bool| {
            assert_eq!(v.choose(who).name(), main);
            assert_eq!(v.for_path("read", who).is_some(), read);
            assert_eq!(v.for_path("admin", who).is_some(), admin_path);
            assert_eq!(v.for_path("open", who).is_some(), open);
            assert!(v.for_path("nope", who).is_none());
        };
        (Some(&reader), "read", true, false, true);
        (Some(&admin), "read", true, true, true);
        (Some(&nobody), "", false, false, true);
        (None, "", false, false, true);
    }
    assert!(!v.choose(Some(&nobody)).shows("get_x"));
}

#[test]
fn a_view_named_default_serves_the_unmatched() {
    let v = Views::new(vec![
        View::new(
            "x",
            prefix("x"),
            Some(When::Scope("x".into())),
            HashMap::new(),
        ),
        View::new("default", prefix("d"), None, HashMap::new()),
    ]);
    table! { |scopes: &[&str], main: &str| assert_eq!(v.choose(Some(&caller("u", scopes, json!({})))).name(), main);
        (&["x"], "x");
        (&[], "default");
    }
}

#[test]
fn overrides_apply_to_their_tool_only() {
    let mut overrides = HashMap::new();
    let annotations = ToolAnnotations {
        read_only_hint: Some(true),
        ..ToolAnnotations::default()
    };
    overrides.insert(
        "a".to_owned(),
        Override::new(None, Some("Reads.".into()), Some(annotations.clone())),
    );
    let view = View::new("v", prefix(""), None, overrides);
    let mut a = ToolDefinition::new("a", json!({"type": "object"}));
    a.title = Some("A".into());
    let shown = view.definition(&a);
    assert_eq!(shown.title.as_deref(), Some("A"));
    assert_eq!(shown.description.as_deref(), Some("Reads."));
    assert_eq!(shown.annotations.as_ref(), Some(&annotations));
    let b = ToolDefinition::new("b", json!({"type": "object"}));
    assert!(matches!(view.definition(&b), Cow::Borrowed(_)));
}
