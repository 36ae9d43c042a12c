//! Rules on a tool's `annotations` (behaviour hints).
//!
//! Defaults per the spec: `readOnlyHint` false, `destructiveHint` true, `idempotentHint`
//! false, `openWorldHint` true; the destructive and idempotent hints mean something only
//! when the tool is not read-only.

use serde_json::{Map, Value};

use crate::finding::{Rule, Sink};
use crate::words::{ADDITIVE_VERBS, READ_VERBS, identifier_words};

/// The hint fields (besides `title`).
const BOOLEAN_HINTS: &[&str] = &[
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

pub(crate) fn check(name: &str, annotations: &Map<String, Value>, sink: &mut Sink<'_>) {
    for key in BOOLEAN_HINTS {
        if let Some(v) = annotations.get(*key)
            && !v.is_boolean()
        {
            sink.add(
                Rule::ToolShape,
                format!("/annotations/{key}"),
                format!("{key} is {v}, not a boolean"),
                format!("set {key} to true or false"),
            );
        }
    }
    let flag = |key: &str| annotations.get(key).and_then(Value::as_bool);
    if flag("readOnlyHint") == Some(true) {
        if flag("destructiveHint") == Some(true) {
            sink.add(
                Rule::HintMeaningless,
                "/annotations/destructiveHint",
                "destructiveHint: true on a read-only tool: clients ignore it, and it contradicts \
                 readOnlyHint",
                "remove destructiveHint (or set readOnlyHint false if the tool does modify things)",
            );
        }
        if flag("idempotentHint") == Some(false) {
            sink.add(
                Rule::HintMeaningless,
                "/annotations/idempotentHint",
                "idempotentHint: false on a read-only tool: clients ignore it, and a tool that \
                 changes nothing is idempotent",
                "remove idempotentHint (or set readOnlyHint false if the tool does modify things)",
            );
        }
    }
    let words = identifier_words(name);
    let Some(verb) = words.first().map(String::as_str) else {
        return;
    };
    if READ_VERBS.contains(&verb) && !annotations.contains_key("readOnlyHint") {
        sink.add(
            Rule::HintDefaultSuspicious,
            "/annotations",
            format!(
                "the name {name:?} suggests the tool only reads, but readOnlyHint is left to its \
                 default (false), so clients treat it as modifying things"
            ),
            "set readOnlyHint: true if the tool changes nothing, else rename it",
        );
    }
    if ADDITIVE_VERBS.contains(&verb)
        && flag("readOnlyHint") != Some(true)
        && !annotations.contains_key("destructiveHint")
    {
        sink.add(
            Rule::HintDefaultSuspicious,
            "/annotations",
            format!(
                "the name {name:?} suggests the tool only adds things, but destructiveHint is left \
                 to its default (true), so clients treat it as deleting or overwriting"
            ),
            "set destructiveHint: false if the tool never deletes or overwrites anything",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::findings_of;
    use serde_json::json;

    fn rules(name: &str, annotations: Value) -> Vec<(&'static str, String)> {
        findings_of(|sink| check(name, annotations.as_object().unwrap(), sink))
            .iter()
            .map(|f| (f.rule.id(), f.pointer.clone()))
            .collect()
    }

    #[test]
    fn hints() {
        let none: Vec<(&str, String)> = vec![];
        let full = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
        assert_eq!(rules("add", full), none);
        assert_eq!(
            rules("t", json!({"readOnlyHint": true, "destructiveHint": true})),
            [("hint-meaningless", "/annotations/destructiveHint".into())]
        );
        assert_eq!(
            rules("t", json!({"readOnlyHint": true, "idempotentHint": false})),
            [("hint-meaningless", "/annotations/idempotentHint".into())]
        );
        assert_eq!(
            rules("t", json!({"readOnlyHint": false, "destructiveHint": true})),
            none
        );
        assert_eq!(
            rules("list_notes", json!({"openWorldHint": false})),
            [("hint-default-suspicious", "/annotations".into())]
        );
        assert_eq!(rules("getNotes", json!({"readOnlyHint": false})), none);
        assert_eq!(
            rules("create_note", json!({"title": "New note"})),
            [("hint-default-suspicious", "/annotations".into())]
        );
        assert_eq!(
            rules("create_note", json!({"destructiveHint": false})),
            none
        );
        assert_eq!(rules("delete_note", json!({"title": "Delete"})), none);
        assert_eq!(
            rules("t", json!({"readOnlyHint": "yes"})),
            [("tool-shape", "/annotations/readOnlyHint".into())]
        );
    }
}
