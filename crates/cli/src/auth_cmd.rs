//! The OAuth options of the client commands (`list`, `call`, `lint` with `--url`).
//!
//! OAuth is on by default: the first 401 from the server starts MCP authorization
//! (discovery, registration, the authorization URL printed to stderr and opened with
//! `$BROWSER`, a loopback redirect to 127.0.0.1), and tokens are cached in
//! `$XDG_STATE_HOME/toolwright/oauth-tokens.json` (else `~/.local/state/…`), mode 0600.
//! `--no-oauth` lets a 401 stand. `--grant` picks a grant without a browser instead: client
//! credentials (with `--client-secret-env` or `--client-assertion-key`), cross-app access
//! (`--id-token-env` and the `--idp-*` options), or a JWT bearer grant of a workload's
//! identity token (`--assertion-file`). Secrets are read from the environment or from
//! files, never from the command line.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use toolwright_client::oauth::{
    Assertion, ClientKey, CrossApp, Grant, OAuth, OAuthOptions, Prompt, default_cache_path,
};
use toolwright_client::{Authorizer, ClientError};

/// The grants `--grant` names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum GrantArg {
    /// The user authorizes in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The pre-registered client gets a token for itself (needs --client-id, and
    /// --client-secret-env or --client-assertion-key).
    ClientCredentials,
    /// Enterprise-managed: the user's ID token from the IdP (--id-token-env) is exchanged at
    /// --idp-token-endpoint for an ID-JAG, which the server's authorization server takes as
    /// a JWT bearer grant (needs --client-id and --idp-client-id).
    CrossApp,
    /// Workload identity federation: a JWT the workload was issued (--assertion-file) is
    /// presented to the authorization server as a JWT bearer grant (--client-id optional).
    JwtBearer,
}

