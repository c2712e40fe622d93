//! Answers in the Responses format: the event stream (`response.created`
//! … `response.completed`, each with its `sequence_number`) and the whole
//! `response` object.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::records::{
    Arguments, Delta, ItemEvent, OutputText, Part, ResponseEvent, ResponseObject, Text, emit,
    placed, text_event,
};

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
        "content": [OutputText::of(text)],
    })
}

fn status_of(finish: Option<&FinishReason>) -> &'static str {
    match finish {
        Some(FinishReason::Length) => "incomplete",
        _ => "completed",
    }
}

/// A whole answer as a `response` object.
pub fn response_object<'a>(
    head: &'a ResponseHead,
    response: &ChatResponse,
) -> ResponseObject<'a, Vec<Value>> {
    let mut output = Vec::new();
    if !response.text.is_empty() {
        output.push(message_item(&item_id("msg"), &response.text, "completed"));
    }
    for call in &response.tool_calls {
        output.push(head.call_item(&item_id("fc"), call, "completed"));
    }
    head.object(status_of(response.finish.as_ref()), output, response.usage)
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
            for kind in ["response.created", "response.in_progress"] {
                let response = self.head.object("in_progress", [(); 0], None);
                emit(
                    &mut out,
                    &mut self.sequence,
                    kind,
                    ResponseEvent { response },
                );
            }
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
                emit(
                    &mut out,
                    &mut self.sequence,
                    "response.output_item.added",
                    ItemEvent {
                        output_index: open.output_index,
                        item: &item,
                    },
                );
                self.calls.insert(*index, open);
            }
            ChatEvent::ToolCallArgumentsDelta { index, arguments } => {
                let Some(open) = self.calls.get_mut(index) else {
                    return out;
                };
                open.call.arguments.push_str(arguments);
                let custom = self.head.custom_tools.contains(&open.call.name);
                if !custom && !arguments.is_empty() {
                    emit(
                        &mut out,
                        &mut self.sequence,
                        "response.function_call_arguments.delta",
                        placed(&open.item_id, open.output_index, Delta { delta: arguments }),
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
            let response = self
                .head
                .object(
                    "failed",
                    self.output.values().collect::<Vec<_>>(),
                    self.usage,
                )
                .failed_with(code, message);
            emit(
                &mut out,
                &mut self.sequence,
                "response.failed",
                ResponseEvent { response },
            );
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
            emit(
                out,
                &mut self.sequence,
                "response.output_item.added",
                ItemEvent {
                    output_index: open.output_index,
                    item: &item,
                },
            );
            emit(
                out,
                &mut self.sequence,
                "response.content_part.added",
                text_event(&open.item_id, open.output_index, Part::of("")),
            );
            self.text = Some(open);
        }
        let Some(open) = self.text.as_mut() else {
            return;
        };
        open.text.push_str(delta);
        emit(
            out,
            &mut self.sequence,
            "response.output_text.delta",
            text_event(&open.item_id, open.output_index, Delta { delta }),
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
        emit(
            out,
            &mut self.sequence,
            "response.output_text.done",
            text_event(&item_id, output_index, Text { text: &text }),
        );
        emit(
            out,
            &mut self.sequence,
            "response.content_part.done",
            text_event(&item_id, output_index, Part::of(&text)),
        );
        let item = message_item(&item_id, &text, "completed");
        emit(
            out,
            &mut self.sequence,
            "response.output_item.done",
            ItemEvent {
                output_index,
                item: &item,
            },
        );
        self.answer.text.push_str(&text);
        self.output.insert(output_index, item);
    }

    fn close_call(&mut self, index: usize, out: &mut Vec<String>) {
        let Some(open) = self.calls.remove(&index) else {
            return;
        };
        if !self.head.custom_tools.contains(&open.call.name) {
            emit(
                out,
                &mut self.sequence,
                "response.function_call_arguments.done",
                placed(
                    &open.item_id,
                    open.output_index,
                    Arguments {
                        arguments: &open.call.arguments,
                    },
                ),
            );
        }
        let item = self.head.call_item(&open.item_id, &open.call, "completed");
        emit(
            out,
            &mut self.sequence,
            "response.output_item.done",
            ItemEvent {
                output_index: open.output_index,
                item: &item,
            },
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
        let status = status_of(reason);
        let kind = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let response =
            self.head
                .object(status, self.output.values().collect::<Vec<_>>(), self.usage);
        emit(out, &mut self.sequence, kind, ResponseEvent { response });
    }

    fn next_output_index(&mut self) -> usize {
        self.next_output += 1;
        self.next_output - 1
    }
}
