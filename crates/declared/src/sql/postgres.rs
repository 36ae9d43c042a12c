//! PostgreSQL with tokio-postgres: a small pool of connections, each statement prepared once
//! per connection, every call in a transaction of its own: a read-only tool's the implicit
//! one of its request on a session set read-only (`default_transaction_read_only`) with the
//! tool's `statement_timeout`, a writing tool's between `BEGIN` (with `SET LOCAL
//! statement_timeout`) and `COMMIT`; one round trip either way.
//! Rows past a limit are not kept, and a read-only statement still sending them is cancelled
//! and its connection dropped. At the deadline (or when the call is cancelled) a cancel
//! request goes to the server and the connection is dropped; a task of its own sends the
//! request, since the call's future is often dropped right after its cancellation.

use super::pg_types::{Bound, Column};
use super::rows::{Collector, Param};
use super::{Fetched, Limits};
use crate::error::RunError;
use futures_util::StreamExt;
use futures_util::future::maybe_done;
use std::collections::HashMap;
use std::pin::pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_postgres::error::SqlState;
use tokio_postgres::{CancelToken, Client, NoTls, Statement};
use tokio_util::sync::CancellationToken;
use toolwright_toolfile::template::Template;

/// How long after the statement timeout the client cancels it itself (the server's own
/// `statement_timeout` normally ends it first).
const CLIENT_GRACE: Duration = Duration::from_millis(500);

/// A connection, the statements prepared on it and its session's settings as last set
/// (`None`: not known, so set again before the next statement).
struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
    /// `default_transaction_read_only`.
    read_only: Option<bool>,
    /// `statement_timeout`, in milliseconds.
    timeout_ms: Option<u128>,
}

/// A PostgreSQL source: its URL (with `${VAR}`) and its idle connections.
pub struct Pool {
    url: Template,
    permits: Semaphore,
    idle: Mutex<Vec<Conn>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password once filled in; the template holds only `${VAR}`.
        f.debug_struct("Pool")
            .field("url", &self.url.source())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool of at most `max` connections to `url`.
    pub fn new(url: Template, max: u32) -> Pool {
        Pool {
            url,
            permits: Semaphore::new(max as usize),
            idle: Mutex::new(Vec::new()),
        }
    }

    async fn connect(&self) -> Result<Conn, RunError> {
        let url = self
            .url
            .render(&serde_json::Map::new(), &|v| std::env::var(v).ok(), &|s| {
                Ok(s.into())
            })?
            .unwrap_or_default();
        // The error never holds the URL (nor so the password).
        let (client, connection) = tokio_postgres::connect(&url, NoTls)
            .await
            .map_err(|e| RunError::Sql(format!("could not connect to the source: {e}")))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("a PostgreSQL connection ended: {e}");
            }
        });
        Ok(Conn {
            client,
            prepared: HashMap::new(),
            read_only: None,
            timeout_ms: None,
        })
    }

    /// Runs one statement.
    pub(super) async fn run(
        &self,
        statement: &str,
        params: &[Param],
        read_only: bool,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Fetched, RunError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| RunError::Cancelled)?;
        let taken = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
        let mut conn = match taken {
            Some(c) if !c.client.is_closed() => c,
            _ => self.connect().await?,
        };
        // Armed while the statement runs: a call dropped meanwhile (the server gives up on
        // it) still cancels the statement on the server.
        let mut guard = CancelOnDrop(
            Some(conn.client.cancel_token()),
            tokio::runtime::Handle::current(),
        );
        let outcome = tokio::select! {
            r = run_on(&mut conn, statement, params, read_only, limits) => Some(r),
            () = tokio::time::sleep(limits.timeout + CLIENT_GRACE) => None,
            () = cancel.cancelled() => None,
        };
        let Some(result) = outcome else {
            // Dropping the future leaves the server running the statement: the guard, still
            // armed, cancels it there on a task of its own (the call's future may itself be
            // dropped before a cancel request awaited here would be sent), and the connection
            // is not used again.
            drop(guard);
            return Err(if cancel.is_cancelled() {
                RunError::Cancelled
            } else {
                RunError::Timeout(limits.timeout)
            });
        };
        let reuse = match &result {
            Ok((_, reuse)) => *reuse,
            Err(_) => Reuse::Yes,
        };
        if reuse == Reuse::Yes {
            guard.0 = None;
        }
        // Left behind, the statement is cancelled by the guard and its connection dropped.
        drop(guard);
        if reuse == Reuse::Yes
            && !conn.client.is_closed()
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(conn);
        }
        result
            .map(|(fetched, _)| fetched)
            .map_err(|e| db_error(&e, limits.timeout))
    }
}

/// Sends a cancel request for the connection's running statement when dropped armed, on
/// the runtime the call ran on (a call's future may be dropped on another thread).
struct CancelOnDrop(Option<CancelToken>, tokio::runtime::Handle);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            tracing::debug!("a PostgreSQL statement left running: sending a cancel request");
            self.1.spawn(async move {
                match token.cancel_query(NoTls).await {
                    Ok(()) => tracing::debug!("the cancel request was sent"),
                    Err(e) => tracing::debug!("the cancel request failed: {e}"),
                }
            });
        }
    }
}

