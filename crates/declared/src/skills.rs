//! Skills from a directory (`skills:` in a tool file, `serve --skills DIR`), read into a
//! [`SkillSet`] to serve.
//!
//! The root is opened once; everything below is opened relative to it, a directory with
//! `openat` and `O_NOFOLLOW` (a symbolic link to a directory is not descended, so a loop
//! cannot be made), a file with `openat2` and `RESOLVE_BENEATH` from the root (a link to
//! a file inside the root is served, one that leads out of it is not). A directory holding
//! a `SKILL.md` is a skill: its path below the root is the skill path, and every regular
//! file beneath it is one of its files. Names starting with `.` are skipped. Sizes are
//! counted while reading, so an oversized skill is refused without being read whole.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, openat, statat};
use rustix::io::Errno;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use toolwright_protocol::skills::{MAX_FILES, MAX_TOTAL_BYTES, SKILL_MD, frontmatter_block};
use toolwright_server::SkillError;
use toolwright_server::skills::{Skill, SkillSet};
use toolwright_toolfile::paths::openat2;

/// How deep directories are walked below the root.
const MAX_DEPTH: usize = 16;

/// Why a skills directory cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// A directory or file could not be opened or read.
    #[error("{path}: {errno}")]
    Io {
        /// The path, below the root as given.
        path: PathBuf,
        /// What the system said.
        errno: Errno,
    },
    /// A `SKILL.md` has no frontmatter block, or its YAML is not a mapping.
    #[error("{path}: {why}")]
    Frontmatter {
        /// The `SKILL.md`.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A skill breaks a rule of the extension.
    #[error("{root}: {source}")]
    Rule {
        /// The skills directory.
        root: PathBuf,
        /// The rule broken.
        source: SkillError,
    },
}

/// Reads every skill below `root`. All or nothing: the first problem is the error.
///
/// # Errors
///
/// [`SkillsError`]: an unreadable directory, a `SKILL.md` without frontmatter, a skill over
/// the extension's limits or against its rules.
pub fn load(root: &Path) -> Result<SkillSet, SkillsError> {
    SkillSet::new(read(root)?).map_err(|source| SkillsError::Rule {
        root: root.to_owned(),
        source,
    })
}

/// The skills below `root`, read but not yet checked against the extension's rules (what
/// [`load`] makes a [`SkillSet`] of; the gateway serves them beside upstream skills).
///
/// # Errors
///
/// [`SkillsError`]: an unreadable directory, a `SKILL.md` without frontmatter, a skill over
/// the extension's limits.
pub fn read(root: &Path) -> Result<Vec<Skill>, SkillsError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |errno| SkillsError::Io { path, errno }
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(root, flags, Mode::empty()).map_err(io(root))?;
    let mut walk = Walk {
        root,
        root_fd: &fd,
        skills: Vec::new(),
    };
    walk.find_skills(&fd, "", 0)?;
    Ok(walk.skills)
}

struct Walk<'a> {
    root: &'a Path,
    root_fd: &'a OwnedFd,
    skills: Vec<Skill>,
}

/// What is in a directory: its subdirectories and regular files (or links to check), by
/// name, dot-names left out, in name order.
fn entries(dir: &OwnedFd) -> Result<(Vec<String>, Vec<String>), Errno> {
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => {
                FileType::from_raw_mode(statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode)
            }
            k => k,
        };
        match kind {
            FileType::Directory => dirs.push(name.to_owned()),
            FileType::RegularFile | FileType::Symlink => files.push(name.to_owned()),
            _ => {}
        }
    }
    dirs.sort();
    files.sort();
    Ok((dirs, files))
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

fn open_dir(parent: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    openat(parent, name, flags, Mode::empty())
}

