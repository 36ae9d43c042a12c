//! The JSON body, built as a value: a string that is exactly `"{name}"` becomes the
//! argument's JSON value (any type, as is); other strings are templates whose result is a
//! JSON string; objects and arrays recurse; a member (or array item) whose arguments are
//! absent is left out. serde_json writes the result, so an argument is always data inside
//! the JSON, never syntax.

use super::encode::{self, Env};
use crate::error::{Problem, RunError, Seg};
use serde_json::{Map, Value};
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::template::Template;

/// A compiled `body:`.
#[derive(Debug, Clone)]
pub(crate) enum BodyTemplate {
    /// `"{name}"`: the argument's value.
    Whole(String),
    /// Any other string: a template.
    Text(Template),
    /// A number, boolean or null, as written.
    Fixed(Value),
    /// An array, item by item.
    Array(Vec<BodyTemplate>),
    /// An object, member by member.
    Object(Vec<(String, BodyTemplate)>),
}

impl BodyTemplate {
    /// Compiles a body, reporting under `http.body...`.
    pub(crate) fn compile(value: &Value, input: &InputInfo) -> Result<BodyTemplate, Problem> {
        let mut at = vec![Seg::from("body")];
        compile_at(value, input, &mut at)
    }

    /// The arguments it names.
    pub(crate) fn args(&self, out: &mut Vec<String>) {
        match self {
            BodyTemplate::Whole(n) => out.push(n.clone()),
            BodyTemplate::Text(t) => out.extend(t.args().map(|a| a.name.clone())),
            BodyTemplate::Fixed(_) => {}
            BodyTemplate::Array(items) => items.iter().for_each(|i| i.args(out)),
            BodyTemplate::Object(members) => members.iter().for_each(|(_, m)| m.args(out)),
        }
    }

    /// The value for a call; `None` when an argument it needs is absent. `secret` is set
    /// when any of it came from `${VAR}` (such a body never follows a redirect elsewhere).
    pub(crate) fn build(
        &self,
        args: &Map<String, Value>,
        env: Env<'_>,
        secret: &mut bool,
    ) -> Result<Option<Value>, RunError> {
        Ok(match self {
            BodyTemplate::Whole(n) => args.get(n).filter(|v| !v.is_null()).cloned(),
            BodyTemplate::Text(t) => encode::fill_plain(t, args, env)?.map(|f| {
                *secret |= f.secret;
                Value::String(f.text)
            }),
            BodyTemplate::Fixed(v) => Some(v.clone()),
            BodyTemplate::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(v) = item.build(args, env, secret)? {
                        out.push(v);
                    }
                }
                Some(Value::Array(out))
            }
            BodyTemplate::Object(members) => {
                let mut out = Map::new();
                for (k, m) in members {
                    if let Some(v) = m.build(args, env, secret)? {
                        out.insert(k.clone(), v);
                    }
                }
                Some(Value::Object(out))
            }
        })
    }
}

