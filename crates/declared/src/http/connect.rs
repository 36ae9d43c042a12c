//! The policy point: `toolwright_net`'s [`Connector`] (the host resolved once, every
//! address checked with the address policy `take_screenshot` uses, a checked address
//! connected to, never resolving again, then TLS on the webpki roots for `https`), behind
//! hyper-util's pooled client ([`toolwright_net::pooled`]). What this file adds is how a
//! refusal is worded for a tool's author: which `http` setting would admit the address.

use hyper::Uri;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use toolwright_net::{AddrClass, AddressPolicy, Conn, Connector, Error as NetError, tls};

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The policy refused an address the host resolves to (nothing was connected).
    #[error("{0}")]
    Refused(String),
    /// Resolving, connecting or the TLS handshake failed.
    #[error("{0}")]
    Failed(String),
}

impl From<NetError> for ConnectError {
    fn from(e: NetError) -> ConnectError {
        match e {
            NetError::Refused { class, .. } => {
                let hint = match class.class {
                    AddrClass::Loopback => "this tool sets allow_loopback: false",
                    AddrClass::Unspecified => {
                        "it reaches the local machine; it needs allow_private: true and loopback allowed"
                    }
                    _ => "non-public addresses need allow_private: true in the tool's http",
                };
                ConnectError::Refused(format!("{e}; {hint}"))
            }
            other => ConnectError::Failed(other.to_string()),
        }
    }
}

/// A connector that applies `policy` to every connection it opens.
#[derive(Clone, Debug)]
pub(crate) struct PolicedConnector {
    inner: Connector,
}

impl PolicedConnector {
    /// A connector under `policy`.
    pub(crate) fn new(policy: AddressPolicy) -> PolicedConnector {
        PolicedConnector {
            inner: Connector::new(policy, tls::http1_default()),
        }
    }
}

impl tower_service::Service<Uri> for PolicedConnector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let mut inner = self.inner.clone();
        Box::pin(async move { Ok(tower_service::Service::call(&mut inner, uri).await?) })
    }
}
