//! What the gateway reads of an upstream's `tools/call` result before passing it on: its
//! head (`resultType`, `isError`, `structuredContent`, `content`, `taskId`), read once,
//! which says what the result asks of the gateway ([`ResultKind`]) and the form it reaches
//! the call's client in ([`AsSent`]). The rest stays text.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use toolwright_client::Era;
use toolwright_protocol::{COMPLETE_FIRST, ProtocolVersion};

/// What an upstream's `tools/call` result asks of the gateway, read with the rest of its
/// head ([`Head::kind`]) in one pass over it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// The call's result.
    Final,
    /// A modern round of questions (`resultType: input_required`).
    AsksForInput,
    /// A `CreateTaskResult`: the upstream runs the call as this task.
    Task(String),
}

/// What is wrong with a result the gateway cannot pass on, said as the end of "upstream
/// NAME sent a tools/call result …".
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    #[error("that is not an object: {0}")]
    NotAnObject(String),
    #[error("that is not a CallToolResult: {0}")]
    NotAResult(serde_json::Error),
    #[error("of an unknown resultType \"{0}\"")]
    UnknownResultType(String),
}

/// The members of an upstream's `tools/call` result the gateway reads before passing it
/// on; the rest stays text.
#[derive(Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
    #[serde(rename = "isError", default)]
    pub(crate) is_error: Option<bool>,
    #[serde(rename = "structuredContent", borrow, default)]
    pub(crate) structured: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<Cow<'a, str>>,
}

impl<'a> Head<'a> {
    /// Reads the result `text` from an upstream of `era`: an object, whose `resultType` on
    /// a modern upstream is one the client knows (what the client's own check would have
    /// refused: the gateway asks it to skip that read).
    pub(crate) fn read(text: &'a str, era: Era) -> Result<Head<'a>, Unreadable> {
        if !text.trim_start().starts_with('{') {
            return Err(Unreadable::NotAnObject(text.to_owned()));
        }
        let head: Head<'a> = serde_json::from_str(text).map_err(Unreadable::NotAResult)?;
        if era == Era::Modern
            && let Some(t) = head.result_type.as_deref()
            && !toolwright_client::known_result_type(t)
        {
            return Err(Unreadable::UnknownResultType(t.to_owned()));
        }
        Ok(head)
    }

    /// What the result asks of the gateway.
    pub(crate) fn kind(&self) -> ResultKind {
        match (self.result_type.as_deref(), &self.task_id) {
            (Some("task"), Some(id)) => ResultKind::Task(id.clone().into_owned()),
            (Some("input_required"), _) => ResultKind::AsksForInput,
            _ => ResultKind::Final,
        }
    }

    /// The result as a client of `client`'s version gets it from an upstream of
    /// `upstream`'s, made from `text` without building it, or `None` when it must be
    /// rebuilt: content of kinds the client knows (the upstream is not newer, or the client
    /// has `structuredContent` and resource links), text beside any `structuredContent`
    /// (else the server adds it), and the era's `resultType`: kept for a modern client
    /// (added when a legacy upstream sent none), absent for a legacy one (taken off when
    /// the upstream wrote it first).
    pub(crate) fn as_sent_to(
        &self,
        text: &str,
        client: ProtocolVersion,
        upstream: ProtocolVersion,
    ) -> Option<AsSent> {
        let has_text = self.content.is_some_and(|c| {
            c.get()
                .trim_start_matches(['[', ' ', '\n', '\r', '\t'])
                .starts_with('{')
        });
        let known = upstream <= client || client.has_structured_content();
        if !known || self.structured.is_some() && !(has_text && client.has_structured_content()) {
            return None;
        }
        Some(match (client.is_modern(), self.result_type.as_deref()) {
            (true, Some("complete")) | (false, None) => AsSent::Same,
            (true, None) => {
                let rest = text.trim_start().strip_prefix('{')?;
                if rest.trim_start().starts_with('}') {
                    return None;
                }
                AsSent::Changed(format!("{COMPLETE_FIRST}{rest}"))
            }
            // Only the form the server can take off as it writes: `resultType` first.
            (false, Some("complete")) if text.starts_with(COMPLETE_FIRST) => {
                AsSent::WithoutResultType
            }
            _ => return None,
        })
    }
}

/// A result as it goes to this call's client.
pub(crate) enum AsSent {
    /// As the upstream wrote it.
    Same,
    /// With its `resultType` added.
    Changed(String),
    /// As the upstream wrote it, but for the `resultType` first in it, which the server
    /// leaves out as it writes the result (see `COMPLETE_FIRST`).
    WithoutResultType,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn a_result_says_what_it_asks_in_one_read() {
        let t = |s: &str| {
            let raw = raw(s);
            serde_json::from_str::<Head<'_>>(raw.get()).map_or(ResultKind::Final, |h| h.kind())
        };
        assert_eq!(
            t(r#"{"resultType":"task","taskId":"ab12","status":"working"}"#),
            ResultKind::Task("ab12".into())
        );
        assert_eq!(
            t(r#"{"resultType":"task","taskId":"a\"b"}"#),
            ResultKind::Task("a\"b".into())
        );
        assert_eq!(
            t(r#"{"resultType":"complete","content":[]}"#),
            ResultKind::Final
        );
        assert_eq!(t(r#"{"content":[],"taskId":"x"}"#), ResultKind::Final);
        assert_eq!(t(r#"{"resultType":"task"}"#), ResultKind::Final);
        assert_eq!(
            t(r#"{"inputRequests":{},"resultType":"input_required"}"#),
            ResultKind::AsksForInput
        );
        assert_eq!(t("[1]"), ResultKind::Final);
    }

    #[test]
    fn a_result_is_read_as_an_object_of_a_known_result_type() {
        let why = |s: &str, era| {
            Head::read(s, era)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(why("[1, 2]", Era::Modern), "that is not an object: [1, 2]");
        assert!(
            why(r#"{"isError":"yes"}"#, Era::Legacy).starts_with("that is not a CallToolResult")
        );
        assert_eq!(
            why(r#"{"resultType":"odd","content":[]}"#, Era::Modern),
            "of an unknown resultType \"odd\""
        );
        // A legacy upstream's result has no resultType to know.
        assert_eq!(why(r#"{"resultType":"odd","content":[]}"#, Era::Legacy), "");
        assert_eq!(
            why(r#"{"resultType":"task","taskId":"t"}"#, Era::Modern),
            ""
        );
    }
}
