//! PostgreSQL with tokio-postgres: a small pool of connections, each statement prepared once
//! per connection, every call in its own transaction (`READ ONLY` for a read-only tool) with
//! `SET LOCAL statement_timeout`, sent with the statement and `COMMIT` in one round trip.
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

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
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

/// The statement in its transaction on one connection, in one round trip: `BEGIN` (`READ
/// ONLY` for a read-only tool) with `SET LOCAL statement_timeout`, the prepared statement
/// and `COMMIT` are sent together (tokio-postgres pipelines the requests of futures polled
/// at once, in the order first polled), then their answers read in turn.
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
    let begin = format!(
        "BEGIN{}; SET LOCAL statement_timeout = {}",
        if read_only { " READ ONLY" } else { "" },
        limits.timeout.as_millis().max(1)
    );
    let names: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    let mut out = Collector::new(names, limits);
    let client = &conn.client;
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
        let mut begin = pin!(maybe_done(client.batch_execute(&begin)));
        let mut rows = pin!(maybe_done(rows));
        let mut commit = pin!(maybe_done(client.batch_execute("COMMIT")));
        // Each request goes out on its future's first poll: the three in order, before any
        // answer is awaited.
        std::future::poll_fn(|cx| {
            let _ = begin.as_mut().poll(cx);
            let _ = rows.as_mut().poll(cx);
            let _ = commit.as_mut().poll(cx);
            Poll::Ready(())
        })
        .await;
        (&mut begin).await;
        begin.as_mut().take_output().unwrap_or(Ok(()))?;
        (&mut rows).await;
        let left_behind = rows.as_mut().take_output().unwrap_or(Ok(false))?;
        if !left_behind {
            (&mut commit).await;
            commit.as_mut().take_output().unwrap_or(Ok(()))?;
        }
        left_behind
    };
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
