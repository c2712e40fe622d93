//! OpenAI chat completions wire format (also served for Azure and Copilot).

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use super::Answer;
use super::body::{Step, count_tokens, error_response, prompt_tokens, sse_response, unix_now};

/// `{"error": {"message", "type", "param", "code"}}` as OpenAI sends it.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        403 => ("permission_error", Value::Null),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

pub(crate) fn error(status: u16, message: &str, retry_after_secs: Option<u64>) -> Response<Body> {
    error_response(status, &error_body(status, message), retry_after_secs)
}

struct Envelope {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

impl Envelope {
    fn new(request: &Value, sequence: u64) -> Self {
        Self {
            id: format!("chatcmpl-mock{sequence}"),
            created: unix_now(),
            model: model_of(request),
            include_usage: request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Step {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        sse_data(&chunk)
    }
}

fn sse_data(value: &Value) -> Step {
    Step::Data(Bytes::from(format!("data: {value}\n\n")))
}

pub(crate) fn model_of(request: &Value) -> String {
    request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model")
        .to_owned()
}

fn usage(request: &Value, answer: &Answer) -> Value {
    let prompt = prompt_tokens(request);
    let completion = (count_tokens(&answer.text())
        + answer
            .calls
            .iter()
            .map(|call| call.argument_chunks.len() as u64)
            .sum::<u64>())
    .max(1);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

fn finish_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

pub(crate) fn stream(request: &Value, answer: &Answer, sequence: u64) -> Response<Body> {
    let envelope = Envelope::new(request, sequence);
    let mut steps = Vec::new();
    let first_content = if answer.calls.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    steps.push(envelope.chunk(json!({"role": "assistant", "content": first_content}), None));
    for chunk in &answer.text_chunks {
        if let Some(delay) = answer.delay {
            steps.push(Step::Sleep(delay));
        }
        steps.push(envelope.chunk(json!({"content": chunk}), None));
    }
    for (index, call) in answer.calls.iter().enumerate() {
        steps.push(envelope.chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ));
        for fragment in &call.argument_chunks {
            steps.push(envelope.chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    if answer.drop_at_end {
        steps.push(Step::Drop);
        return sse_response(steps);
    }
    steps.push(envelope.chunk(json!({}), Some(finish_reason(answer))));
    if envelope.include_usage {
        steps.push(sse_data(&json!({
            "id": envelope.id,
            "object": "chat.completion.chunk",
            "created": envelope.created,
            "model": envelope.model,
            "choices": [],
            "usage": usage(request, answer),
        })));
    }
    steps.push(Step::Data(Bytes::from_static(b"data: [DONE]\n\n")));
    sse_response(steps)
}

/// The `chat.completion` object; `mod.rs` decides how it is delivered.
pub(crate) fn complete(request: &Value, answer: &Answer, sequence: u64) -> Value {
    let text = answer.text();
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !answer.calls.is_empty() { Value::Null } else { json!(text) },
    });
    if !answer.calls.is_empty() {
        message["tool_calls"] = answer
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments()},
                })
            })
            .collect();
    }
    json!({
        "id": format!("chatcmpl-mock{sequence}"),
        "object": "chat.completion",
        "created": unix_now(),
        "model": model_of(request),
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(answer)}],
        "usage": usage(request, answer),
    })
}
