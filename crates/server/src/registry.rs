//! The tool registry: tools as data, listed in a stable order and found by name.
//!
//! Readers never take a lock: the registry publishes immutable [`Snapshot`]s through an
//! `ArcSwap`, and a change (register, unregister) builds a new snapshot. Each snapshot
//! caches the serialized `tools/list` pages per wire shape the first time they are asked
//! for, so listing 1,000 tools is a copy of bytes, not 1,000 serializations.

use crate::error::{CursorError, RegisterError};
use crate::tool::Tool;
use crate::view::View;
use arc_swap::ArcSwap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use toolwright_protocol::headers::ParamHeaders;
use toolwright_protocol::tool::check_name;
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
    /// The `x-mcp-header` arguments of `inputSchema` (mirrored in modern HTTP headers),
    /// compiled once.
    pub param_headers: ParamHeaders,
    /// Whether `tools/list` shows the tool ([`Tool::listed`]); an unlisted tool can still be
    /// called, and its call explains why it is not listed.
    pub listed: bool,
}

impl Entry {
    /// Checks and compiles a tool for registration.
    pub fn compile(handler: Arc<dyn Tool>) -> Result<Entry, RegisterError> {
        let definition = handler.definition();
        let name = definition.name.clone();
        if let Err(reason) = check_name(&name) {
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
            Some(_) if handler.checks_own_output() => None,
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
        let param_headers = ParamHeaders::compile(&definition.input_schema).map_err(|source| {
            RegisterError::ParamHeader {
                name: name.clone(),
                source: Box::new(source),
            }
        })?;
        let listed = handler.listed();
        Ok(Entry {
            definition,
            handler,
            input,
            output,
            required_capabilities,
            param_headers,
            listed,
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

/// How `tools/list` is cut into pages: a page ends after `max_tools` tools or before the
/// tool that would take its JSON past `max_bytes` (a page always holds at least one tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// Most tools on one page.
    pub max_tools: usize,
    /// Most bytes of tool definitions on one page.
    pub max_bytes: usize,
}

impl Default for Paging {
    /// Pages of up to 1 MiB of definitions: one round trip for all but huge catalogs.
    fn default() -> Self {
        Paging {
            max_tools: usize::MAX,
            max_bytes: 1 << 20,
        }
    }
}

/// A serialized page: the tools `start..end` as a JSON array.
struct CachedPage {
    start: usize,
    end: usize,
    json: Box<str>,
}

/// One immutable view of the registered tools, sorted by name.
pub struct Snapshot {
    entries: Vec<Arc<Entry>>,
    paging: Paging,
    /// Every page, per wire shape, serialized the first time that shape is listed.
    pages: [OnceLock<Vec<CachedPage>>; SHAPES],
}

/// A page of `tools/list`, ready to be written.
pub struct Page<'a> {
    /// The JSON array of tool definitions.
    pub tools_json: Cow<'a, str>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

impl Snapshot {
    fn new(entries: Vec<Arc<Entry>>, paging: Paging) -> Self {
        Snapshot {
            entries,
            paging,
            pages: std::array::from_fn(|_| OnceLock::new()),
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

    /// Cuts `entries[start..]` into pages, serialized in the shape of `version`; with
    /// `only_first`, stops after one page.
    /// In a `view`, only its tools count, as it shows them, and a page ends after its last
    /// tool (so that the next cursor names a tool of the view, never one outside it).
    fn build_pages(
        &self,
        start: usize,
        version: ProtocolVersion,
        only_first: bool,
        view: Option<&View>,
    ) -> Vec<CachedPage> {
        let mut pages = Vec::new();
        let mut json = String::from("[");
        let mut page_start = start;
        let mut count = 0;
        let mut last = start;
        for (i, e) in self.entries.iter().enumerate().skip(start) {
            if !e.listed || view.is_some_and(|v| !v.shows(&e.definition.name)) {
                continue;
            }
            let definition = match view {
                Some(v) => v.definition(&e.definition),
                None => Cow::Borrowed(&e.definition),
            };
            let item =
                serde_json::to_string(&definition.to_wire(version)).expect("definitions serialize");
            if count > 0
                && (count >= self.paging.max_tools
                    || json.len() + 1 + item.len() + 1 > self.paging.max_bytes)
            {
                json.push(']');
                pages.push(CachedPage {
                    start: page_start,
                    end: if view.is_some() { last + 1 } else { i },
                    json: std::mem::take(&mut json).into_boxed_str(),
                });
                if only_first {
                    return pages;
                }
                json.push('[');
                page_start = i;
                count = 0;
            }
            if count > 0 {
                json.push(',');
            }
            json.push_str(&item);
            count += 1;
            last = i;
        }
        json.push(']');
        pages.push(CachedPage {
            start: page_start,
            end: self.entries.len(),
            json: json.into_boxed_str(),
        });
        pages
    }

    /// The page that starts at `cursor` (or the first page), in the wire shape of `version`.
    /// A cursor this server did not hand out is an error.
    pub fn page(
        &self,
        cursor: Option<&str>,
        version: ProtocolVersion,
    ) -> Result<Page<'_>, CursorError> {
        let start = match cursor {
            None => 0,
            Some(c) => self.decode_cursor(c)?,
        };
        let pages = self.pages[shape_index(version)]
            .get_or_init(|| self.build_pages(0, version, false, None));
        let next =
            |end: usize| (end < self.entries.len()).then(|| encode_cursor(&self.entries[end - 1]));
        match pages.binary_search_by_key(&start, |p| p.start) {
            Ok(i) => Ok(Page {
                tools_json: Cow::Borrowed(&pages[i].json),
                next_cursor: next(pages[i].end),
            }),
            // A cursor from an older snapshot can land mid-page; such pages are not cached.
            Err(_) => {
                let page = self.build_pages(start, version, true, None).remove(0);
                Ok(Page {
                    next_cursor: next(page.end),
                    tools_json: Cow::Owned(page.json.into_string()),
                })
            }
        }
    }

    /// [`Snapshot::page`] within `view`: only its tools, as it shows them, paged over that
    /// list (never cached: a view's pages are built when asked for).
    pub fn page_in(
        &self,
        view: &View,
        cursor: Option<&str>,
        version: ProtocolVersion,
    ) -> Result<Page<'static>, CursorError> {
        let start = match cursor {
            None => 0,
            Some(c) => self.decode_cursor(c)?,
        };
        let page = self.build_pages(start, version, true, Some(view)).remove(0);
        let next_cursor =
            (page.end < self.entries.len()).then(|| encode_cursor(&self.entries[page.end - 1]));
        Ok(Page {
            next_cursor,
            tools_json: Cow::Owned(page.json.into_string()),
        })
    }

    fn decode_cursor(&self, cursor: &str) -> Result<usize, CursorError> {
        let bad = || CursorError {
            cursor: cursor.to_owned(),
        };
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
    paging: Paging,
}

impl Registry {
    /// An empty registry whose `tools/list` pages are cut by `paging`.
    pub fn new(paging: Paging) -> Self {
        let paging = Paging {
            max_tools: paging.max_tools.max(1),
            max_bytes: paging.max_bytes,
        };
        Registry {
            current: ArcSwap::from_pointee(Snapshot::new(Vec::new(), paging)),
            write: Mutex::new(()),
            paging,
        }
    }

    /// The current snapshot (lock-free).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Adds a tool; see [`RegisterError`] for what is refused.
    pub fn register(&self, handler: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let entry = Arc::new(Entry::compile(handler)?);
        let _guard = self.write.lock();
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
            .store(Arc::new(Snapshot::new(entries, self.paging)));
        Ok(())
    }

    /// Removes a tool by name; returns whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        let _guard = self.write.lock();
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
            .store(Arc::new(Snapshot::new(entries, self.paging)));
        true
    }

    /// Removes the tools named in `remove` and adds `add`, in one step: readers see the old
    /// set or the new one, never a mix. Every new tool is compiled first; if one is refused
    /// (or two share a name, or one keeps the name of a tool that stays), nothing changes.
    /// Calls already running keep the entry they started with.
    pub fn replace(&self, remove: &[String], add: Vec<Arc<dyn Tool>>) -> Result<(), RegisterError> {
        let compiled = add
            .into_iter()
            .map(|h| Entry::compile(h).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let _guard = self.write.lock();
        let old = self.current.load();
        let mut entries: Vec<Arc<Entry>> = old
            .entries
            .iter()
            .filter(|e| !remove.contains(&e.definition.name))
            .cloned()
            .collect();
        entries.extend(compiled);
        entries.sort_by(|a, b| a.definition.name.cmp(&b.definition.name));
        if let Some(pair) = entries
            .windows(2)
            .find(|w| w[0].definition.name == w[1].definition.name)
        {
            return Err(RegisterError::Duplicate {
                name: pair[0].definition.name.clone(),
            });
        }
        self.current
            .store(Arc::new(Snapshot::new(entries, self.paging)));
        Ok(())
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
