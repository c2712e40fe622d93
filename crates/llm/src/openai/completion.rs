//! A whole (non-streamed) chat completion replayed as the events a stream
//! would have given, so callers see one shape whatever the server did.

use serde_json::Value;

use super::stream::finish_reason;
use super::wire::Completion;
use crate::http::{MESSAGE_CUT_CHARS, cut, upstream_error_message};
use crate::{ChatEvent, FinishReason, LlmError, Usage};

pub(crate) fn completion_events(backend: &str, body: &str) -> Result<Vec<ChatEvent>, LlmError> {
    let protocol = |message: String| LlmError::Protocol {
        backend: backend.to_owned(),
        message,
    };
    let completion: Completion = serde_json::from_str(body).map_err(|err| {
        protocol(format!(
            "invalid JSON completion: {err}: {}",
            cut(body.trim(), MESSAGE_CUT_CHARS)
        ))
    })?;
    if completion.error.is_some() {
        return Err(protocol(format!(
            "upstream error: {}",
            upstream_error_message(body)
        )));
    }
    let choice = completion
        .choices
        .into_iter()
        .find(|choice| choice.index == 0)
        .ok_or_else(|| {
            protocol(format!(
                "completion without a choice: {}",
                cut(body.trim(), MESSAGE_CUT_CHARS)
            ))
        })?;
    let mut events = Vec::new();
    let message = choice.message;
    let (content, calls) = match message {
        Some(message) => (message.content, message.tool_calls),
        None => (None, Vec::new()),
    };
    if let Some(text) = content.filter(|text| !text.is_empty()) {
        events.push(ChatEvent::TextDelta { text });
    }
    let had_calls = !calls.is_empty();
    for (index, call) in calls.into_iter().enumerate() {
        events.push(ChatEvent::ToolCallStart {
            index,
            id: call.id.unwrap_or_else(|| format!("call_{index}")),
            name: call.function.name,
        });
        let arguments = match call.function.arguments {
            Value::String(text) => text,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        if !arguments.is_empty() {
            events.push(ChatEvent::ToolCallArgumentsDelta { index, arguments });
        }
        events.push(ChatEvent::ToolCallEnd { index });
    }
    if let Some(usage) = completion.usage {
        events.push(ChatEvent::Usage {
            usage: Usage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
            },
        });
    }
    let reason = match choice.finish_reason {
        Some(reason) => finish_reason(&reason),
        None if had_calls => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    events.push(ChatEvent::Finish { reason });
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_with_text_calls_and_usage_becomes_events() {
        let body = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":"Reading.","tool_calls":[
              {"id":"call_9","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
              {"type":"function","function":{"name":"list_dir","arguments":{"path":"."}}}]},
            "finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}"#;
        let events = completion_events("t", body).unwrap();
        assert_eq!(
            events,
            vec![
                ChatEvent::TextDelta {
                    text: "Reading.".into()
                },
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_9".into(),
                    name: "read_file".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    arguments: "{\"path\":\"a\"}".into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
                ChatEvent::ToolCallStart {
                    index: 1,
                    id: "call_1".into(),
                    name: "list_dir".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 1,
                    arguments: "{\"path\":\".\"}".into()
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
    fn errors_and_malformed_completions_are_protocol_errors_with_context() {
        let err = completion_events("t", r#"{"error":{"message":"quota exceeded"}}"#).unwrap_err();
        assert!(
            err.to_string().contains("upstream error: quota exceeded"),
            "{err}"
        );
        let err = completion_events("t", r#"{"choices":[]}"#).unwrap_err();
        assert!(
            err.to_string().contains("completion without a choice"),
            "{err}"
        );
        let err = completion_events("t", "{\"choices\": [tru").unwrap_err();
        assert!(err.to_string().contains("invalid JSON completion"), "{err}");
        assert!(err.to_string().contains("[tru"), "{err}");
    }
}
