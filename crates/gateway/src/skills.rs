//! Upstream skills (the Skills extension, SEP-2640) served as the gateway's own.
//!
//! When an upstream's connection comes up, or it says its resources changed, and it
//! declared the extension, its skills are listed and **every file is read then and
//! verified** against the listing (size, SHA-256 digest, and a `SKILL.md`'s frontmatter:
//! the client's rule, [`toolwright_client::Peer::read_skill_file`]). Only verified bytes
//! are kept, in memory, and served from a [`SkillSet`]; no read is forwarded upstream
//! later, so a file changed upstream after the listing is never served. A skill with a
//! file that fails verification, a `"dynamic"` skill (no manifest to verify or pin), and
//! one over the extension's limits (`MAX_FILES`, `MAX_TOTAL_BYTES`, checked against the
//! listing before anything is read) are left out and logged.
//!
//! Naming mirrors tools: the upstream's prefix (its name by default) becomes the first
//! segment of the skill path, so upstream `skill://pdf/SKILL.md` of server `docs` is
//! served as `skill://docs/pdf/SKILL.md`; the last segment stays the skill's name. An
//! empty prefix serves the upstream path as is.
//!
//! Pinning mirrors tools too ([`crate::pin::State::check_skills`]): a skill's definition
//! is its frontmatter and the digest of each file by path, fingerprinted and kept in the
//! state file under the server's `skills`; a skill whose definition changed, or one new to
//! a server whose skills were pinned already, is held (not served) until `toolwright trust
//! accept SERVER [SKILL-PATH]`.

use crate::gateway::{FIRST_LIST_WAIT, Gateway};
use crate::pin::{Pins, Verdict};
use crate::upstream::Upstream;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use toolwright_protocol::skills::{
    MAX_FILES, MAX_TOTAL_BYTES, SCHEME, SkillEntry, SkillResources, skill_directory,
};
use toolwright_server::skills::{Skill, SkillSet};
use toolwright_toolfile::servers::StartSpec;

/// The most bytes of skills kept for one upstream (several skills at their limit).
const MAX_UPSTREAM_BYTES: u64 = 4 * MAX_TOTAL_BYTES;

/// One upstream skill, read and verified.
#[derive(Clone)]
pub(crate) struct Fetched {
    /// The skill path upstream (`pdf`, `acme/pdf`).
    upstream_path: String,
    /// What is pinned: the frontmatter and each file's digest by path.
    definition: Value,
    /// The skill as served here (its path with the prefix).
    skill: Skill,
}

/// The gateway's skills: each upstream's last verified listing, the skills of the config
/// itself, and what was reported.
#[derive(Default)]
pub(crate) struct Held {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The config's own skills (`skills:`), served beside the upstream ones.
    local: Option<Vec<Skill>>,
    /// By server name.
    fetched: BTreeMap<String, Vec<Fetched>>,
    /// What was logged already, so each is said once.
    reported: BTreeSet<String>,
    /// A digest of what is served now; `None` until the gateway serves skills.
    served: Option<u64>,
}

impl Gateway {
    /// Serves the config's own skills beside the upstream ones (`set_skills` alone would
    /// be replaced by the next upstream listing).
    pub fn set_local_skills(&self, skills: Vec<Skill>) {
        self.skills.inner.lock().local = Some(skills);
        self.install_skills();
    }

    /// Lists the skills of the `eager` upstreams not listed yet (starting them), waiting at
    /// most 20 s in all: called before serving, so a client's first `skills/list` sees
    /// them, as the catalog's eager listing does.
    pub(crate) fn list_skills_before_serving(self: &Arc<Self>) {
        let eager: Vec<Arc<Upstream>> = self
            .upstreams_now()
            .iter()
            .filter(|u| u.spec().start == StartSpec::Eager)
            .cloned()
            .collect();
        if eager.is_empty() {
            return;
        }
        let gw = self.clone();
        let all = async move {
            for up in eager {
                if up.peer().await.is_err() {
                    continue;
                }
                let listed = gw.skills.inner.lock().fetched.contains_key(up.name());
                if !listed {
                    gw.refresh_skills(&up).await;
                }
            }
            true
        };
        // On a worker, the wait gives the worker's place up itself.
        if !self.wait_off_runtime(all, FIRST_LIST_WAIT) {
            tracing::warn!(
                "some upstreams' skills were not listed within {FIRST_LIST_WAIT:?}; they join when they answer"
            );
        }
    }