/// The statement on one connection, in one round trip.
///
/// A read-only tool's statement runs alone, in the implicit transaction of its own
/// request, on a session whose `default_transaction_read_only` is on (so that transaction is
/// read-only, as `BEGIN READ ONLY` would make it) and whose `statement_timeout` is the
/// tool's: both are set when the connection's last known settings differ, in a batch sent
/// with the statement. A writing tool's statement runs between `BEGIN READ WRITE` with
/// `SET LOCAL statement_timeout` and `COMMIT`. Either way every request goes out before any answer is
/// awaited (tokio-postgres pipelines the requests of futures polled at once, in the order
/// first polled).
///
/// Rows past a limit are not kept. A read-only statement that still had rows to send is
/// left behind: the outcome says the connection must not be used again (the caller drops it
/// and cancels the statement on the server). A writing one is read to its end and committed,
/// so what it did is never undone by a limit.
async fn run_on(
    conn: &mut Conn,
    statement: &str,
    params: &[Param],
    read_only: bool,
    limits: Limits,
) -> Result<(Fetched, Reuse), tokio_postgres::Error> {
    let stmt = match conn.prepared.get(statement) {
        Some(s) => s.clone(),
        None => {
            let s = conn.client.prepare(statement).await?;
            conn.prepared.insert(statement.to_owned(), s.clone());
            s
        }
    };
    let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
    let refs = bound
        .iter()
        .map(|b| b as &(dyn tokio_postgres::types::ToSql + Sync));
    let timeout_ms = limits.timeout.as_millis().max(1);
    // Settings change with SET statements of their own: in a batch, the statements after
    // the first run in a transaction that began with the session's settings as they were.
    let before = if !read_only {
        // Explicitly read-write, whatever the session's default.
        format!("BEGIN READ WRITE; SET LOCAL statement_timeout = {timeout_ms}")
    } else if conn.read_only != Some(true) {
        format!("SET default_transaction_read_only = on; SET statement_timeout = {timeout_ms}")
    } else if conn.timeout_ms != Some(timeout_ms) {
        format!("SET statement_timeout = {timeout_ms}")
    } else {
        String::new()
    };
    let names: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    let mut out = Collector::new(names, limits);
    let client = &conn.client;
    // What the connection's session is set to if the call goes wrong midway: not known.
    let known = (conn.read_only, conn.timeout_ms);
    conn.read_only = None;
    conn.timeout_ms = None;
    let left_behind = {
        let rows = async {
            let rows = client.query_raw(&stmt, refs).await?;
            futures_util::pin_mut!(rows);
            let mut kept = true;
            while let Some(row) = rows.next().await {
                let row = row?;
                if !kept {
                    continue;
                }
                kept = out.wants_more()
                    && (0..row.len())
                        .map(|i| row.try_get::<_, Column>(i).map(|c| c.0))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|values| out.push(values))?;
                if !kept && read_only {
                    return Ok(true);
                }
            }
            if let Some(n) = rows.rows_affected()
                && stmt.columns().is_empty()
            {
                out.affected(n);
            }
            Ok::<bool, tokio_postgres::Error>(false)
        };
        let setup = async {
            if before.is_empty() {
                Ok(())
            } else {
                client.batch_execute(&before).await
            }
        };
        let mut setup = pin!(maybe_done(setup));
        let mut rows = pin!(maybe_done(rows));
        let commit = async {
            if read_only {
                Ok(())
            } else {
                client.batch_execute("COMMIT").await
            }
        };
        let mut commit = pin!(maybe_done(commit));
        // Each request goes out on its future's first poll: in order, before any answer is
        // awaited.
        std::future::poll_fn(|cx| {
            let _ = setup.as_mut().poll(cx);
            let _ = rows.as_mut().poll(cx);
            let _ = commit.as_mut().poll(cx);
            Poll::Ready(())
        })
        .await;
        (&mut setup).await;
        setup.as_mut().take_output().unwrap_or(Ok(()))?;
        (&mut rows).await;
        let left_behind = rows.as_mut().take_output().unwrap_or(Ok(false))?;
        if !left_behind {
            (&mut commit).await;
            commit.as_mut().take_output().unwrap_or(Ok(()))?;
        }
        left_behind
    };
    if !left_behind {
        // A writing call's settings were its transaction's own.
        (conn.read_only, conn.timeout_ms) = if read_only {
            (Some(true), Some(timeout_ms))
        } else {
            known
        };
    }
    let reuse = if left_behind { Reuse::No } else { Reuse::Yes };
    Ok((out.finish(), reuse))
}

/// Whether a connection may serve another call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reuse {
    /// It is idle again.
    Yes,
    /// A statement may still be running or sending rows on it.
    No,
}

/// What the database said, as a call error: its own cancel at `statement_timeout` is the
/// timeout.
fn db_error(e: &tokio_postgres::Error, timeout: Duration) -> RunError {
    match e.as_db_error() {
        Some(db) if *db.code() == SqlState::QUERY_CANCELED => RunError::Timeout(timeout),
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text.push_str(&format!(" [SQLSTATE {}]", db.code().code()));
            RunError::Sql(text)
        }
        None => RunError::Sql(e.to_string()),
    }
}
