//! [`NetLoader`]: files from disk, URLs through toolwright-net's pooled client (its
//! connector resolves once and connects only to the addresses it checked, TLS with rustls),
//! each GET bounded in time and size.

use crate::error::Error;
use crate::load::{Loader, Location, read_file};
use http_body_util::{BodyExt, Limited};
use std::time::Duration;
use toolwright_net::{AddressPolicy, Connector, Pool, tls};

/// The largest document fetched (GitHub's REST description is about 13 MB as JSON).
pub const MAX_BYTES: usize = 64 << 20;

/// How long one fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads files, and fetches URLs through toolwright-net.
pub struct NetLoader {
    runtime: tokio::runtime::Runtime,
    pool: Pool<Connector, String>,
}

impl std::fmt::Debug for NetLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetLoader").finish_non_exhaustive()
    }
}

impl NetLoader {
    /// A loader whose fetches may reach any address (the operator named the URL, as for an
    /// MCP server's URL); the webpki roots are trusted.
    ///
    /// # Errors
    ///
    /// [`Error::Fetch`] when the runtime cannot start.
    pub fn new() -> Result<NetLoader, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Fetch {
                location: String::new(),
                reason: format!("cannot start the runtime: {e}"),
            })?;
        // The pool's client spawns its connection tasks: build it inside the runtime.
        let pool = runtime.block_on(async {
            Pool::new(Connector::new(AddressPolicy::ANY, tls::http1_default()))
        });
        Ok(NetLoader { runtime, pool })
    }

    /// GETs `url`; on failure, why (the caller names the location).
    async fn get(&self, url: &str) -> Result<Vec<u8>, Why> {
        let request = hyper::Request::get(url)
            .header(
                hyper::header::ACCEPT,
                "application/json, application/yaml;q=0.9, */*;q=0.5",
            )
            .body(String::new())
            .map_err(|e| Why(format!("cannot build the request: {e}")))?;
        let response = self
            .pool
            .send(request)
            .await
            .map_err(|e| Why(toolwright_net::error_chain(&e)))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(Why(format!("answered HTTP {status}")));
        }
        let body = Limited::new(response.into_body(), MAX_BYTES)
            .collect()
            .await
            .map_err(|e| {
                Why(format!(
                    "reading the answer (at most {MAX_BYTES} bytes): {e}"
                ))
            })?;
        Ok(body.to_bytes().to_vec())
    }
}

/// Why a GET gave no document, before the location is named.
struct Why(String);

impl Loader for NetLoader {
    fn load(&self, location: &Location) -> Result<Vec<u8>, Error> {
        match location {
            Location::File(p) => read_file(p),
            Location::Url(u) => {
                // The timer is made inside the runtime, whose clock it needs.
                let work =
                    async { tokio::time::timeout(FETCH_TIMEOUT, self.get(u.as_str())).await };
                self.runtime
                    .block_on(work)
                    .unwrap_or_else(|_| Err(Why(format!("no answer within {FETCH_TIMEOUT:?}"))))
                    .map_err(|Why(reason)| Error::Fetch {
                        location: u.to_string(),
                        reason,
                    })
            }
        }
    }
}
