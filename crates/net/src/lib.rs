//! toolwright's network rules, each written once: which addresses an outgoing connection
//! may reach, how a host becomes checked addresses, the TLS client configuration, and the
//! HTTP connection and pooled client built from them. No MCP types; every crate that opens
//! a socket to a server comes here (`toolwright-tools`' screenshots, `toolwright-declared`'s
//! HTTP tools, `toolwright-client`'s Streamable HTTP and OAuth requests, `toolwright-auth`'s
//! fetches of an issuer's metadata and keys, and the OTLP exporter).
//!
//! Layout:
//! - [`addr`]: the class of an IP address ([`classify`]), every block of the IANA
//!   special-purpose registries; addresses that embed an IPv4 address are judged by it.
//! - [`policy`]: [`AddressPolicy`] decides: public addresses always, loopback unless turned
//!   off, everything else (private, link-local, unspecified, shared, documentation,
//!   multicast, reserved) only when non-public addresses are allowed; an unspecified
//!   address reaches the local machine, so it needs both. [`is_localhost`]: `localhost`
//!   and `*.localhost` are loopback without asking DNS (as browsers treat them).
//! - [`resolve`]: [`resolve_checked`], the one resolution with the policy applied.
//!   Callers resolve a name once, check every address it gave, and connect to an address
//!   they checked, never resolving again, so DNS rebinding cannot change the answer.
//! - [`tls`]: the rustls client configuration (ring, the webpki roots, extra PEM CA files,
//!   ALPN) and the handshake.
//! - [`http`]: [`Connector`] (policy, then TLS), the [`pooled`] hyper-util client, and
//!   [`Pool`], that client with one retry for a kept connection closed under a request.
//! - [`programs`]: a program looked up on a `PATH` value ([`on_path`]).
//! - [`error`]: the one error type, [`Error`] (with [`CaProblem`]).

pub mod addr;
pub mod error;
pub mod http;
pub mod policy;
pub mod programs;
pub mod resolve;
pub mod tls;

pub use addr::{AddrClass, Classified, classify};
pub use error::{CaProblem, Error, error_chain};
pub use http::{Conn, Connector, Pool, closed_before_answer, pooled};
pub use policy::{AddressPolicy, is_localhost};
pub use programs::on_path;
pub use resolve::{Resolution, Resolve, SystemResolver, resolve_checked};
