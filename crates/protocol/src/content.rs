//! Content blocks and the result of `tools/call`.

use crate::{Icon, JsonObject, ProtocolVersion};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who a piece of content is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

/// Optional hints on a content block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentAnnotations {
    /// Who the content is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The contents of a resource: text or base64 binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents (exactly one of `text` and `blob` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// One block of a tool result or prompt message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<ContentAnnotations>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 bytes.
        data: String,
        /// MIME type such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<ContentAnnotations>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// Audio, base64-encoded (2025-03-26 and later).
    Audio {
        /// Base64 bytes.
        data: String,
        /// MIME type such as `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<ContentAnnotations>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// A link to a resource (2025-06-18 and later).
    ResourceLink {
        /// URI of the resource.
        uri: String,
        /// Programmatic name.
        name: String,
        /// Display title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// Icons.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        icons: Option<Vec<Icon>>,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<ContentAnnotations>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<ContentAnnotations>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An image block from base64 data.
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: data_base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An audio block from base64 data.
    pub fn audio(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: data_base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// The oldest protocol version that knows this kind of block.
    pub fn since(&self) -> ProtocolVersion {
        match self {
            Content::Audio { .. } => ProtocolVersion::V2025_03_26,
            Content::ResourceLink { .. } => ProtocolVersion::V2025_06_18,
            _ => ProtocolVersion::V2024_11_05,
        }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content (may be empty).
    pub content: Vec<Content>,
    /// Structured result, conforming to the tool's `outputSchema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed; the content says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// The structured content as JSON text, for numbers a `Value` cannot hold exactly
    /// (see [`structured_exact`](Self::structured_exact)). Not serialized with the result:
    /// the server writes it in place of `structured_content`, and as the text block.
    #[serde(skip)]
    pub structured_text: Option<JsonText>,
    /// The whole result as another server wrote it, passed on unchanged (a gateway's
    /// upstream answer, already checked): the server writes this text as the result, and
    /// the other fields hold only `is_error` (see [`forwarded`](Self::forwarded)).
    #[serde(skip)]
    pub forwarded: Option<JsonText>,
    /// With `forwarded`: the text starts with [`COMPLETE_FIRST`], a member this request's
    /// legacy client must not get, and the server writes the text without it (a text that
    /// does not start so is written whole). Passing the text on as it came saves checking
    /// a copy of it again (see [`forwarded_without_result_type`](Self::forwarded_without_result_type)).
    #[serde(skip)]
    pub forwarded_without_result_type: bool,
}

/// How a modern result starts when its server writes `resultType` first, as toolwright
/// does.
pub const COMPLETE_FIRST: &str = "{\"resultType\":\"complete\",";

/// JSON text, kept as written.
#[derive(Debug, Clone)]
pub struct JsonText(pub Box<serde_json::value::RawValue>);

impl JsonText {
    /// The text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl CallToolResult {
    /// A successful structured result whose numbers must reach the client exactly as
    /// written in `text`, with no content blocks (the server adds `text` as the text block).
    /// `value` is the same JSON with its numbers as near as a `Value` holds them: it is
    /// what the server checks against the tool's `outputSchema` and what in-process callers
    /// read, while `text` is what goes on the wire.
    pub fn structured_exact(value: Value, text: Box<serde_json::value::RawValue>) -> Self {
        CallToolResult {
            structured_content: Some(value),
            structured_text: Some(JsonText(text)),
            ..Default::default()
        }
    }

    /// A successful result with these content blocks.
    pub fn content(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with structured content; the server adds the JSON as a `text`
    /// block when the tool gives none.
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// A failed call, with one text block that says why.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// A result passed on as `text`, the JSON object another server sent, which the
    /// caller has checked is fit for this client as it stands; `is_error` is what it says.
    pub fn forwarded(text: Box<serde_json::value::RawValue>, is_error: bool) -> Self {
        CallToolResult {
            is_error: is_error.then_some(true),
            forwarded: Some(JsonText(text)),
            ..Default::default()
        }
    }

    /// [`forwarded`](Self::forwarded) text that starts with [`COMPLETE_FIRST`], for a
    /// legacy client: the server writes it without that member.
    pub fn forwarded_without_result_type(
        text: Box<serde_json::value::RawValue>,
        is_error: bool,
    ) -> Self {
        CallToolResult {
            forwarded_without_result_type: true,
            ..Self::forwarded(text, is_error)
        }
    }

    /// True when `isError` is set.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_wire_shapes() {
        let cases = [
            (Content::text("hi"), json!({"type": "text", "text": "hi"})),
            (
                Content::image("AAAA", "image/png"),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            ),
            (
                Content::audio("AAAA", "audio/wav"),
                json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
            ),
        ];
        for (c, want) in cases {
            assert_eq!(serde_json::to_value(&c).unwrap(), want);
        }
    }

    #[test]
    fn resource_link_and_embedded() {
        let link: Content = serde_json::from_value(
            json!({"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"}),
        )
        .unwrap();
        assert_eq!(link.since(), ProtocolVersion::V2025_06_18);
        let emb: Content = serde_json::from_value(
            json!({"type": "resource", "resource": {"uri": "test://x", "text": "t"}}),
        )
        .unwrap();
        assert!(matches!(emb, Content::Resource { .. }));
    }

    #[test]
    fn result_omits_absent_fields() {
        let r = CallToolResult::structured(json!({"result": 3}));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content": [], "structuredContent": {"result": 3}})
        );
        let e = CallToolResult::error("nope");
        assert!(e.is_error());
    }
}
