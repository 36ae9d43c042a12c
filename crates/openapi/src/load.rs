//! Reading a description and the documents its `$ref`s name: a [`Location`] (a file or an
//! http(s) URL), the bytes read through a [`Loader`], each document parsed as JSON or YAML
//! into a `serde_json::Value`, and [`Spec::resolve`] for every `$ref` (local, or to a
//! document beside the root one).
//!
//! Which documents may be read: a file description's references stay beneath its own
//! directory (no `..` out of it, no URLs); a URL description's references stay on its own
//! origin. A description from elsewhere never makes the importer read a local file or
//! another host.

use crate::error::Error;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use url::Url;

/// The most documents one import reads (the root and the files its references name).
pub const MAX_DOCUMENTS: usize = 64;

/// The most `$ref`s followed one after another before a chain is called a loop.
const MAX_REF_CHAIN: usize = 32;

/// Where a document is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    /// A local file.
    File(PathBuf),
    /// An http(s) URL (without its fragment).
    Url(Url),
}

impl Location {
    /// A command-line argument: an `http://` or `https://` URL, else a file path.
    ///
    /// # Errors
    ///
    /// [`Error::Fetch`] for a URL that does not parse.
    pub fn parse(text: &str) -> Result<Location, Error> {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let mut url = Url::parse(text).map_err(|e| Error::Fetch {
                location: text.to_owned(),
                reason: e.to_string(),
            })?;
            url.set_fragment(None);
            Ok(Location::Url(url))
        } else {
            Ok(Location::File(PathBuf::from(text)))
        }
    }

    /// The location as shown in messages and comments.
    pub fn display(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Url(u) => u.to_string(),
        }
    }
}

/// Reads a document's bytes.
pub trait Loader {
    /// The bytes at `location`.
    ///
    /// # Errors
    ///
    /// [`Error::Read`] or [`Error::Fetch`].
    fn load(&self, location: &Location) -> Result<Vec<u8>, Error>;
}

/// Reads files, and refuses URLs (for callers with no network, such as the fuzz target).
#[derive(Debug, Clone, Copy, Default)]
pub struct FilesOnly;

impl Loader for FilesOnly {
    fn load(&self, location: &Location) -> Result<Vec<u8>, Error> {
        match location {
            Location::File(p) => read_file(p),
            Location::Url(u) => Err(Error::Fetch {
                location: u.to_string(),
                reason: "this loader reads files only".into(),
            }),
        }
    }
}

/// Reads a file.
///
/// # Errors
///
/// [`Error::Read`].
pub fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Read {
        location: path.display().to_string(),
        source,
    })
}

/// Parses a document: JSON when it starts with `{` (after whitespace and a byte-order mark),
/// else YAML (read with the tool file's own YAML reader).
///
/// # Errors
///
/// [`Error::Parse`].
pub fn parse_document(location: &str, bytes: &[u8]) -> Result<Value, Error> {
    let bad = |reason: String| Error::Parse {
        location: location.to_owned(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let text = text.trim_start_matches('\u{feff}');
    let value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| bad(e.to_string()))?
    } else {
        toolwright_toolfile::yaml::to_json(text).map_err(|e| bad(e.to_string()))?
    };
    if !value.is_object() {
        return Err(bad("the document is not a mapping".into()));
    }
    Ok(value)
}

/// A document's key in a [`Spec`]: its location as text.
pub type DocKey = String;

/// The OpenAPI version of the root document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// 3.0.x: schemas are OpenAPI's JSON Schema subset (`nullable`, boolean
    /// `exclusiveMinimum`, `example`).
    V30,
    /// 3.1.x: schemas are JSON Schema 2020-12.
    V31,
}

/// A description and the documents its references name, all parsed.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Where the root document is.
    pub root: Location,
    /// The root document's key.
    pub root_key: DocKey,
    /// The OpenAPI version.
    pub version: Version,
    docs: BTreeMap<DocKey, (Location, Value)>,
}

/// A value found by [`Spec::resolve`], with the document it is in (its own references are
/// relative to that one).
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// The value.
    pub value: &'a Value,
    /// Its document.
    pub doc: &'a str,
}

impl Spec {
    /// Reads the description at `root` and every document its references name.
    ///
    /// # Errors
    ///
    /// Any [`Error`] reading or parsing the root; a document named by a reference that
    /// cannot be read is left out (each use of it then fails on its own operation).
    pub fn load(root: Location, loader: &dyn Loader) -> Result<Spec, Error> {
        let bytes = loader.load(&root)?;
        let value = parse_document(&root.display(), &bytes)?;
        Spec::with_root(root, value, loader)
    }

