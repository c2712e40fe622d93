//! Reading a provider's text frame into a [`ProviderMessage`], with an
//! error that says which of the spec's codes applies.

use serde::Deserialize;

use super::{ErrorCode, ProviderMessage};
use crate::excerpt::excerpt;

/// Why a frame is not a message the gateway can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub kind: ParseErrorKind,
    /// The frame's `type`, when it had a readable one.
    pub type_name: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// Not JSON, not an object, no string `type`, or a field of the wrong
    /// type or missing: `INVALID_JSON`.
    InvalidJson,
    /// A well-formed message of a type this gateway does not know:
    /// `UNKNOWN_TYPE`.
    UnknownType,
}

impl ParseError {
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            ParseErrorKind::InvalidJson => ErrorCode::InvalidJson,
            ParseErrorKind::UnknownType => ErrorCode::UnknownType,
        }
    }
}

/// Only the tag, for diagnosis; other fields are skipped without being
/// stored.
#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

/// Parses one frame. The happy path is a single pass; only a frame that
/// fails is read again to say precisely why.
pub fn parse_provider_message(text: &str) -> Result<ProviderMessage, ParseError> {
    match serde_json::from_str::<ProviderMessage>(text) {
        Ok(ProviderMessage::Unknown) => {
            let type_name = serde_json::from_str::<TypeOnly>(text)
                .map(|t| t.kind)
                .unwrap_or_default();
            Err(ParseError {
                kind: ParseErrorKind::UnknownType,
                message: format!("unknown message type {:?}", excerpt(&type_name)),
                type_name: Some(type_name),
            })
        }
        Ok(message) => Ok(message),
        Err(err) => Err(diagnose(text, &err)),
    }
}

/// The message type of a frame, if it has one, without building the message
/// (used to apply per-type size limits before a full parse).
pub fn peek_type(text: &str) -> Option<String> {
    serde_json::from_str::<TypeOnly>(text).ok().map(|t| t.kind)
}

fn diagnose(text: &str, err: &serde_json::Error) -> ParseError {
    let invalid = |type_name: Option<String>, message: String| ParseError {
        kind: ParseErrorKind::InvalidJson,
        type_name,
        message,
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(syntax) => return invalid(None, format!("not valid JSON: {syntax}")),
    };
    let Some(object) = value.as_object() else {
        return invalid(None, "a message must be a JSON object".to_owned());
    };
    match object.get("type") {
        None => invalid(None, "the message has no \"type\" field".to_owned()),
        Some(serde_json::Value::String(kind)) => {
            // serde's messages for internally tagged enums do not name the
            // variant; the type is known here, so say it.
            // serde's message may quote the offending value whole.
            invalid(
                Some(kind.clone()),
                format!(
                    "invalid {} message: {}",
                    excerpt(kind),
                    excerpt(&err.to_string())
                ),
            )
        }
        Some(_) => invalid(None, "\"type\" must be a string".to_owned()),
    }
}
