//! Loading tool files: a set of files loads as a whole or not at all. [`load_files`] returns
//! the tools only when every tool of every file compiled and no two share a name, so a server
//! swapping in a new set never serves half of an edit. Reading and placing problems is the
//! tool file crate's ([`Document`]).

use crate::error::{FileProblem, LoadError, Problem};
use crate::tool::DeclaredTool;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
pub use toolwright_toolfile::document::{Document, Format};

/// Compiles every tool of a document; the problems of those that do not compile are placed.
pub fn compile_document(doc: &Document) -> (Vec<(usize, DeclaredTool)>, Vec<FileProblem>) {
    let mut tools = Vec::new();
    let mut problems = Vec::new();
    for (i, value) in doc.tools.iter().enumerate() {
        match DeclaredTool::compile(value) {
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
    let mut problems = Vec::new();
    let mut docs = Vec::new();
    for file in files {
        match Document::read(file) {
            Ok(d) => docs.push(d),
            Err(p) => problems.push(*p),
        }
    }
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
    let mut problems = Vec::new();
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for doc in docs {
        let (tools, bad) = compile_document(doc);
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
