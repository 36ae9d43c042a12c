//! SQLite: the file opened with rusqlite (SQLite built from its bundled source), statements
//! run on tokio's blocking threads. A read-only tool's connection is opened read-only and
//! set `query_only`; the statement timeout and a cancelled call interrupt the statement.

use super::rows::{Collector, Param};
use super::{Fetched, Limits};
use crate::error::RunError;
use base64::Engine as _;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio_util::sync::CancellationToken;

/// Why a statement was interrupted.
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const CANCELLED: u8 = 2;

/// Connections kept open, read-only and read-write apart.
const KEEP: usize = 4;

/// A SQLite database file and its idle connections.
#[derive(Debug)]
pub struct Db {
    path: PathBuf,
    idle_read: Mutex<Vec<Connection>>,
    idle_write: Mutex<Vec<Connection>>,
}

impl Db {
    /// The database at `path` (it must exist; it is never created).
    pub fn new(path: PathBuf) -> Db {
        Db {
            path,
            idle_read: Mutex::new(Vec::new()),
            idle_write: Mutex::new(Vec::new()),
        }
    }

    fn idle(&self, read_only: bool) -> &Mutex<Vec<Connection>> {
        if read_only {
            &self.idle_read
        } else {
            &self.idle_write
        }
    }

    fn open(&self, read_only: bool) -> Result<Connection, RunError> {
        let access = if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        };
        let conn =
            Connection::open_with_flags(&self.path, access | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| RunError::Sql(format!("{}: {e}", self.path.display())))?;
        if read_only {
            conn.pragma_update(None, "query_only", true)
                .map_err(sql_error)?;
        }
        Ok(conn)
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
        let taken = self
            .idle(read_only)
            .lock()
            .map(|mut v| v.pop())
            .unwrap_or(None);
        let conn = match taken {
            Some(c) => c,
            None => self.open(read_only)?,
        };
        conn.busy_timeout(limits.timeout).map_err(sql_error)?;
        let interrupt = conn.get_interrupt_handle();
        let why = Arc::new(AtomicU8::new(RUNNING));
        let statement = statement.to_owned();
        let work = tokio::task::spawn_blocking(move || {
            let out = execute(&conn, &statement, &params, limits);
            (conn, out)
        });
        let watcher = {
            let why = why.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let reason = tokio::select! {
                    () = tokio::time::sleep(limits.timeout) => TIMED_OUT,
                    () = cancel.cancelled() => CANCELLED,
                };
                why.store(reason, Ordering::SeqCst);
                interrupt.interrupt();
            })
        };
        let joined = work.await;
        watcher.abort();
        let (conn, out) =
            joined.map_err(|e| RunError::Sql(format!("the statement's thread failed: {e}")))?;
        match why.load(Ordering::SeqCst) {
            TIMED_OUT => return Err(RunError::Timeout(limits.timeout)),
            CANCELLED => return Err(RunError::Cancelled),
            _ => {}
        }
        if let Ok(mut idle) = self.idle(read_only).lock()
            && idle.len() < KEEP
        {
            idle.push(conn);
        }
        out
    }
}

/// Prepares (cached per connection), binds and steps the statement.
fn execute(
    conn: &Connection,
    statement: &str,
    params: &[Param],
    limits: Limits,
) -> Result<Fetched, RunError> {
    let mut stmt = conn.prepare_cached(statement).map_err(sql_error)?;
    let bound: Vec<SqlValue> = params.iter().map(to_sqlite).collect();
    let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let mut out = Collector::new(columns.clone(), limits);
    if columns.is_empty() {
        let n = stmt
            .execute(rusqlite::params_from_iter(bound.iter()))
            .map_err(sql_error)?;
        out.affected(n as u64);
        return Ok(out.finish());
    }
    let mut rows = stmt
        .query(rusqlite::params_from_iter(bound.iter()))
        .map_err(sql_error)?;
    while let Some(row) = rows.next().map_err(sql_error)? {
        if !out.wants_more() {
            break;
        }
        let values = (0..columns.len())
            .map(|i| row.get_ref(i).map(to_json).map_err(sql_error))
            .collect::<Result<Vec<_>, _>>()?;
        if !out.push(values) {
            break;
        }
    }
    Ok(out.finish())
}

/// A parameter as SQLite binds it (a boolean as 0 or 1, JSON as its text).
fn to_sqlite(p: &Param) -> SqlValue {
    match p {
        Param::Null => SqlValue::Null,
        Param::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Param::Int(i) => SqlValue::Integer(*i),
        Param::Float(f) => SqlValue::Real(*f),
        Param::Text(t) => SqlValue::Text(t.clone()),
        Param::Json(v) => SqlValue::Text(v.to_string()),
    }
}

/// A column's value as JSON: integers and reals as numbers (a non-finite real as text),
/// text as a string, a blob as base64.
pub(super) fn to_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f)
            .map_or_else(|| Value::String(f.to_string()), Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
    }
}

fn sql_error(e: rusqlite::Error) -> RunError {
    RunError::Sql(e.to_string())
}
