use super::*;
use serde_json::json;

fn spec(v: Value) -> OutputSpec {
    serde_json::from_value(v).expect("spec")
}

fn shaper(output: Value, schema: Option<Value>) -> Shaper {
    Shaper::compile(Some(&spec(output)), schema.as_ref()).expect("compiles")
}

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// `Ok` with the structured value (text as `{"TEXT": ...}`) or the error.
fn shaped(s: &Shaper, bytes: &[u8]) -> Result<Value, RunError> {
    match run(s.shape(bytes.to_vec())) {
        Ok(Shaped::Structured(v)) => Ok(v),
        Ok(Shaped::Text(t)) => Ok(json!({ "TEXT": t })),
        Err(e) => Err(e),
    }
}

macro_rules! shape_table {
    ($($output:expr, $schema:expr, $bytes:expr => $want:expr;)*) => {$(
        let s = shaper($output, $schema);
        let got = shaped(&s, $bytes).map_err(|e| e.to_string());
        assert_eq!(got, $want, "output {} on {:?}", $output, String::from_utf8_lossy($bytes));
    )*};
}

/// Asserts an error whose message contains the text.
fn err_has(want: &str) -> impl Fn(&Result<Value, RunError>) -> bool + '_ {
    move |got| matches!(got, Err(e) if e.to_string().contains(want))
}

macro_rules! shape_fails {
    ($($output:expr, $schema:expr, $bytes:expr => $want:expr;)*) => {$(
        let s = shaper($output, $schema);
        let got = shaped(&s, $bytes);
        assert!(err_has($want)(&got), "output {} on {:?}: {got:?}, want an error with {:?}",
            $output, String::from_utf8_lossy($bytes), $want);
    )*};
}

#[test]
fn text_is_lossy_utf8() {
    assert_eq!(
        run(Shaper::compile(None, None)
            .expect("compiles")
            .shape(b"caf\xc3\xa9 \xff!".to_vec()))
        .expect("shapes"),
        Shaped::Text("café \u{fffd}!".into())
    );
    shape_table! {
        json!({"parse": "text"}), None, b"hello\n" => Ok(json!({"TEXT": "hello\n"}));
        json!({}), None, b"" => Ok(json!({"TEXT": ""}));
        json!({"jq": "length"}), None, b"abc" => Ok(json!({"result": 3}));
        json!({"jq": "{line: rtrimstr(\"\\n\")}"}), None, b"hi\n" => Ok(json!({"line": "hi"}));
        json!({"jq": "."}), None, b"\xff" => Ok(json!({"result": "\u{fffd}"}));
    }
}

#[test]
fn json_parses_and_wraps() {
    shape_table! {
        json!({"parse": "json"}), None, br#"{"a": 1}"# => Ok(json!({"a": 1}));
        json!({"parse": "json"}), None, b"[1, 2]" => Ok(json!({"result": [1, 2]}));
        json!({"parse": "json"}), None, b" 42 \n" => Ok(json!({"result": 42}));
        json!({"parse": "json"}), None, b"\"s\"" => Ok(json!({"result": "s"}));
        json!({"parse": "json"}), None, b"null" => Ok(json!({"result": null}));
        json!({"parse": "json"}), None, b"true" => Ok(json!({"result": true}));
    }
    shape_fails! {
        json!({"parse": "json"}), None, b"{\"a\": " => "the output is not JSON";
        json!({"parse": "json"}), None, b"1 2" => "the output is not JSON";
        json!({"parse": "json"}), None, b"" => "the output is not JSON";
    }
}

#[test]
fn json_refuses_absurd_nesting_without_overflowing() {
    let at_limit = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let s = shaper(json!({"parse": "json"}), None);
    assert!(shaped(&s, at_limit.as_bytes()).is_ok());
    for depth in [128, 100_000, 5_000_000] {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let got = shaped(&s, deep.as_bytes());
        assert!(
            err_has("recursion limit exceeded")(&got),
            "{depth}: {got:?}"
        );
        assert!(err_has("deeper than 127")(&got), "{depth}: {got:?}");
    }
}

