//! A whole (non-streamed) Anthropic message replayed as the events a stream
//! would have given: the answer when `extra` turned `stream` off.

use serde::Deserialize;
use serde_json::Value;

use super::stream::finish_reason;
use crate::http::{MESSAGE_CUT_CHARS, cut, upstream_error_message};
use crate::{ChatEvent, FinishReason, LlmError, Usage};

#[derive(Debug, Deserialize)]
struct WholeMessage {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WholeUsage>,
}

#[derive(Debug, Deserialize)]
struct WholeUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

pub(crate) fn message_events(backend: &str, body: &str) -> Result<Vec<ChatEvent>, LlmError> {
    let protocol = |message: String| LlmError::Protocol {
        backend: backend.to_owned(),
        message,
    };
    let message: WholeMessage = serde_json::from_str(body).map_err(|err| {
        protocol(format!(
            "invalid JSON message: {err}: {}",
            cut(body.trim(), MESSAGE_CUT_CHARS)
        ))
    })?;
    if message.kind.as_deref() == Some("error") {
        return Err(protocol(format!(
            "upstream error: {}",
            upstream_error_message(body)
        )));
    }
    let mut events = Vec::new();
    let mut calls = 0;
    for block in message.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                if !text.is_empty() {
                    events.push(ChatEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            Some("tool_use") => {
                let field = |name: &str| block.get(name).and_then(Value::as_str);
                let (Some(id), Some(name)) = (field("id"), field("name")) else {
                    return Err(protocol(format!(
                        "tool_use block without id or name: {}",
                        cut(&block.to_string(), MESSAGE_CUT_CHARS)
                    )));
                };
                let index = calls;
                calls += 1;
                events.push(ChatEvent::ToolCallStart {
                    index,
                    id: id.to_owned(),
                    name: name.to_owned(),
                });
                let arguments = match block.get("input") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(text)) => text.clone(),
                    Some(input) => input.to_string(),
                };
                if !arguments.is_empty() {
                    events.push(ChatEvent::ToolCallArgumentsDelta { index, arguments });
                }
                events.push(ChatEvent::ToolCallEnd { index });
            }
            // Thinking and server tool blocks are not part of our events.
            _ => {}
        }
    }
    if let Some(usage) = message.usage {
        events.push(ChatEvent::Usage {
            usage: Usage {
                prompt_tokens: usage.input_tokens,
                completion_tokens: usage.output_tokens,
            },
        });
    }
    let reason = match message.stop_reason {
        Some(reason) => finish_reason(&reason),
        None if calls > 0 => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    events.push(ChatEvent::Finish { reason });
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_text_calls_and_usage_becomes_events() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","content":[
            {"type":"text","text":"Reading."},
            {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a"}},
            {"type":"tool_use","id":"toolu_2","name":"list_dir","input":{}}],
            "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}}"#;
        let events = message_events("t", body).unwrap();
        assert_eq!(
            events,
            vec![
                ChatEvent::TextDelta {
                    text: "Reading.".into()
                },
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_1".into(),
                    name: "read_file".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    arguments: "{\"path\":\"a\"}".into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
                ChatEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_2".into(),
                    name: "list_dir".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 1,
                    arguments: "{}".into()
                },
                ChatEvent::ToolCallEnd { index: 1 },
                ChatEvent::Usage {
                    usage: Usage {
                        prompt_tokens: 5,
                        completion_tokens: 6
                    }
                },
                ChatEvent::Finish {
                    reason: FinishReason::ToolCalls
                },
            ]
        );
    }

    #[test]
    fn errors_and_malformed_messages_are_protocol_errors_with_context() {
        let err = message_events(
            "t",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("upstream error: Overloaded"),
            "{err}"
        );
        let err =
            message_events("t", r#"{"content":[{"type":"tool_use","input":{}}]}"#).unwrap_err();
        assert!(err.to_string().contains("without id or name"), "{err}");
        let err = message_events("t", "{\"content\": [tru").unwrap_err();
        assert!(err.to_string().contains("invalid JSON message"), "{err}");
        assert!(err.to_string().contains("[tru"), "{err}");
    }
}
