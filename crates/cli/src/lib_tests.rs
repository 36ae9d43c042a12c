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

/// The toolwright crates each crate of the workspace depends on (its `[dependencies]`),
/// by package name, read from the manifests beside this one.
fn crate_graph() -> std::collections::BTreeMap<String, (std::path::PathBuf, Vec<String>)> {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/");
    let mut graph = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(crates).expect("crates/ is readable") {
        let dir = entry.expect("an entry").path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .expect("a package name")
            .to_owned();
        let deps = manifest
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .map(|section| {
                section
                    .lines()
                    .filter_map(|l| l.split([' ', '=', '.']).next())
                    .filter(|d| d.starts_with("toolwright-"))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        graph.insert(name, (dir, deps));
    }
    graph
}

/// "`a`, `b`" for a list of crate names.
fn crate_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn crate_readmes_say_where_each_crate_sits() {
    let graph = crate_graph();
    assert!(graph.len() >= 17, "{:?}", graph.keys());
    for (name, (dir, deps)) in &graph {
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|e| panic!("{name} has no README.md: {e}"));
        let users: Vec<String> = graph
            .iter()
            .filter(|(_, (_, d))| d.contains(name))
            .map(|(n, _)| n.clone())
            .collect();
        let depends = if deps.is_empty() {
            "Depends on no other toolwright crate.".to_owned()
        } else {
            format!("Depends on: {}.", crate_list(deps))
        };
        let used = if users.is_empty() {
            "Used by no other toolwright crate.".to_owned()
        } else {
            format!("Used by: {}.", crate_list(&users))
        };
        for line in [depends, used] {
            assert!(
                readme.lines().any(|l| l == line),
                "{}: the README should say\n{line}",
                dir.join("README.md").display()
            );
        }
    }
}
