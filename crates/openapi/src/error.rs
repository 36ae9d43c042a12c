//! The crate's one error type: why a description could not be imported at all. What keeps
//! one operation out is not an error but a [`crate::Skipped`] entry of the result.

/// Why an import failed as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {location}: {source}")]
    Read {
        /// The file.
        location: String,
        /// Why.
        source: std::io::Error,
    },
    /// A URL could not be fetched.
    #[error("cannot fetch {location}: {reason}")]
    Fetch {
        /// The URL.
        location: String,
        /// Why.
        reason: String,
    },
    /// A document is neither JSON nor YAML, or not a mapping.
    #[error("{location} is not a JSON or YAML document: {reason}")]
    Parse {
        /// The file or URL.
        location: String,
        /// Why.
        reason: String,
    },
    /// The document is not OpenAPI 3.0 or 3.1 (Swagger 2.0, another format, a later version).
    #[error("{location} is not an OpenAPI 3.0 or 3.1 description: {reason}")]
    NotOpenApi {
        /// The file or URL.
        location: String,
        /// What was found instead.
        reason: String,
    },
    /// A `$ref` (or a location to load) that may not be followed or does not resolve.
    #[error("$ref {reference:?}: {reason}")]
    Ref {
        /// The reference as written.
        reference: String,
        /// Why.
        reason: String,
    },
    /// The server URL cannot be made absolute (a file whose `servers[0].url` is relative, or
    /// none given), or is not http(s).
    #[error("no usable server URL: {reason} (give one with --server URL)")]
    Server {
        /// Why.
        reason: String,
    },
    /// A selection pattern (`--path`) that is not a glob.
    #[error("--path {pattern:?} is not a glob: {reason}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why.
        reason: String,
    },
    /// The written file does not read back as a tool file (a bug of the importer).
    #[error("the written tool file does not read back: {reason}")]
    Written {
        /// Why.
        reason: String,
    },
}
