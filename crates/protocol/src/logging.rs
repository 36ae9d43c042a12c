//! Log levels (RFC 5424 severities) and the `notifications/message` payload.

use serde::{Deserialize, Serialize};

/// A log level; the order is by severity, `Debug` lowest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// System is unusable.
    Emergency,
}

impl LoggingLevel {
    /// All levels, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// Parses the wire name (`"warning"`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// A compact number for storing the level in an atomic.
    pub fn to_u8(self) -> u8 {
        self as u8
    }

    /// The inverse of [`LoggingLevel::to_u8`].
    pub fn from_u8(n: u8) -> Option<Self> {
        Self::ALL.get(n as usize).copied()
    }
}

/// Parameters of `notifications/message`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogMessage {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON payload.
    pub data: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::LoggingLevel;

    #[test]
    fn levels_order_and_parse() {
        assert!(LoggingLevel::Debug < LoggingLevel::Emergency);
        assert_eq!(LoggingLevel::parse("notice"), Some(LoggingLevel::Notice));
        assert_eq!(LoggingLevel::parse("verbose"), None);
        for l in LoggingLevel::ALL {
            assert_eq!(LoggingLevel::from_u8(l.to_u8()), Some(l));
        }
    }
}