// How the client authorizes itself to an HTTP server that asks.
#[derive(Debug, Args, Clone, Default)]
pub struct AuthArgs {
    /// Do not start OAuth authorization when the server answers 401.
    #[arg(long, requires = "url")]
    pub no_oauth: bool,
    /// OAuth: how the token is had [default: authorization-code].
    #[arg(long, value_enum, value_name = "GRANT", requires = "url")]
    pub grant: Option<GrantArg>,
    /// OAuth: a pre-registered client ID (else a client ID metadata document or dynamic
    /// registration).
    #[arg(long, value_name = "ID", requires = "url")]
    pub client_id: Option<String>,
    /// OAuth: the environment variable holding the pre-registered client's secret.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,
    /// OAuth: a PEM file with the pre-registered client's EC P-256 private key (PKCS#8):
    /// the client authenticates with a JWT it signs (private_key_jwt, ES256), not a secret.
    #[arg(
        long,
        value_name = "FILE",
        requires = "client_id",
        conflicts_with = "client_secret_env"
    )]
    pub client_assertion_key: Option<PathBuf>,
    /// OAuth, --grant cross-app: the environment variable holding the user's ID token from
    /// the identity provider.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub id_token_env: Option<String>,
    /// OAuth, --grant cross-app: the identity provider's token endpoint (where the ID token is
    /// exchanged for an ID-JAG).
    #[arg(long, value_name = "URL", requires = "url")]
    pub idp_token_endpoint: Option<String>,
    /// OAuth, --grant cross-app: this client's ID at the identity provider.
    #[arg(long, value_name = "ID", requires = "url")]
    pub idp_client_id: Option<String>,
    /// OAuth, --grant cross-app: the environment variable holding this client's secret at the
    /// identity provider, if it has one.
    #[arg(long, value_name = "VAR", requires = "idp_client_id")]
    pub idp_client_secret_env: Option<String>,
    /// OAuth, --grant jwt-bearer: a file holding the JWT to present (a workload identity
    /// token, its audience the authorization server), read when the grant is made.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub assertion_file: Option<PathBuf>,
    /// OAuth: the URL of this client's metadata document, used as its client ID where the
    /// authorization server supports client ID metadata documents.
    #[arg(long, value_name = "URL", requires = "url")]
    pub client_metadata_url: Option<String>,
    /// OAuth: the scopes to ask for (space-separated) [default: what the server asks for].
    #[arg(long, value_name = "SCOPES", requires = "url")]
    pub scope: Option<String>,
    /// OAuth: print the authorization URL only; do not run $BROWSER on it (the login has
    /// 5 minutes; --timeout does not count the time it takes).
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
        let client_secret = secret_from("--client-secret-env", self.client_secret_env.as_ref())?;
        let client_key = self.client_key()?;
        let grant = self.grant(client_secret.is_some(), client_key.is_some())?;
        let oauth: Arc<dyn Authorizer> = OAuth::new(OAuthOptions {
            client_id: self.client_id.clone(),
            client_secret,
            client_key,
            grant,
            client_metadata_url: self.client_metadata_url.clone(),
            scope: self.scope.clone(),
            browser: !self.no_browser,
            // A prompt the person must act on, not a log record: shown whatever
            // TOOLWRIGHT_LOG says.
            prompt: Some(Prompt::new(|url| {
                eprintln!("toolwright: open this URL to authorize:\n  {url}");
            })),
            cache: if self.no_token_cache {
                None
            } else {
                default_cache_path()
            },
        });
        Ok(Some(oauth))
    }

    /// The `private_key_jwt` key of `--client-assertion-key`, read from its file.
    fn client_key(&self) -> Result<Option<ClientKey>> {
        let Some(path) = &self.client_assertion_key else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--client-assertion-key: cannot read {}", path.display()))?;
        Ok(Some(ClientKey::from_pem(&text).map_err(|e| match e {
            ClientError::Auth { reason } => {
                anyhow!("--client-assertion-key {}: {reason}", path.display())
            }
            other => other.into(),
        })?))
    }

    /// The grant `--grant` names, with the options it needs checked and the cross-app
    /// options refused with any other grant.
    fn grant(&self, has_secret: bool, has_key: bool) -> Result<Grant> {
        let grant = self.grant.unwrap_or_default();
        let cross_app = [
            ("--id-token-env", self.id_token_env.is_some()),
            ("--idp-token-endpoint", self.idp_token_endpoint.is_some()),
            ("--idp-client-id", self.idp_client_id.is_some()),
        ];
        if grant != GrantArg::CrossApp
            && let Some((flag, _)) = cross_app.iter().find(|(_, given)| *given)
        {
            bail!("{flag} applies only with --grant cross-app");
        }
        if grant != GrantArg::JwtBearer && self.assertion_file.is_some() {
            bail!("--assertion-file applies only with --grant jwt-bearer");
        }
        Ok(match grant {
            GrantArg::AuthorizationCode => Grant::AuthorizationCode,
            GrantArg::JwtBearer => {
                let Some(path) = &self.assertion_file else {
                    bail!("--grant jwt-bearer needs --assertion-file");
                };
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("--assertion-file: cannot read {}", path.display()))?;
                // A JWT has no white space: a trailing newline is the file's, not the token's.
                let jwt = text.trim();
                if jwt.is_empty() {
                    bail!("--assertion-file {}: the file is empty", path.display());
                }
                Grant::JwtBearer(Assertion(jwt.to_owned()))
            }
            GrantArg::ClientCredentials => {
                if self.client_id.is_none() {
                    bail!("--grant client-credentials needs --client-id");
                }
                if !has_secret && !has_key {
                    bail!(
                        "--grant client-credentials needs --client-secret-env or --client-assertion-key"
                    );
                }
                Grant::ClientCredentials
            }
            GrantArg::CrossApp => {
                for (flag, given) in cross_app
                    .iter()
                    .copied()
                    .chain([("--client-id", self.client_id.is_some())])
                {
                    if !given {
                        bail!("--grant cross-app needs {flag}");
                    }
                }
                Grant::CrossApp(CrossApp {
                    // A JWT has no white space: a trailing newline from a file is not its.
                    id_token: secret_from("--id-token-env", self.id_token_env.as_ref())?
                        .unwrap_or_default()
                        .trim()
                        .to_owned(),
                    idp_token_endpoint: self.idp_token_endpoint.clone().unwrap_or_default(),
                    idp_client_id: self.idp_client_id.clone().unwrap_or_default(),
                    idp_client_secret: secret_from(
                        "--idp-client-secret-env",
                        self.idp_client_secret_env.as_ref(),
                    )?,
                })
            }
        })
    }
}

/// The value of the environment variable an option names: set and not empty.
fn secret_from(flag: &str, var: Option<&String>) -> Result<Option<String>> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(Some(v)),
        Ok(_) => bail!("{flag}: the variable {var} is empty"),
        Err(_) => bail!("{flag}: the variable {var} is not set"),
    }
}
