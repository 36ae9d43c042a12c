//! Whole-tool tests: the seed lesson's examples and rules that need every field.

use super::*;
use serde_json::json;

fn ids(tool: Value) -> Vec<&'static str> {
    let report = lint(&[tool], &Options::default());
    report.findings.iter().map(|f| f.rule.id()).collect()
}

fn two_numbers() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "First number"},
            "b": {"type": "number", "description": "Second number"}
        },
        "required": ["a", "b"]
    })
}

const NONE: [&str; 0] = [];

#[test]
fn seed_good_definitions_are_clean() {
    let add = json!({"name": "add", "description": "Add two numbers together and return the sum", "inputSchema": two_numbers()});
    let multiply = json!({"name": "multiply", "description": "Multiply two numbers and return the product", "inputSchema": two_numbers()});
    let search_files = json!({
        "name": "search_files",
        "description": "Search for files in a directory matching a pattern. Returns a list of file paths that match. Useful for finding files by name, extension, or pattern.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "directory": {"type": "string", "description": "Directory path to search in"},
                "pattern": {"type": "string", "description": "Glob pattern to match (e.g., '*.py', 'test_*.txt')"},
                "recursive": {"type": "boolean", "description": "Search subdirectories recursively", "default": false},
                "max_results": {"type": "integer", "description": "Maximum number of results to return", "minimum": 1, "maximum": 1000, "default": 100}
            },
            "required": ["directory", "pattern"]
        }
    });
    let report = lint(&[add, multiply, search_files], &Options::default());
    assert_eq!(report.findings, vec![], "{}", report.render_human(false));
}

#[test]
fn seed_bad_examples_raise_their_rules() {
    let with = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": two_numbers()});
    let good = "Add two numbers together and return the sum";
    assert_eq!(
        ids(with("search_files", "Searches files")),
        [
            "description-short",
            "description-vague",
            "description-no-return"
        ]
    );
    assert_eq!(
        ids(with("doThing", good)),
        ["name-snake-case", "name-vague"]
    );
    assert_eq!(ids(with("x", good)), ["name-vague"]);
    assert_eq!(
        ids(with("my-tool-1", good)),
        ["name-snake-case", "name-vague"]
    );
}

#[test]
fn duplicates_are_found_across_tools() {
    let t = json!({"name": "add", "description": "Add two numbers together and return the sum", "inputSchema": two_numbers()});
    let report = lint(&[t.clone(), t.clone(), t], &Options::default());
    let dup: Vec<(usize, &str)> = report
        .findings
        .iter()
        .map(|f| (f.index, f.rule.id()))
        .collect();
    assert_eq!(dup, [(1, "name-duplicate"), (2, "name-duplicate")]);
    assert!(report.render_human(false).starts_with("add (#1)\n"));
}

#[test]
fn tool_shape() {
    assert_eq!(ids(json!("add")), ["tool-shape"]);
    assert_eq!(
        ids(
            json!({"description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}})
        ),
        ["tool-shape"]
    );
    assert_eq!(
        ids(
            json!({"name": 7, "description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}})
        ),
        ["tool-shape"]
    );
    assert_eq!(
        ids(
            json!({"name": "add", "description": "Add two numbers together and return the sum", "parameters": {"type": "object"}})
        ),
        ["tool-shape"]
    );
    assert_eq!(
        ids(
            json!({"name": "add", "description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}, "annotations": []})
        ),
        ["tool-shape"]
    );
}

#[test]
fn field_typos() {
    assert_eq!(
        ids(
            json!({"name": "add", "descripton": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}})
        ),
        ["description-missing", "keyword-typo"]
    );
    assert_eq!(
        ids(
            json!({"name": "add", "description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}, "annotations": {"readOnly": true}})
        ),
        ["keyword-typo"]
    );
}

#[test]
fn annotations_and_output() {
    let tool = json!({
        "name": "get_forecast",
        "description": "Get the weather forecast for a city. Returns one entry per day.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]},
        "outputSchema": {"type": "array", "items": {"type": "object"}},
        "annotations": {"openWorldHint": true}
    });
    assert_eq!(
        ids(tool),
        ["output-root-not-object", "hint-default-suspicious"]
    );
}

#[test]
fn disabled_rules_are_not_reported() {
    let options = Options {
        disabled: vec![Rule::NameVague],
    };
    let report = lint(
        &[
            json!({"name": "x", "description": "Add two numbers together and return the sum", "inputSchema": {"type": "object"}}),
        ],
        &options,
    );
    assert!(report.findings.is_empty());
}

#[test]
fn documents() {
    let text = "tools:\n  - name: x\n    description: Add two numbers together and return the sum\n    inputSchema: {type: object}\n";
    let report = lint_document(text, &Options::default()).unwrap();
    assert_eq!(report.tools.len(), 1);
    assert!(matches!(
        lint_document("[1, 2", &Options::default()),
        Err(LintError::Parse { .. })
    ));
}

#[test]
fn consistent_hints_on_a_read_only_tool_are_fine() {
    let tool = json!({
        "name": "add", "title": "Add",
        "description": "Add two numbers together and return the sum.",
        "inputSchema": two_numbers(),
        "outputSchema": {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]},
        "annotations": {"title": "Add", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    });
    assert_eq!(ids(tool), NONE);
}