impl Walk<'_> {
    fn io(&self, rel: &str) -> impl Fn(Errno) -> SkillsError + use<> {
        let path = self.root.join(rel);
        move |errno| SkillsError::Io {
            path: path.clone(),
            errno,
        }
    }

    /// Looks for skills in the directory `rel` (open as `dir`).
    fn find_skills(&mut self, dir: &OwnedFd, rel: &str, depth: usize) -> Result<(), SkillsError> {
        let (dirs, files) = entries(dir).map_err(self.io(rel))?;
        if !rel.is_empty() && files.iter().any(|f| f == SKILL_MD) {
            return self.read_skill(rel);
        }
        if depth >= MAX_DEPTH {
            return Ok(());
        }
        for name in dirs {
            let sub = join(rel, &name);
            let fd = open_dir(dir, &name).map_err(self.io(&sub))?;
            self.find_skills(&fd, &sub, depth + 1)?;
        }
        Ok(())
    }

    /// Reads the skill at `rel`: every file beneath it, and its frontmatter.
    fn read_skill(&mut self, rel: &str) -> Result<(), SkillsError> {
        let mut files = Vec::new();
        let mut budget = MAX_TOTAL_BYTES;
        self.read_files(rel, "", 0, &mut files, &mut budget)?;
        let md = files
            .iter()
            .find(|(p, _)| p == SKILL_MD)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_default();
        let md_path = self.root.join(rel).join(SKILL_MD);
        let bad = |why: &str| SkillsError::Frontmatter {
            path: md_path.clone(),
            why: why.to_owned(),
        };
        let text = std::str::from_utf8(md).map_err(|_| bad("it is not UTF-8 text"))?;
        let block = frontmatter_block(text)
            .ok_or_else(|| bad("it does not begin with a frontmatter block between `---` lines"))?;
        let value = toolwright_toolfile::yaml::to_json(block)
            .map_err(|e| bad(&format!("its frontmatter is not YAML: {e}")))?;
        let serde_json::Value::Object(frontmatter) = value else {
            return Err(bad("its frontmatter is not a mapping of fields"));
        };
        self.skills.push(Skill {
            path: rel.to_owned(),
            frontmatter,
            files,
        });
        Ok(())
    }

    /// Reads the files below `skill/sub` into `out`, within `budget` bytes.
    fn read_files(
        &self,
        skill: &str,
        sub: &str,
        depth: usize,
        out: &mut Vec<(String, Vec<u8>)>,
        budget: &mut u64,
    ) -> Result<(), SkillsError> {
        let here = join(skill, sub);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_SYMLINKS;
        let dir = openat2(self.root_fd, here.as_str(), flags, Mode::empty(), how)
            .map_err(self.io(&here))?;
        let (dirs, files) = entries(&dir).map_err(self.io(&here))?;
        for name in files {
            let rel = join(sub, &name);
            let Some(bytes) = self.read_file(skill, &rel, budget)? else {
                continue;
            };
            if out.len() >= MAX_FILES {
                return Err(self.too_big(skill, format!("more than {MAX_FILES} files")));
            }
            out.push((rel, bytes));
        }
        if depth < MAX_DEPTH {
            for name in dirs {
                self.read_files(skill, &join(sub, &name), depth + 1, out, budget)?;
            }
        }
        Ok(())
    }

    /// A file's bytes; `None` for a link that leads out of the root (or to no regular file).
    fn read_file(
        &self,
        skill: &str,
        file: &str,
        budget: &mut u64,
    ) -> Result<Option<Vec<u8>>, SkillsError> {
        let rel = &join(skill, file);
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let fd = match openat2(self.root_fd, rel, flags, Mode::empty(), how) {
            Ok(fd) => fd,
            Err(Errno::XDEV | Errno::LOOP | Errno::NOENT) => {
                tracing::warn!(file = %self.root.join(rel).display(), "skills: a link that leads out of the skills directory is not served");
                return Ok(None);
            }
            Err(e) => return Err(self.io(rel)(e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(self.io(rel))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        let file = std::fs::File::from(fd);
        file.take(*budget + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(rel)(Errno::from_io_error(&e).unwrap_or(Errno::IO)))?;
        let n = bytes.len() as u64;
        if n > *budget {
            return Err(self.too_big(skill, format!("more than {MAX_TOTAL_BYTES} bytes")));
        }
        *budget -= n;
        Ok(Some(bytes))
    }

    fn too_big(&self, skill: &str, what: String) -> SkillsError {
        SkillsError::Rule {
            root: self.root.to_owned(),
            source: SkillError::Invalid {
                skill: skill.to_owned(),
                why: format!("it has {what}, over the limit of a skill"),
            },
        }
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
