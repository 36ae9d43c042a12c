//! `sources:` compiled once per load: each named database becomes one [`Source`] that every
//! tool naming it shares (a PostgreSQL source's connection pool, a SQLite file's open
//! connections). Nothing connects until the first call.

use super::{Fetched, Limits, postgres, rows::Param, sqlite};
use crate::error::{FileProblem, Problem, RunError, Seg};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolwright_toolfile::Document;
use toolwright_toolfile::sql::{Engine, ONE_ENGINE, SourceSpec};
use toolwright_toolfile::template::Template;

/// Connections kept to a PostgreSQL source when it does not say.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 4;

/// One database.
#[derive(Debug)]
pub enum Source {
    /// A PostgreSQL server.
    Postgres(postgres::Pool),
    /// A SQLite file.
    Sqlite(sqlite::Db),
}

impl Source {
    /// Compiles one entry of `sources:`; `dir` is the tool file's directory (a relative SQLite
    /// path is taken from there).
    ///
    /// # Errors
    ///
    /// A [`Problem`] (its path inside the entry) for a spelling that is wrong.
    pub fn compile(value: &serde_json::Value, dir: &Path) -> Result<Source, Problem> {
        let spec: SourceSpec = toolwright_toolfile::rules::read_value(value)?;
        match (&spec.postgres, &spec.sqlite) {
            (Some(url), None) => {
                let url =
                    Template::parse(url).map_err(|e| Problem::new(["postgres"], e.to_string()))?;
                if url.args().next().is_some() {
                    return Err(Problem::new(
                        ["postgres"],
                        "a source's URL takes `${VAR}` (the server's variables), not `{argument}`",
                    ));
                }
                let max = spec
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS)
                    .max(1);
                Ok(Source::Postgres(postgres::Pool::new(url, max)))
            }
            (None, Some(file)) => Ok(Source::Sqlite(sqlite::Db::new(dir.join(file)))),
            _ => Err(Problem::new(Vec::<Seg>::new(), ONE_ENGINE)),
        }
    }

    /// The source's dialect.
    pub fn engine(&self) -> Engine {
        match self {
            Source::Postgres(_) => Engine::Postgres,
            Source::Sqlite(_) => Engine::Sqlite,
        }
    }

    /// Runs one statement.
    pub(super) async fn run(
        &self,
        statement: &str,
        params: Vec<Param>,
        read_only: bool,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Fetched, RunError> {
        match self {
            Source::Postgres(p) => p.run(statement, &params, read_only, limits, cancel).await,
            Source::Sqlite(d) => d.run(statement, params, read_only, limits, cancel).await,
        }
    }
}

/// The sources of a set of files, by name.
#[derive(Debug, Default)]
pub struct Sources(BTreeMap<String, Arc<Source>>);

impl Sources {
    /// Compiles the `sources:` of every document: the sources, and a placed problem for each
    /// entry that does not compile or takes a name an earlier file's source has.
    pub fn compile(docs: &[Document]) -> (Sources, Vec<FileProblem>) {
        let mut out = BTreeMap::new();
        let mut problems = Vec::new();
        for doc in docs {
            let dir = doc.file.parent().unwrap_or(Path::new("."));
            for (name, value) in &doc.sources {
                let at = |p: Problem| {
                    let mut path = vec![Seg::Key("sources".into()), Seg::Key(name.clone())];
                    path.extend(p.at.iter().cloned());
                    doc.root_problem(Problem::new(path, p.message))
                };
                if out.contains_key(name) {
                    problems.push(at(Problem::new(
                        Vec::<Seg>::new(),
                        format!("another source is named {name:?}"),
                    )));
                    continue;
                }
                match Source::compile(value, dir) {
                    Ok(s) => {
                        out.insert(name.clone(), Arc::new(s));
                    }
                    Err(p) => problems.push(at(p)),
                }
            }
        }
        (Sources(out), problems)
    }

    /// The source named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Source>> {
        self.0.get(name).cloned()
    }

    /// The names, for a message.
    pub fn names(&self) -> String {
        if self.0.is_empty() {
            "none".to_owned()
        } else {
            self.0
                .keys()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}