    /// Lists `up`'s skills and reads every file, verified, then serves what the pins allow.
    /// An upstream that cannot be reached or listed keeps what it had.
    pub(crate) async fn refresh_skills(self: &Arc<Self>, up: &Arc<Upstream>) {
        let Some(peer) = up.current() else { return };
        let fetched = if peer.serves_skills() {
            match peer.list_skills().await {
                Ok(entries) => fetch_all(up, &peer, entries).await,
                Err(e) => {
                    tracing::warn!(server = %up.name(), "upstream {}'s skills/list failed: {e}", up.name());
                    return;
                }
            }
        } else {
            Vec::new()
        };
        self.skills
            .inner
            .lock()
            .fetched
            .insert(up.name().to_owned(), fetched);
        self.install_skills();
    }

    /// Serves the config's skills and every current upstream's skills that the pins allow,
    /// in one [`toolwright_server::Server::set_skills`] (skipped when nothing changed).
    pub(crate) fn install_skills(&self) {
        let Some(target) = self.catalog_target.get().or(self.server.get()) else {
            return;
        };
        let mut inner = self.skills.inner.lock();
        let upstreams = self.upstreams_now();
        let listed: Vec<(&str, &Vec<Fetched>)> = upstreams
            .iter()
            .filter_map(|u| Some((u.name(), inner.fetched.get(u.name())?)))
            .filter(|(_, f)| !f.is_empty())
            .collect();
        let pins = Pins::new(self.state_file.clone());
        let verdicts = pins.with_state(|state| {
            let mut changed = false;
            let all: Vec<Vec<Verdict>> = listed
                .iter()
                .map(|(server, fetched)| {
                    let defs: Vec<(&str, &Value)> = fetched
                        .iter()
                        .map(|f| (f.upstream_path.as_str(), &f.definition))
                        .collect();
                    let (v, c) = state.check_skills(server, &defs);
                    changed |= c;
                    v
                })
                .collect();
            (all, changed)
        });
        let mut notes = Vec::new();
        let mut chosen: Vec<Skill> = inner.local.clone().unwrap_or_default();
        match verdicts {
            Err(e) => notes.push(format!("upstream skills are not served: {e}")),
            Ok(verdicts) => {
                for ((server, fetched), verdicts) in listed.iter().zip(verdicts) {
                    for (f, v) in fetched.iter().zip(verdicts) {
                        if v.is_usable() {
                            chosen.push(f.skill.clone());
                        } else {
                            notes.push(format!(
                                "upstream {server}'s skill {} changed or is new since the server's skills were pinned: not served until `toolwright trust accept {server} {}`",
                                f.upstream_path, f.upstream_path
                            ));
                        }
                    }
                }
            }
        }
        let has_upstream = !listed.is_empty();
        drop(listed);
        for note in notes {
            if inner.reported.insert(note.clone()) {
                tracing::warn!("{note}");
            }
        }
        let set = serveable(chosen, &mut inner.reported);
        let digest = set_digest(&set);
        // Nothing to serve and nothing served yet: the server's skills are left alone.
        if inner.served.is_none() && !has_upstream && inner.local.is_none() {
            return;
        }
        if inner.served == Some(digest) {
            return;
        }
        match SkillSet::new(set) {
            Ok(s) => {
                target.set_skills(s);
                inner.served = Some(digest);
            }
            Err(e) => tracing::error!("the gateway's skills cannot be served: {e}"),
        }
    }
}

