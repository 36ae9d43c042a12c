//! The floor of the SQL benchmark: the query a `sql` tool runs, sent by a plain PostgreSQL
//! client with a prepared statement, no MCP server in between.
//!
//! Each worker holds one connection (the `postgres` crate, the blocking face of
//! tokio-postgres, which toolwright's `sql` action uses), prepares the statement once and
//! then executes it with the same parameter, checking that exactly one row comes back and
//! that its text columns hold the expected text.

use anyhow::{Context, Result, bail};
use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};
use serde_json::Value;

use crate::direct::{DirectOpts, drive};

/// What every call runs and checks.
#[derive(Clone, Debug)]
pub struct Query {
    /// `postgres://user@127.0.0.1:PORT/db` (loopback only).
    pub url: String,
    /// The statement, with `$1` for the parameter.
    pub statement: String,
    /// The value bound to `$1`.
    pub param: i32,
    /// Text one of the row's text columns must hold.
    pub expect: Option<String>,
}

/// One connection and its prepared statement.
struct Prepared {
    client: Client,
    statement: Statement,
}

fn connect(q: &Query) -> Result<Prepared> {
    if !q.url.contains("@127.0.0.1:") && !q.url.contains("@localhost:") {
        bail!("loopback databases only, not {:?}", q.url);
    }
    let mut client =
        Client::connect(&q.url, NoTls).with_context(|| format!("connecting to {}", q.url))?;
    let statement = client
        .prepare(&q.statement)
        .with_context(|| format!("preparing {:?}", q.statement))?;
    Ok(Prepared { client, statement })
}

fn one(q: &Query, p: &mut Prepared) -> Result<()> {
    let params: [&(dyn ToSql + Sync); 1] = [&q.param];
    let rows = p.client.query(&p.statement, &params).context("executing")?;
    let [row] = rows.as_slice() else {
        bail!("{} rows, not one", rows.len());
    };
    if let Some(want) = &q.expect {
        let found = (0..row.len()).any(|i| {
            row.try_get::<_, Option<&str>>(i)
                .ok()
                .flatten()
                .is_some_and(|s| s.contains(want.as_str()))
        });
        if !found {
            bail!("{want:?} in no text column of the row");
        }
    }
    Ok(())
}

/// The SQL floor: the prepared statement on one connection per worker, `concurrency` at a
/// time.
pub fn run(o: &DirectOpts, q: &Query) -> Result<Value> {
    drive(o, || connect(q), |p| one(q, p))
}
