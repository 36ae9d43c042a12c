//! `api_keys:`: named static API keys, each kept as the SHA-256 digest of the key (never
//! the key itself), with the scopes it grants.
//!
//! ```yaml
//! api_keys:
//!   ci-bot:
//!     sha256: 6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b
//!     scopes: [tickets:read]
//! ```
//!
//! `toolwright hash-key` prints an entry for a key (read from stdin, or made up with
//! `--generate`). An HTTP request whose `Authorization: Bearer KEY` hashes to an entry's
//! digest speaks for `key:NAME` (its subject), with the entry's scopes: views, limits and
//! identity-bound arguments treat it like a token's subject. A plain digest suits keys
//! that are long random strings, which is what `--generate` makes; it is no way to keep
//! passwords.

use crate::document::Document;
use crate::error::{FileProblem, Problem, Seg};
use crate::rules::read_value;
use serde::Deserialize;
use serde_json::Value;

/// One key, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiKeyConfig {
    /// Its name: the caller is `key:NAME`.
    pub name: String,
    /// SHA-256 of the key's bytes.
    pub sha256: [u8; 32],
    /// The scopes the key grants.
    pub scopes: Vec<String>,
}

impl ApiKeyConfig {
    /// The entry for `key`, named `name` (what `toolwright hash-key` prints).
    pub fn of_key(name: &str, key: &str, scopes: Vec<String>) -> ApiKeyConfig {
        use sha2::Digest;
        ApiKeyConfig {
            name: name.to_owned(),
            sha256: sha2::Sha256::digest(key.as_bytes()).into(),
            scopes,
        }
    }

    /// The digest as lowercase hex.
    pub fn hex(&self) -> String {
        data_encoding::HEXLOWER.encode(&self.sha256)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeySpec {
    sha256: String,
    #[serde(default)]
    scopes: Vec<String>,
}

/// Whether `name` can name a key: 1 to 64 letters, digits, `_`, `-` or `.`.
pub fn good_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The keys of every document, in file order, into `keys`; each problem into `problems`.
pub(crate) fn read(
    docs: &[Document],
    keys: &mut Vec<ApiKeyConfig>,
    problems: &mut Vec<FileProblem>,
) {
    for doc in docs {
        let Some(raw) = &doc.api_keys else { continue };
        let Value::Object(entries) = raw else {
            problems.push(doc.root_problem(Problem::new(
                ["api_keys"],
                "`api_keys` is a mapping of key names to `{sha256: HEX, scopes: [...]}`",
            )));
            continue;
        };
        for (name, value) in entries {
            let at = |p: Problem| doc.root_problem(p.under(name.as_str()).under("api_keys"));
            match read_one(name, value) {
                Ok(key) if keys.iter().any(|k| k.name == key.name) => {
                    problems.push(at(Problem::new(
                        Vec::<Seg>::new(),
                        format!("the key {name:?} is defined twice"),
                    )))
                }
                Ok(key) if keys.iter().any(|k| k.sha256 == key.sha256) => {
                    problems.push(at(Problem::new(
                        ["sha256"],
                        "another key has this digest: one key cannot have two names",
                    )));
                }
                Ok(key) => keys.push(key),
                Err(p) => problems.push(at(p)),
            }
        }
    }
}

fn read_one(name: &str, value: &Value) -> Result<ApiKeyConfig, Problem> {
    let none: [Seg; 0] = [];
    if !good_name(name) {
        return Err(Problem::new(
            none,
            format!("{name:?} cannot name a key: 1 to 64 letters, digits, `_`, `-` or `.`"),
        ));
    }
    if let Value::Object(m) = value
        && (m.contains_key("key") || m.contains_key("token"))
    {
        return Err(Problem::new(
            none,
            "a key is kept as its SHA-256 digest, never as itself: \
             `toolwright hash-key` prints the entry (`sha256: HEX`)",
        ));
    }
    let spec: KeySpec = read_value(value)?;
    let hex = spec.sha256.trim();
    let mut sha256 = [0u8; 32];
    // `decode_mut` wants exactly 64 digits for 32 bytes: the length is checked first.
    if hex.len() != 64
        || data_encoding::HEXLOWER_PERMISSIVE
            .decode_mut(hex.as_bytes(), &mut sha256)
            .is_err()
    {
        return Err(Problem::new(
            ["sha256"],
            "a SHA-256 digest is 64 hex digits (`toolwright hash-key` prints it)",
        ));
    }
    if let Some(i) = spec
        .scopes
        .iter()
        .position(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        return Err(Problem::new(
            ["scopes".into(), Seg::Index(i)],
            "a scope is one word, without spaces",
        ));
    }
    Ok(ApiKeyConfig {
        name: name.to_owned(),
        sha256,
        scopes: spec.scopes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    const ONE: &str = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b";

    #[test]
    fn keys_read() {
        table! { |name: &str, value: Value, problem: Option<&str>| {
                let got = read_one(name, &value);
                match problem {
                    None => assert!(got.is_ok(), "{name} {value}: {got:?}"),
                    Some(want) => {
                        let text = got.unwrap_err().to_string();
                        assert!(text.contains(want), "{name} {value}: {text}");
                    }
                }
            };
            ("ci-bot", json!({"sha256": ONE, "scopes": ["a", "b:c"]}), None);
            ("ci.bot_2", json!({"sha256": ONE.to_uppercase()}), None);
            ("", json!({"sha256": ONE}), Some("cannot name a key"));
            ("a b", json!({"sha256": ONE}), Some("cannot name a key"));
            ("k", json!({"key": "s3cret"}), Some("never as itself"));
            ("k", json!({"sha256": "abc"}), Some("64 hex digits"));
            ("k", json!({"sha256": ONE.replace('b', "g")}), Some("64 hex digits"));
            ("k", json!({"sha256": ONE, "scopes": ["a b"]}), Some("one word"));
            ("k", json!({"sha256": ONE, "extra": 1}), Some("extra"));
        }
    }

    #[test]
    fn an_entry_is_the_digest_of_its_key() {
        let k = ApiKeyConfig::of_key("one", "1", vec![]);
        assert_eq!(k.hex(), ONE);
        assert_eq!(read_one("one", &json!({"sha256": ONE})).unwrap(), k);
    }
}
