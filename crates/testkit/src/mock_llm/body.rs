//! Response bodies written step by step, so a reply can pause between
//! chunks or break the connection part way.

use std::collections::VecDeque;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode, header};
use bytes::Bytes;

/// One step of a response body.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Data(Bytes),
    Sleep(Duration),
    /// Ends the body with an error: hyper then closes the connection
    /// without the terminating chunk, as a crashed upstream would.
    Drop,
}

const FLUSH_BEFORE_DROP: Duration = Duration::from_millis(50);

#[derive(Debug)]
struct DroppedOnPurpose;

impl std::fmt::Display for DroppedOnPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("mock upstream dropped the connection on purpose")
    }
}

impl std::error::Error for DroppedOnPurpose {}

pub(crate) fn streamed_body(steps: Vec<Step>) -> Body {
    let stream = futures::stream::unfold(VecDeque::from(steps), |mut steps| async move {
        loop {
            match steps.pop_front()? {
                Step::Data(bytes) => return Some((Ok(bytes), steps)),
                Step::Sleep(delay) => tokio::time::sleep(delay).await,
                Step::Drop => {
                    // hyper writes what it has only when the task yields;
                    // without the pause the error can win and the client
                    // would get nothing instead of a cut body.
                    tokio::time::sleep(FLUSH_BEFORE_DROP).await;
                    return Some((Err(DroppedOnPurpose), VecDeque::new()));
                }
            }
        }
    });
    Body::from_stream(stream)
}

/// A response; an invalid status becomes 500 and invalid header values are
/// skipped, since the mock must answer something whatever the script says.
pub(crate) fn response(
    status: u16,
    headers: &[(HeaderName, String)],
    body: Body,
) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().append(name.clone(), value);
        }
    }
    response
}

pub(crate) fn json_response(status: u16, value: &serde_json::Value) -> Response<Body> {
    response(
        status,
        &[(header::CONTENT_TYPE, "application/json".to_owned())],
        Body::from(value.to_string()),
    )
}

pub(crate) fn sse_response(steps: Vec<Step>) -> Response<Body> {
    response(
        200,
        &[
            (header::CONTENT_TYPE, "text/event-stream".to_owned()),
            (header::CACHE_CONTROL, "no-cache".to_owned()),
        ],
        streamed_body(steps),
    )
}

/// `Raw` replies: bytes exactly as given, one write per chunk.
pub(crate) fn raw_response(status: u16, content_type: &str, chunks: &[String]) -> Response<Body> {
    let steps = chunks
        .iter()
        .map(|chunk| Step::Data(Bytes::from(chunk.clone())))
        .collect();
    response(
        status,
        &[(header::CONTENT_TYPE, content_type.to_owned())],
        streamed_body(steps),
    )
}

/// `Error` replies: the endpoint's JSON error body, with `Retry-After` when
/// scripted.
pub(crate) fn error_response(
    status: u16,
    body: &serde_json::Value,
    retry_after_secs: Option<u64>,
) -> Response<Body> {
    let mut headers = vec![(header::CONTENT_TYPE, "application/json".to_owned())];
    if let Some(secs) = retry_after_secs {
        headers.push((header::RETRY_AFTER, secs.to_string()));
    }
    response(status, &headers, Body::from(body.to_string()))
}

/// Rough token count for `usage`: whitespace-separated words. Real
/// tokenizers differ; tests only need stable, non-zero numbers.
pub(crate) fn count_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Text fragments of a request's messages, for echo mode and usage.
pub(crate) fn content_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

pub(crate) fn prompt_tokens(body: &serde_json::Value) -> u64 {
    let mut total = 0;
    if let Some(system) = body.get("system") {
        total += count_tokens(&content_text(system));
    }
    if let Some(messages) = body.get("messages").and_then(serde_json::Value::as_array) {
        for message in messages {
            if let Some(content) = message.get("content") {
                total += count_tokens(&content_text(content));
            }
        }
    }
    total.max(1)
}

/// The last user message's text: what echo mode answers.
pub(crate) fn last_user_text(body: &serde_json::Value) -> String {
    body.get("messages")
        .and_then(serde_json::Value::as_array)
        .and_then(|messages| {
            messages.iter().rev().find(|message| {
                message.get("role").and_then(serde_json::Value::as_str) == Some("user")
            })
        })
        .and_then(|message| message.get("content"))
        .map(content_text)
        .unwrap_or_default()
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}
