//! Compiling a schema once into a [`Validator`], and validating with it.

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ReferencingError, Retrieve, Uri, ValidationError};
use serde_json::Value;

use crate::SchemaError;
use crate::dialect::{Dialect, dialect_of};
use crate::error::json_kind;
use crate::refscan::check_references;
use crate::violation::{Violation, show};

/// How to compile a schema. `Options::default()` asserts formats and reads
/// the dialect from `$schema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Whether `format` is asserted (`"date-time"`, `"email"`, `"uri"`,
    /// `"ipv4"`, `"uuid"`, ...) rather than only annotated, in every dialect.
    /// Unknown formats are always ignored, and so are `idn-email` and
    /// `idn-hostname` (`jsonschema`'s `idna` feature is off). Default `true`.
    pub validate_formats: bool,
    /// Compile under this dialect whatever `$schema` says (an unsupported
    /// root `$schema` is then not an error). Default `None`.
    pub dialect_override: Option<Dialect>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            validate_formats: true,
            dialect_override: None,
        }
    }
}

/// A compiled schema. Compile once, then validate any number of instances;
/// it is `Send + Sync`, so share it behind an `Arc`.
#[derive(Debug)]
pub struct Validator {
    inner: jsonschema::Validator,
    dialect: Dialect,
}

impl Validator {
    /// Compile `schema` with [`Options::default`].
    ///
    /// # Errors
    ///
    /// See [`Validator::compile_with`].
    pub fn compile(schema: &Value) -> Result<Validator, SchemaError> {
        Validator::compile_with(schema, &Options::default())
    }

    /// Compile `schema` with `options`. Nothing is ever fetched: the schema
    /// must be self-contained.
    ///
    /// # Errors
    ///
    /// - [`SchemaError::NotAnObject`]: `schema` is neither an object nor a boolean;
    /// - [`SchemaError::UnsupportedDialect`]: `$schema` names no supported draft;
    /// - [`SchemaError::ExternalRef`]: a reference would need a retrieval;
    /// - [`SchemaError::Invalid`]: the schema is not valid under its
    ///   dialect's meta-schema, or cannot be compiled (a bad regex, a
    ///   dangling local reference, ...).
    pub fn compile_with(schema: &Value, options: &Options) -> Result<Validator, SchemaError> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(SchemaError::NotAnObject {
                found: json_kind(schema),
            });
        }
        let dialect = match options.dialect_override {
            Some(dialect) => dialect,
            None => dialect_of(schema)?,
        };
        check_references(schema, dialect)?;
        let inner = jsonschema::options()
            .with_draft(dialect.to_draft())
            .with_retriever(NeverRetrieve)
            .should_validate_formats(options.validate_formats)
            .should_ignore_unknown_formats(true)
            .build(schema)
            .map_err(|err| build_error(&err))?;
        Ok(Validator { inner, dialect })
    }

    /// Whether `instance` is valid. The fast path: no error is built.
    #[must_use]
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// `Ok(())` when `instance` is valid, otherwise every violation, sorted
    /// by pointer then message and without duplicates. A valid instance
    /// costs one [`is_valid`](Validator::is_valid); errors are only
    /// collected on failure.
    ///
    /// # Errors
    ///
    /// The violations, never an empty list.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<Violation>> {
        if self.inner.is_valid(instance) {
            return Ok(());
        }
        let mut violations: Vec<Violation> = self
            .inner
            .iter_errors(instance)
            .map(|error| Violation::from_error(&error))
            .collect();
        violations.sort();
        violations.dedup();
        if violations.is_empty() {
            // `is_valid` and `iter_errors` disagreeing would be a bug in
            // `jsonschema`; still never report failure without a reason.
            violations.push(Violation {
                pointer: String::new(),
                message: format!("{} does not match the schema", show(instance)),
            });
        }
        Err(violations)
    }

    /// The dialect the schema was compiled under.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
}

/// The retriever handed to `jsonschema`: it refuses every URI, so no schema
/// is ever fetched from the network or the file system. The pre-scan in
/// [`check_references`] normally refuses such schemas first, with a clearer
/// error; this is the backstop.
struct NeverRetrieve;

impl Retrieve for NeverRetrieve {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("toolwright-schema never retrieves schemas (asked for {uri})").into())
    }
}

/// Translate a `jsonschema` build error. Its instance path is the location
/// in the schema document (meta-schema and compile errors alike).
fn build_error(error: &ValidationError<'_>) -> SchemaError {
    let pointer = error.instance_path().as_str().to_owned();
    match error.kind() {
        ValidationErrorKind::Referencing(ReferencingError::Unretrievable { uri, .. }) => {
            SchemaError::ExternalRef {
                reference: uri.clone(),
                pointer,
            }
        }
        ValidationErrorKind::Referencing(other) => SchemaError::Invalid {
            pointer,
            message: other.to_string(),
        },
        ValidationErrorKind::Custom { message, .. } => SchemaError::Invalid {
            pointer,
            message: message.clone(),
        },
        _ => {
            let (pointer, message) = explain(error);
            SchemaError::Invalid { pointer, message }
        }
    }
}

/// Pointer and message for a meta-schema failure. Under `anyOf`/`oneOf`
/// ("`type` must be a type name or an array of them") the failure of one
/// branch says more than "matches none": take the deepest, preferring
/// anything over a bare type mismatch, as `jsonschema`'s Python namesake's
/// `best_match` does.
fn explain(error: &ValidationError<'_>) -> (String, String) {
    let context = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            context
        }
        _ => {
            let violation = Violation::from_error(error);
            return (violation.pointer, violation.message);
        }
    };
    let relevance = |e: &ValidationError<'_>| {
        let depth = e.instance_path().as_str().matches('/').count();
        let weak = matches!(e.kind(), ValidationErrorKind::Type { .. });
        (depth, !weak)
    };
    let mut best: Option<&ValidationError<'_>> = None;
    for candidate in context.iter().flatten() {
        if best.is_none_or(|b| relevance(candidate) > relevance(b)) {
            best = Some(candidate);
        }
    }
    match best {
        Some(best) => explain(best),
        None => {
            let violation = Violation::from_error(error);
            (violation.pointer, violation.message)
        }
    }
}
