//! The action rules, one table per rule: each row a tool and where the rule fires on it
//! (no pointer: it does not fire).

use super::*;
use crate::finding::findings_of;
use serde_json::json;

/// A clean declared tool: `wc -w {path}`, `path` required, annotated.
fn base() -> Value {
    json!({
        "name": "word_count",
        "description": "Count the words in a text file. Returns {words}.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File to count"}},
            "required": ["path"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false},
        "command": ["wc", "-w", "{path}"]
    })
}

/// The base tool with members replaced (`null` removes one).
fn with(changes: Value) -> Value {
    let mut t = base();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            t.as_object_mut().unwrap().remove(k);
        } else {
            t[k] = v.clone();
        }
    }
    t
}

/// A tool with `properties`/`required` and an action.
fn tool(properties: Value, required: Value, action: Value) -> Value {
    let mut t = with(json!({"command": null}));
    t["inputSchema"]["properties"] = properties;
    t["inputSchema"]["required"] = required;
    for (k, v) in action.as_object().unwrap() {
        t[k] = v.clone();
    }
    t
}

/// Where `rule` fires on `tool`.
fn fired(rule: Rule, tool: &Value) -> Vec<String> {
    findings_of(|sink| check(tool, sink))
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| f.pointer)
        .collect()
}

fn table(rule: Rule, rows: &[(Value, &[&str])]) {
    for (tool, want) in rows {
        assert_eq!(fired(rule, tool), *want, "{}: {tool}", rule.id());
    }
}

const NONE: &[&str] = &[];

#[test]
fn the_base_tool_is_clean() {
    let all = findings_of(|sink| check(&base(), sink));
    assert_eq!(all, vec![]);
}

#[test]
fn action_missing() {
    let p = json!({"path": {"type": "string"}});
    table(
        Rule::ActionMissing,
        &[
            (with(json!({"command": null})), &[""]),
            (base(), NONE),
            (
                tool(
                    p,
                    json!(["path"]),
                    json!({"http": {"url": "http://h/{path}"}}),
                ),
                NONE,
            ),
        ],
    );
    let f = findings_of(|sink| check(&with(json!({"command": null})), sink));
    assert_eq!(f[0].message, rules::NO_ACTION);
}

#[test]
fn declared_invalid() {
    table(
        Rule::DeclaredInvalid,
        &[
            (with(json!({"command": ["wc", 5]})), &["/command/1"]),
            (
                with(json!({"command": {"argv": ["wc"], "evn": {}}})),
                &["/command/evn"],
            ),
            // The loader's own refusal, which lint runs beside its rules.
            (with(json!({"command": []})), NONE),
            (with(json!({"http": {"url": "http://h/"}})), &["/http"]),
            (with(json!({"timeout": "soon"})), &["/timeout"]),
            (with(json!({"comand": ["wc"]})), &["/comand"]),
            (
                with(json!({"command": {"argv": ["wc", "{path}"], "env": {"A": "b"}}})),
                NONE,
            ),
            (
                with(json!({"timeout": "5s", "output": {"parse": "text"}})),
                NONE,
            ),
        ],
    );
}

#[test]
fn template_invalid() {
    table(
        Rule::TemplateInvalid,
        &[
            (with(json!({"command": ["wc", "{path"]})), &["/command/1"]),
            (
                with(json!({"command": ["wc", "{path:glob}"]})),
                &["/command/1"],
            ),
            (
                tool(
                    json!({}),
                    json!([]),
                    json!({"http": {"url": "http://h/", "headers": {"A": "${"}}}),
                ),
                &["/http/headers/A"],
            ),
            (
                with(json!({"command": ["wc", "{{literal}}", "{path}"]})),
                NONE,
            ),
        ],
    );
}

