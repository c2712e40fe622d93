//! Our events encoded as an Anthropic Messages stream, for clients that
//! speak the Anthropic API to the bridge.
//!
//! Anthropic content blocks are strictly sequential: one block is open at a
//! time. Our events may interleave (OpenAI streams parallel calls'
//! arguments interleaved), so a call that starts while another tool block
//! is open is held back and written, in order, once the open one ends; text
//! arriving meanwhile waits likewise.

use std::collections::VecDeque;

use serde_json::{Value, json};

use crate::{ChatEvent, FinishReason, Usage};

#[derive(Debug)]
enum Open {
    Text,
    Call { call: usize },
}

#[derive(Debug)]
enum Held {
    Call {
        call: usize,
        id: String,
        name: String,
        arguments: String,
        ended: bool,
    },
    Text(String),
}

/// Turns a [`ChatEvent`] stream into Anthropic SSE event strings, from
/// `message_start` to `message_stop`, each a complete `event:`/`data:`
/// record ending in a blank line.
#[derive(Debug)]
pub struct StreamEncoder {
    message_id: String,
    model: String,
    started: bool,
    finished: bool,
    next_block: usize,
    open: Option<Open>,
    held: VecDeque<Held>,
    usage: Option<Usage>,
    /// `message_start`'s input tokens when the upstream reports none
    /// before the first token.
    input_estimate: u64,
}

