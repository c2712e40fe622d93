//! Answers in the Responses format: the event stream (`response.created`
//! … `response.completed`, each with its `sequence_number`) and the whole
//! `response` object.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::{ChatEvent, ChatResponse, FinishReason, Message, Role, ToolCall, Usage};

/// Who the response is and what it answers to: the same for the stream and
/// the whole object.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// `resp_…`.
    pub id: String,
    /// The model the client asked for.
    pub model: String,
    pub created_at: u64,
    /// The client's custom tools (their calls are `custom_tool_call`s).
    pub custom_tools: Vec<String>,
    pub previous_response_id: Option<String>,
    pub store: bool,
}

impl ResponseHead {
    fn object(&self, status: &str, output: &[Value], usage: Option<Usage>) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": null,
            "incomplete_details": if status == "incomplete" {
                json!({"reason": "max_output_tokens"})
            } else {
                Value::Null
            },
            "model": self.model,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": self.previous_response_id,
            "store": self.store,
            "usage": usage.map(usage_object),
        })
    }

    fn call_item(&self, item_id: &str, call: &ToolCall, status: &str) -> Value {
        if self.custom_tools.contains(&call.name) {
            return json!({
                "id": item_id, "type": "custom_tool_call", "status": status,
                "call_id": call.id, "name": call.name, "input": custom_input(&call.arguments),
            });
        }
        json!({
            "id": item_id, "type": "function_call", "status": status,
            "call_id": call.id, "name": call.name, "arguments": call.arguments,
        })
    }
}

fn usage_object(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    })
}

/// A custom tool's input: the `input` the model put in its arguments, or
/// the arguments themselves when it wrote none.
fn custom_input(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|value| {
            value
                .get("input")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| arguments.to_owned())
}

