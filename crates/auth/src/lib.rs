//! toolwright as an OAuth 2.1 protected resource (the MCP authorization spec): the access
//! tokens a client presents are JWTs of one authorization server, checked here against
//! that server's published keys. No MCP types and no HTTP server: the transport
//! (`toolwright-http`) asks [`Validator::validate`] and turns an [`Error`] into its
//! status and `WWW-Authenticate` challenge.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolwright_auth::Error> {
//! use toolwright_auth::{Settings, Validator};
//! let settings = Settings::new("https://auth.example.com", "https://mcp.example.com/mcp");
//! let validator = Validator::discover(settings).await?; // metadata, then the JWKS
//! # let token = "";
//! let identity = validator.validate(token).await?;
//! tracing::info!(subject = ?identity.subject, scopes = ?identity.scopes, "verified");
//! # Ok(()) }
//! ```
//!
//! What a token must be: a signed JWT (JWS compact form; encrypted tokens are refused)
//! whose header's `alg` is RS256, ES256 or EdDSA (`none` and every HMAC are refused
//! whatever the keys) and names no key of its own (`jwk`, `jku`, `x5u` are refused; keys
//! come from the issuer's JWKS only); signed by the issuer's key with the header's `kid`,
//! that key being for that same algorithm; with `exp` (required) and `nbf` (when present)
//! within the leeway of now, `iss` equal to the issuer, and an `aud` naming this resource
//! (RFC 8707). The `typ` is not checked (RFC 9068's `at+jwt` is not what every issuer
//! writes).
//!
//! # Layout
//!
//! - `url.rs`: the URLs fetched (`https`, or `http` to this machine) and where an issuer's
//!   metadata is looked for.
//! - `fetch.rs`: a GET of a JSON document through toolwright-net's pooled client, bounded
//!   in time and size.
//! - `discovery.rs`: from the issuer to its `jwks_uri` (RFC 8414, OpenID Connect Discovery).
//! - `jwks.rs`: a JWKS read into the keys this crate verifies with.
//! - `cache.rs`: the keys cached, refreshed when stale and on an unknown `kid`, within
//!   bounds ([`Refresh`]).
//! - `validate.rs`: [`Validator`] and its [`Settings`]: header, key, signature, claims.
//! - `verified.rs`: tokens already verified by the current keys, so a client's next call
//!   with the same token checks only its times (bounded; forgotten when the keys change).
//! - `introspect.rs`: opaque tokens asked about at the issuer's introspection endpoint
//!   (RFC 7662, [`Introspection`]), the answers kept for a minute at most.
//! - [`exchange`]: a caller's token exchanged for one meant for another resource (RFC 8693
//!   token exchange, [`TokenExchange`]), as the gateway does for its upstreams.
//! - `identity.rs`: [`Identity`], what a verified token says (subject, scopes, client,
//!   every claim).
//! - `error.rs`: [`Error`], one variant per reason a token is refused.

mod cache;
mod discovery;
mod error;
pub mod exchange;
mod fetch;
mod identity;
mod introspect;
mod jwks;
#[cfg(test)]
mod stand_in;
mod url;
mod validate;
mod verified;

pub use cache::Refresh;
pub use error::Error;
pub use exchange::{ExchangeSettings, Exchanged, TokenExchange};
pub use identity::Identity;
pub use introspect::Introspection;
pub use url::metadata_paths;
pub use validate::{Settings, Validator};