#[test]
fn placeholder_unknown() {
    let p = json!({"path": {"type": "string"}, "all": {"type": "boolean"}});
    table(
        Rule::PlaceholderUnknown,
        &[
            (with(json!({"command": ["wc", "{pth}"]})), &["/command/1"]),
            (
                with(json!({"command": ["git", {"when": "every", "args": ["--all"]}]})),
                &["/command/1/when"],
            ),
            (
                tool(
                    p.clone(),
                    json!(["path"]),
                    json!({"http": {"url": "http://h/{path}", "body": {"q": "{query}"}}}),
                ),
                &["/http/body/q"],
            ),
            (
                tool(
                    p,
                    json!(["path"]),
                    json!({"command": ["git", "{path}", {"when": "all", "args": ["--all"]}]}),
                ),
                NONE,
            ),
        ],
    );
    let f = fired(
        Rule::PlaceholderUnknown,
        &with(json!({"command": ["wc", "{pth}"]})),
    );
    assert_eq!(f.len(), 1);
    let f = findings_of(|sink| check(&with(json!({"command": ["wc", "{pth}"]})), sink));
    assert_eq!(
        f[0].message,
        "placeholder {pth} names no property of inputSchema (its properties are: path)"
    );
}

#[test]
fn placeholder_type() {
    let p = json!({"files": {"type": "array", "items": {"type": "string"}}, "path": {"type": "string"}});
    let r = json!(["files", "path"]);
    table(
        Rule::PlaceholderType,
        &[
            (
                tool(
                    p.clone(),
                    r.clone(),
                    json!({"command": ["cat", "{files}", "{path}"]}),
                ),
                &["/command/1"],
            ),
            (
                tool(
                    p.clone(),
                    r.clone(),
                    json!({"command": ["cat", "{path...}", "{files...}"]}),
                ),
                &["/command/1"],
            ),
            (
                tool(
                    p.clone(),
                    r.clone(),
                    json!({"command": ["cat", "{files...}", "{path}"]}),
                ),
                NONE,
            ),
            // In a body, exactly "{files}" is the array itself.
            (
                tool(
                    p,
                    r,
                    json!({"http": {"method": "POST", "url": "http://h/{path}", "body": {"f": "{files}"}}}),
                ),
                NONE,
            ),
        ],
    );
}

#[test]
fn program_placeholder() {
    let p = json!({"path": {"type": "string"}, "prog": {"type": "string"}});
    let r = json!(["path", "prog"]);
    table(
        Rule::ProgramPlaceholder,
        &[
            (
                tool(
                    p.clone(),
                    r.clone(),
                    json!({"command": ["{prog}", "{path}"]}),
                ),
                &["/command/0"],
            ),
            (
                tool(
                    p.clone(),
                    r.clone(),
                    json!({"command": {"argv": ["${TOOL}", "{path}", "{prog}"]}}),
                ),
                &["/command/argv/0"],
            ),
            (
                tool(
                    p,
                    r,
                    json!({"command": ["/usr/bin/wc", "{path}", "{prog}"]}),
                ),
                NONE,
            ),
        ],
    );
}

#[test]
fn argv_not_required() {
    let p = json!({"path": {"type": "string"}, "n": {"type": "integer"}, "all": {"type": "boolean"}, "files": {"type": "array", "items": {"type": "string"}}});
    let cmd = |argv: Value| {
        tool(
            p.clone(),
            json!(["path"]),
            json!({"command": {"argv": argv, "stdin": "{n}{all}{files...}"}}),
        )
    };
    table(
        Rule::ArgvNotRequired,
        &[
            (
                cmd(json!(["head", "-n", "{n}", "{path}"])),
                &["/command/argv/2"],
            ),
            (
                cmd(json!(["head", "--lines={n}", "{files...}", "{path}"])),
                &["/command/argv/1", "/command/argv/2"],
            ),
            (
                cmd(
                    json!(["head", ["-n", "{n}"], {"when": "all", "args": ["-a", "{files...}"]}, "{path}"]),
                ),
                NONE,
            ),
        ],
    );
    let f = findings_of(|sink| check(&cmd(json!(["head", "-n", "{n}", "{path}"])), sink));
    let f = f.iter().find(|f| f.rule == Rule::ArgvNotRequired).unwrap();
    assert_eq!(f.message, rules::not_required("n"));
}

