//! The crate's one error type: why a token was refused, or why the issuer's keys could not
//! be had.

/// Why an access token was refused, or the authorization server could not be used.
///
/// The variants up to [`Error::IssuerUnreachable`] are a token's fault (a transport
/// answers them 401 `invalid_token`); [`Error::IssuerUnreachable`] is nobody's fault the
/// client can mend (the keys could not be fetched, so the token could not be checked); the
/// rest are start-up problems with the settings or the authorization server's documents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No token: an empty string.
    #[error("no access token")]
    MissingToken,
    /// Not a signed JWT: not three base64url parts, or a header or payload that is not a
    /// JSON object.
    #[error("the access token is not a signed JWT: {reason}")]
    Malformed {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The header names its own key (`jwk`, `jku`, `x5u`): keys come from the issuer's
    /// JWKS only.
    #[error("the token's header names a key of its own ({param}); keys come from the issuer only")]
    KeyInHeader {
        /// The header parameter.
        param: &'static str,
    },
    /// The header's `alg` is not RS256, ES256 or EdDSA (`none` and every HMAC among them).
    #[error("the token's algorithm {alg:?} is not accepted (RS256, ES256 and EdDSA are)")]
    DisallowedAlgorithm {
        /// The `alg` the header named.
        alg: String,
    },
    /// No key of the issuer has the token's `kid` (after a refresh, when one was allowed).
    #[error("no key of the issuer has the token's key id {kid:?}")]
    UnknownKey {
        /// The header's `kid` (`None`: it had none, and the issuer has several keys).
        kid: Option<String>,
    },
    /// The key with the token's `kid` is for another algorithm than the header's `alg`.
    #[error("the key {kid:?} is for {key_alg}, the token says {token_alg}")]
    AlgorithmMismatch {
        /// The key id.
        kid: Option<String>,
        /// The header's `alg`.
        token_alg: String,
        /// The key's algorithm.
        key_alg: &'static str,
    },
    /// The signature does not verify with the issuer's key.
    #[error("the token's signature does not verify with the issuer's key {kid:?}")]
    BadSignature {
        /// The key id.
        kid: Option<String>,
    },
    /// `exp` is missing or not a number.
    #[error("the token has no expiry (exp)")]
    NoExpiry,
    /// `exp` is past (beyond the leeway).
    #[error("the token expired at {exp} (unix seconds)")]
    Expired {
        /// The token's `exp`.
        exp: u64,
    },
    /// `nbf` is still to come (beyond the leeway).
    #[error("the token is not valid before {nbf} (unix seconds)")]
    NotYetValid {
        /// The token's `nbf`.
        nbf: u64,
    },
    /// `iss` is not the configured issuer.
    #[error("the token's issuer {found:?} is not {expected:?}")]
    WrongIssuer {
        /// The token's `iss` (`None`: absent or not a string).
        found: Option<String>,
        /// The configured issuer.
        expected: String,
    },
    /// `aud` does not name this resource.
    #[error("the token's audience {found:?} does not include {expected:?}")]
    WrongAudience {
        /// The token's `aud` values.
        found: Vec<String>,
        /// The audiences accepted.
        expected: Vec<String>,
    },
    /// The authorization server says the token is not active (RFC 7662 introspection).
    #[error("the authorization server says the token is not active")]
    Inactive,
    /// The issuer's keys could not be fetched, so the token could not be checked.
    #[error("the authorization server could not be reached at {url}: {reason}")]
    IssuerUnreachable {
        /// The URL fetched.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A URL of the settings, or of the issuer's metadata, is not usable.
    #[error("{what} {url:?}: {reason}")]
    BadUrl {
        /// Which URL (`issuer`, `jwks_uri`).
        what: &'static str,
        /// The URL as given.
        url: String,
        /// Why.
        reason: &'static str,
    },
    /// The issuer's metadata was not found, or does not fit (its `issuer` is not the one
    /// configured, or it names no `jwks_uri`).
    #[error("the metadata of issuer {issuer}: {reason}")]
    Discovery {
        /// The configured issuer.
        issuer: String,
        /// What went wrong.
        reason: String,
    },
    /// The JWKS document is not one, or holds no key this crate can use.
    #[error("the JWKS at {url}: {reason}")]
    Jwks {
        /// The `jwks_uri`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A token exchange (RFC 8693) failed: the token endpoint could not be reached, refused
    /// the exchange (its `error` and `error_description` in `reason`), or answered
    /// something that is not an access token. Never holds a token.
    #[error("the token exchange at {endpoint} failed: {reason}")]
    Exchange {
        /// The token endpoint.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
}

impl Error {
    /// Whether the token itself was at fault (a 401 `invalid_token`), as opposed to the
    /// issuer being unreachable or the settings wrong.
    pub fn is_token_fault(&self) -> bool {
        !matches!(
            self,
            Error::IssuerUnreachable { .. }
                | Error::BadUrl { .. }
                | Error::Discovery { .. }
                | Error::Jwks { .. }
                | Error::Exchange { .. }
        )
    }
}