impl StreamEncoder {
    pub fn new(message_id: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            model: model.into(),
            started: false,
            finished: false,
            next_block: 0,
            open: None,
            held: VecDeque::new(),
            usage: None,
            input_estimate: 0,
        }
    }

    /// `message_start` carries `input_tokens` (Claude Code shows and budgets
    /// by it): the upstream's count when it reports usage before the first
    /// token, else this estimate ([`super::estimate_chat_tokens`]).
    pub fn with_input_estimate(mut self, tokens: u64) -> Self {
        self.input_estimate = tokens;
        self
    }

    /// The SSE records for one more event; events after
    /// [`ChatEvent::Finish`] give nothing.
    pub fn encode(&mut self, event: &ChatEvent) -> Vec<String> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        if let ChatEvent::Usage { usage } = event {
            // Before the first token it is the count `message_start` wants.
            self.usage = Some(*usage);
            return out;
        }
        self.start(&mut out);
        match event {
            ChatEvent::TextDelta { text } => self.text(text, &mut out),
            ChatEvent::ToolCallStart { index, id, name } => {
                self.call_start(*index, id, name, &mut out)
            }
            ChatEvent::ToolCallArgumentsDelta { index, arguments } => {
                self.call_arguments(*index, arguments, &mut out)
            }
            ChatEvent::ToolCallEnd { index } => self.call_end(*index, &mut out),
            ChatEvent::Usage { .. } => {}
            ChatEvent::Finish { reason } => self.finish(reason, &mut out),
        }
        out
    }

    fn start(&mut self, out: &mut Vec<String>) {
        if self.started {
            return;
        }
        self.started = true;
        let input_tokens = self
            .usage
            .map_or(self.input_estimate, |usage| usage.prompt_tokens);
        out.push(record(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": 0},
            }}),
        ));
    }

    fn text(&mut self, text: &str, out: &mut Vec<String>) {
        if text.is_empty() {
            return;
        }
        match self.open {
            Some(Open::Call { .. }) => {
                if let Some(Held::Text(held)) = self.held.back_mut() {
                    held.push_str(text);
                } else {
                    self.held.push_back(Held::Text(text.to_owned()));
                }
                return;
            }
            Some(Open::Text) => {}
            None => self.open_block(Open::Text, json!({"type": "text", "text": ""}), out),
        }
        self.write_text(text, out);
    }

    fn call_start(&mut self, call: usize, id: &str, name: &str, out: &mut Vec<String>) {
        if matches!(self.open, Some(Open::Call { .. })) {
            self.held.push_back(Held::Call {
                call,
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: String::new(),
                ended: false,
            });
            return;
        }
        self.close_block(out);
        self.open_call(call, id, name, out);
    }

    fn call_arguments(&mut self, call: usize, arguments: &str, out: &mut Vec<String>) {
        if arguments.is_empty() {
            return;
        }
        if matches!(self.open, Some(Open::Call { call: open }) if open == call) {
            self.write_arguments(arguments, out);
            return;
        }
        if let Some(Held::Call {
            arguments: held, ..
        }) = self.held_call(call)
        {
            held.push_str(arguments);
        }
    }

    fn call_end(&mut self, call: usize, out: &mut Vec<String>) {
        if matches!(self.open, Some(Open::Call { call: open }) if open == call) {
            self.close_block(out);
            self.release_held(false, out);
            return;
        }
        if let Some(Held::Call { ended, .. }) = self.held_call(call) {
            *ended = true;
        }
    }

    fn finish(&mut self, reason: &FinishReason, out: &mut Vec<String>) {
        self.close_block(out);
        self.release_held(true, out);
        self.close_block(out);
        let usage = self.usage.unwrap_or_default();
        out.push(record(
            "message_delta",
            &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(reason), "stop_sequence": null},
                "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}}),
        ));
        out.push(record("message_stop", &json!({"type": "message_stop"})));
        self.finished = true;
    }

    /// Writes held blocks in order until one that has not ended is opened
    /// (it stays open for its further deltas), or all when `all`.
    fn release_held(&mut self, all: bool, out: &mut Vec<String>) {
        while let Some(held) = self.held.pop_front() {
            match held {
                Held::Text(text) => {
                    self.close_block(out);
                    self.open_block(Open::Text, json!({"type": "text", "text": ""}), out);
                    self.write_text(&text, out);
                }
                Held::Call {
                    call,
                    id,
                    name,
                    arguments,
                    ended,
                } => {
                    self.close_block(out);
                    self.open_call(call, &id, &name, out);
                    if !arguments.is_empty() {
                        self.write_arguments(&arguments, out);
                    }
                    if ended || all {
                        self.close_block(out);
                    } else {
                        return;
                    }
                }
            }
        }
    }

    fn held_call(&mut self, call: usize) -> Option<&mut Held> {
        self.held
            .iter_mut()
            .find(|held| matches!(held, Held::Call { call: c, .. } if *c == call))
    }

    fn open_call(&mut self, call: usize, id: &str, name: &str, out: &mut Vec<String>) {
        self.open_block(
            Open::Call { call },
            json!({"type": "tool_use", "id": super::client_tool_id(id), "name": name, "input": {}}),
            out,
        );
    }

    fn open_block(&mut self, open: Open, block: Value, out: &mut Vec<String>) {
        out.push(record(
            "content_block_start",
            &json!({"type": "content_block_start", "index": self.next_block, "content_block": block}),
        ));
        self.open = Some(open);
    }

    fn write_text(&self, text: &str, out: &mut Vec<String>) {
        out.push(record(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": self.next_block,
                "delta": {"type": "text_delta", "text": text}}),
        ));
    }

    fn write_arguments(&self, arguments: &str, out: &mut Vec<String>) {
        out.push(record(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": self.next_block,
                "delta": {"type": "input_json_delta", "partial_json": arguments}}),
        ));
    }

    fn close_block(&mut self, out: &mut Vec<String>) {
        if self.open.take().is_some() {
            out.push(record(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": self.next_block}),
            ));
            self.next_block += 1;
        }
    }
}

fn record(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn stop_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "end_turn",
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
        FinishReason::Other(other) => other,
    }
}

/// A whole answer's events as Anthropic SSE records, in order.
pub fn encode_events(message_id: &str, model: &str, events: &[ChatEvent]) -> Vec<String> {
    let mut encoder = StreamEncoder::new(message_id, model);
    events
        .iter()
        .flat_map(|event| encoder.encode(event))
        .collect()
}