#[test]
fn shell_program() {
    let shell = |argv: Value| with(json!({"command": argv}));
    table(
        Rule::ShellProgram,
        &[
            (shell(json!(["sh", "-c", "wc -w {path}"])), &["/command/1"]),
            (
                shell(json!(["/bin/bash", "-lc", "wc -w \"$1\"", "_", "{path}"])),
                &["/command/1"],
            ),
            (
                shell(json!([
                    "/usr/bin/env",
                    "-i",
                    "A=b",
                    "zsh",
                    "-c",
                    "wc",
                    "{path}"
                ])),
                &["/command/4"],
            ),
            (
                shell(json!(["cmd.exe", "/C", "type", "{path}"])),
                &["/command/1"],
            ),
            (
                shell(json!([
                    "pwsh",
                    "-NoProfile",
                    "-Command",
                    "Get-Content",
                    "{path}"
                ])),
                &["/command/2"],
            ),
            (shell(json!(["fish", ["-c", "{path}"]])), &["/command/1/0"]),
            (shell(json!(["bash", "./count.sh", "{path}"])), NONE),
            (shell(json!(["wc", "-c", "{path}"])), NONE),
            (shell(json!(["env", "wc", "-c", "{path}"])), NONE),
        ],
    );
}

#[test]
fn property_unused() {
    let p =
        json!({"path": {"type": "string"}, "n": {"type": "integer"}, "a/b": {"type": "string"}});
    table(
        Rule::PropertyUnused,
        &[
            (
                tool(
                    p.clone(),
                    json!(["path"]),
                    json!({"command": ["wc", "{path}"]}),
                ),
                &["/inputSchema/properties/a~1b", "/inputSchema/properties/n"],
            ),
            (
                tool(
                    p.clone(),
                    json!(["path"]),
                    json!({"command": {"argv": ["wc", "{path}", ["-n", "{n}"]], "env": {"X": "{a/b}"}}}),
                ),
                // `a/b` is no placeholder name, so that template is invalid, not a use.
                &["/inputSchema/properties/a~1b"],
            ),
            (
                tool(
                    json!({"id": {"type": "string"}, "q": {"type": "string"}, "tok": {"type": "string"}, "body": {"type": "object"}}),
                    json!(["id"]),
                    json!({"http": {"method": "POST", "url": "http://h/{id}", "query": {"q": "{q}"}, "headers": {"T": "{tok}"}, "body": "{body}"}}),
                ),
                NONE,
            ),
            // No action read: nothing to say what is used.
            (tool(p, json!([]), json!({})), NONE),
        ],
    );
}

#[test]
fn hint_read_only_method() {
    let p = json!({"id": {"type": "string"}});
    let http = |method: &str, read_only: bool| {
        let mut t = tool(
            p.clone(),
            json!(["id"]),
            json!({"http": {"method": method, "url": "http://h/{id}"}}),
        );
        t["annotations"] = json!({"readOnlyHint": read_only});
        t
    };
    table(
        Rule::HintReadOnlyMethod,
        &[
            (http("POST", true), &["/annotations/readOnlyHint"]),
            (http("delete", true), &["/annotations/readOnlyHint"]),
            (http("GET", true), NONE),
            (http("head", true), NONE),
            (http("POST", false), NONE),
            (
                tool(p, json!(["id"]), json!({"http": {"url": "http://h/{id}"}})),
                NONE,
            ),
        ],
    );
}

#[test]
fn annotations_missing() {
    table(
        Rule::AnnotationsMissing,
        &[
            (with(json!({"annotations": null})), &["/annotations"]),
            (with(json!({"annotations": {}})), NONE),
            (base(), NONE),
        ],
    );
}