#[test]
fn regex_named_groups_and_conversions() {
    let schema = Some(json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"},
        "s": {"type": "string"}, "m": {"type": ["integer", "null"]}, "t": {"type": ["string", "integer"]}
    }}));
    let words = json!({"parse": "regex", "pattern": r"^\s*(?P<words>\d+)"});
    shape_table! {
        words.clone(), None, b"  12 file" => Ok(json!({"words": "12"}));
        words.clone(), Some(json!({"properties": {"words": {"type": "integer"}}})), b"  12 file"
            => Ok(json!({"words": 12}));
        json!({"parse": "regex", "pattern": "(?P<n>-?\\d+) (?P<x>\\S+) (?P<ok>\\w+) (?P<s>\\d+)"}),
            schema.clone(), b"-7 2.5 true 09" => Ok(json!({"n": -7, "x": 2.5, "ok": true, "s": "09"}));
        json!({"parse": "regex", "pattern": "(?P<x>\\S+)"}), schema.clone(), b"3" => Ok(json!({"x": 3}));
        json!({"parse": "regex", "pattern": "(?P<x>\\S+)"}), schema.clone(), b"1e3" => Ok(json!({"x": 1000.0}));
        json!({"parse": "regex", "pattern": "(?P<n>\\d+)"}), schema.clone(), b"18446744073709551615"
            => Ok(json!({"n": 18_446_744_073_709_551_615_u64}));
        json!({"parse": "regex", "pattern": "(?P<m>\\d+)"}), schema.clone(), b"5" => Ok(json!({"m": 5}));
        json!({"parse": "regex", "pattern": "(?P<t>\\d+)"}), schema.clone(), b"5" => Ok(json!({"t": "5"}));
        // A group that did not take part is absent; the first match counts.
        json!({"parse": "regex", "pattern": "(?P<a>a)|(?P<b>b)"}), None, b"xbxa" => Ok(json!({"b": "b"}));
        // Unnamed groups are not members.
        json!({"parse": "regex", "pattern": "(x)(?P<y>y)"}), None, b"xy" => Ok(json!({"y": "y"}));
        // With jq, the schema describes jq's output: groups stay text for jq to convert.
        json!({"parse": "regex", "pattern": "(?P<n>\\d+)", "jq": "{n: (.n | tonumber)}"}),
            schema.clone(), b"41" => Ok(json!({"n": 41}));
        json!({"parse": "regex", "pattern": "(?P<n>\\d+)", "jq": ".n"}), schema.clone(), b"41"
            => Ok(json!({"result": "41"}));
        json!({"parse": "regex", "pattern": "(?P<s>.+)"}), None, b"caf\xff" => Ok(json!({"s": "caf\u{fffd}"}));
    }
    shape_fails! {
        words.clone(), None, b"no digits" => "does not match the pattern";
        json!({"parse": "regex", "pattern": "(?P<n>\\S+)"}), schema.clone(), b"12x" => "group `n` matched \"12x\", which is not an integer";
        json!({"parse": "regex", "pattern": "(?P<n>\\S+)"}), schema.clone(), b"1.5" => "group `n`";
        json!({"parse": "regex", "pattern": "(?P<x>\\S+)"}), schema.clone(), b"nan" => "group `x` matched \"nan\", which is not a number";
        json!({"parse": "regex", "pattern": "(?P<x>\\S+)"}), schema.clone(), b"inf" => "group `x`";
        json!({"parse": "regex", "pattern": "(?P<ok>\\S+)"}), schema.clone(), b"yes" => "group `ok` matched \"yes\", which is not a boolean";
    }
}

#[test]
fn jq_reshapes_to_exactly_one_output() {
    let j = |code: &str| json!({"parse": "json", "jq": code});
    shape_table! {
        j(".items | map(.name)"), None, br#"{"items": [{"name": "a"}, {"name": "b"}]}"#
            => Ok(json!({"result": ["a", "b"]}));
        j("{total: (.items | length)}"), None, br#"{"items": [1, 2, 3]}"# => Ok(json!({"total": 3}));
        j(".a"), None, br#"{"a": {"b": 1}}"# => Ok(json!({"b": 1}));
        j(".[0] + 1"), None, b"[41]" => Ok(json!({"result": 42}));
        j("[.[] | select(. > 1)]"), None, b"[1, 2, 3]" => Ok(json!({"result": [2, 3]}));
        j("first(range(10))"), None, b"null" => Ok(json!({"result": 0}));
        j("try error(\"x\") catch ."), None, b"null" => Ok(json!({"result": "x"}));
        j(".x"), None, b"{}" => Ok(json!({"result": null}));
        j("12345678901234567890"), None, b"null" => Ok(json!({"result": 12_345_678_901_234_567_890_u64}));
    }
    shape_fails! {
        j("empty"), None, b"{}" => "gave no output";
        j(".[]"), None, b"[1, 2]" => "gave more than one output";
        j("1, error(\"boom\")"), None, b"null" => "boom";
        j("error(\"boom\")"), None, b"null" => "the jq expression failed: boom";
        j(".a.b"), None, b"{\"a\": 1}" => "cannot index";
        j("halt"), None, b"null" => "halted with status 0";
        j("nan"), None, b"null" => "not JSON";
        j("{(1): 2}"), None, b"null" => "not JSON";
        j("reduce range(200) as $i (0; [.])"), None, b"null" => "nested deeper than 127";
    }
}