    /// A description already parsed (`value`, found at `root`); the documents its references
    /// name are read through `loader`.
    ///
    /// # Errors
    ///
    /// [`Error::NotOpenApi`].
    pub fn with_root(root: Location, value: Value, loader: &dyn Loader) -> Result<Spec, Error> {
        let version = version_of(&root.display(), &value)?;
        let root_key = root.display();
        let mut spec = Spec {
            root: root.clone(),
            root_key: root_key.clone(),
            version,
            docs: BTreeMap::new(),
        };
        spec.docs.insert(root_key.clone(), (root, value));
        spec.load_referenced(loader);
        Ok(spec)
    }

    /// The root document.
    pub fn doc(&self) -> &Value {
        &self.docs[&self.root_key].1
    }

    /// Reads the documents that references name, breadth first, up to [`MAX_DOCUMENTS`].
    fn load_referenced(&mut self, loader: &dyn Loader) {
        let mut queue: Vec<DocKey> = vec![self.root_key.clone()];
        while let Some(key) = queue.pop() {
            let mut refs = Vec::new();
            collect_refs(&self.docs[&key].1, &mut refs);
            for r in refs {
                if self.docs.len() >= MAX_DOCUMENTS {
                    return;
                }
                let Ok(loc) = self.target_of(&key, &r) else {
                    continue;
                };
                let target = loc.display();
                if self.docs.contains_key(&target) {
                    continue;
                }
                let Ok(bytes) = loader.load(&loc) else {
                    continue;
                };
                let Ok(value) = parse_document(&target, &bytes) else {
                    continue;
                };
                self.docs.insert(target.clone(), (loc, value));
                queue.push(target);
            }
        }
    }

    /// The document a reference's part before `#` names, relative to the document `from`,
    /// when the rules allow reading it.
    fn target_of(&self, from: &str, reference: &str) -> Result<Location, Error> {
        let bad = |reason: &str| Error::Ref {
            reference: reference.to_owned(),
            reason: reason.to_owned(),
        };
        let (doc_part, _) = reference.split_once('#').unwrap_or((reference, ""));
        let base = &self
            .docs
            .get(from)
            .ok_or_else(|| bad("no such document"))?
            .0;
        match (base, &self.root) {
            (Location::Url(base), Location::Url(root)) => {
                let url = base
                    .join(doc_part)
                    .map_err(|e| bad(&format!("not a URL: {e}")))?;
                if url.origin() != root.origin() {
                    return Err(bad("points to another origin than the description's own"));
                }
                Ok(Location::Url(url))
            }
            (Location::File(base), Location::File(root)) => {
                if doc_part.contains(':') || doc_part.starts_with('/') {
                    return Err(bad(
                        "a description read from a file may refer only to files beside it (a relative path)",
                    ));
                }
                let decoded = percent_encoding::percent_decode_str(doc_part)
                    .decode_utf8()
                    .map_err(|_| bad("not UTF-8"))?;
                let dir = match base.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                let joined = normalize(&dir.join(decoded.as_ref()));
                let root_dir = match root.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                // Compared as absolute paths: a relative `..` escapes an empty parent too.
                let absolute = |p: &Path| {
                    std::path::absolute(p)
                        .map(|a| normalize(&a))
                        .unwrap_or_else(|_| normalize(p))
                };
                if !absolute(&joined).starts_with(absolute(root_dir)) {
                    return Err(bad("leaves the description's directory"));
                }
                Ok(Location::File(joined))
            }
            _ => Err(bad("mixes files and URLs")),
        }
    }

    /// Follows `$ref`s from `value` (in document `doc`) to a value that is not one.
    ///
    /// # Errors
    ///
    /// [`Error::Ref`] for a reference that may not be followed, names no value, or loops.
    pub fn deref<'a>(&'a self, value: &'a Value, doc: &'a str) -> Result<Found<'a>, Error> {
        let mut found = Found { value, doc };
        for _ in 0..MAX_REF_CHAIN {
            let Some(r) = found.value.get("$ref").and_then(Value::as_str) else {
                return Ok(found);
            };
            found = self.resolve(found.doc, r)?;
        }
        Err(Error::Ref {
            reference: value
                .get("$ref")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            reason: format!("more than {MAX_REF_CHAIN} references in a row (a loop?)"),
        })
    }

    /// The value one reference names, relative to document `from`.
    ///
    /// # Errors
    ///
    /// [`Error::Ref`].
    pub fn resolve<'a>(&'a self, from: &str, reference: &str) -> Result<Found<'a>, Error> {
        let bad = |reason: String| Error::Ref {
            reference: reference.to_owned(),
            reason,
        };
        let (doc_part, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let (key, entry) = if doc_part.is_empty() {
            self.docs
                .get_key_value(from)
                .ok_or_else(|| bad("no such document".into()))?
        } else {
            let loc = self.target_of(from, reference)?;
            self.docs
                .get_key_value(&loc.display())
                .ok_or_else(|| bad(format!("{} could not be read", loc.display())))?
        };
        let pointer = percent_encoding::percent_decode_str(fragment)
            .decode_utf8()
            .map_err(|_| bad("the fragment is not UTF-8".into()))?;
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return Err(bad(
                "only JSON Pointer fragments are followed (#/components/...)".into(),
            ));
        }
        let value = entry
            .1
            .pointer(&pointer)
            .ok_or_else(|| bad(format!("{} has nothing at #{pointer}", key)))?;
        Ok(Found { value, doc: key })
    }

    /// `doc#pointer` of a reference, as the identity of the schema it names.
    pub fn id_of(&self, from: &str, reference: &str) -> String {
        let (doc_part, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let doc = if doc_part.is_empty() {
            from.to_owned()
        } else {
            self.target_of(from, reference)
                .map(|l| l.display())
                .unwrap_or_else(|_| doc_part.to_owned())
        };
        format!("{doc}#{fragment}")
    }
}

