//! rmcp answers what it cannot take in plain text, and a body that is not
//! a JSON-RPC message with 415 (as if its content type were wrong). MCP
//! clients read errors as JSON-RPC error objects, so in front of our MCP
//! servers: malformed JSON is 400 with `-32700`, JSON that is not a message
//! MCP accepts is 400 with `-32600`, an oversized body is 413 with a JSON
//! error, and rmcp's other plain refusals (wrong `Accept` or `Content-Type`,
//! unknown `Mcp-Session-Id`, …) keep their status with a JSON-RPC error
//! body. Answers rmcp gives in JSON pass untouched.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use bridge_protocol::jsonrpc::{INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR};

use crate::rpc::body::{json_response, read_chunks};
use crate::rpc::failure;

/// Largest request body: rmcp's own limit, so rmcp never meets a larger one.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How much of rmcp's plain-text refusal is kept as the error message.
const MAX_REFUSAL_BYTES: usize = 4096;

/// What rmcp's deserialization failure says before serde's own message.
const RMCP_DESERIALIZE_PREFIX: &str = "fail to deserialize request body ";

pub(crate) async fn json_rpc_errors(request: Request, next: Next) -> Response {
    let json_body = declares_json(request.headers());
    let (request, sent) = if request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        let chunks = match read_chunks(&parts.headers, body, MAX_BODY_BYTES).await {
            Ok(chunks) => chunks,
            Err(too_large) => return too_large,
        };
        // rmcp gets the chunks as they came: a copy of a large body costs
        // more than the rest of this layer.
        let body = match chunks.as_slice() {
            [] => Body::empty(),
            [whole] => Body::from(whole.clone()),
            _ => Body::from_stream(futures::stream::iter(
                chunks.clone().into_iter().map(Ok::<_, Infallible>),
            )),
        };
        (Request::from_parts(parts, body), Some(chunks))
    } else {
        (request, None)
    };
    let response = next.run(request).await;
    let status = response.status();
    let refused = status.is_client_error() || status.is_server_error();
    if !refused || response.headers().contains_key(header::CONTENT_TYPE) {
        return response;
    }
    let text = refusal_text(response).await;
    match sent {
        // rmcp checks the content type before reading the body: with a JSON
        // content type, its 415 is about the body.
        Some(chunks) if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && json_body => {
            unreadable(&chunks.concat(), &text)
        }
        _ => {
            let code = if status.is_server_error() {
                INTERNAL_ERROR
            } else {
                INVALID_REQUEST
            };
            json_response(status, &failure(None, code, text))
        }
    }
}

/// rmcp's test: the media type is `application/json`, parameters aside.
fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default();
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// A body rmcp could not read as a message: not JSON at all, or JSON that
/// is not one JSON-RPC message MCP takes (a batch, a missing `method`, …).
fn unreadable(body: &[u8], refusal: &str) -> Response {
    let answer = match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Err(err) => failure(
            None,
            PARSE_ERROR,
            format!("parse error: the body is not JSON: {err}"),
        ),
        Ok(_) => failure(
            None,
            INVALID_REQUEST,
            format!(
                "invalid request: not a JSON-RPC 2.0 request, notification or response that MCP accepts ({})",
                refusal
                    .strip_prefix(RMCP_DESERIALIZE_PREFIX)
                    .unwrap_or(refusal)
            ),
        ),
    };
    json_response(StatusCode::BAD_REQUEST, &answer)
}

async fn refusal_text(response: Response) -> String {
    let status = response.status();
    match axum::body::to_bytes(response.into_body(), MAX_REFUSAL_BYTES).await {
        Ok(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).into_owned(),
        _ => status.canonical_reason().unwrap_or("refused").to_owned(),
    }
}
