//! The tool registry: tools as data, listed in a stable order and found by name.
//!
//! Readers never take a lock: the registry publishes immutable [`Snapshot`]s through an
//! `ArcSwap`, and a change (register, unregister) builds a new snapshot. Each snapshot
//! caches the serialized `tools/list` pages per wire shape the first time they are asked
//! for, so listing 1,000 tools is a copy of bytes, not 1,000 serializations.

use crate::error::RegisterError;
use crate::tool::Tool;
use arc_swap::ArcSwap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use toolwright_protocol::tool::name_problem;
use toolwright_protocol::{ClientCapabilities, ProtocolVersion, Tool as ToolDefinition};
use toolwright_schema::Validator;

/// A registered tool: its definition, compiled schemas and implementation.
pub struct Entry {
    /// The definition as registered.
    pub definition: ToolDefinition,
    /// The implementation.
    pub handler: Arc<dyn Tool>,
    /// `inputSchema`, compiled once.
    pub input: Validator,
    /// `outputSchema`, compiled once, when the tool has one.
    pub output: Option<Validator>,
    /// Capabilities the tool needs from the client.
    pub required_capabilities: Option<ClientCapabilities>,
}

impl Entry {
    /// Checks and compiles a tool for registration.
    pub fn compile(handler: Arc<dyn Tool>) -> Result<Entry, RegisterError> {
        let definition = handler.definition();
        let name = definition.name.clone();
        if let Some(reason) = name_problem(&name) {
            return Err(RegisterError::InvalidName { name, reason });
        }
        match definition.input_schema.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            other => {
                let found = match other {
                    None if !definition.input_schema.is_object() => {
                        format!(
                            "a schema that is not an object ({})",
                            definition.input_schema
                        )
                    }
                    None => "no \"type\"".to_owned(),
                    Some(v) => format!("\"type\": {v}"),
                };
                return Err(RegisterError::InputRootNotObject { name, found });
            }
        }
        let input = Validator::compile(&definition.input_schema).map_err(|source| {
            RegisterError::Schema {
                name: name.clone(),
                which: "inputSchema",
                source,
            }
        })?;
        let output = match &definition.output_schema {
            Some(s) => Some(
                Validator::compile(s).map_err(|source| RegisterError::Schema {
                    name: name.clone(),
                    which: "outputSchema",
                    source,
                })?,
            ),
            None => None,
        };
        let required_capabilities = handler.required_client_capabilities();
        Ok(Entry {
            definition,
            handler,
            input,
            output,
            required_capabilities,
        })
    }
}

/// The distinct shapes a tool definition takes on the wire, one per protocol version.
const SHAPES: usize = ProtocolVersion::ALL.len();

fn shape_index(v: ProtocolVersion) -> usize {
    ProtocolVersion::ALL
        .iter()
        .position(|x| *x == v)
        .expect("every version has a shape")
}

/// One immutable view of the registered tools, sorted by name.
pub struct Snapshot {
    entries: Vec<Arc<Entry>>,
    page_size: usize,
    /// Serialized `tools` arrays, per wire shape and page.
    pages: [Vec<OnceLock<Box<str>>>; SHAPES],
}

/// A page of `tools/list`, ready to be written.
pub struct Page<'a> {
    /// The JSON array of tool definitions.
    pub tools_json: Cow<'a, str>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

impl Snapshot {
    fn new(entries: Vec<Arc<Entry>>, page_size: usize) -> Self {
        let n_pages = entries.len().div_ceil(page_size).max(1);
        let pages = std::array::from_fn(|_| (0..n_pages).map(|_| OnceLock::new()).collect());
        Snapshot {
            entries,
            page_size,
            pages,
        }
    }

    /// All tools, sorted by name.
    pub fn entries(&self) -> &[Arc<Entry>] {
        &self.entries
    }

    /// Finds a tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        self.entries
            .binary_search_by(|e| e.definition.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The page that starts at `cursor` (or the first page), in the wire shape of `version`.
    /// A cursor this server did not hand out is an error.
    pub fn page(&self, cursor: Option<&str>, version: ProtocolVersion) -> Result<Page<'_>, String> {
        let start = match cursor {
            None => 0,
            Some(c) => self.decode_cursor(c)?,
        };
        let end = (start + self.page_size).min(self.entries.len());
        let next_cursor = (end < self.entries.len()).then(|| encode_cursor(&self.entries[end - 1]));
        let build = || {
            let items: Vec<Value> = self.entries[start..end]
                .iter()
                .map(|e| e.definition.to_wire(version))
                .collect();
            serde_json::to_string(&items)
                .expect("definitions serialize")
                .into_boxed_str()
        };
        let tools_json = if start % self.page_size == 0 {
            Cow::Borrowed(
                &**self.pages[shape_index(version)][start / self.page_size].get_or_init(build),
            )
        } else {
            // A cursor from an older snapshot can land mid-page; such pages are not cached.
            Cow::Owned(String::from(build()))
        };
        Ok(Page {
            tools_json,
            next_cursor,
        })
    }

    fn decode_cursor(&self, cursor: &str) -> Result<usize, String> {
        let bad = || format!("invalid cursor {cursor:?}: it was not issued by this server");
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let last = text.strip_prefix("after:").ok_or_else(bad)?;
        Ok(self
            .entries
            .partition_point(|e| e.definition.name.as_str() <= last))
    }
}

/// Cursors name the last tool of the previous page, so a page boundary stays meaningful
/// when tools come and go between two requests.
fn encode_cursor(last: &Entry) -> String {
    URL_SAFE_NO_PAD.encode(format!("after:{}", last.definition.name))
}

/// The set of registered tools.
pub struct Registry {
    current: ArcSwap<Snapshot>,
    write: Mutex<()>,
    page_size: usize,
}

impl Registry {
    /// An empty registry whose `tools/list` pages hold `page_size` tools.
    pub fn new(page_size: usize) -> Self {
        let page_size = page_size.max(1);
        Registry {
            current: ArcSwap::from_pointee(Snapshot::new(Vec::new(), page_size)),
            write: Mutex::new(()),
            page_size,
        }
    }

    /// The current snapshot (lock-free).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Adds a tool; see [`RegisterError`] for what is refused.
    pub fn register(&self, handler: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let entry = Arc::new(Entry::compile(handler)?);
        let _guard = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.current.load();
        let name = entry.definition.name.as_str();
        let at = match old
            .entries
            .binary_search_by(|e| e.definition.name.as_str().cmp(name))
        {
            Ok(_) => {
                return Err(RegisterError::Duplicate {
                    name: name.to_owned(),
                });
            }
            Err(at) => at,
        };
        let mut entries = old.entries.clone();
        entries.insert(at, entry);
        self.current
            .store(Arc::new(Snapshot::new(entries, self.page_size)));
        Ok(())
    }

    /// Removes a tool by name; returns whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        let _guard = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.current.load();
        let Ok(at) = old
            .entries
            .binary_search_by(|e| e.definition.name.as_str().cmp(name))
        else {
            return false;
        };
        let mut entries = old.entries.clone();
        entries.remove(at);
        self.current
            .store(Arc::new(Snapshot::new(entries, self.page_size)));
        true
    }
}
