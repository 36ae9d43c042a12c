//! Words: splitting identifiers and sentences, a crude stemmer, and the word lists the
//! name, description and hint rules share.

/// Splits an identifier into lower-case words at `_`, `-`, `.`, `/`, spaces, camelCase
/// humps and letter/digit boundaries: `getHTTPResponse2` gives `get http response 2`.
pub(crate) fn identifier_words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = cur.chars().last().as_ref() {
            let next = chars.get(i + 1).copied();
            let hump = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase() && next.is_some_and(char::is_lowercase)));
            let digit_edge = c.is_ascii_digit() != prev.is_ascii_digit();
            if hump || digit_edge {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words.into_iter().map(|w| w.to_lowercase()).collect()
}

/// The words of a sentence, lower-cased, with punctuation dropped.
pub(crate) fn sentence_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// A crude English stemmer, enough to see that "searches files" restates `search_files`.
pub(crate) fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    let n = w.len();
    if !w.is_ascii() {
        return w;
    }
    let cut = |k: usize| w[..n - k].to_owned();
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", cut(3));
    }
    for suffix in ["sses", "ches", "shes", "xes", "zes", "oes"] {
        if n > suffix.len() + 1 && w.ends_with(suffix) {
            return cut(2);
        }
    }
    if n > 5 && w.ends_with("ing") {
        return cut(3);
    }
    if n > 4 && w.ends_with("ed") {
        return cut(2);
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return cut(1);
    }
    w
}

/// Words that carry no meaning on their own in a tool name.
pub(crate) const GENERIC_NAME_WORDS: &[&str] = &[
    "a",
    "act",
    "action",
    "api",
    "call",
    "data",
    "default",
    "demo",
    "do",
    "does",
    "example",
    "exec",
    "execute",
    "fn",
    "func",
    "function",
    "generic",
    "go",
    "handle",
    "handler",
    "helper",
    "invoke",
    "it",
    "item",
    "job",
    "main",
    "make",
    "mcp",
    "method",
    "misc",
    "my",
    "new",
    "obj",
    "object",
    "op",
    "operation",
    "perform",
    "process",
    "run",
    "sample",
    "server",
    "service",
    "task",
    "temp",
    "that",
    "the",
    "this",
    "tmp",
    "tool",
    "util",
    "utility",
];

/// Placeholder words: a name containing one is vague whatever else it says.
pub(crate) const PLACEHOLDER_WORDS: &[&str] = &[
    "asdf",
    "bar",
    "baz",
    "foo",
    "qux",
    "something",
    "stuff",
    "thing",
    "untitled",
    "whatever",
    "xyz",
];

/// Words that say nothing in a description (articles, pronouns, auxiliaries, filler).
pub(crate) const STOP_WORDS: &[&str] = &[
    "a", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by",
    "can", "could", "did", "do", "does", "each", "every", "for", "from", "function", "given",
    "handle", "helper", "i", "if", "in", "into", "is", "it", "its", "just", "may", "might", "more",
    "most", "must", "no", "not", "of", "on", "onto", "or", "our", "perform", "process", "shall",
    "should", "so", "some", "stuff", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "thing", "this", "those", "to", "tool", "use", "used", "uses",
    "using", "utility", "various", "very", "was", "we", "were", "what", "when", "where", "which",
    "who", "will", "with", "would", "you", "your",
];

/// Stems that say what a tool gives back.
pub(crate) const RETURN_STEMS: &[&str] = &[
    "back", "display", "emit", "give", "output", "print", "produce", "provide", "reply", "report",
    "respond", "response", "result", "return", "show", "yield",
];

/// First words of names that read as "only looks at things".
pub(crate) const READ_VERBS: &[&str] = &[
    "browse", "count", "describe", "fetch", "find", "get", "inspect", "list", "locate", "lookup",
    "peek", "preview", "query", "read", "search", "show", "stat", "view",
];

/// First words of names that read as "only adds things".
pub(crate) const ADDITIVE_VERBS: &[&str] = &["append", "create", "insert"];

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> String {
        identifier_words(s).join(" ")
    }

    #[test]
    fn identifiers_split() {
        assert_eq!(words("doThing"), "do thing");
        assert_eq!(words("my-tool-1"), "my tool 1");
        assert_eq!(words("get_weather"), "get weather");
        assert_eq!(words("getHTTPResponse2"), "get http response 2");
        assert_eq!(words("x"), "x");
        assert_eq!(words("ns.tool_v2"), "ns tool v 2");
        assert_eq!(words("__"), "");
    }

    #[test]
    fn stems() {
        for (w, s) in [
            ("searches", "search"),
            ("files", "file"),
            ("searching", "search"),
            ("returned", "return"),
            ("replies", "reply"),
            ("echoes", "echo"),
            ("status", "status"),
            ("class", "class"),
            ("add", "add"),
            ("é", "é"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn sentences_split() {
        assert_eq!(sentence_words("Searches files."), ["searches", "files"]);
        assert_eq!(
            sentence_words("It's 'quoted' -> {x}"),
            ["it's", "quoted", "x"]
        );
    }
}