/// Every skill of `entries` that can be read whole and verified, each with its pinned
/// definition; the others logged and left out.
async fn fetch_all(
    up: &Upstream,
    peer: &toolwright_client::Peer,
    entries: Vec<SkillEntry>,
) -> Vec<Fetched> {
    let mut out = Vec::new();
    let mut total = 0u64;
    for entry in entries {
        let skip = |why: String| {
            tracing::warn!(server = %up.name(), "upstream {}'s skill {} is not served: {why}", up.name(), entry.uri);
        };
        let size: u64 = entry.resources.files().iter().map(|f| f.size).sum();
        total += size;
        if total > MAX_UPSTREAM_BYTES {
            skip(format!(
                "the upstream's skills add up to more than {MAX_UPSTREAM_BYTES} bytes"
            ));
            continue;
        }
        match fetch_one(up.prefix(), peer, &entry).await {
            Ok(f) => out.push(f),
            Err(why) => skip(why),
        }
    }
    out
}

/// One skill, every file read and verified.
async fn fetch_one(
    prefix: &str,
    peer: &toolwright_client::Peer,
    entry: &SkillEntry,
) -> Result<Fetched, String> {
    let SkillResources::Files(files) = &entry.resources else {
        return Err("it lists its files as dynamic, so there is nothing to verify or pin".into());
    };
    if files.len() > MAX_FILES {
        return Err(format!("it lists more than {MAX_FILES} files"));
    }
    if files.iter().map(|f| f.size).sum::<u64>() > MAX_TOTAL_BYTES {
        return Err(format!(
            "its files add up to more than {MAX_TOTAL_BYTES} bytes"
        ));
    }
    let dir = skill_directory(&entry.uri)
        .filter(|d| d.starts_with(SCHEME))
        .ok_or("its URI is not a skill:// SKILL.md")?;
    let upstream_path = dir[SCHEME.len()..].to_owned();
    let mut digests = Map::new();
    let mut read = Vec::with_capacity(files.len());
    for file in files {
        let rel = file
            .uri
            .strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .and_then(percent_decode)
            .ok_or_else(|| format!("its file {} is not under {dir}", file.uri))?;
        let bytes = peer
            .read_skill_file(entry, &file.uri)
            .await
            .map_err(|e| e.to_string())?;
        digests.insert(rel.clone(), Value::String(file.digest.clone()));
        read.push((rel, bytes));
    }
    let path = if prefix.is_empty() {
        upstream_path.clone()
    } else {
        format!("{prefix}/{upstream_path}")
    };
    Ok(Fetched {
        definition: json!({"frontmatter": entry.frontmatter, "files": digests}),
        skill: Skill {
            path,
            frontmatter: entry.frontmatter.clone(),
            files: read,
        },
        upstream_path,
    })
}

/// The skills that can be served together: each one valid alone, and none at or below
/// the path of one kept before it (the config's own come first). The others are logged.
fn serveable(skills: Vec<Skill>, reported: &mut BTreeSet<String>) -> Vec<Skill> {
    let mut kept: Vec<Skill> = Vec::with_capacity(skills.len());
    for s in skills {
        let clash = kept.iter().find(|k| {
            k.path == s.path
                || s.path.starts_with(&format!("{}/", k.path))
                || k.path.starts_with(&format!("{}/", s.path))
        });
        let why = match clash {
            Some(k) => Some(format!("it clashes with the skill at {}", k.path)),
            None => SkillSet::new(vec![s.clone()]).err().map(|e| e.to_string()),
        };
        match why {
            Some(why) => {
                let note = format!("the skill at {} is not served: {why}", s.path);
                if reported.insert(note.clone()) {
                    tracing::warn!("{note}");
                }
            }
            None => kept.push(s),
        }
    }
    kept
}

/// A digest of what a set would serve (paths, frontmatter, files).
fn set_digest(skills: &[Skill]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for s in skills {
        s.path.hash(&mut h);
        Value::Object(s.frontmatter.clone())
            .to_string()
            .hash(&mut h);
        s.files.hash(&mut h);
    }
    h.finish()
}

/// `%XX` escapes decoded (a file path as the upstream encoded it in its URI); `None` when
/// an escape is malformed or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn percent_decoding() {
        table! { check;
            ("a/b.md", Some("a/b.md"));
            ("a%20b.md", Some("a b.md"));
            ("%E2%82%AC", Some("\u{20ac}"));
            ("bad%2", None);
            ("bad%zz", None);
        }
        fn check(input: &str, want: Option<&str>) {
            assert_eq!(percent_decode(input).as_deref(), want, "{input}");
        }
    }
}
