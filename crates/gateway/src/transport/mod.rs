//! Transports: JSON over WebSocket for external and project providers, and
//! direct calls for in-process (internal) providers. Both feed the same
//! [`Connection`](crate::connection::Connection).

pub mod local;
pub(crate) mod ws;

use bridge_protocol::provider::{ParseError, ProviderMessage, parse_provider_message, peek_type};

use crate::settings::GatewaySettings;

/// One inbound frame, classified.
#[derive(Debug)]
pub(crate) enum Inbound {
    Message(ProviderMessage),
    Invalid(ParseError),
    /// Over the limit of its type (`PAYLOAD_TOO_LARGE`, connection kept).
    TooLarge {
        type_name: Option<String>,
        size: usize,
        limit: usize,
    },
    /// Binary frames carry no protocol messages.
    Binary {
        size: usize,
    },
}

/// Applies the per-type size limits, then parses. Only frames over the
/// general limit pay for a second look at their type.
pub(crate) fn classify_text(settings: &GatewaySettings, text: &str) -> Inbound {
    let size = text.len();
    if size > settings.message_max_bytes {
        let type_name = peek_type(text);
        let limit = if type_name.as_deref() == Some("tool.result") {
            settings.tool_result_max_bytes
        } else {
            settings.message_max_bytes
        };
        if size > limit {
            return Inbound::TooLarge {
                type_name,
                size,
                limit,
            };
        }
    }
    match parse_provider_message(text) {
        Ok(message) => Inbound::Message(message),
        Err(err) => Inbound::Invalid(err),
    }
}