#[test]
fn jq_leaves_out_the_environment() {
    let got = Shaper::compile(Some(&spec(json!({"jq": "env"}))), None);
    assert!(got.is_err(), "{got:?}");
    let got = Shaper::compile(Some(&spec(json!({"jq": "$ENV"}))), None);
    assert!(got.is_err(), "{got:?}");
}

#[test]
fn jq_time_limit_in_process_between_outputs() {
    // In-process (no runner configured) the deadline is kept between outputs: the call
    // answers at its limit even when the expression never yields.
    // (Not `[limit(1e9; repeat(1))]`: its abandoned thread would fill this process's memory.)
    for code in ["last(range(1e12))", "def f: f; f"] {
        let s = shaper(
            json!({"parse": "json", "jq": code, "jq_timeout": "200ms"}),
            None,
        );
        let start = std::time::Instant::now();
        let got = shaped(&s, b"null");
        let took = start.elapsed();
        assert!(
            err_has("ran past its time limit of 200ms")(&got),
            "{code}: {got:?}"
        );
        assert!(took < Duration::from_millis(1500), "{code}: took {took:?}");
    }
}

#[test]
fn compile_refusals() {
    let refused = |output: Value, schema: Option<Value>| -> Problem {
        Shaper::compile(Some(&spec(output.clone())), schema.as_ref())
            .expect_err(&format!("{output} should be refused"))
    };
    let table: &[(Value, Option<Value>, &str, &str)] = &[
        (
            json!({"parse": "regex", "pattern": "(?P<a>"}),
            None,
            "output.pattern",
            "regex parse error",
        ),
        (
            json!({"parse": "regex", "pattern": "(\\d+)"}),
            None,
            "output.pattern",
            "no named group",
        ),
        (
            json!({"parse": "regex", "pattern": "\\d+"}),
            None,
            "output.pattern",
            "no named group",
        ),
        (
            json!({"parse": "regex"}),
            None,
            "output.parse",
            "needs a `pattern`",
        ),
        (
            json!({"parse": "json", "pattern": "(?P<a>a)"}),
            None,
            "output.pattern",
            "only with `parse: regex`",
        ),
        (
            json!({"parse": "json", "jq": ".a |"}),
            None,
            "output.jq",
            "expected",
        ),
        (
            json!({"parse": "json", "jq": "{a"}),
            None,
            "output.jq",
            "expected",
        ),
        (
            json!({"parse": "json", "jq": "nosuchfilter"}),
            None,
            "output.jq",
            "undefined filter `nosuchfilter`",
        ),
        (
            json!({"parse": "json", "jq": "$nope"}),
            None,
            "output.jq",
            "undefined variable",
        ),
        (
            json!({"parse": "json", "jq_timeout": "2s"}),
            None,
            "output.jq_timeout",
            "there is no `jq`",
        ),
        (
            json!({"parse": "text"}),
            Some(json!({"type": "object"})),
            "outputSchema",
            "output is text",
        ),
        (
            json!({}),
            Some(json!({"type": "object"})),
            "outputSchema",
            "output is text",
        ),
    ];
    for (output, schema, at, message) in table {
        let p = refused(output.clone(), schema.clone());
        assert_eq!(p.path_text(), *at, "{output}: {p}");
        assert!(p.message.contains(message), "{output}: {p}");
    }
    // No `output:` at all with an outputSchema: text, refused.
    let p = Shaper::compile(None, Some(&json!({"type": "object"}))).expect_err("text");
    assert_eq!(p.path_text(), "outputSchema");
    // What is accepted with an outputSchema.
    for ok in [
        json!({"parse": "json"}),
        json!({"jq": "{x: .}"}),
        json!({"parse": "regex", "pattern": "(?P<a>a)"}),
    ] {
        assert!(
            Shaper::compile(Some(&spec(ok.clone())), Some(&json!({"type": "object"}))).is_ok(),
            "{ok}"
        );
    }
}

#[test]
fn jq_syntax_error_carries_jaq_message_and_where() {
    let p = Shaper::compile(Some(&spec(json!({"jq": ".a | [1,"}))), None).expect_err("refused");
    assert_eq!(p.at, vec![Seg::from("output"), Seg::from("jq")]);
    assert!(p.message.contains("expected"), "{p}");
    assert!(p.message.contains("at byte"), "{p}");
}

use crate::error::Seg;

/// In-process cost per call, to set beside the child runner's: `cargo test -p
/// toolwright-declared in_process_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn in_process_cost() {
    let s = shaper(json!({"parse": "json", "jq": "{n: .a}"}), None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut times: Vec<_> = (0..200)
        .map(|_| {
            let start = std::time::Instant::now();
            assert!(rt.block_on(s.shape(br#"{"a": 1}"#.to_vec())).is_ok());
            start.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "in-process, 200 calls: median {:?}, p90 {:?}",
        times[100], times[180]
    );
}
