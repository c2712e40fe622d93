//! Answers in the chat-completions format: stream chunks and the whole
//! completion object.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::{ChatEvent, ChatResponse, FinishReason, Usage};

/// OpenAI's name of a finish reason. Reasons other formats have and
/// OpenAI has not (`pause_turn`, …) read as `stop`: clients switch on
/// these five.
pub fn finish_reason_name(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop | FinishReason::Other(_) => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    })
}

/// Turns the events of one answer into `chat.completion.chunk` objects:
/// a first chunk with the role, then one per text or tool-call delta, a
/// chunk with the finish reason, and with `include_usage` a last chunk with
/// the usage and no choices — as OpenAI streams them.
///
/// Tool calls are numbered 0, 1, … in the order they start, whatever
/// indices the upstream used (Anthropic counts its text blocks too):
/// OpenAI clients assemble calls by that index.
#[derive(Debug)]
pub struct StreamEncoder {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    usage: Option<Usage>,
    call_numbers: BTreeMap<usize, usize>,
    finished: bool,
}

impl StreamEncoder {
    pub fn new(
        id: impl Into<String>,
        created: u64,
        model: impl Into<String>,
        include_usage: bool,
    ) -> Self {
        Self {
            id: id.into(),
            created,
            model: model.into(),
            include_usage,
            usage: None,
            call_numbers: BTreeMap::new(),
            finished: false,
        }
    }

