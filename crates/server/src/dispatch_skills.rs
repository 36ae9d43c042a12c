//! Dispatch of the Skills extension (SEP-2640): `skills/list`, `skills/get` and
//! `resources/directory/read`, the capability that announces them, and the skill files
//! that `resources/read` and `resources/list` serve beside the catalog's resources.

use crate::catalog::Catalog;
use crate::era::Era;
use crate::reply::{Reply, parse_params, parse_required};
use crate::server::{Event, Server};
use crate::session::Session;
use crate::skills::SkillSet;
use serde_json::value::RawValue;
use serde_json::{Map, json};
use std::sync::Arc;
use toolwright_jsonrpc::{ErrorObject, RequestId};
use toolwright_protocol::params::PaginatedParams;
use toolwright_protocol::skills::{DirectoryReadParams, EXTENSION_ID, GetSkillParams};
use toolwright_protocol::{ResourceContents, ServerCapabilities};

/// Skills per `skills/list` page (an entry is never split).
const SKILLS_PAGE: usize = 50;
/// Children per `resources/directory/read` page.
const DIRECTORY_PAGE: usize = 100;

impl Catalog {
    /// The skills served, if any.
    pub(crate) fn skills(&self) -> Option<Arc<SkillSet>> {
        self.skills.load_full().filter(|s| !s.is_empty())
    }

    pub(crate) fn has_skills(&self) -> bool {
        self.skills().is_some()
    }
}

impl Server {
    /// Serves these skills from now on (in place of any served before); an empty set
    /// serves none. Clients are told the resource list changed.
    pub fn set_skills(&self, skills: SkillSet) {
        self.inner.catalog.skills.store(Some(Arc::new(skills)));
        self.publish(Event::ResourcesChanged);
    }

    /// `capabilities.extensions["io.modelcontextprotocol/skills"]`, inline settings: this
    /// server reads directories.
    pub(crate) fn capabilities_skills(&self, caps: &mut ServerCapabilities) {
        if self.inner.catalog.has_skills() {
            let ext = caps.extensions.get_or_insert_with(Map::new);
            ext.insert(EXTENSION_ID.into(), json!({"directoryRead": true}));
        }
    }

    /// The skill file at `uri`, for `resources/read`.
    pub(crate) fn skill_file(&self, uri: &str) -> Option<ResourceContents> {
        self.inner.catalog.skills()?.read(uri)
    }

    /// The `SKILL.md` resources `resources/list` shows after the catalog's own.
    pub(crate) fn skill_resources(&self) -> Vec<toolwright_protocol::resources::Resource> {
        self.inner
            .catalog
            .skills()
            .map(|s| s.listed().to_vec())
            .unwrap_or_default()
    }

    /// `skills/list`: one page of entries, in URI order.
    pub(crate) fn skills_list(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let skills = self.served_skills()?;
        let all = skills.entries();
        let start = offset(p.cursor.as_deref(), all.len())?;
        let end = (start + SKILLS_PAGE).min(all.len());
        let mut value = json!({"skills": &all[start..end]});
        if end < all.len() {
            value["nextCursor"] = json!(end.to_string());
        }
        self.add_cache_fields(&era, &mut value);
        Ok(self.result(id, &era, value))
    }

    /// `skills/get`: the entry of one skill, named by its `SKILL.md` URI.
    pub(crate) fn skills_get(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: GetSkillParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let skills = self.served_skills()?;
        let Some(entry) = skills.get(&p.uri) else {
            let msg = format!(
                "Unknown skill: {} (skills/list names the skills served)",
                p.uri
            );
            return Err(ErrorObject::invalid_params(msg).with_data(json!({"uri": p.uri})));
        };
        let mut value = json!({"skill": entry});
        self.add_cache_fields(&era, &mut value);
        Ok(self.result(id, &era, value))
    }

    /// `resources/directory/read`: one page of a served directory's direct children;
    /// subdirectories carry the MIME type `inode/directory`.
    pub(crate) fn directory_read(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: DirectoryReadParams = parse_required(params)?;
        let era = Era::resolve(p.meta.as_ref(), session)?;
        let skills = self.served_skills()?;
        let in_view = session.view().is_none_or(|v| v.shows(&p.uri));
        let Some(children) = skills.directory(&p.uri).filter(|_| in_view) else {
            let what = if skills.has_file(&p.uri) {
                "is a file, not a directory"
            } else {
                "names no directory this server serves"
            };
            let msg = format!("{} {what}", p.uri);
            return Err(ErrorObject::invalid_params(msg).with_data(json!({"uri": p.uri})));
        };
        let start = offset(p.cursor.as_deref(), children.len())?;
        let end = (start + DIRECTORY_PAGE).min(children.len());
        let mut value = json!({"resources": &children[start..end]});
        if end < children.len() {
            value["nextCursor"] = json!(end.to_string());
        }
        self.add_cache_fields(&era, &mut value);
        Ok(self.result(id, &era, value))
    }

    fn served_skills(&self) -> Result<Arc<SkillSet>, ErrorObject> {
        self.inner
            .catalog
            .skills()
            .ok_or_else(|| ErrorObject::method_not_found("skills/list"))
    }
}

/// The offset a cursor stands for: one this server issued (a position inside the list).
fn offset(cursor: Option<&str>, len: usize) -> Result<usize, ErrorObject> {
    let Some(c) = cursor else { return Ok(0) };
    c.parse::<usize>()
        .ok()
        .filter(|&n| n > 0 && n < len)
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "invalid cursor {c:?}: it was not issued by this server"
            ))
        })
}