fn compile_at(
    value: &Value,
    input: &InputInfo,
    at: &mut Vec<Seg>,
) -> Result<BodyTemplate, Problem> {
    Ok(match value {
        Value::String(s) => {
            let t = Template::parse(s).map_err(|e| Problem::new(at.clone(), e.to_string()))?;
            if let Some(a) = t.whole_arg()
                && !a.spread
                && !a.dash
            {
                if !input.properties.contains_key(&a.name) {
                    // The same message as any placeholder naming no property.
                    input.check_ref(a, at)?;
                }
                BodyTemplate::Whole(a.name.clone())
            } else {
                if let Some(a) = t.args().find(|a| a.spread || a.dash) {
                    return Err(Problem::new(
                        at.clone(),
                        format!(
                            "{{{}{}}} is for argv only; in a body write {{{}}}",
                            a.name,
                            if a.spread { "..." } else { ":dash" },
                            a.name
                        ),
                    ));
                }
                input.check_template(&t, at)?;
                BodyTemplate::Text(t)
            }
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                out.push(compile_at(item, input, at)?);
                at.pop();
            }
            BodyTemplate::Array(out)
        }
        Value::Object(members) => {
            let mut out = Vec::with_capacity(members.len());
            for (k, v) in members {
                at.push(Seg::Key(k.clone()));
                out.push((k.clone(), compile_at(v, input, at)?));
                at.pop();
            }
            BodyTemplate::Object(out)
        }
        other => BodyTemplate::Fixed(other.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> InputInfo {
        InputInfo::of(&json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"}, "n": {"type": "integer"},
                "o": {"type": "object"}, "list": {"type": "array"}, "opt": {"type": "string"}
            }
        }))
    }

    fn build(body: Value, args: Value) -> Option<Value> {
        build_marked(body, args).0
    }

    /// The value, and whether `${VAR}` filled any of it.
    fn build_marked(body: Value, args: Value) -> (Option<Value>, bool) {
        let mut secret = false;
        let v = BodyTemplate::compile(&body, &input())
            .unwrap()
            .build(
                args.as_object().unwrap(),
                &|v| (v == "TOKEN").then(|| "t\"k".into()),
                &mut secret,
            )
            .unwrap();
        (v, secret)
    }

    #[test]
    fn a_body_knows_whether_it_holds_a_secret() {
        let args = json!({"s": "x"});
        assert!(!build_marked(json!({"a": "{s}", "b": [1, "n={s}"]}), args.clone()).1);
        assert!(build_marked(json!({"a": "{s}", "b": [1, "t=${TOKEN}"]}), args.clone()).1);
        // Left out with its member: not sent, so not a secret of this body.
        assert!(!build_marked(json!({"a": "{s}", "b": "${TOKEN} {opt}"}), args).1);
    }

    #[test]
    fn values_stay_data() {
        let body = json!({"s": "{s}", "greeting": "hello {s}!", "n": "{n}", "o": "{o}",
                          "list": "{list}", "fixed": 3, "opt": "{opt}", "tok": "${TOKEN}",
                          "nested": {"inner": ["{opt}", "{s}", true]}});
        #[rustfmt::skip]
        let cases = [
            "plain",
            "quote\" , \"admin\": true, \"x\": \"",
            "back\\slash\\",
            "new\nline\r\n",
            "}{\"",
            "\u{0}nul",
            "ünïcödé ☃",
        ];
        for s in cases {
            let args = json!({"s": s, "n": 7, "o": {"a": [1, "b"]}, "list": [1, {"x": null}]});
            let got = build(body.clone(), args).unwrap();
            // What goes on the wire, parsed back, is exactly the argument.
            let wire = serde_json::to_vec(&got).unwrap();
            let back: Value = serde_json::from_slice(&wire).unwrap();
            assert_eq!(back["s"], json!(s), "{s:?}");
            assert_eq!(back["greeting"], json!(format!("hello {s}!")), "{s:?}");
            assert_eq!(back["n"], json!(7));
            assert_eq!(back["o"], json!({"a": [1, "b"]}));
            assert_eq!(back["list"], json!([1, {"x": null}]));
            assert_eq!(back["tok"], json!("t\"k"));
            assert!(
                back.get("opt").is_none() && back.get("admin").is_none(),
                "{back}"
            );
            assert_eq!(back["nested"], json!({"inner": [s, true]}));
        }
    }

    #[test]
    fn whole_body_absent() {
        assert_eq!(build(json!("{opt}"), json!({})), None);
        assert_eq!(build(json!("{n}"), json!({"n": 1})), Some(json!(1)));
        assert_eq!(build(json!({}), json!({})), Some(json!({})));
    }

    #[test]
    fn refusals() {
        let bad = [
            (
                json!({"a": {"b": "{nope}"}}),
                "body.a.b",
                "names no property",
            ),
            (json!(["x", "{list...}"]), "body[1]", "argv only"),
            (json!({"a": "x {o}"}), "body.a", "takes one value"),
            (json!({"a": "{s"}), "body.a", "not closed"),
        ];
        for (body, at, want) in bad {
            let e = BodyTemplate::compile(&body, &input()).unwrap_err();
            assert_eq!(e.path_text(), at, "{body}");
            assert!(e.message.contains(want), "{body}: {e}");
        }
    }
}