/// The version the root document declares.
fn version_of(location: &str, doc: &Value) -> Result<Version, Error> {
    let not = |reason: String| Error::NotOpenApi {
        location: location.to_owned(),
        reason,
    };
    if let Some(s) = doc.get("swagger") {
        return Err(not(format!(
            "it is Swagger {s}; convert it to OpenAPI 3 first"
        )));
    }
    let Some(v) = doc.get("openapi") else {
        return Err(not("it has no `openapi` version".into()));
    };
    let v = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if v.starts_with("3.0") {
        Ok(Version::V30)
    } else if v.starts_with("3.1") {
        Ok(Version::V31)
    } else {
        Err(not(format!("it declares openapi {v}")))
    }
}

/// Every `$ref` string in `value` that names another document.
fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) if !r.starts_with('#') => out.push(r.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// A path with `.` and `..` taken out lexically (the files need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Docs(BTreeMap<PathBuf, Value>);

    impl Loader for Docs {
        fn load(&self, location: &Location) -> Result<Vec<u8>, Error> {
            match location {
                Location::File(p) => {
                    self.0
                        .get(p)
                        .map(|v| v.to_string().into_bytes())
                        .ok_or(Error::Read {
                            location: p.display().to_string(),
                            source: std::io::ErrorKind::NotFound.into(),
                        })
                }
                Location::Url(_) => unreachable!(),
            }
        }
    }

    #[test]
    fn versions() {
        table! { |doc: Value, want: Option<Version>| assert_eq!(version_of("x", &doc).ok(), want, "{doc}");
            (json!({"openapi": "3.0.3"}), Some(Version::V30));
            (json!({"openapi": "3.1.0"}), Some(Version::V31));
            (json!({"openapi": "4.0.0"}), None);
            (json!({"swagger": "2.0"}), None);
            (json!({}), None);
        }
    }

    #[test]
    fn external_refs_stay_beside_the_description() {
        let mut docs = BTreeMap::new();
        docs.insert(
            PathBuf::from("d/api.json"),
            json!({"openapi": "3.0.0",
            "a": {"$ref": "schemas/pet.json#/Pet"}, "b": {"$ref": "../secret.json"},
            "c": {"$ref": "/etc/passwd"}, "d": {"$ref": "http://example.com/x.json"}}),
        );
        docs.insert(
            PathBuf::from("d/schemas/pet.json"),
            json!({"Pet": {"type": "object"}}),
        );
        docs.insert(PathBuf::from("secret.json"), json!({"k": 1}));
        docs.insert(PathBuf::from("top.json"), json!({"openapi": "3.0.0"}));
        let spec = Spec::load(Location::File("d/api.json".into()), &Docs(docs)).unwrap();
        let root = spec.root_key.clone();
        let pet = spec.resolve(&root, "schemas/pet.json#/Pet").unwrap();
        assert_eq!(pet.value, &json!({"type": "object"}));
        for bad in [
            "../secret.json",
            "/etc/passwd",
            "http://example.com/x.json",
            "#/nope",
        ] {
            assert!(spec.resolve(&root, bad).is_err(), "{bad}");
        }
        // A description in the current directory cannot climb out of it either.
        let spec = Spec::load(
            Location::File("top.json".into()),
            &Docs(
                BTreeMap::new()
                    .into_iter()
                    .chain([(PathBuf::from("top.json"), json!({"openapi": "3.0.0"}))])
                    .collect(),
            ),
        )
        .unwrap();
        assert!(spec.target_of("top.json", "../secret.json").is_err());
        assert!(spec.target_of("top.json", "sub/ok.json").is_ok());
    }

    #[test]
    fn fragments_are_percent_decoded_pointers() {
        let doc = json!({"openapi": "3.1.0", "paths": {"/a/{b}": {"get": {"x": 1}}}});
        let spec = Spec::with_root(Location::File("a.json".into()), doc, &FilesOnly).unwrap();
        let f = spec.resolve("a.json", "#/paths/~1a~1%7Bb%7D/get").unwrap();
        assert_eq!(f.value, &json!({"x": 1}));
        assert!(spec.resolve("a.json", "#name").is_err());
    }
}
