//! Reading a facade request body: JSON only, bounded, parsed once.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;

use super::errors::{ErrorKind, FacadeError};

/// Largest chat request body. Long conversations with images inlined
/// run to a few MiB; more than this is a mistake or an attack.
/// A streamed answer: `events` as a `content_type` event stream, never
/// cached, and passed on at once by proxies in front of the bridge.
pub fn event_stream(events: Body, content_type: &'static str) -> Response {
    let mut response = Response::new(events);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The body as a JSON object: 415 unless the content type is JSON, 413
/// when it is larger than [`MAX_BODY_BYTES`], 400 when it is not a JSON
/// object.
pub async fn read_json_object(
    headers: &HeaderMap,
    body: Body,
) -> Result<serde_json::Map<String, Value>, FacadeError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence != "application/json" && !essence.ends_with("+json") {
        return Err(FacadeError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorKind::InvalidRequest,
            "unsupported_media_type",
            format!(
                "the body must be JSON (Content-Type: application/json), not {:?}",
                if content_type.is_empty() {
                    "nothing"
                } else {
                    content_type
                }
            ),
        ));
    }
    let too_large = || {
        FacadeError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::InvalidRequest,
            "request_too_large",
            format!(
                "the body is larger than {} MiB",
                MAX_BODY_BYTES / (1024 * 1024)
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| match crate::http::BodyTimeout::caused(&err) {
            Some(timeout) => FacadeError::new(
                StatusCode::REQUEST_TIMEOUT,
                ErrorKind::InvalidRequest,
                "request_timeout",
                timeout.to_string(),
            ),
            None => {
                FacadeError::invalid("invalid_body", format!("the body could not be read: {err}"))
            }
        })?;
        if bytes.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(FacadeError::invalid(
            "invalid_json",
            "the body must be a JSON object",
        )),
        Err(err) => Err(FacadeError::invalid(
            "invalid_json",
            format!("the body is not valid JSON: {err}"),
        )),
    }
}
