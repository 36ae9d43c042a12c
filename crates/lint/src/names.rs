//! Rules on a tool's `name`: the spec's characters and length, snake_case, vagueness.
//! (Duplicates need every tool at once: see `lib.rs`.)

use toolwright_protocol::ToolNameError;
use toolwright_protocol::tool::name_errors;

use crate::finding::{Rule, Sink};
use crate::words::{GENERIC_NAME_WORDS, PLACEHOLDER_WORDS, identifier_words};

pub(crate) fn check(name: &str, sink: &mut Sink<'_>) {
    // The spec's rule (characters and length) is protocol's, as the server applies it.
    for error in name_errors(name) {
        let message = error.to_string();
        match error {
            ToolNameError::Empty => {
                sink.add(
                    Rule::NameLength,
                    "/name",
                    message,
                    "give the tool a snake_case name that says what it does, e.g. search_files",
                );
                return;
            }
            ToolNameError::TooLong { .. } => sink.add(
                Rule::NameLength,
                "/name",
                message,
                "shorten the name to 128 characters or fewer",
            ),
            // `Charset`, and any rule protocol adds later.
            _ => sink.add(
                Rule::NameCharset,
                "/name",
                message,
                format!("rename it {:?}", snake_case(name)),
            ),
        }
    }
    if !is_snake_case(name) {
        sink.add(
            Rule::NameSnakeCase,
            "/name",
            format!("{name:?} is not snake_case"),
            format!("rename it {:?}", snake_case(name)),
        );
    }
    if let Some(why) = vague(name) {
        sink.add(
            Rule::NameVague,
            "/name",
            format!("{name:?} {why}"),
            "name the tool after what it does, verb then object, e.g. search_files or get_weather",
        );
    }
}

/// `snake_case`, optionally namespaced with dots: `files.search_text`.
pub(crate) fn is_snake_case(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|segment| {
            segment.starts_with(|c: char| c.is_ascii_lowercase())
                && !segment.ends_with('_')
                && !segment.contains("__")
                && segment
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// The snake_case spelling of `name` (dots kept as namespace separators).
pub(crate) fn snake_case(name: &str) -> String {
    let segments: Vec<String> = name
        .split('.')
        .map(|s| identifier_words(s).join("_"))
        .filter(|s| !s.is_empty())
        .collect();
    let joined = segments.join(".");
    if joined.starts_with(|c: char| c.is_ascii_digit()) {
        format!("tool_{joined}")
    } else {
        joined
    }
}

/// Why the name is vague, or `None`.
fn vague(name: &str) -> Option<&'static str> {
    let letters = name.chars().filter(|c| c.is_alphabetic()).count();
    if letters < 3 {
        return Some("is too short to say what the tool does");
    }
    let words = identifier_words(name);
    if words
        .iter()
        .any(|w| PLACEHOLDER_WORDS.contains(&w.as_str()))
    {
        return Some("uses a placeholder word instead of saying what the tool does");
    }
    let generic = |w: &String| {
        GENERIC_NAME_WORDS.contains(&w.as_str()) || w.chars().all(|c| c.is_ascii_digit())
    };
    if words.iter().all(generic) {
        return Some("is made of generic words only and says nothing about what the tool does");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::findings_of;

    fn rules(name: &str) -> Vec<&'static str> {
        findings_of(|sink| check(name, sink))
            .iter()
            .map(|f| f.rule.id())
            .collect()
    }

    #[test]
    fn seed_names() {
        assert_eq!(rules("add"), [] as [&str; 0]);
        assert_eq!(rules("multiply"), [] as [&str; 0]);
        assert_eq!(rules("search_files"), [] as [&str; 0]);
        assert_eq!(rules("get_weather"), [] as [&str; 0]);
        assert_eq!(rules("doThing"), ["name-snake-case", "name-vague"]);
        assert_eq!(rules("x"), ["name-vague"]);
        assert_eq!(rules("my-tool-1"), ["name-snake-case", "name-vague"]);
    }

    #[test]
    fn spec_characters_and_length() {
        assert_eq!(rules("files.search_text"), [] as [&str; 0]);
        assert_eq!(rules("has space"), ["name-charset", "name-snake-case"]);
        assert_eq!(rules("ns/search"), ["name-charset", "name-snake-case"]);
        assert_eq!(rules(""), ["name-length"]);
        assert_eq!(
            rules(&"word_".repeat(26)),
            ["name-length", "name-snake-case"]
        );
        assert_eq!(rules(&format!("a{}", "_word".repeat(26))), ["name-length"]);
    }

    #[test]
    fn snake_case_suggestions() {
        assert_eq!(snake_case("doThing"), "do_thing");
        assert_eq!(snake_case("my-tool-1"), "my_tool_1");
        assert_eq!(snake_case("Get Weather!"), "get_weather");
        assert_eq!(snake_case("ns.getItem"), "ns.get_item");
        assert_eq!(snake_case("2fa"), "tool_2_fa");
    }

    #[test]
    fn snake_case_rule() {
        for good in ["a", "get_weather", "v2", "ns.tool_2"] {
            assert!(is_snake_case(good), "{good}");
        }
        for bad in [
            "",
            "A",
            "get__x",
            "get_",
            "_get",
            "ns..x",
            "kebab-case",
            "2x",
        ] {
            assert!(!is_snake_case(bad), "{bad}");
        }
    }
}
