use super::*;
use serde_json::json;

fn ok(text: &str) -> Value {
    to_json(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn err(text: &str) -> YamlError {
    to_json(text).expect_err(text)
}

#[test]
fn scalars_resolve_by_the_core_schema() {
    let doc = ok(
        "a: 1\nb: -2.5\nc: true\nd: ~\ne: null\nf: text\ng: '1'\nh: \"true\"\ni: 0x1f\nj: 0o17\nk: !!str 12\nl:\nm: 18446744073709551615\n",
    );
    assert_eq!(
        doc,
        json!({"a": 1, "b": -2.5, "c": true, "d": null, "e": null, "f": "text", "g": "1",
               "h": "true", "i": 31, "j": 15, "k": "12", "l": null, "m": 18446744073709551615u64})
    );
}

#[test]
fn structure_order_and_block_scalars_are_kept() {
    let doc = ok(
        "tools:\n  - name: b\n    command: [echo, '{x}']\n  - name: a\n    text: |\n      two\n      lines\nz: {}\ny: []\n",
    );
    assert_eq!(
        doc,
        json!({"tools": [{"name": "b", "command": ["echo", "{x}"]},
                         {"name": "a", "text": "two\nlines\n"}], "z": {}, "y": []})
    );
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["tools", "z", "y"],
        "document order, as serde_json keeps it"
    );
    assert_eq!(ok(""), Value::Null);
    assert_eq!(ok("# only a comment\n"), Value::Null);
    assert_eq!(ok("{\"a\": [1, 2]}"), json!({"a": [1, 2]}), "JSON is YAML");
}

#[test]
fn anchors_and_aliases_are_followed() {
    let doc = ok("base: &b {x: 1, y: [2]}\ncopy: *b\nlist: [&n 3, *n]\n");
    assert_eq!(
        doc,
        json!({"base": {"x": 1, "y": [2]}, "copy": {"x": 1, "y": [2]}, "list": [3, 3]})
    );
    let e = err("a: *nowhere\n");
    assert!(e.message.contains("anchor"), "{e}");
}

#[test]
fn what_json_cannot_hold_is_refused_with_its_place() {
    let e = err("a: 1\na: 2\n");
    assert_eq!(
        (e.line, e.message.as_str()),
        (2, "the key `a` appears twice")
    );
    assert!(err("? [1]\n: x\n").message.contains("keys must be text"));
    assert!(
        err("x: .inf\n")
            .message
            .contains("not a number JSON can hold")
    );
    assert_eq!(
        ok("1: one\ntrue: yes\n"),
        json!({"1": "one", "true": "yes"})
    );
    let e = err("a: 1\n---\nb: 2\n");
    assert_eq!(e.line, 2);
    assert!(e.message.contains("second document"), "{e}");
}

#[test]
fn syntax_errors_name_their_line() {
    let e = err("tools: [\n");
    assert_eq!(e.line, 2, "{e}");
    let e = err("a: b: c\n");
    assert_eq!(e.line, 1, "{e}");
    assert!(e.to_string().contains("at line 1 column"), "{e}");
}

#[test]
fn nesting_and_expansion_are_bounded() {
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(err(&deep).message.contains("nested more than 128"));
    let fine = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    ok(&fine);
    // Each line doubles the one before: 2^30 values from a few hundred bytes.
    let mut laughs = String::from("a0: &a0 [x, x]\n");
    for i in 1..30 {
        laughs.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}]\n", p = i - 1));
    }
    assert!(err(&laughs).message.contains("more than 1000000 values"));
}

#[test]
fn syntax_errors_are_placed_on_a_line_of_the_text() {
    let at = |text: &str| {
        let e = err(text);
        (e.line, e.column)
    };
    // The end of a text with no final newline: past its last character, not on a line after.
    assert_eq!(at("tools: [a"), (1, 10));
    // A lone `\r` ends no line here (yaml-rust2 ends one there).
    assert_eq!(at("a: 1\rb: [\r"), (1, 11));
    // Columns are characters.
    assert_eq!(at("é: [1"), (1, 6));
}
