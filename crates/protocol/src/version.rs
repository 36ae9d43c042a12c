//! Protocol versions and the features each one has.

use std::fmt;

/// A protocol version toolwright can speak.
///
/// The order of the variants is chronological, so `<`/`>` compare release dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first release (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: tool annotations, audio content, batching, Streamable HTTP.
    V2025_03_26,
    /// 2025-06-18: `title`, `outputSchema`, `structuredContent`, resource links; no batching.
    V2025_06_18,
    /// 2025-11-25: icons, tasks, tool-name rules, input errors as `isError` results.
    V2025_11_25,
    /// 2026-07-28: the stateless modern era.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every version, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];
    /// The newest version that uses the `initialize` handshake.
    pub const LATEST_LEGACY: ProtocolVersion = Self::V2025_11_25;
    /// The newest version overall.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;

    /// Parses the wire form (`"2025-06-18"`); `None` for versions toolwright does not know.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "2024-11-05" => Self::V2024_11_05,
            "2025-03-26" => Self::V2025_03_26,
            "2025-06-18" => Self::V2025_06_18,
            "2025-11-25" => Self::V2025_11_25,
            "2026-07-28" => Self::V2026_07_28,
            _ => return None,
        })
    }

    /// The wire form of the version.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// True for 2026-07-28 and later: stateless requests with per-request `_meta`.
    pub fn is_modern(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// True when JSON-RPC batches are allowed (2025-03-26 only).
    pub fn allows_batches(self) -> bool {
        self == Self::V2025_03_26
    }

    /// True when tools may declare `outputSchema` and return `structuredContent`.
    pub fn has_structured_content(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// True when argument validation failures are reported as `isError` results
    /// (SEP-1303, 2025-11-25 and later) rather than as JSON-RPC errors.
    pub fn input_errors_are_tool_errors(self) -> bool {
        self >= Self::V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_version() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
    }

    #[test]
    fn unknown_versions_are_none() {
        assert_eq!(ProtocolVersion::parse("2024-10-07"), None);
        assert_eq!(ProtocolVersion::parse(""), None);
        assert_eq!(ProtocolVersion::parse("draft"), None);
    }

    #[test]
    fn feature_gates() {
        use ProtocolVersion::*;
        assert!(V2025_03_26.allows_batches());
        assert!(!V2025_06_18.allows_batches());
        assert!(!V2024_11_05.has_structured_content());
        assert!(V2025_06_18.has_structured_content());
        assert!(!V2025_06_18.input_errors_are_tool_errors());
        assert!(V2025_11_25.input_errors_are_tool_errors());
        assert!(V2026_07_28.is_modern());
        assert!(!V2025_11_25.is_modern());
    }
}
