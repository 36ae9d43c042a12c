//! PostgreSQL with tokio-postgres: a small pool of connections, each statement prepared once
//! per connection, every call in its own transaction (`READ ONLY` for a read-only tool) with
//! `SET LOCAL statement_timeout`, rows fetched through a portal no further than the row
//! limit. At the deadline (or when the call is cancelled) a cancel request goes to the
//! server and the connection is dropped. Known gap: a client's `notifications/cancelled`
//! was seen to leave the statement running on the server (to investigate; the timeout path
//! is tested).

use super::pg_types::{Bound, Column};
use super::rows::{Collector, Param};
use super::{Fetched, Limits};
use crate::error::RunError;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Mutex;
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
            // Dropping the future leaves the server running the statement: cancel it there,
            // and do not use the connection again.
            if let Some(token) = guard.0.take()
                && let Err(e) = token.cancel_query(NoTls).await
            {
                tracing::debug!("the cancel request failed: {e}");
            }
            return Err(if cancel.is_cancelled() {
                RunError::Cancelled
            } else {
                RunError::Timeout(limits.timeout)
            });
        };
        guard.0 = None;
        let result = result.map_err(|e| db_error(&e, limits.timeout));
        if !conn.client.is_closed()
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(conn);
        }
        result
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
                if let Err(e) = token.cancel_query(NoTls).await {
                    tracing::debug!("the cancel request failed: {e}");
                }
            });
        }
    }
}

/// The statement in its transaction on one connection.
async fn run_on(
    conn: &mut Conn,
    statement: &str,
    params: &[Param],
    read_only: bool,
    limits: Limits,
) -> Result<Fetched, tokio_postgres::Error> {
    let stmt = match conn.prepared.get(statement) {
        Some(s) => s.clone(),
        None => {
            let s = conn.client.prepare(statement).await?;
            conn.prepared.insert(statement.to_owned(), s.clone());
            s
        }
    };
    let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
    let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = bound
        .iter()
        .map(|b| b as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect();
    let tx = conn
        .client
        .build_transaction()
        .read_only(read_only)
        .start()
        .await?;
    let timeout = format!(
        "SET LOCAL statement_timeout = {}",
        limits.timeout.as_millis().max(1)
    );
    let names: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    let mut out = Collector::new(names, limits);
    // The timeout and the statement are sent together (tokio-postgres pipelines requests
    // polled at once, in the order first polled): one round trip, the timeout set first.
    if stmt.columns().is_empty() {
        let ((), n) =
            futures_util::try_join!(tx.batch_execute(&timeout), tx.execute(&stmt, &refs))?;
        out.affected(n);
    } else {
        let ((), portal) =
            futures_util::try_join!(tx.batch_execute(&timeout), tx.bind(&stmt, &refs))?;
        let fetch = i32::try_from(limits.rows.saturating_add(1)).unwrap_or(i32::MAX);
        let rows = tx.query_portal_raw(&portal, fetch).await?;
        futures_util::pin_mut!(rows);
        while let Some(row) = rows.next().await {
            let row = row?;
            if !out.wants_more() {
                break;
            }
            let values = (0..row.len())
                .map(|i| row.try_get::<_, Column>(i).map(|c| c.0))
                .collect::<Result<Vec<_>, _>>()?;
            if !out.push(values) {
                break;
            }
        }
    }
    tx.commit().await?;
    Ok(out.finish())
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
