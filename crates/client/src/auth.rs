//! What authorizes a client's HTTP requests: the seam between the Streamable HTTP transport
//! and the ways a token is had (a fixed bearer token from the environment, or an OAuth 2.1
//! session that discovers, registers, authorizes and refreshes).
//!
//! The transport asks [`Authorizer::credentials`] for the headers that authorize each
//! request (the `Authorization` header, and a DPoP proof with a sender-constrained token). When the server refuses one (401, or 403 naming `insufficient_scope`), it hands
//! the refusal to [`Authorizer::challenge`] and sends the request again when that says the
//! credentials changed, a bounded number of times per request.

use std::sync::Arc;

use crate::ClientError;
use crate::peer::BoxFuture;

/// A refusal from the server, as the authorizer needs it.
#[derive(Debug, Clone)]
pub struct Challenge {
    /// The HTTP status (401 or 403).
    pub status: u16,
    /// Every `WWW-Authenticate` header value, in order.
    pub www_authenticate: Vec<String>,
    /// The URL of the MCP endpoint that refused (the protected resource).
    pub url: String,
    /// The `DPoP-Nonce` header, when the server sent one (RFC 9449 §9).
    pub dpop_nonce: Option<String>,
}

/// Supplies and renews the credentials of HTTP requests.
pub trait Authorizer: Send + Sync + 'static {
    /// The `Authorization` header value for the next request, if there is one yet.
    fn authorization(&self) -> Option<String>;

    /// The headers that authorize a request of `method` (`POST`, `GET`, `DELETE`) to
    /// `url`: by default the `Authorization` header alone; a proof-of-possession token
    /// (DPoP, RFC 9449) adds a proof made for this very request.
    fn credentials(&self, method: &str, url: &str) -> Vec<(String, String)> {
        let _ = (method, url);
        self.authorization()
            .map(|v| vec![("Authorization".to_owned(), v)])
            .unwrap_or_default()
    }

    /// The server refused a request. `Ok(true)`: the credentials changed and the request
    /// should be sent again; `Ok(false)`: nothing more can be done, the refusal stands.
    fn challenge(&self, challenge: Challenge) -> BoxFuture<'_, Result<bool, ClientError>>;
}

/// A fixed bearer token: sent with every request, never renewed.
#[derive(Debug, Clone)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token (without the `Bearer ` prefix).
    pub fn new(token: impl Into<String>) -> Arc<BearerToken> {
        Arc::new(BearerToken(token.into()))
    }
}

impl Authorizer for BearerToken {
    fn authorization(&self) -> Option<String> {
        Some(format!("Bearer {}", self.0))
    }

    fn challenge(&self, _: Challenge) -> BoxFuture<'_, Result<bool, ClientError>> {
        Box::pin(async { Ok(false) })
    }
}
