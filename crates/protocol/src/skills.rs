//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): the wire shapes of
//! `skills/list`, `skills/get` and `resources/directory/read`, and the rules both sides
//! apply to them (the digest of a file, the frontmatter block of a `SKILL.md`, the skill
//! naming rule).
//!
//! A skill is a directory whose root holds `SKILL.md`; its files are resources under
//! `skill://<skill-path>/…`, where the last segment of `<skill-path>` is the skill's name.
//! An entry of `skills/list` names the `SKILL.md`, carries its YAML frontmatter as a JSON
//! object, and lists every file with its SHA-256 digest and size, so that a client can
//! verify what it reads before using it.

use crate::{JsonObject, RequestMeta};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The scheme of skill resources.
pub const SCHEME: &str = "skill://";
/// The manifest file at the root of every skill.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of a directory child of `resources/directory/read`.
pub const DIRECTORY_MIME: &str = "inode/directory";
/// The most files a skill should have (its `resources`, `SKILL.md` included).
pub const MAX_FILES: usize = 512;
/// The most bytes a skill's files should add up to (16 MiB).
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// The `metadata` key prefix reserved for MCP extensions; none is defined yet.
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// One file of a skill, as listed in an entry: what to verify a read against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of the SHA-256 of the raw bytes.
    pub digest: String,
    /// The length of the raw bytes.
    pub size: u64,
}

/// The files of a skill: listed, or `"dynamic"` (the server publishes no manifest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file, each once, `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// The string `"dynamic"`.
    Dynamic(String),
}

impl SkillResources {
    /// The listed files, or none for a dynamic skill.
    pub fn files(&self) -> &[SkillFile] {
        match self {
            SkillResources::Files(f) => f,
            SkillResources::Dynamic(_) => &[],
        }
    }
}

/// One skill, as `skills/list` and `skills/get` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, as a JSON object.
    pub frontmatter: JsonObject,
    /// The skill's files.
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The listed file with this URI.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.resources.files().iter().find(|f| f.uri == uri)
    }

    /// The skill's name: the last `<skill-path>` segment of its URI.
    pub fn name(&self) -> Option<&str> {
        skill_name(&self.uri)
    }
}

/// Result of `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// One page of skills; an entry is never split across pages.
    pub skills: Vec<SkillEntry>,
    /// The cursor of the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Parameters of `skills/get`.
#[derive(Debug, Clone, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Request metadata (modern).
    #[serde(default, rename = "_meta")]
    pub meta: Option<RequestMeta>,
}

/// Result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill.
    pub skill: SkillEntry,
}

/// Parameters of `resources/directory/read`.
#[derive(Debug, Clone, Deserialize)]
pub struct DirectoryReadParams {
    /// The directory's URI.
    pub uri: String,
    /// The cursor of the page wanted.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Request metadata (modern).
    #[serde(default, rename = "_meta")]
    pub meta: Option<RequestMeta>,
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`: the digest form of a skill file.
pub fn digest(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        data_encoding::HEXLOWER.encode(&Sha256::digest(bytes))
    )
}

/// The YAML text of a `SKILL.md`'s frontmatter: the lines between a first line `---` and
/// the next line `---` (a byte-order mark and `\r\n` line ends are allowed). `None` when
/// the text does not begin with such a block.
pub fn frontmatter_block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            let block = &rest[..at];
            return Some(
                block
                    .strip_suffix('\n')
                    .map_or(block, |b| b.strip_suffix('\r').unwrap_or(b)),
            );
        }
        at += line.len();
    }
    None
}

/// Whether `name` follows the Agent Skills naming rule: 1 to 64 characters, lowercase
/// ASCII letters, digits and hyphens, no hyphen first, last or twice in a row.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The skill name in a `SKILL.md` URI (`skill://a/b/SKILL.md` → `b`), if it is one.
pub fn skill_name(uri: &str) -> Option<&str> {
    let rest = &uri[uri.find("://")? + 3..];
    let mut segments = rest.split('/').filter(|s| !s.is_empty()).rev();
    (segments.next()? == SKILL_MD).then_some(())?;
    segments.next()
}

/// The directory of a skill from its `SKILL.md` URI (`skill://a/SKILL.md` → `skill://a`).
pub fn skill_directory(uri: &str) -> Option<&str> {
    uri.strip_suffix(SKILL_MD)?.strip_suffix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_prefixed_lowercase_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn frontmatter_blocks() {
        let cases: &[(&str, Option<&str>)] = &[
            ("---\nname: a\n---\nbody", Some("name: a")),
            ("\u{feff}---\r\nname: a\r\n---  \r\nbody", Some("name: a")),
            ("---\nname: a\n---", Some("name: a")),
            ("---\n---\n", Some("")),
            ("name: a\n---\n", None),
            ("---\nname: a\n", None),
        ];
        for (text, want) in cases {
            assert_eq!(frontmatter_block(text), *want, "{text:?}");
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "pdf-processing", "x1-2", &"a".repeat(64)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", &"a".repeat(65)] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn uris() {
        assert_eq!(skill_name("skill://pdf/SKILL.md"), Some("pdf"));
        assert_eq!(skill_name("skill://acme/pdf/SKILL.md"), Some("pdf"));
        assert_eq!(skill_name("skill://SKILL.md"), None);
        assert_eq!(skill_name("skill://pdf/README.md"), None);
        assert_eq!(skill_directory("skill://a/b/SKILL.md"), Some("skill://a/b"));
    }
}
