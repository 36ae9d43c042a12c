//! The skills a server serves (the Skills extension, SEP-2640), held in memory.
//!
//! A [`SkillSet`] is built once from [`Skill`]s (a skill path, its parsed frontmatter and
//! its files' bytes): every rule of the extension is checked then, and the answers are
//! computed then too — the `skills/list` entries with each file's digest and size, the
//! `SKILL.md` resources shown by `resources/list`, and the children of every directory for
//! `resources/directory/read`. Serving is lookups. Where the files come from (a directory
//! on disk, bytes compiled in) is the caller's business; nothing here touches a file.

use crate::error::SkillError;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use toolwright_protocol::resources::Resource;
use toolwright_protocol::skills::{
    self, DIRECTORY_MIME, MAX_FILES, MAX_TOTAL_BYTES, RESERVED_METADATA_PREFIX, SCHEME, SKILL_MD,
    SkillEntry, SkillFile, SkillResources,
};
use toolwright_protocol::{JsonObject, ResourceContents};

/// One skill before it is served: where it sits, what its `SKILL.md` says, its files.
#[derive(Debug, Clone)]
pub struct Skill {
    /// The skill path, `/`-separated (`pdf-processing`, `acme/billing/refunds`); its last
    /// segment is the skill's name.
    pub path: String,
    /// The `SKILL.md` frontmatter, parsed.
    pub frontmatter: JsonObject,
    /// Every file, by path relative to the skill's directory (`SKILL.md`,
    /// `references/FORMS.md`), with its bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

struct Stored {
    bytes: Arc<[u8]>,
    mime: &'static str,
}

/// Skills ready to serve: their entries, files and directories, computed once.
#[derive(Default)]
pub struct SkillSet {
    entries: Vec<SkillEntry>,
    files: HashMap<String, Stored>,
    directories: BTreeMap<String, Vec<Resource>>,
    listed: Vec<Resource>,
}

impl std::fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSet")
            .field("skills", &self.entries.len())
            .field("files", &self.files.len())
            .finish()
    }
}

impl SkillSet {
    /// Checks the skills against the extension's rules and prepares what is served. A
    /// skill that breaks a rule is refused with the reason; the set is all or nothing.
    pub fn new(skills: Vec<Skill>) -> Result<SkillSet, SkillError> {
        let mut set = SkillSet::default();
        let mut paths: Vec<&str> = skills.iter().map(|s| s.path.as_str()).collect();
        paths.sort_unstable();
        for pair in paths.windows(2) {
            if pair[0] == pair[1] || pair[1].starts_with(&format!("{}/", pair[0])) {
                return Err(SkillError::Nested {
                    outer: pair[0].to_owned(),
                    inner: pair[1].to_owned(),
                });
            }
        }
        for skill in skills {
            set.add(skill)?;
        }
        set.entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        set.listed.sort_by(|a, b| a.uri.cmp(&b.uri));
        for children in set.directories.values_mut() {
            children.sort_by(|a, b| a.uri.cmp(&b.uri));
            children.dedup_by(|a, b| a.uri == b.uri);
        }
        Ok(set)
    }

    fn add(&mut self, skill: Skill) -> Result<(), SkillError> {
        let Skill {
            path,
            frontmatter,
            files,
        } = skill;
        let refuse = |why: String| SkillError::Invalid {
            skill: path.clone(),
            why,
        };
        let segments: Vec<&str> = path.split('/').collect();
        if let Some(bad) = segments.iter().find(|s| !is_segment(s)) {
            return Err(refuse(format!(
                "the path segment {bad:?} is not a plain name"
            )));
        }
        let name = segments.last().copied().unwrap_or_default();
        check_frontmatter(&frontmatter, name).map_err(refuse)?;
        if files.len() > MAX_FILES {
            return Err(refuse(format!(
                "it has {} files, more than the {MAX_FILES} a skill may have",
                files.len()
            )));
        }
        let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        if total > MAX_TOTAL_BYTES {
            return Err(refuse(format!(
                "its files add up to {total} bytes, more than the {MAX_TOTAL_BYTES} a skill may have"
            )));
        }
        if !files.iter().any(|(p, _)| p == SKILL_MD) {
            return Err(refuse(format!("it has no {SKILL_MD} at its root")));
        }
        let dir_uri = format!("{SCHEME}{path}");
        let mut listed_files = Vec::with_capacity(files.len());
        for (rel, bytes) in files {
            let parts: Vec<&str> = rel.split('/').collect();
            if let Some(bad) = parts.iter().find(|s| !is_file_segment(s)) {
                return Err(refuse(format!(
                    "the file path {rel:?} has the segment {bad:?}"
                )));
            }
            let uri = format!("{dir_uri}/{}", encode_path(&rel));
            let mime = mime_for(&rel, &bytes);
            // Every directory on the way holds the next one, and the last holds the file.
            let mut parent = dir_uri.clone();
            for (i, part) in parts.iter().enumerate() {
                let child_uri = format!("{parent}/{}", encode_path(part));
                let mut child = Resource::new(child_uri.clone(), *part);
                if i + 1 == parts.len() {
                    child.mime_type = Some(mime.to_owned());
                    child.size = Some(bytes.len() as u64);
                } else {
                    child.mime_type = Some(DIRECTORY_MIME.to_owned());
                }
                self.directories
                    .entry(parent.clone())
                    .or_default()
                    .push(child);
                parent = child_uri;
            }
            listed_files.push(SkillFile {
                uri: uri.clone(),
                digest: skills::digest(&bytes),
                size: bytes.len() as u64,
            });
            if rel == SKILL_MD {
                let mut r = Resource::new(uri.clone(), name);
                r.description = frontmatter
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                r.mime_type = Some(mime.to_owned());
                r.size = Some(bytes.len() as u64);
                self.listed.push(r);
            }
            let stored = Stored {
                bytes: bytes.into(),
                mime,
            };
            if self.files.insert(uri.clone(), stored).is_some() {
                return Err(refuse(format!("the file {rel:?} is given twice")));
            }
        }
        listed_files.sort_by(|a, b| a.uri.cmp(&b.uri));
        self.entries.push(SkillEntry {
            uri: format!("{dir_uri}/{SKILL_MD}"),
            frontmatter,
            resources: SkillResources::Files(listed_files),
        });
        Ok(())
    }

