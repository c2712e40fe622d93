//! From the streamed body of an Anthropic message to [`ChatEvent`]s.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::Stream;
use serde::Deserialize;

use crate::http::{BodyError, MESSAGE_CUT_CHARS, cut, upstream_error_message};
use crate::sse::SseEvent;
use crate::{ChatEvent, ChatStream, FinishReason, LlmError, Usage};

/// One `data:` payload; its `type` repeats the `event:` name.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error,
    /// Event types added after this code was written are skipped, as the
    /// API's versioning policy asks of clients.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// Thinking and server tool blocks: not part of our events.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// Maps the events of one answer. Anthropic numbers content blocks, text
/// blocks included; our tool calls are numbered 0, 1, 2… in order.
#[derive(Debug)]
pub(crate) struct EventMapper {
    backend: String,
    /// Anthropic block index → our tool call index, for open tool blocks.
    open_calls: BTreeMap<usize, usize>,
    calls_seen: usize,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
    events_seen: usize,
}

impl EventMapper {
    pub(crate) fn new(backend: impl Into<String>) -> Self {
        Self {
            backend: backend.into(),
            open_calls: BTreeMap::new(),
            calls_seen: 0,
            usage: None,
            finish: None,
            done: false,
            events_seen: 0,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    pub(crate) fn on_event(&mut self, event: SseEvent) -> Result<Vec<ChatEvent>, LlmError> {
        self.events_seen += 1;
        if event.event.as_deref() == Some("error") {
            return Err(self.upstream_error(&event.data));
        }
        let wire: WireEvent = serde_json::from_str(&event.data).map_err(|err| {
            self.protocol(format!(
                "invalid JSON in stream event {} ({}): {err}: {}",
                self.events_seen,
                event.event.as_deref().unwrap_or("unnamed"),
                cut(&event.data, MESSAGE_CUT_CHARS)
            ))
        })?;
        let mut events = Vec::new();
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(&usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                WireBlock::Text { text } => {
                    if !text.is_empty() {
                        events.push(ChatEvent::TextDelta { text });
                    }
                }
                WireBlock::ToolUse { id, name } => {
                    let call = self.calls_seen;
                    self.calls_seen += 1;
                    self.open_calls.insert(index, call);
                    events.push(ChatEvent::ToolCallStart {
                        index: call,
                        id,
                        name,
                    });
                }
                WireBlock::Other => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => {
                    if !text.is_empty() {
                        events.push(ChatEvent::TextDelta { text });
                    }
                }
                WireDelta::InputJsonDelta { partial_json } => {
                    let call = *self.open_calls.get(&index).ok_or_else(|| {
                        self.protocol(format!(
                            "tool input for content block {index}, which is not an open tool_use block"
                        ))
                    })?;
                    if !partial_json.is_empty() {
                        events.push(ChatEvent::ToolCallArgumentsDelta {
                            index: call,
                            arguments: partial_json,
                        });
                    }
                }
                WireDelta::Other => {}
            },
            WireEvent::ContentBlockStop { index } => {
                if let Some(call) = self.open_calls.remove(&index) {
                    events.push(ChatEvent::ToolCallEnd { index: call });
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.finish = Some(finish_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.add_usage(&usage);
                }
            }
            WireEvent::MessageStop => return Ok(self.complete()),
            WireEvent::Error => return Err(self.upstream_error(&event.data)),
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Ok(events)
    }

    /// The body ended: complete after `message_stop`, or after a stop reason
    /// (nothing of the answer is missing then); otherwise cut off.
    pub(crate) fn on_end_of_body(&mut self) -> Result<Vec<ChatEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_some() {
            return Ok(self.complete());
        }
        Err(self.ended_early("the body ended without message_stop"))
    }

    pub(crate) fn ended_early(&self, why: &str) -> LlmError {
        self.protocol(format!(
            "stream ended early after {} events: {why}",
            self.events_seen
        ))
    }

    pub(crate) fn protocol(&self, message: String) -> LlmError {
        LlmError::Protocol {
            backend: self.backend.clone(),
            message,
        }
    }

    fn upstream_error(&self, data: &str) -> LlmError {
        self.protocol(format!(
            "upstream error in stream: {}",
            upstream_error_message(data)
        ))
    }

    fn add_usage(&mut self, wire: &WireUsage) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        if let Some(input) = wire.input_tokens {
            usage.prompt_tokens = input;
        }
        if let Some(output) = wire.output_tokens {
            usage.completion_tokens = output;
        }
    }

    fn complete(&mut self) -> Vec<ChatEvent> {
        let mut events: Vec<ChatEvent> = std::mem::take(&mut self.open_calls)
            .into_values()
            .map(|index| ChatEvent::ToolCallEnd { index })
            .collect();
        if let Some(usage) = self.usage {
            events.push(ChatEvent::Usage { usage });
        }
        let reason = self.finish.take().unwrap_or(if self.calls_seen == 0 {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        events.push(ChatEvent::Finish { reason });
        self.done = true;
        events
    }
}

pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The events of an SSE body in this wire format.
pub(crate) fn chat_stream<S>(backend: String, body: S, max_line_bytes: usize) -> ChatStream
where
    S: Stream<Item = Result<Bytes, BodyError>> + Send + 'static,
{
    crate::sse_stream::chat_stream(EventMapper::new(backend), body, max_line_bytes)
}

impl crate::sse_stream::WireMapper for EventMapper {
    fn is_done(&self) -> bool {
        EventMapper::is_done(self)
    }

    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ChatEvent>, LlmError> {
        EventMapper::on_event(self, event)
    }

    fn on_end_of_body(&mut self) -> Result<Vec<ChatEvent>, LlmError> {
        EventMapper::on_end_of_body(self)
    }

    fn ended_early(&self, why: &str) -> LlmError {
        EventMapper::ended_early(self, why)
    }

    fn protocol(&self, message: String) -> LlmError {
        EventMapper::protocol(self, message)
    }
}

/// Decodes a whole SSE body given as byte chunks, as the stream would.
#[cfg(test)]
pub(crate) fn decode_chunks(chunks: &[&[u8]]) -> Vec<Result<ChatEvent, LlmError>> {
    use futures::StreamExt as _;
    let owned: Vec<Result<Bytes, BodyError>> = chunks
        .iter()
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    let stream = chat_stream(
        "anthropic-test".into(),
        futures::stream::iter(owned),
        crate::sse::DEFAULT_MAX_LINE_BYTES,
    );
    futures::executor::block_on(stream.collect())
}

#[cfg(test)]
mod tests;
