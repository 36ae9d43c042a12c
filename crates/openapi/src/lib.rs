//! `toolwright import openapi`: an OpenAPI 3.0 or 3.1 description (YAML or JSON, a file or
//! an http(s) URL) as a file of declared `http` tools to review: one tool per selected
//! operation, each argument mapped to where the `http` action sends it, schemas rewritten
//! as self-contained JSON Schema 2020-12, credentials from `${VAR}`. What cannot be sent is
//! listed with why, never dropped silently, and what is written lints clean.
//!
//! The description is read as `serde_json::Value`s rather than a typed OpenAPI model: one
//! model would have to hold both 3.0's schema dialect and 3.1's full JSON Schema, and
//! external `$ref`s, which typed models leave as opaque strings, must be followed into other
//! documents (see README.md for the crates weighed).
//!
//! Layout:
//! - [`load`]: locations, loaders, parsing, [`Spec`] (the documents) and `$ref` resolution;
//! - [`fetch`]: [`NetLoader`], URLs through toolwright-net;
//! - [`schema`]: a schema as JSON Schema 2020-12 (references inlined, recursion cut);
//! - [`operation`]: one operation as one tool (its parameters, URL, description, hints),
//!   `payload`: its JSON body and its response; [`security`]: credentials as headers;
//! - [`import`](mod@import): selection, names, servers, the whole import; `check`: the lint
//!   pass; [`render`]: the YAML text; [`text`]: names, cut descriptions, comments;
//! - the one error type, [`Error`], in [`error`].

// The test-table helper (`table! { check; (a, b, ...); ... }`), for every test module.
#[cfg(test)]
#[macro_use]
extern crate toolwright_testkit;

mod check;
pub mod error;
pub mod fetch;
pub mod import;
pub mod load;
pub mod operation;
mod payload;
pub mod render;
pub mod schema;
pub mod security;
pub mod text;

pub use error::Error;
pub use fetch::NetLoader;
pub use import::{Import, Options, Skipped, import};
pub use load::{FilesOnly, Loader, Location, Spec};

/// Reads the description at `location` through `loader` and imports it: the [`Import`]
/// and its tool file's text.
///
/// # Errors
///
/// Any [`Error`] of reading, parsing or importing.
pub fn import_to_file(
    location: Location,
    loader: &dyn Loader,
    options: &Options,
) -> Result<(Import, String), Error> {
    let spec = Spec::load(location, loader)?;
    let imported = import(&spec, options)?;
    let text = render::tool_file(&imported);
    Ok((imported, text))
}
