//! A JSON-RPC request body over HTTP, read whole and bounded: `/rpc` and
//! the MCP servers at `/mcp/*` share the limit handling and the error shape.

use axum::body::{Body, BodyDataStream, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_protocol::jsonrpc::INVALID_REQUEST;
use futures::StreamExt;
use serde_json::Value;

use super::failure;

/// How much of an oversized body is read and dropped before answering 413,
/// as a multiple of the limit, and for how long.
const DRAIN_FACTOR: usize = 4;
const MAX_DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// The whole body in one buffer (copied only when it came in pieces), or
/// (over `limit` bytes, declared or sent, or cut off) the 413 answer with a
/// JSON-RPC error object.
pub(crate) async fn read_bounded(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let chunks = read_chunks(headers, body, limit).await?;
    Ok(match <[Bytes; 1]>::try_from(chunks) {
        Ok([whole]) => whole,
        Err(chunks) => Bytes::from(chunks.concat()),
    })
}

/// [`read_bounded`], leaving the body in the chunks it came in: nothing is
/// copied.
pub(crate) async fn read_chunks(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Vec<Bytes>, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut body = body.into_data_stream();
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(too_large(body, limit).await);
    }
    let mut chunks = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else {
            return Err(too_large(body, limit).await);
        };
        total += chunk.len();
        if total > limit {
            return Err(too_large(body, limit).await);
        }
        if !chunk.is_empty() {
            chunks.push(chunk);
        }
    }
    Ok(chunks)
}

/// The 413 answer, after reading (and dropping) a bounded amount of what
/// the client is still sending: a socket closed with unread data is reset,
/// and the client would see "connection reset" instead of this answer.
async fn too_large(mut rest: BodyDataStream, limit: usize) -> Response {
    let drain = async {
        let mut drained = 0usize;
        while let Some(Ok(chunk)) = rest.next().await {
            drained += chunk.len();
            if drained > DRAIN_FACTOR * limit {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(MAX_DRAIN_TIME, drain).await;
    json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &failure(
            None,
            INVALID_REQUEST,
            format!(
                "invalid request: the body is larger than {} MiB (or was cut off)",
                limit / (1024 * 1024)
            ),
        ),
    )
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response {
    json_text_response(status, value.to_string())
}

/// A JSON body already serialized.
pub(crate) fn json_text_response(status: StatusCode, json: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json).into_response()
}
