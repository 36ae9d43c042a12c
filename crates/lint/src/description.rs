//! Rules on a tool's `description`: present, long enough, more than the name restated, and
//! saying what comes back.

use std::collections::BTreeSet;

use crate::finding::{Rule, Sink};
use crate::words::{RETURN_STEMS, STOP_WORDS, identifier_words, sentence_words, stem};

/// Fewer words than this cannot say what a tool does, returns and is for.
pub(crate) const MIN_WORDS: usize = 5;

pub(crate) fn check(name: &str, description: Option<&str>, sink: &mut Sink<'_>) {
    let text = description.map(str::trim).unwrap_or("");
    if text.is_empty() {
        sink.add(
            Rule::DescriptionMissing,
            "/description",
            if description.is_some() {
                "the description is empty"
            } else {
                "the tool has no description; models choose tools by their descriptions"
            },
            "describe what the tool does, what it returns and when to use it",
        );
        return;
    }
    let words = sentence_words(text);
    if words.len() < MIN_WORDS {
        sink.add(
            Rule::DescriptionShort,
            "/description",
            format!(
                "the description {text:?} has {} word{}; a model needs to know what the tool \
                 does, returns and is for",
                words.len(),
                if words.len() == 1 { "" } else { "s" }
            ),
            "write one or two sentences: what it does, what it returns, when to use it",
        );
    }
    let name_stems: BTreeSet<String> = identifier_words(name).iter().map(|w| stem(w)).collect();
    let content: BTreeSet<String> = words
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(w))
        .collect();
    if content.is_subset(&name_stems) {
        sink.add(
            Rule::DescriptionVague,
            "/description",
            format!("the description {text:?} only restates the name {name:?}"),
            "say what the tool does beyond its name: inputs, effect, result, and when to use it",
        );
    }
    let says_return = words
        .iter()
        .any(|w| RETURN_STEMS.contains(&stem(w).as_str()))
        || text.contains("->")
        || text.contains('→');
    if !says_return {
        sink.add(
            Rule::DescriptionNoReturn,
            "/description",
            "the description does not say what the tool returns",
            "add a sentence saying what comes back, e.g. \"Returns the matching file paths.\"",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::findings_of;

    fn rules(name: &str, description: Option<&str>) -> Vec<&'static str> {
        findings_of(|sink| check(name, description, sink))
            .iter()
            .map(|f| f.rule.id())
            .collect()
    }

    #[test]
    fn seed_descriptions() {
        let none: [&str; 0] = [];
        assert_eq!(
            rules("add", Some("Add two numbers together and return the sum")),
            none
        );
        assert_eq!(
            rules(
                "multiply",
                Some("Multiply two numbers and return the product")
            ),
            none
        );
        assert_eq!(
            rules(
                "search_files",
                Some(
                    "Search for files matching a pattern in a directory. Returns a list of matching file paths. Use this when you need to find files by name or extension."
                )
            ),
            none
        );
        assert_eq!(
            rules("search_files", Some("Searches files")),
            [
                "description-short",
                "description-vague",
                "description-no-return"
            ]
        );
    }

    #[test]
    fn other_descriptions() {
        let none: [&str; 0] = [];
        assert_eq!(rules("t", None), ["description-missing"]);
        assert_eq!(rules("t", Some("  ")), ["description-missing"]);
        assert_eq!(
            rules("get_time", Some("Gets the time.")),
            [
                "description-short",
                "description-vague",
                "description-no-return"
            ]
        );
        assert_eq!(
            rules("echo", Some("Echo a message back.")),
            ["description-short"]
        );
        assert_eq!(
            rules(
                "sum",
                Some("Adds all the numbers it is given -> their sum as a number")
            ),
            none
        );
        assert_eq!(
            rules(
                "run_query",
                Some("Runs a SQL query against the warehouse database.")
            ),
            ["description-no-return"]
        );
        assert_eq!(
            rules(
                "a_tool",
                Some("This is a tool that does a thing with stuff.")
            ),
            ["description-vague", "description-no-return"]
        );
    }
}
