//! Transports: JSON over WebSocket for external and project providers, and
//! direct calls for in-process (internal) providers. Both feed the same
//! [`Connection`](crate::connection::Connection).

pub mod local;
pub(crate) mod ws;

pub use ws::READ_BUFFER_BYTES;

use bridge_protocol::provider::{
    ParseError, ProviderMessage, ToolResult, parse_provider_message, peek_type,
};

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
    if let Some(result) = parse_tool_result_fast(text) {
        return Inbound::Message(ProviderMessage::ToolResult(result));
    }
    match parse_provider_message(text) {
        Ok(message) => Inbound::Message(message),
        Err(err) => Inbound::Invalid(err),
    }
}

/// The hot path of every tool call: a `tool.result` whose `type` comes
/// first (as every JSON encoder that keeps insertion order writes it, with
/// or without spaces) is read straight into its struct. The general parser
/// has to buffer the whole message before it knows the variant (serde's
/// internally tagged enums), which costs a copy of every value. Anything
/// else, including a malformed result, takes the general path, which says
/// what is wrong.
fn parse_tool_result_fast(text: &str) -> Option<ToolResult> {
    let after_tag = text
        .trim_start()
        .strip_prefix('{')?
        .trim_start()
        .strip_prefix(r#""type""#)?
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix(r#""tool.result""#)?;
    if !after_tag.trim_start().starts_with(',') {
        return None;
    }
    serde_json::from_str::<ToolResult>(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_both(text: &str) -> (Option<ToolResult>, Option<ProviderMessage>) {
        (
            parse_tool_result_fast(text),
            parse_provider_message(text).ok(),
        )
    }

    #[test]
    fn the_tool_result_fast_path_agrees_with_the_general_parser() {
        let cases = [
            r#"{"type":"tool.result","id":"c-1","data":{"a":[1,2,{"b":null}]}}"#,
            r#"{"type":"tool.result","id":"c-1","data":null}"#,
            r#"{"type":"tool.result","id":"c-1","error":"x","errorCode":"NOT_FOUND","retryable":false,"extra":1}"#,
            r#"{"type":"tool.result","id":"c-1","file":{"path":"/p","mimeType":"image/png","size":3}}"#,
            "{\"type\": \"tool.result\", \"id\": \"c-1\", \"data\": [1, 2]}",
            " {\n  \"type\" : \"tool.result\" ,\n  \"id\": \"c-1\"\n}",
        ];
        for text in cases {
            let (fast, general) = parse_both(text);
            let fast = fast.unwrap_or_else(|| panic!("fast path refused {text}"));
            assert_eq!(
                Some(ProviderMessage::ToolResult(fast)),
                general,
                "for {text}"
            );
        }
    }

    #[test]
    fn malformed_or_reordered_results_take_the_general_path() {
        for text in [
            r#"{"type":"tool.result","id":12}"#,
            r#"{"type":"tool.result","data":1}"#,
            r#"{"id":"c-1","type":"tool.result","data":1}"#,
            r#"{"type":"tool.progress","id":"c-1"}"#,
            r#"{"type":"tool.results","id":"c-1"}"#,
            r#"{"type":"tool.result"}"#,
        ] {
            assert_eq!(parse_tool_result_fast(text), None, "for {text}");
        }
        // The reordered one is still a valid result, via the general path.
        assert!(matches!(
            classify_text(
                &GatewaySettings::default(),
                r#"{"id":"c-1","type":"tool.result","data":1}"#
            ),
            Inbound::Message(ProviderMessage::ToolResult(_))
        ));
    }
}