    fn envelope(&self, choices: Value) -> Map<String, Value> {
        let mut chunk = Map::new();
        chunk.insert("id".into(), json!(self.id));
        chunk.insert("object".into(), json!("chat.completion.chunk"));
        chunk.insert("created".into(), json!(self.created));
        chunk.insert("model".into(), json!(self.model));
        chunk.insert("choices".into(), choices);
        chunk
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let mut chunk = self.envelope(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }]));
        if self.include_usage {
            // OpenAI announces the usage chunk this way on every chunk.
            chunk.insert("usage".into(), Value::Null);
        }
        Value::Object(chunk)
    }

    /// The first chunk: the assistant's role, no text yet.
    pub fn start(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// The chunk for one event, if it shows as one (usage is held for the
    /// end, a tool call's end has no chunk).
    pub fn event(&mut self, event: ChatEvent) -> Option<Value> {
        match event {
            ChatEvent::TextDelta { text } if text.is_empty() => None,
            ChatEvent::TextDelta { text } => Some(self.chunk(json!({"content": text}), None)),
            ChatEvent::ToolCallStart { index, id, name } => {
                let next = self.call_numbers.len();
                let number = *self.call_numbers.entry(index).or_insert(next);
                Some(self.chunk(
                    json!({"tool_calls": [{
                        "index": number,
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    None,
                ))
            }
            ChatEvent::ToolCallArgumentsDelta { index, arguments } => {
                if arguments.is_empty() {
                    return None;
                }
                // A fragment of a call never started is still shown under a
                // number of its own rather than lost.
                let next = self.call_numbers.len();
                let number = *self.call_numbers.entry(index).or_insert(next);
                Some(self.chunk(
                    json!({"tool_calls": [{
                        "index": number,
                        "function": {"arguments": arguments},
                    }]}),
                    None,
                ))
            }
            ChatEvent::ToolCallEnd { .. } => None,
            ChatEvent::Usage { usage } => {
                self.usage = Some(usage);
                None
            }
            ChatEvent::Finish { reason } => {
                if self.finished {
                    return None;
                }
                self.finished = true;
                Some(self.chunk(json!({}), Some(finish_reason_name(&reason))))
            }
        }
    }

    /// The chunks after the last event of an answer that ended well: the
    /// finish reason if the upstream gave none (`stop`, or `tool_calls` when
    /// it called tools), and the usage chunk when it was asked for (its
    /// `usage` null when the upstream reported none).
    pub fn end(&mut self) -> Vec<Value> {
        let mut chunks = Vec::with_capacity(2);
        if !self.finished {
            self.finished = true;
            let reason = if self.call_numbers.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            chunks.push(self.chunk(json!({}), Some(reason)));
        }
        if self.include_usage {
            let mut chunk = self.envelope(json!([]));
            chunk.insert(
                "usage".into(),
                self.usage.as_ref().map(usage_json).unwrap_or(Value::Null),
            );
            chunks.push(Value::Object(chunk));
        }
        chunks
    }
}

/// The `chat.completion` object of a whole answer.
pub fn response_object(id: &str, created: u64, model: &str, response: &ChatResponse) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = if response.text.is_empty() && !response.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(response.text)
    };
    message.insert("content".into(), content);
    message.insert("refusal".into(), Value::Null);
    if !response.tool_calls.is_empty() {
        let calls = response
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let finish_reason = match &response.finish {
        Some(reason) => finish_reason_name(reason),
        None if response.tool_calls.is_empty() => "stop",
        None => "tool_calls",
    };
    let mut completion = Map::new();
    completion.insert("id".into(), json!(id));
    completion.insert("object".into(), json!("chat.completion"));
    completion.insert("created".into(), json!(created));
    completion.insert("model".into(), json!(model));
    completion.insert(
        "choices".into(),
        json!([{
            "index": 0,
            "message": Value::Object(message),
            "logprobs": null,
            "finish_reason": finish_reason,
        }]),
    );
    if let Some(usage) = &response.usage {
        completion.insert("usage".into(), usage_json(usage));
    }
    Value::Object(completion)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    fn encoder(include_usage: bool) -> StreamEncoder {
        StreamEncoder::new("chatcmpl-1", 1700000000, "m", include_usage)
    }

    #[test]
    fn the_stream_starts_with_the_role_and_carries_text_deltas() {
        let mut encoder = encoder(false);
        assert_eq!(
            encoder.start(),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                   "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                   "logprobs": null, "finish_reason": null}]})
        );
        let chunk = encoder
            .event(ChatEvent::TextDelta { text: "Hi".into() })
            .unwrap();
        assert_eq!(chunk["choices"][0]["delta"], json!({"content": "Hi"}));
        assert!(chunk.get("usage").is_none());
        assert!(
            encoder
                .event(ChatEvent::TextDelta {
                    text: String::new()
                })
                .is_none()
        );
        let finish = encoder
            .event(ChatEvent::Finish {
                reason: FinishReason::Length,
            })
            .unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], json!("length"));
        assert_eq!(finish["choices"][0]["delta"], json!({}));
        assert!(encoder.end().is_empty(), "no second finish, no usage chunk");
    }

    #[test]
    fn tool_calls_are_numbered_densely_in_the_order_they_start() {
        let mut encoder = encoder(false);
        let start = encoder
            .event(ChatEvent::ToolCallStart {
                index: 1,
                id: "call_a".into(),
                name: "read".into(),
            })
            .unwrap();
        assert_eq!(
            start["choices"][0]["delta"],
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                   "function": {"name": "read", "arguments": ""}}]})
        );
        encoder
            .event(ChatEvent::ToolCallStart {
                index: 3,
                id: "call_b".into(),
                name: "write".into(),
            })
            .unwrap();
        let delta = encoder
            .event(ChatEvent::ToolCallArgumentsDelta {
                index: 3,
                arguments: "{\"p\":1}".into(),
            })
            .unwrap();
        assert_eq!(
            delta["choices"][0]["delta"],
            json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"p\":1}"}}]})
        );
        assert!(encoder.event(ChatEvent::ToolCallEnd { index: 3 }).is_none());
        let end = encoder.end();
        assert_eq!(end.len(), 1);
        assert_eq!(end[0]["choices"][0]["finish_reason"], json!("tool_calls"));
    }

    #[test]
    fn usage_is_held_for_a_last_chunk_without_choices_when_asked_for() {
        let mut encoder = encoder(true);
        assert_eq!(encoder.start()["usage"], Value::Null);
        assert!(
            encoder
                .event(ChatEvent::Usage {
                    usage: Usage {
                        prompt_tokens: 3,
                        completion_tokens: 4
                    }
                })
                .is_none()
        );
        let end = encoder.end();
        assert_eq!(end.len(), 2, "finish then usage: {end:?}");
        assert_eq!(end[0]["choices"][0]["finish_reason"], json!("stop"));
        assert_eq!(end[1]["choices"], json!([]));
        assert_eq!(
            end[1]["usage"],
            json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
        );
    }

    #[test]
    fn a_usage_chunk_without_reported_usage_says_null() {
        let mut encoder = encoder(true);
        let end = encoder.end();
        assert_eq!(end[1]["usage"], Value::Null);
    }

    #[test]
    fn finish_reasons_of_other_formats_read_as_stop() {
        assert_eq!(
            finish_reason_name(&FinishReason::Other("pause_turn".into())),
            "stop"
        );
        assert_eq!(
            finish_reason_name(&FinishReason::ContentFilter),
            "content_filter"
        );
    }

    #[test]
    fn the_completion_object_has_text_calls_finish_and_usage() {
        let response = ChatResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: "{}".into(),
            }],
            usage: Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 2,
            }),
            finish: Some(FinishReason::ToolCalls),
        };
        assert_eq!(
            response_object("chatcmpl-9", 7, "m", &response),
            json!({
                "id": "chatcmpl-9", "object": "chat.completion", "created": 7, "model": "m",
                "choices": [{"index": 0, "message": {
                    "role": "assistant", "content": null, "refusal": null,
                    "tool_calls": [{"id": "call_1", "type": "function",
                                    "function": {"name": "read", "arguments": "{}"}}]},
                    "logprobs": null, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            })
        );
        let text_only = ChatResponse {
            text: "Hello".into(),
            ..ChatResponse::default()
        };
        let object = response_object("c", 1, "m", &text_only);
        assert_eq!(object["choices"][0]["message"]["content"], json!("Hello"));
        assert_eq!(object["choices"][0]["finish_reason"], json!("stop"));
        assert!(object.get("usage").is_none());
        assert!(object["choices"][0]["message"].get("tool_calls").is_none());
    }
}
