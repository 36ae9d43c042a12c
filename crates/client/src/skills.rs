//! The Skills extension (SEP-2640) on the client side: listing skills, and reading a
//! skill's files with each one verified against the entry the server listed.
//!
//! Nothing is fetched ahead of need: [`Client::list_skills`] reads the listing alone, and
//! a file is read only when [`Client::read_skill_file`] is asked for it. A file read is
//! refused ([`ClientError::Unverified`]) unless its byte length is the entry's `size` and
//! its SHA-256 the entry's `digest`; a `SKILL.md` must also carry the entry's frontmatter,
//! field for field.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use toolwright_protocol::skills::{self, SkillEntry};

use crate::{Call, Client, ClientError, Peer};

impl Client {
    /// Whether the server declared the Skills extension.
    pub fn serves_skills(&self) -> bool {
        self.capabilities()
            .and_then(|c| c.extensions.as_ref())
            .is_some_and(|e| e.contains_key(skills::EXTENSION_ID))
    }

    /// Every skill the server lists (`skills/list`, every page). No file is read.
    ///
    /// # Errors
    ///
    /// When a request fails or an entry is not a skill entry.
    pub async fn list_skills(&mut self) -> Result<Vec<SkillEntry>, ClientError> {
        self.peer().list_skills().await
    }

    /// Reads the file `uri` of the skill `entry` and returns its bytes once they match the
    /// entry: size, digest, and for the skill's `SKILL.md` its frontmatter.
    ///
    /// # Errors
    ///
    /// [`ClientError::Unverified`] when the file is not in the entry or does not match it;
    /// otherwise when the request fails or the result carries no contents.
    pub async fn read_skill_file(
        &mut self,
        entry: &SkillEntry,
        uri: &str,
    ) -> Result<Vec<u8>, ClientError> {
        self.peer().read_skill_file(entry, uri).await
    }
}

impl Peer {
    /// Whether the server declared the Skills extension.
    pub fn serves_skills(&self) -> bool {
        self.capabilities()
            .and_then(|c| c.extensions)
            .is_some_and(|e| e.contains_key(skills::EXTENSION_ID))
    }

    /// Every skill the server lists (`skills/list`, every page), as
    /// [`Client::list_skills`] (the gateway's way in).
    ///
    /// # Errors
    ///
    /// When a request fails or an entry is not a skill entry.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, ClientError> {
        let raw = self.list_all("skills/list", "skills").await?;
        raw.into_iter()
            .enumerate()
            .map(|(i, v)| {
                serde_json::from_value(v).map_err(|e| ClientError::Malformed {
                    what: format!("skills/list entry #{i}"),
                    detail: e.to_string(),
                })
            })
            .collect()
    }

    /// Reads and verifies a skill file, as [`Client::read_skill_file`] (the gateway's way
    /// in).
    ///
    /// # Errors
    ///
    /// [`ClientError::Unverified`] when the file is not in the entry or does not match it;
    /// otherwise when the request fails or the result carries no contents.
    pub async fn read_skill_file(
        &self,
        entry: &SkillEntry,
        uri: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let refuse = |why: String| ClientError::Unverified {
            uri: uri.to_owned(),
            why,
        };
        let Some(listed) = entry.file(uri) else {
            return Err(refuse(format!(
                "the entry of {} does not list it, so there is nothing to verify it against",
                entry.uri
            )));
        };
        // Over modern HTTP the URI is mirrored into the Mcp-Name header.
        let call = Call {
            name: Some(uri.to_owned()),
            ..Call::new("resources/read", json!({"uri": uri}))
        };
        let result = self.request(call).await?;
        let bytes = contents_bytes(&result, uri)?;
        if bytes.len() as u64 != listed.size {
            return Err(refuse(format!(
                "it is {} bytes long, but the entry says {}",
                bytes.len(),
                listed.size
            )));
        }
        let digest = skills::digest(&bytes);
        if digest != listed.digest {
            return Err(refuse(format!(
                "its digest is {digest}, but the entry says {}",
                listed.digest
            )));
        }
        if uri == entry.uri {
            check_frontmatter(entry, &bytes).map_err(refuse)?;
        }
        Ok(bytes)
    }
}

/// The bytes of the `resources/read` result's part for `uri`: its text as UTF-8, or its
/// blob decoded.
fn contents_bytes(result: &Value, uri: &str) -> Result<Vec<u8>, ClientError> {
    let bad = |detail: String| ClientError::Malformed {
        what: format!("resources/read result for {uri}"),
        detail,
    };
    let parts = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("it has no contents array".into()))?;
    let part = parts
        .iter()
        .find(|p| p.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| parts.first())
        .ok_or_else(|| bad("its contents are empty".into()))?;
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = part
        .get("blob")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("the part has neither text nor blob".into()))?;
    BASE64
        .decode(blob)
        .map_err(|e| bad(format!("its blob is not base64: {e}")))
}

/// The `SKILL.md` frontmatter, parsed, against the entry's: every field of either, equal.
fn check_frontmatter(entry: &SkillEntry, bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the SKILL.md is not UTF-8".to_owned())?;
    let block = skills::frontmatter_block(text)
        .ok_or_else(|| "the SKILL.md has no frontmatter block".to_owned())?;
    let parsed = toolwright_toolfile::yaml::to_json(block)
        .map_err(|e| format!("the SKILL.md frontmatter is not YAML: {e}"))?;
    let Value::Object(file) = parsed else {
        return Err("the SKILL.md frontmatter is not a mapping".into());
    };
    let mut keys: Vec<&String> = file.keys().chain(entry.frontmatter.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (f, e) = (file.get(key), entry.frontmatter.get(key));
        let null = Value::Null;
        if f.unwrap_or(&null) != e.unwrap_or(&null) {
            return Err(format!(
                "its frontmatter field {key:?} is {} in the file but {} in the entry",
                f.unwrap_or(&null),
                e.unwrap_or(&null)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_frontmatter;
    use serde_json::json;
    use toolwright_protocol::skills::SkillEntry;

    fn entry(fm: serde_json::Value) -> SkillEntry {
        serde_json::from_value(
            json!({"uri": "skill://a/SKILL.md", "frontmatter": fm, "resources": []}),
        )
        .unwrap()
    }

    #[test]
    fn frontmatter_is_compared_field_by_field() {
        let md = b"---\nname: a\ndescription: A thing\nmetadata: {v: 1}\n---\nbody";
        let same = entry(json!({"name": "a", "description": "A thing", "metadata": {"v": 1}}));
        assert_eq!(check_frontmatter(&same, md), Ok(()));
        let changed = entry(json!({"name": "a", "description": "Other", "metadata": {"v": 1}}));
        let e = check_frontmatter(&changed, md).unwrap_err();
        assert!(e.contains("\"description\""), "{e}");
        let missing = entry(json!({"name": "a", "description": "A thing"}));
        assert!(check_frontmatter(&missing, md).is_err());
        assert!(check_frontmatter(&same, b"no frontmatter").is_err());
    }
}
