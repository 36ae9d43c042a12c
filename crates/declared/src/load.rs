//! Loading tool files: a set of files loads as a whole or not at all. [`load_files`] returns
//! the tools only when every tool of every file compiled and no two share a name, so a server
//! swapping in a new set never serves half of an edit; [`load_set`] the gateway's settings and
//! the built-in tools to serve with them. Every check the loader makes is in
//! [`check_documents`], which `toolwright lint` runs too. Reading and placing problems is the
//! tool file crate's ([`Document`]).

use crate::error::{FileProblem, LoadError, Problem};
use crate::sql::source::Sources;
use crate::tool::DeclaredTool;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use toolwright_toolfile::GatewayConfig;
use toolwright_toolfile::builtins::Builtins;
pub use toolwright_toolfile::document::{Document, Format};

/// Compiles every tool of a document (its `sql` tools naming `sources`); the problems of those that do not compile are placed.
pub fn compile_document(
    doc: &Document,
    sources: &Sources,
) -> (Vec<(usize, DeclaredTool)>, Vec<FileProblem>) {
    let mut tools = Vec::new();
    let mut problems = Vec::new();
    for (i, value) in doc.tools.iter().enumerate() {
        match DeclaredTool::compile_with(value, sources) {
            Ok(t) => tools.push((i, t)),
            Err(p) => problems.push(doc.problem(i, p)),
        }
    }
    (tools, problems)
}

/// Loads every tool of `files`, all or nothing.
///
/// # Errors
///
/// [`LoadError::Problems`] with every problem found: files that cannot be read or parsed,
/// tools that do not compile, two tools with one name.
pub fn load_files(files: &[PathBuf]) -> Result<Vec<Arc<DeclaredTool>>, LoadError> {
    let (docs, mut problems) = read_all(files);
    let (out, bad) = compile_all(&docs);
    problems.extend(bad);
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(LoadError::Problems(problems))
    }
}

/// Compiles every tool of `docs`, as a set served together: the tools that compile, and
/// every problem (placed) of those that do not, with the tools that take a name an earlier
/// one has. [`load_files`] serves the tools only when there is no problem; `toolwright
/// lint` reports the problems as they are.
pub fn compile_all(docs: &[Document]) -> (Vec<Arc<DeclaredTool>>, Vec<FileProblem>) {
    let (sources, mut problems) = Sources::compile(docs);
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for doc in docs {
        let (tools, bad) = compile_document(doc, &sources);
        problems.extend(bad);
        for (i, tool) in tools {
            let name = tool.definition_ref().name.clone();
            if let Some(first) = seen.get(&name) {
                problems.push(doc.problem(
                    i,
                    Problem::new(
                        ["name"],
                        format!("another tool is named {name:?} (in {})", first.display()),
                    ),
                ));
                continue;
            }
            seen.insert(name, doc.file.clone());
            out.push(Arc::new(tool));
        }
    }
    (out, problems)
}

/// What a set of tool files loads into, and every problem found in them: the loader's
/// checks, all in one place, which `toolwright serve --config` and `toolwright lint` both
/// run. A part is `None` when its reader found problems.
#[derive(Debug)]
pub struct Checked {
    /// The declared tools that compiled, in file order.
    pub tools: Vec<Arc<DeclaredTool>>,
    /// The gateway's settings (`servers:`, `gateway:`).
    pub config: Option<GatewayConfig>,
    /// Which built-in tools are served (`builtins:`, checked against the server's own).
    pub builtins: Option<Builtins>,
    /// Every problem, each placed, each once, in file order within each check.
    pub problems: Vec<FileProblem>,
}

/// Runs every check of the loader on files read as a set, as `serve --config A --config B`
/// loads them: the tools compile and no two share a name ([`compile_all`]), the gateway's
/// settings are good ([`toolwright_toolfile::read_config`]), and `builtins:` names built-in
/// tools that no declared tool shadows ([`toolwright_toolfile::builtins::read`]).
///
/// `builtin_names` are the built-in tools the server has (the binary passes
/// `toolwright_tools::NAMES`): `builtins:` may name only those.
pub fn check_documents(docs: &[Document], builtin_names: &[&str]) -> Checked {
    let (tools, mut problems) = compile_all(docs);
    let add = |e: LoadError, problems: &mut Vec<FileProblem>| {
        for p in e.problems() {
            if !problems.contains(p) {
                problems.push(p.clone());
            }
        }
    };
    let config = toolwright_toolfile::read_config(docs)
        .map_err(|e| add(e, &mut problems))
        .ok();
    let builtins = toolwright_toolfile::builtins::read(docs, builtin_names)
        .map_err(|e| add(e, &mut problems))
        .ok();
    Checked {
        tools,
        config,
        builtins,
        problems,
    }
}

/// Reads `files` and loads them as a set, all or nothing ([`check_documents`]): the tools,
/// the gateway's settings and the built-in tools to serve (all of them without files), of
/// the server's `builtin_names`.
///
/// # Errors
///
/// [`LoadError::Problems`] with every problem found, each once: files that cannot be read or
/// parsed, and everything [`check_documents`] refuses.
pub fn load_set(
    files: &[PathBuf],
    builtin_names: &[&str],
) -> Result<(Vec<Arc<DeclaredTool>>, GatewayConfig, Builtins), LoadError> {
    let (docs, mut problems) = read_all(files);
    let checked = check_documents(&docs, builtin_names);
    problems.extend(checked.problems);
    match (checked.config, checked.builtins) {
        (Some(config), Some(builtins)) if problems.is_empty() => {
            Ok((checked.tools, config, builtins))
        }
        _ => Err(LoadError::Problems(problems)),
    }
}

/// Reads and parses each of `files`: the documents that parse, and a problem for each that
/// does not.
fn read_all(files: &[PathBuf]) -> (Vec<Document>, Vec<FileProblem>) {
    let mut problems = Vec::new();
    let mut docs = Vec::new();
    for file in files {
        match Document::read(file) {
            Ok(d) => docs.push(d),
            Err(p) => problems.push(*p),
        }
    }
    (docs, problems)
}
