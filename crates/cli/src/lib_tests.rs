use serde_json::Value;

const ROOT_README: &str = include_str!("../../../README.md");
const CRATE_README: &str = include_str!("../README.md");

/// The first ```rust block after the `## The library` heading.
fn library_block(readme: &str) -> &str {
    let section = &readme[readme.find("## The library").expect("a library section")..];
    let start = section.find("```rust").expect("a rust block") + "```rust".len();
    let body = &section[start..];
    let body = &body[body.find('\n').expect("a fence line") + 1..];
    &body[..body.find("\n```").expect("a closing fence")]
}

#[test]
fn the_readmes_show_the_same_snippet() {
    assert_eq!(library_block(ROOT_README), library_block(CRATE_README));
}

/// The JSON literal of the snippet's `json!(` … `)` tool definition.
fn definition_in(block: &str) -> Value {
    let start = block.find("json!(").expect("a json! definition") + "json!(".len();
    let text = &block[start..];
    let mut depth = 0usize;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = i + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    serde_json::from_str(&text[..end]).expect("the definition is JSON")
}

#[test]
fn the_snippets_tool_is_lint_clean() {
    let def = definition_in(library_block(CRATE_README));
    assert_eq!(def["name"], "negate");
    let report = toolwright_lint::lint(&[def], &toolwright_lint::Options::default());
    assert!(report.findings.is_empty(), "{}", report.render_human(false));
}

#[test]
fn the_readme_names_the_registry_entry() {
    let registry: Value = serde_json::from_str(include_str!("../../../server.json")).unwrap();
    let line = format!("mcp-name: {}", registry["name"].as_str().unwrap());
    assert!(CRATE_README.lines().any(|l| l == line), "{line} missing");
}

#[test]
fn the_registry_entry_names_this_crate_and_version() {
    let registry: Value = serde_json::from_str(include_str!("../../../server.json")).unwrap();
    assert_eq!(registry["version"], env!("CARGO_PKG_VERSION"));
    let package = &registry["packages"][0];
    assert_eq!(package["registryType"], "cargo");
    assert_eq!(package["identifier"], env!("CARGO_PKG_NAME"));
    assert_eq!(package["version"], env!("CARGO_PKG_VERSION"));
    assert!(registry["description"].as_str().unwrap().len() <= 100);
}

/// The MCP registry's schema for `server.json` (`$id` .../2025-09-29/server.schema.json), kept
/// beside the packaging scripts: the registry validates submissions against it.
fn registry_schema() -> toolwright_schema::Validator {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../packaging/registry/server.schema.json"
    ))
    .unwrap();
    toolwright_schema::Validator::compile(&schema).expect("the registry's schema compiles")
}

#[test]
fn the_registry_entry_is_valid_under_the_registrys_schema() {
    let registry: Value = serde_json::from_str(include_str!("../../../server.json")).unwrap();
    let schema_id = registry["$schema"].as_str().unwrap();
    assert!(
        schema_id.ends_with("/2025-09-29/server.schema.json"),
        "{schema_id}"
    );
    if let Err(violations) = registry_schema().validate(&registry) {
        panic!("{}", toolwright_schema::format_violations(&violations));
    }
}

#[test]
fn the_registrys_schema_refuses_what_the_registry_refuses() {
    let valid: Value = serde_json::from_str(include_str!("../../../server.json")).unwrap();
    let schema = registry_schema();
    let mut latest = valid.clone();
    latest["packages"][0]["version"] = "latest".into();
    let mut long = valid.clone();
    long["description"] = "x".repeat(101).into();
    let mut bad_name = valid.clone();
    bad_name["name"] = "toolwright".into();
    let mut unknown_key = valid;
    unknown_key["packages"][0]["registry_type"] = "cargo".into();
    for instance in [latest, long, bad_name, unknown_key] {
        assert!(!schema.is_valid(&instance), "accepted: {instance}");
    }
}
