//! Why a screenshot failed. Every variant reaches the caller as an `isError` result whose
//! text says what happened and, where it can, what to do about it.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Why the policy refused a URL.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Not a URL.
    #[error("{url:?} is not a valid URL ({reason})")]
    Unparsable {
        /// The text given.
        url: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A scheme other than http and https.
    #[error("{url} is refused: only http and https URLs can be captured, not {scheme}:")]
    Scheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// An http(s) URL without a host.
    #[error("{url} is refused: it has no host")]
    NoHost {
        /// The URL.
        url: String,
    },
    /// The host could not be resolved.
    #[error("{url} is refused: its host {host} could not be resolved ({reason})")]
    Unresolvable {
        /// The URL.
        url: String,
        /// Its host.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// The host is, or resolves to, an address the policy refuses.
    #[error("{url} is refused: {}{range}; {hint}", which(host, ip))]
    Address {
        /// The URL.
        url: String,
        /// Its host as written.
        host: String,
        /// The refused address.
        ip: IpAddr,
        /// The range it is in.
        range: &'static str,
        /// Why, and which flag changes it.
        hint: &'static str,
    },
    /// A connection the proxy never makes, whatever the policy.
    #[error("{url} is refused: {what}")]
    Internal {
        /// The URL, or `host:port`.
        url: String,
        /// Why.
        what: &'static str,
    },
}

/// Why a screenshot could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScreenshotError {
    /// The URL the caller gave is refused.
    #[error("{0}")]
    Refused(Refusal),
    /// The page redirected to a refused URL.
    #[error("the page redirected to a refused URL: {0}")]
    RedirectRefused(Refusal),
    /// The capture's policy proxy could not start.
    #[error("the network policy proxy could not start: {0}")]
    Proxy(String),
    /// No Chromium to run.
    #[error(
        "no Chromium browser found ({looked}). Install it with `apt-get install chromium` \
         (Debian/Ubuntu), or start the server with `--chromium PATH` naming a Chromium or \
         Chrome executable"
    )]
    BrowserMissing {
        /// Where it looked.
        looked: String,
    },
    /// Chromium did not start.
    #[error("Chromium ({}) did not start: {reason}{}", .path.display(), tail(.stderr))]
    Launch {
        /// The executable.
        path: PathBuf,
        /// What went wrong.
        reason: String,
        /// The last lines it wrote to stderr.
        stderr: Vec<String>,
    },
    /// The DevTools connection failed or the browser refused a command.
    #[error("the browser refused {method}: {message}")]
    Protocol {
        /// The DevTools method.
        method: String,
        /// The browser's message.
        message: String,
    },
    /// The browser exited (or its connection closed) during the call.
    #[error("the browser exited during the capture; it is restarted on the next call")]
    BrowserGone,
    /// The page's renderer crashed.
    #[error("the page crashed while loading {url}")]
    PageCrashed {
        /// The URL.
        url: String,
    },
    /// Loading the page failed (DNS, connection, TLS…).
    #[error("loading {url} failed: {reason}")]
    Navigation {
        /// The URL.
        url: String,
        /// Chromium's error text, such as `net::ERR_CONNECTION_REFUSED`.
        reason: String,
    },
    /// The page did not finish loading in time.
    #[error(
        "{url} did not finish loading within {} s (the server's --screenshot-timeout)",
        .limit.as_secs_f64()
    )]
    Timeout {
        /// The URL.
        url: String,
        /// The limit.
        limit: Duration,
    },
    /// The browser returned something that is not the image it was asked for.
    #[error("the browser returned an unreadable image: {0}")]
    BadImage(#[from] ImageError),
}

/// Why the bytes the browser returned are not a readable image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The data is not base64.
    #[error("invalid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes do not start like the format asked for.
    #[error("not a {format} image")]
    WrongFormat {
        /// `PNG` or `JPEG`.
        format: &'static str,
        /// How many bytes there are.
        len: usize,
    },
    /// The header gives a width or height of zero.
    #[error("a {format} image of {width}x{height} pixels")]
    NoPixels {
        /// `PNG` or `JPEG`.
        format: &'static str,
        /// The width read.
        width: u32,
        /// The height read.
        height: u32,
    },
    /// A JPEG segment does not start with a marker.
    #[error("a JPEG marker was expected at byte {offset}")]
    JpegMarker {
        /// Where.
        offset: usize,
    },
    /// The JPEG data ends before a frame header gives the size.
    #[error("no frame header in the JPEG image")]
    NoJpegFrame {
        /// How many bytes there are.
        len: usize,
    },
}

/// `10.0.0.1 is in ` for an address, `intranet.example (10.0.0.1) is in ` for a name.
fn which(host: &str, ip: &IpAddr) -> String {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok_and(|h| h == *ip) {
        format!("{ip} is in ")
    } else {
        format!("{host} ({ip}) is in ")
    }
}

fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("\nChromium's last messages:\n{}", lines.join("\n"))
    }
}

impl ScreenshotError {
    /// True when the browser itself went away (worth one retry on a fresh browser).
    pub fn is_browser_gone(&self) -> bool {
        matches!(self, ScreenshotError::BrowserGone)
    }
}
