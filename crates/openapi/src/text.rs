//! Text made from a description's text: tool and property names, descriptions cut to a
//! length, one-line comments.

/// The longest tool name written (MCP allows 128; several model APIs stop at 64).
pub const MAX_NAME: usize = 64;

/// `listPets`, `repos/get-content`, `GET /pets/{id}` → `list_pets`, `repos_get_content`,
/// `get_pets_id`: lower-case words of letters and digits joined by `_`, starting with a
/// letter (`op_` before a leading digit), at most [`MAX_NAME`] characters cut at a word.
pub fn snake_case(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            flush(&mut word, &mut words);
            prev = None;
            continue;
        }
        let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
        let boundary = match prev {
            Some(p) if c.is_ascii_uppercase() => {
                p.is_ascii_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_ascii_uppercase() && next_lower)
            }
            _ => false,
        };
        if boundary {
            flush(&mut word, &mut words);
        }
        word.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    flush(&mut word, &mut words);
    let mut out = String::new();
    for w in words {
        let extra = if out.is_empty() { w.len() } else { w.len() + 1 };
        if out.len() + extra > MAX_NAME {
            break;
        }
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(&w);
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "op_");
        out.truncate(MAX_NAME);
        while out.ends_with('_') {
            out.pop();
        }
    }
    out
}

fn flush(word: &mut String, words: &mut Vec<String>) {
    if !word.is_empty() {
        words.push(std::mem::take(word));
    }
}

/// A name for a placeholder (`{name}` takes letters, digits, `_` and `-`, not starting with
/// a digit): the name itself when it is one, else its [`snake_case`] form (`page[size]` →
/// `page_size`, `$filter` → `filter`), `arg` when nothing is left.
pub fn placeholder_name(name: &str) -> String {
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        return name.to_owned();
    }
    let s = snake_case(name);
    if s.is_empty() { "arg".to_owned() } else { s }
}

/// `text` cut to at most `max` characters: whitespace runs made one space, cut after the
/// last sentence end (or else the last space) that fits, with `…` where text was left out.
pub fn cut(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let room = max.saturating_sub(1);
    let end = one.char_indices().nth(room).map_or(one.len(), |(i, _)| i);
    let head = &one[..end];
    let whole_word = one[end..].starts_with(' ');
    let at = head
        .rfind(". ")
        .map(|i| i + 1)
        .filter(|&i| i > room / 2)
        .or_else(|| {
            if whole_word {
                Some(head.len())
            } else {
                head.rfind(' ')
            }
        })
        .unwrap_or(head.len());
    format!("{}…", head[..at].trim_end())
}

/// `text` as one line of a comment: control characters (line breaks among them) as spaces.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `api_key`, `bearerAuth` → `API_KEY`, `BEARER_AUTH`: an environment variable's name.
pub fn env_name(parts: &[&str]) -> String {
    let joined: Vec<String> = parts
        .iter()
        .map(|p| snake_case(p).to_ascii_uppercase())
        .filter(|p| !p.is_empty())
        .collect();
    let mut name = joined.join("_");
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "API_");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_names() {
        table! { |text: &str, want: &str| assert_eq!(snake_case(text), want, "{text}");
            ("listPets", "list_pets");
            ("showPetById", "show_pet_by_id");
            ("repos/get-content", "repos_get_content");
            ("HTTPServerList", "http_server_list");
            ("get_v2Users", "get_v2_users");
            ("GET /pets/{petId}", "get_pets_pet_id");
            ("123abc", "op_123abc");
            ("__", "");
            ("ünïcode name", "n_code_name");
        }
        let long = "a".repeat(40) + "_" + &"b".repeat(40);
        assert_eq!(snake_case(&long), "a".repeat(40));
    }

    #[test]
    fn placeholder_names() {
        table! { |name: &str, want: &str| assert_eq!(placeholder_name(name), want, "{name}");
            ("petId", "petId");
            ("X-Request-ID", "X-Request-ID");
            ("page[size]", "page_size");
            ("$filter", "filter");
            ("1st", "op_1st");
            ("[]", "arg");
        }
    }

    #[test]
    fn cuts() {
        table! { |text: &str, max: usize, want: &str| assert_eq!(cut(text, max), want, "{text}");
            ("short", 10, "short");
            ("a  b\n\nc", 10, "a b c");
            ("One sentence. Another sentence here.", 20, "One sentence.…");
            ("words words words words", 12, "words words…");
        }
    }

    #[test]
    fn env_names() {
        table! { |parts: &[&str], want: &str| assert_eq!(env_name(parts), want);
            (&["petstore", "api_key"], "PETSTORE_API_KEY");
            (&["bearerAuth"], "BEARER_AUTH");
            (&["9"], "OP_9");
        }
    }
}
