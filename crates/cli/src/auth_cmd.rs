//! The OAuth options of the client commands (`list`, `call`, `lint` with `--url`).
//!
//! OAuth is on by default: the first 401 from the server starts MCP authorization
//! (discovery, registration, the authorization URL printed to stderr and opened with
//! `$BROWSER`, a loopback redirect to 127.0.0.1), and tokens are cached in
//! `$XDG_STATE_HOME/toolwright/oauth-tokens.json` (else `~/.local/state/…`), mode 0600.
//! `--no-oauth` lets a 401 stand.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use toolwright_client::Authorizer;
use toolwright_client::oauth::{OAuth, OAuthOptions, default_cache_path};

// How the client authorizes itself to an HTTP server that asks.
#[derive(Debug, Args, Clone, Default)]
pub struct AuthArgs {
    /// Do not start OAuth authorization when the server answers 401.
    #[arg(long, requires = "url")]
    pub no_oauth: bool,
    /// OAuth: a pre-registered client ID (else a client ID metadata document or dynamic
    /// registration).
    #[arg(long, value_name = "ID", requires = "url")]
    pub client_id: Option<String>,
    /// OAuth: the environment variable holding the pre-registered client's secret.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,
    /// OAuth: the URL of this client's metadata document, used as its client ID where the
    /// authorization server supports client ID metadata documents.
    #[arg(long, value_name = "URL", requires = "url")]
    pub client_metadata_url: Option<String>,
    /// OAuth: the scopes to ask for (space-separated) [default: what the server asks for].
    #[arg(long, value_name = "SCOPES", requires = "url")]
    pub scope: Option<String>,
    /// OAuth: print the authorization URL only; do not run $BROWSER on it (the login must
    /// finish within --timeout: raise it for a browser login).
    #[arg(long, requires = "url")]
    pub no_browser: bool,
    /// OAuth: keep tokens only in memory; do not read or write the token cache
    /// ($XDG_STATE_HOME/toolwright/oauth-tokens.json, mode 0600).
    #[arg(long, requires = "url")]
    pub no_token_cache: bool,
}

impl AuthArgs {
    /// The authorizer for an HTTP target, or `None` with `--no-oauth`.
    pub fn authorizer(&self) -> Result<Option<Arc<dyn Authorizer>>> {
        if self.no_oauth {
            return Ok(None);
        }
        let client_secret = match &self.client_secret_env {
            Some(var) => Some(
                std::env::var(var)
                    .with_context(|| format!("--client-secret-env: ${var} is not set"))?,
            ),
            None => None,
        };
        let oauth: Arc<dyn Authorizer> = OAuth::new(OAuthOptions {
            client_id: self.client_id.clone(),
            client_secret,
            client_metadata_url: self.client_metadata_url.clone(),
            scope: self.scope.clone(),
            browser: !self.no_browser,
            cache: if self.no_token_cache {
                None
            } else {
                default_cache_path()
            },
        });
        Ok(Some(oauth))
    }
}
