//! The tool file as YAML text: a comment block (where it came from, the variables to set,
//! every operation skipped and every part left out, with why), then `tools:`.
//!
//! The YAML is written by hand for one reason: every string is double-quoted with JSON's
//! escapes (which YAML's double-quoted style reads the same way), so no text of a
//! description (`yes`, `1e3`, `: `, `#`, a leading `*`) can change type or structure.

use crate::import::Import;
use crate::text::one_line;
use serde_json::Value;

/// The file: comments, then the tools.
pub fn tool_file(import: &Import) -> String {
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str("# ");
        out.push_str(&one_line(text));
        out.push('\n');
    };
    line(&format!(
        "Tools imported from {} ({}) by `toolwright import openapi`.",
        import.source, import.title
    ));
    line(&format!(
        "{} tools calling {}. Review before serving: descriptions, arguments and hints come from the description as written.",
        import.tools.len(),
        import.server
    ));
    if !import.env.is_empty() {
        line("Credentials come from the server's environment:");
        for v in &import.env {
            line(&format!("  {}: {}", v.name, v.holds));
        }
    }
    line(&format!("Skipped operations ({}):", import.skipped.len()));
    for s in &import.skipped {
        line(&format!("  {}: {}", s.operation, s.reason));
    }
    if !import.notes.is_empty() {
        line(&format!(
            "Left out of written tools ({}):",
            import.notes.len()
        ));
        for s in &import.notes {
            line(&format!("  {}: {}", s.operation, s.reason));
        }
    }
    if import.tools.is_empty() {
        out.push_str("tools: []\n");
        return out;
    }
    out.push_str("tools:\n");
    for tool in &import.tools {
        out.push_str("  -");
        block(tool, 4, true, &mut out);
    }
    out
}

/// Writes `value` after a key or a `-` already written (`inline`: a mapping's first member
/// goes on the same line as the `-`).
fn block(value: &Value, indent: usize, inline: bool, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut first = true;
            for (k, v) in map {
                if first && inline {
                    out.push(' ');
                } else {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                }
                first = false;
                let start = out.len();
                key(k, out);
                if out[start..].chars().count() > IMPLICIT_KEY_CHARS {
                    // Too long for an implicit key: YAML's explicit form, `? key` then
                    // `: value` on a line of its own at the same column.
                    out.truncate(start);
                    out.push_str("? ");
                    quoted(k, out);
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                }
                out.push(':');
                block(v, indent + 2, false, out);
            }
            if inline {
                out.push('\n');
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
                out.push('-');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        block(item, indent + 2, true, out);
                        // `block` ended the line; the next item starts its own.
                        out.pop();
                    }
                    _ => block(item, indent + 2, false, out),
                }
            }
            if inline {
                out.push('\n');
            }
        }
        scalar => {
            out.push(' ');
            match scalar {
                Value::Object(_) => out.push_str("{}"),
                Value::Array(_) => out.push_str("[]"),
                Value::String(s) => quoted(s, out),
                other => out.push_str(&other.to_string()),
            }
            if inline {
                out.push('\n');
            }
        }
    }
}

/// The longest implicit key YAML reads (1024 characters, the indicator and a margin
/// taken off): a longer one is written as an explicit `? key`.
const IMPLICIT_KEY_CHARS: usize = 1000;

/// A mapping key: plain when it is a simple word YAML reads as that string, else quoted.
fn key(k: &str, out: &mut String) {
    const SPECIAL: &[&str] = &[
        "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~",
    ];
    let plain = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$' | '.'))
        && !SPECIAL.contains(&k.to_ascii_lowercase().as_str());
    if plain {
        out.push_str(k);
    } else {
        quoted(k, out);
    }
}

/// A double-quoted scalar: JSON's escapes, and `\uXXXX` for what YAML may not hold raw
/// (C1 controls, U+FEFF, U+FFFE and U+FFFF, line and paragraph separators).
fn quoted(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20
                || (0x7f..=0x9f).contains(&(c as u32))
                || matches!(
                    c,
                    '\u{feff}' | '\u{fffe}' | '\u{ffff}' | '\u{2028}' | '\u{2029}'
                ) =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: Value) {
        let mut out = String::from("v:");
        block(&v, 2, false, &mut out);
        out.push('\n');
        let back =
            toolwright_toolfile::yaml::to_json(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(back["v"], v, "{out}");
    }

    #[test]
    fn values_read_back_as_written() {
        table! { |v: Value| round_trip(v);
            (json!("plain"));
            (json!("yes"));
            (json!("1e3"));
            (json!("a: b # c"));
            (json!("*star &anchor !tag"));
            (json!("line\nbreak\ttab \"q\" \\ \u{1} \u{85} \u{feff} ☃"));
            (json!(""));
            (json!(3));
            (json!(-2.5));
            (json!(true));
            (json!(null));
            (json!({}));
            (json!([]));
            (json!({"a": {"b": [1, {"c": "d", "e": []}, [2, 3]]}, "yes": 1, "x y": 2, "$ref": "r"}));
            (json!([{"a": 1, "b": {"c": 2}}, {"a": 3}]));
            (json!([[1, [2]], []]));
            // Keys past YAML's 1,024 characters for an implicit key, plain and escaped,
            // first in a mapping inside a sequence, and later in one.
            (json!({"k".repeat(1500): 1, "short": {"x".repeat(1200): [{"\u{e}".repeat(300): "v", "b": 2}]}}));
            (json!([{"\u{e}".repeat(300): {"a": 1}}, {"b": 1, "y".repeat(2000): []}]));
        }
    }

    #[test]
    fn a_file_reads_back() {
        let import = Import {
            tools: vec![
                json!({"name": "list_pets", "inputSchema": {"type": "object", "properties": {}}}),
                json!({"name": "b"}),
            ],
            skipped: vec![crate::import::Skipped {
                operation: "GET /x".into(),
                reason: "why\nnot".into(),
            }],
            notes: Vec::new(),
            env: Vec::new(),
            source: "api.yaml".into(),
            title: "API 1".into(),
            server: "https://a.example".into(),
        };
        let text = tool_file(&import);
        let back =
            toolwright_toolfile::yaml::to_json(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back["tools"], json!(import.tools), "{text}");
        assert!(text.contains("#   GET /x: why not\n"), "{text}");
    }
}