fn message_item(item_id: &str, text: &str, status: &str) -> Value {
    json!({
        "id": item_id, "type": "message", "status": status, "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

fn status_of(finish: Option<&FinishReason>) -> &'static str {
    match finish {
        Some(FinishReason::Length) => "incomplete",
        _ => "completed",
    }
}

/// A whole answer as a `response` object.
pub fn response_object(head: &ResponseHead, response: &ChatResponse) -> Value {
    let mut output = Vec::new();
    if !response.text.is_empty() {
        output.push(message_item(&item_id("msg"), &response.text, "completed"));
    }
    for call in &response.tool_calls {
        output.push(head.call_item(&item_id("fc"), call, "completed"));
    }
    head.object(status_of(response.finish.as_ref()), &output, response.usage)
}

/// The assistant's turn of an answer, as a later `previous_response_id`
/// continues it.
pub fn answer_message(response: &ChatResponse) -> Message {
    Message {
        role: Role::Assistant,
        content: (!response.text.is_empty()).then(|| response.text.clone()),
        tool_calls: response.tool_calls.clone(),
        tool_call_id: None,
    }
}

fn item_id(prefix: &str) -> String {
    format!("{prefix}_{}", bridge_util::ids::opaque_hex())
}

#[derive(Debug)]
struct OpenText {
    item_id: String,
    output_index: usize,
    text: String,
}

#[derive(Debug)]
struct OpenCall {
    item_id: String,
    output_index: usize,
    call: ToolCall,
}

/// Turns a [`ChatEvent`] stream into Responses SSE records.
#[derive(Debug)]
pub struct StreamEncoder {
    head: ResponseHead,
    sequence: u64,
    started: bool,
    finished: bool,
    failed: bool,
    /// Finished items by their `output_index`.
    output: BTreeMap<usize, Value>,
    next_output: usize,
    text: Option<OpenText>,
    /// By the event stream's call index.
    calls: BTreeMap<usize, OpenCall>,
    usage: Option<Usage>,
    /// The whole answer so far, for the store.
    answer: ChatResponse,
}

impl StreamEncoder {
    pub fn new(head: ResponseHead) -> Self {
        Self {
            head,
            sequence: 0,
            started: false,
            finished: false,
            failed: false,
            output: BTreeMap::new(),
            next_output: 0,
            text: None,
            calls: BTreeMap::new(),
            usage: None,
            answer: ChatResponse::default(),
        }
    }

    /// `response.created` and `response.in_progress`: what a client sees
    /// before the first token.
    pub fn start(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            let response = self.head.object("in_progress", &[], None);
            self.push(&mut out, "response.created", json!({"response": response}));
            self.push(
                &mut out,
                "response.in_progress",
                json!({"response": response}),
            );
        }
        out
    }

    /// The records for one more event.
    pub fn encode(&mut self, event: &ChatEvent) -> Vec<String> {
        let mut out = self.start();
        if self.finished {
            return out;
        }
        match event {
            ChatEvent::TextDelta { text } => self.text_delta(text, &mut out),
            ChatEvent::ToolCallStart { index, id, name } => {
                self.close_text(&mut out);
                let call = ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                };
                let open = OpenCall {
                    item_id: item_id("fc"),
                    output_index: self.next_output_index(),
                    call,
                };
                let item = self
                    .head
                    .call_item(&open.item_id, &open.call, "in_progress");
                let output_index = open.output_index;
                self.calls.insert(*index, open);
                self.push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": item}),
                );
            }
            ChatEvent::ToolCallArgumentsDelta { index, arguments } => {
                let Some(open) = self.calls.get_mut(index) else {
                    return out;
                };
                open.call.arguments.push_str(arguments);
                let custom = self.head.custom_tools.contains(&open.call.name);
                let (item_id, output_index) = (open.item_id.clone(), open.output_index);
                if !custom && !arguments.is_empty() {
                    self.push(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": output_index, "delta": arguments}),
                    );
                }
            }
            ChatEvent::ToolCallEnd { index } => self.close_call(*index, &mut out),
            ChatEvent::Usage { usage } => self.usage = Some(*usage),
            ChatEvent::Finish { reason } => self.finish(Some(reason), &mut out),
        }
        out
    }

    /// The records after the last event, when the stream ended without a
    /// finish reason (nothing, when it had one).
    pub fn end(&mut self) -> Vec<String> {
        let mut out = self.start();
        if !self.finished {
            self.finish(None, &mut out);
        }
        out
    }

    /// `response.failed`, for an upstream that broke off mid-answer.
    pub fn fail(&mut self, code: &str, message: &str) -> Vec<String> {
        let mut out = self.start();
        if !self.finished {
            self.finished = true;
            self.failed = true;
            let mut response = self
                .head
                .object("failed", &self.finished_items(), self.usage);
            response["error"] = json!({"code": code, "message": message});
            self.push(&mut out, "response.failed", json!({"response": response}));
        }
        out
    }

    /// The whole answer once the stream finished well (for the store).
    pub fn answer(&self) -> Option<&ChatResponse> {
        (self.finished && !self.failed).then_some(&self.answer)
    }

    fn text_delta(&mut self, delta: &str, out: &mut Vec<String>) {
        if delta.is_empty() {
            return;
        }
        if self.text.is_none() {
            let open = OpenText {
                item_id: item_id("msg"),
                output_index: self.next_output_index(),
                text: String::new(),
            };
            let item = json!({"id": open.item_id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []});
            let (item_id, output_index) = (open.item_id.clone(), open.output_index);
            self.text = Some(open);
            self.push(
                out,
                "response.output_item.added",
                json!({"output_index": output_index, "item": item}),
            );
            self.push(
                out,
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
        }
        let Some(open) = self.text.as_mut() else {
            return;
        };
        open.text.push_str(delta);
        let (item_id, output_index) = (open.item_id.clone(), open.output_index);
        self.push(
            out,
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": delta}),
        );
    }

    fn close_text(&mut self, out: &mut Vec<String>) {
        let Some(open) = self.text.take() else {
            return;
        };
        let OpenText {
            item_id,
            output_index,
            text,
        } = open;
        self.push(
            out,
            "response.output_text.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text}),
        );
        self.push(
            out,
            "response.content_part.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
        );
        let item = message_item(&item_id, &text, "completed");
        self.push(
            out,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
        self.answer.text.push_str(&text);
        self.output.insert(output_index, item);
    }

    fn close_call(&mut self, index: usize, out: &mut Vec<String>) {
        let Some(open) = self.calls.remove(&index) else {
            return;
        };
        if !self.head.custom_tools.contains(&open.call.name) {
            self.push(
                out,
                "response.function_call_arguments.done",
                json!({"item_id": open.item_id, "output_index": open.output_index,
                    "arguments": open.call.arguments}),
            );
        }
        let item = self.head.call_item(&open.item_id, &open.call, "completed");
        self.push(
            out,
            "response.output_item.done",
            json!({"output_index": open.output_index, "item": item}),
        );
        self.output.insert(open.output_index, item);
        self.answer.tool_calls.push(open.call);
    }

    fn finish(&mut self, reason: Option<&FinishReason>, out: &mut Vec<String>) {
        self.close_text(out);
        let open: Vec<usize> = self.calls.keys().copied().collect();
        for index in open {
            self.close_call(index, out);
        }
        self.finished = true;
        self.answer.usage = self.usage;
        self.answer.finish = reason.cloned();
        let response = self
            .head
            .object(status_of(reason), &self.finished_items(), self.usage);
        let kind = if status_of(reason) == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.push(out, kind, json!({"response": response}));
    }

    fn next_output_index(&mut self) -> usize {
        self.next_output += 1;
        self.next_output - 1
    }

    fn finished_items(&self) -> Vec<Value> {
        self.output.values().cloned().collect()
    }

    fn push(&mut self, out: &mut Vec<String>, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(format!("event: {kind}\ndata: {data}\n\n"));
    }
}