    /// True when no skill is served.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in URI order.
    pub fn entries(&self) -> &[SkillEntry] {
        &self.entries
    }

    /// The entry whose `uri` (its `SKILL.md`) is this one.
    pub fn get(&self, uri: &str) -> Option<&SkillEntry> {
        self.entries.iter().find(|e| e.uri == uri)
    }

    /// The `SKILL.md` of each skill as a resource of `resources/list` (named and described
    /// by its frontmatter).
    pub fn listed(&self) -> &[Resource] {
        &self.listed
    }

    /// The contents of the file at `uri`: text when its bytes are UTF-8, base64 otherwise.
    pub fn read(&self, uri: &str) -> Option<ResourceContents> {
        let f = self.files.get(uri)?;
        let (text, blob) = match std::str::from_utf8(&f.bytes) {
            Ok(t) => (Some(t.to_owned()), None),
            Err(_) => (None, Some(BASE64.encode(&f.bytes))),
        };
        Some(ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(f.mime.to_owned()),
            text,
            blob,
            meta: None,
        })
    }

    /// True when `uri` names a served file.
    pub fn has_file(&self, uri: &str) -> bool {
        self.files.contains_key(uri)
    }

    /// The direct children of the directory at `uri` (a skill's directory or one below
    /// it; a trailing `/` is allowed), or `None` when `uri` names no served directory.
    pub fn directory(&self, uri: &str) -> Option<&[Resource]> {
        let uri = uri.strip_suffix('/').unwrap_or(uri);
        self.directories.get(uri).map(Vec::as_slice)
    }
}

/// The frontmatter rules: `name` and `description` non-empty strings, `name` the skill's
/// directory name and a valid skill name, no `metadata` key under the reserved prefix.
fn check_frontmatter(fm: &JsonObject, dir_name: &str) -> Result<(), String> {
    let text = |key: &str| {
        fm.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let Some(name) = text("name") else {
        return Err("its SKILL.md frontmatter has no name".into());
    };
    if text("description").is_none() {
        return Err("its SKILL.md frontmatter has no description".into());
    }
    if !skills::is_valid_name(name) {
        return Err(format!(
            "the name {name:?} is not a skill name (1-64 lowercase letters, digits and single hyphens)"
        ));
    }
    if name != dir_name {
        return Err(format!(
            "the frontmatter name {name:?} is not the directory's name {dir_name:?}"
        ));
    }
    if let Some(meta) = fm.get("metadata").and_then(Value::as_object)
        && let Some(key) = meta
            .keys()
            .find(|k| k.starts_with(RESERVED_METADATA_PREFIX))
    {
        return Err(format!(
            "the metadata key {key:?} is under the prefix reserved for MCP extensions"
        ));
    }
    Ok(())
}

/// A skill-path segment: a plain RFC 3986 reg-name part (letters, digits, `-._~`), not
/// `.` or `..`.
fn is_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// A file-path segment: not empty, not `.` or `..`, no control character or backslash.
fn is_file_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.chars().any(|c| c.is_control() || c == '\\')
}

/// Percent-encodes what a URI path may not carry as is (`/` stays a separator).
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The MIME type of a skill file, by its extension; unknown text is `text/plain`,
/// unknown binary `application/octet-stream`.
fn mime_for(path: &str, bytes: &[u8]) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("xml") => "application/xml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
