//! What an [`Observer`] sees of a [`Peer`](super::Peer)'s traffic: every request and
//! notification it sends (the caller's, and its own: the era probe, the handshake, list
//! pages, listen streams, cancellations), as it goes out and when it ends. Telemetry plugs
//! in here (a CLIENT span and the client duration metric for each message) without this
//! crate knowing of it; what the observer asks to carry goes in the message's
//! `params._meta` (the W3C trace context, in the MCP conventions).

use serde_json::Value;
use toolwright_jsonrpc::RequestId;
use toolwright_protocol::ProtocolVersion;

use crate::{ClientError, Era};

/// A request or notification about to be sent.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// Its method.
    pub method: &'a str,
    /// Its id; `None` for a notification.
    pub id: Option<&'a RequestId>,
    /// Its params, before the peer adds its own `_meta`.
    pub params: &'a Value,
    /// The era spoken when it is sent (the era probe is sent as modern).
    pub era: Era,
    /// The protocol version in use then.
    pub protocol_version: ProtocolVersion,
    /// The server's session then (a legacy HTTP server's `MCP-Session-Id`), if any.
    pub session_id: Option<&'a str>,
}

/// How a message ended: the `result` object of a request, as the server wrote it, `None`
/// for a notification that was delivered, or why there was no result.
pub type Outcome<'a> = Result<Option<&'a serde_json::value::RawValue>, &'a ClientError>;

/// Watches what a peer sends. Set for the whole peer in
/// [`PeerOptions::observer`](super::PeerOptions::observer), or for one request in
/// [`Call::observer`](super::Call::observer) (which then sees that request alone).
pub trait Observer: Send + Sync + std::fmt::Debug + 'static {
    /// `message` is about to be sent; what is returned hears how it ended.
    fn start(&self, message: &Outgoing<'_>) -> Option<Box<dyn Watch>>;
}

/// One message being watched. Dropped without [`finish`](Watch::finish), its caller
/// stopped waiting for it.
pub trait Watch: Send {
    /// Members for the message's `params._meta` (for example `traceparent`); they
    /// replace members of the same name.
    fn meta(&self) -> Vec<(&'static str, String)>;

    /// The message ended with `outcome`; `session_id` is the server's session as the
    /// peer knows it now (a legacy HTTP server names it in its answer to `initialize`).
    fn finish(self: Box<Self>, outcome: Outcome<'_>, session_id: Option<&str>);
}
