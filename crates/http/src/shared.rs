//! [`Shared`]: the state every connection shares. The handlers (`post.rs`, `streams.rs`,
//! `ops.rs`) read it; the router (`service.rs`) and the listener hold it. It reaches legacy
//! sessions only through the sessions interface (`sessions.rs`).

use crate::body::OnDrop;
use crate::budget::{Budget, Budgets, Client, Full};
use crate::card::Discovery;
use crate::config::HttpConfig;
use crate::guard::Guard;
use crate::sessions::Sessions;
use bytes::Bytes;
use http::HeaderValue;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolwright_server::Server;

/// State shared by every connection.
pub(crate) struct Shared {
    pub server: Server,
    pub config: HttpConfig,
    pub guard: Guard,
    /// Legacy sessions: in this process, or in the shared store when replicas share them.
    pub sessions: Sessions,
    /// Event streams open now, per budget and client.
    pub budgets: Arc<Budgets>,
    /// Cancelled when the server begins to shut down.
    pub shutdown: CancellationToken,
    /// Legacy calls that keep running after their client went away.
    pub calls: TaskTracker,
    /// Paths serving the Protected Resource Metadata, and the document (auth enabled only).
    pub metadata: Option<(Vec<String>, Bytes)>,
    /// The Server Card and the AI Catalog.
    pub discovery: Discovery,
    /// The `WWW-Authenticate` challenge without a token (with the scopes required).
    pub challenge: HeaderValue,
    /// The challenge of a token refused (`error="invalid_token"`).
    pub challenge_invalid: HeaderValue,
    /// The challenge of a valid token without a required scope
    /// (`error="insufficient_scope"`, the scopes needed).
    pub challenge_scope: HeaderValue,
}

impl Shared {
    pub(crate) fn new(
        server: Server,
        config: HttpConfig,
        guard: Guard,
        metadata: Option<(Vec<String>, Bytes)>,
        (metadata_url, resource): (&str, &str),
    ) -> Shared {
        // The scopes were checked to need no escaping (printable ASCII, no quote or
        // backslash), as was the metadata URL (an http(s) URL).
        let scopes = guard.scopes().join(" ");
        let scope = if scopes.is_empty() {
            String::new()
        } else {
            format!(", scope=\"{scopes}\"")
        };
        let challenge = format!("Bearer resource_metadata=\"{metadata_url}\"{scope}");
        let challenge_invalid =
            format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata_url}\"");
        let challenge_scope = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scopes}\", resource_metadata=\"{metadata_url}\""
        );
        let shutdown = CancellationToken::new();
        let auth = guard
            .requires_token()
            .then(|| (metadata_url.to_owned(), guard.scopes().to_vec()));
        let discovery = Discovery::new(&config.path, resource, auth);
        Shared {
            discovery,
            sessions: Sessions::new(server.clone(), &config, shutdown.clone()),
            server,
            guard,
            budgets: Arc::new(Budgets::new(
                (config.max_sse_streams, config.max_sse_streams_per_client),
                (config.max_get_streams, config.max_get_streams_per_client),
            )),
            shutdown,
            calls: TaskTracker::new(),
            metadata,
            challenge: HeaderValue::from_str(&challenge)
                .unwrap_or(HeaderValue::from_static("Bearer")),
            challenge_invalid: HeaderValue::from_str(&challenge_invalid)
                .unwrap_or(HeaderValue::from_static("Bearer")),
            challenge_scope: HeaderValue::from_str(&challenge_scope)
                .unwrap_or(HeaderValue::from_static("Bearer")),
            config,
        }
    }

    /// Claims an event stream from `budget` for `client`; the guard gives it back. `Err` is
    /// the response refusing the stream (503 or 429, with `Retry-After`).
    pub(crate) fn open_stream(&self, budget: Budget, client: Client) -> Result<OnDrop, Full> {
        self.budgets.claim(budget, client)
    }
}
