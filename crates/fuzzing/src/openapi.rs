//! The `openapi` target: bytes as an OpenAPI description, imported.

use serde_json::Value;
use toolwright_openapi::load::parse_document;
use toolwright_openapi::{Loader, Location, Options, Spec};

/// Refuses every other document: the target reads only the bytes it is given.
struct Nothing;

impl Loader for Nothing {
    fn load(&self, location: &Location) -> Result<Vec<u8>, toolwright_openapi::Error> {
        Err(toolwright_openapi::Error::Fetch {
            location: location.display(),
            reason: "the fuzz target reads no other document".into(),
        })
    }
}

/// Parses `data` as a description (JSON or YAML) and imports every operation, with a fixed
/// server URL: never a panic; the written file reads back as YAML holding the tools made.
pub fn openapi(data: &[u8]) {
    let Ok(doc) = parse_document("fuzz.json", data) else {
        return;
    };
    let Ok(spec) = Spec::with_root(Location::File("fuzz.json".into()), doc, &Nothing) else {
        return;
    };
    let options = Options {
        server: Some("http://localhost:9".into()),
        ..Options::default()
    };
    let Ok(imported) = toolwright_openapi::import(&spec, &options) else {
        return;
    };
    let text = toolwright_openapi::render::tool_file(&imported);
    let back = toolwright_toolfile::yaml::to_json(&text).expect("the written file is YAML");
    let tools = back.get("tools").cloned().unwrap_or(Value::Null);
    assert_eq!(
        tools,
        Value::Array(imported.tools.clone()),
        "the written tools read back as made"
    );
}
