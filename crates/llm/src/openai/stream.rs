//! From the streamed body of a chat completion to [`ChatEvent`]s.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::Stream;

use super::wire::{Chunk, ToolCallDelta};
use crate::http::{BodyError, MESSAGE_CUT_CHARS, cut, upstream_error_message};
use crate::sse::SseEvent;
use crate::{ChatEvent, ChatStream, FinishReason, LlmError, Usage};

/// What the answer's tool calls look like so far. A call is announced
/// ([`ChatEvent::ToolCallStart`]) only once its name is known; arguments
/// that arrive before that are held back.
#[derive(Debug, Default)]
struct CallState {
    id: Option<String>,
    name: Option<String>,
    started: bool,
    ended: bool,
    held_arguments: String,
}

/// Maps the `data:` payloads of one answer to events. Only the first choice
/// is followed: a request asking for several (`n` passed through `extra`)
/// gets the first one.
#[derive(Debug)]
pub(crate) struct ChunkMapper {
    backend: String,
    calls: BTreeMap<usize, CallState>,
    finish: Option<FinishReason>,
    done: bool,
    payloads_seen: usize,
}

impl ChunkMapper {
    pub(crate) fn new(backend: impl Into<String>) -> Self {
        Self {
            backend: backend.into(),
            calls: BTreeMap::new(),
            finish: None,
            done: false,
            payloads_seen: 0,
        }
    }

    /// True once the answer is complete: nothing more is read.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    pub(crate) fn on_event(&mut self, event: SseEvent) -> Result<Vec<ChatEvent>, LlmError> {
        if event.event.as_deref() == Some("error") {
            return Err(self.protocol(format!(
                "upstream error in stream: {}",
                upstream_error_message(&event.data)
            )));
        }
        self.on_data(&event.data)
    }

    pub(crate) fn on_data(&mut self, data: &str) -> Result<Vec<ChatEvent>, LlmError> {
        self.payloads_seen += 1;
        if data.trim() == "[DONE]" {
            return self.complete();
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|err| {
            self.protocol(format!(
                "invalid JSON in stream chunk {}: {err}: {}",
                self.payloads_seen,
                cut(data, MESSAGE_CUT_CHARS)
            ))
        })?;
        if let Some(error) = chunk.error {
            return Err(self.protocol(format!(
                "upstream error in stream: {}",
                upstream_error_message(&serde_json::json!({ "error": error }).to_string())
            )));
        }
        let mut events = Vec::new();
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            let delta = choice.delta.unwrap_or_default();
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                events.push(ChatEvent::TextDelta { text });
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.on_tool_call_delta(call, &mut events);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                self.close_open_calls(&mut events)?;
            }
        }
        if let Some(usage) = chunk.usage {
            events.push(ChatEvent::Usage {
                usage: Usage {
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                },
            });
        }
        Ok(events)
    }

    /// The body ended. Without `[DONE]` the answer is still complete when a
    /// finish reason came (some compatible servers never send `[DONE]`);
    /// with neither, the upstream went away mid-answer.
    pub(crate) fn on_end_of_body(&mut self) -> Result<Vec<ChatEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_some() {
            return self.complete();
        }
        Err(self.ended_early("the body ended without a finish reason or [DONE]"))
    }

    pub(crate) fn ended_early(&self, why: &str) -> LlmError {
        self.protocol(format!(
            "stream ended early after {} chunks: {why}",
            self.payloads_seen
        ))
    }

    fn complete(&mut self) -> Result<Vec<ChatEvent>, LlmError> {
        let mut events = Vec::new();
        self.close_open_calls(&mut events)?;
        // `[DONE]` without a finish reason: infer it from what was answered.
        let reason = self.finish.take().unwrap_or(if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        events.push(ChatEvent::Finish { reason });
        self.done = true;
        Ok(events)
    }

    fn on_tool_call_delta(&mut self, delta: ToolCallDelta, events: &mut Vec<ChatEvent>) {
        let index = delta
            .index
            .unwrap_or_else(|| self.implicit_index(delta.id.as_deref()));
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = delta.id;
        }
        let (name, arguments) = match delta.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        if call.name.is_none() {
            call.name = name.filter(|name| !name.is_empty());
        }
        if !call.started
            && let Some(name) = &call.name
        {
            call.started = true;
            events.push(ChatEvent::ToolCallStart {
                index,
                id: call.id.clone().unwrap_or_else(|| format!("call_{index}")),
                name: name.clone(),
            });
            if !call.held_arguments.is_empty() {
                events.push(ChatEvent::ToolCallArgumentsDelta {
                    index,
                    arguments: std::mem::take(&mut call.held_arguments),
                });
            }
        }
        if let Some(arguments) = arguments.filter(|arguments| !arguments.is_empty()) {
            if call.started {
                events.push(ChatEvent::ToolCallArgumentsDelta { index, arguments });
            } else {
                call.held_arguments.push_str(&arguments);
            }
        }
    }

    /// Servers that omit `index` stream one call at a time: a new id starts
    /// the next call, anything else continues the last one.
    fn implicit_index(&self, id: Option<&str>) -> usize {
        match self.calls.iter().next_back() {
            None => 0,
            Some((&last, call)) => match (id, call.id.as_deref()) {
                (Some(new), Some(current)) if new != current => last + 1,
                _ => last,
            },
        }
    }

    fn close_open_calls(&mut self, events: &mut Vec<ChatEvent>) -> Result<(), LlmError> {
        for (&index, call) in &mut self.calls {
            if call.ended {
                continue;
            }
            if !call.started {
                return Err(LlmError::Protocol {
                    backend: self.backend.clone(),
                    message: format!("tool call {index} ended without a function name"),
                });
            }
            call.ended = true;
            events.push(ChatEvent::ToolCallEnd { index });
        }
        Ok(())
    }

    fn protocol(&self, message: String) -> LlmError {
        LlmError::Protocol {
            backend: self.backend.clone(),
            message,
        }
    }
}

pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "stop" | "end_turn" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The events of an SSE body in this wire format.
pub(crate) fn chat_stream<S>(backend: String, body: S, max_line_bytes: usize) -> ChatStream
where
    S: Stream<Item = Result<Bytes, BodyError>> + Send + 'static,
{
    crate::sse_stream::chat_stream(ChunkMapper::new(backend), body, max_line_bytes)
}

impl crate::sse_stream::WireMapper for ChunkMapper {
    fn is_done(&self) -> bool {
        ChunkMapper::is_done(self)
    }

    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ChatEvent>, LlmError> {
        ChunkMapper::on_event(self, event)
    }

    fn on_end_of_body(&mut self) -> Result<Vec<ChatEvent>, LlmError> {
        ChunkMapper::on_end_of_body(self)
    }

    fn ended_early(&self, why: &str) -> LlmError {
        ChunkMapper::ended_early(self, why)
    }

    fn protocol(&self, message: String) -> LlmError {
        ChunkMapper::protocol(self, message)
    }
}

#[cfg(test)]
mod tests;
