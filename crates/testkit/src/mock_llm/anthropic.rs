//! Anthropic Messages wire format (`POST /v1/messages`).

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use super::Answer;
use super::body::{Step, count_tokens, error_response, prompt_tokens, sse_response};
use super::openai::model_of;

/// `{"type": "error", "error": {"type", "message"}}` as Anthropic sends it.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

pub(crate) fn error(status: u16, message: &str, retry_after_secs: Option<u64>) -> Response<Body> {
    error_response(status, &error_body(status, message), retry_after_secs)
}

fn event(name: &str, data: &Value) -> Step {
    Step::Data(Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
}

fn stop_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn output_tokens(answer: &Answer) -> u64 {
    (count_tokens(&answer.text())
        + answer
            .calls
            .iter()
            .map(|call| call.argument_chunks.len() as u64)
            .sum::<u64>())
    .max(1)
}

pub(crate) fn stream(request: &Value, answer: &Answer, sequence: u64) -> Response<Body> {
    let mut steps = vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": format!("msg_mock{sequence}"),
                "type": "message",
                "role": "assistant",
                "model": model_of(request),
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": prompt_tokens(request), "output_tokens": 1},
            }}),
        ),
        event("ping", &json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !answer.text_chunks.is_empty() {
        steps.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for chunk in &answer.text_chunks {
            if let Some(delay) = answer.delay {
                steps.push(Step::Sleep(delay));
            }
            steps.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}),
            ));
        }
        if answer.drop_at_end {
            steps.push(Step::Drop);
            return sse_response(steps);
        }
        steps.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &answer.calls {
        steps.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call.id, "name": call.name, "input": {},
            }}),
        ));
        for fragment in &call.argument_chunks {
            steps.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        steps.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if answer.drop_at_end {
        steps.push(Step::Drop);
        return sse_response(steps);
    }
    steps.push(event(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
            "usage": {"output_tokens": output_tokens(answer)}}),
    ));
    steps.push(event("message_stop", &json!({"type": "message_stop"})));
    sse_response(steps)
}

/// The `message` object; `mod.rs` decides how it is delivered.
pub(crate) fn complete(request: &Value, answer: &Answer, sequence: u64) -> Value {
    let mut content = Vec::new();
    let text = answer.text();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in &answer.calls {
        // `input` is an object on the wire; arguments that are not valid
        // JSON are passed as a string so a test can still see them.
        let arguments = call.arguments();
        let input = serde_json::from_str::<Value>(&arguments).unwrap_or(Value::String(arguments));
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    json!({
        "id": format!("msg_mock{sequence}"),
        "type": "message",
        "role": "assistant",
        "model": model_of(request),
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": null,
        "usage": {"input_tokens": prompt_tokens(request), "output_tokens": output_tokens(answer)},
    })
}
