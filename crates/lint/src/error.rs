//! The crate's one error type.

/// Why a document could not be linted. Problems *in* tool definitions are not errors:
/// they are [`Finding`](crate::Finding)s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LintError {
    /// The text is neither JSON nor YAML.
    #[error("not JSON ({json}) nor YAML ({yaml})")]
    Parse {
        /// Why the JSON parser refused it.
        json: String,
        /// Why the YAML parser refused it.
        yaml: String,
    },
    /// The document parsed but holds no tool definitions in any shape this crate knows.
    #[error(
        "{found} is not a tool, an array of tools, a tools/list result or a JSON-RPC \
         response to tools/list"
    )]
    NotTools {
        /// What the document is instead, e.g. `"an object with keys \"a\", \"b\""`.
        found: String,
    },
    /// The document is a JSON-RPC error response, not a list of tools.
    #[error("the document is a JSON-RPC error response ({code}: {message})")]
    ErrorResponse {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// A severity name other than `info`, `warning` or `error`.
    #[error("unknown severity {0:?}: use info, warning or error")]
    UnknownSeverity(String),
    /// A rule id that no rule has.
    #[error("unknown rule {0:?}; see toolwright lint --rules")]
    UnknownRule(String),
}
