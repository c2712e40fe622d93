//! HTTP helpers shared by the backends: reading an upstream's error answer,
//! `Retry-After`, and the idle timeout over a streamed body.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::LlmError;

/// How much of a body or chunk goes into an error message: enough to
/// recognise it, not enough to flood a log with an HTML page.
pub(crate) const MESSAGE_CUT_CHARS: usize = 300;

/// The first `max_chars` characters of `text`, with a marker when cut.
pub(crate) fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}… ({} bytes in all)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// The human message of an upstream error body: the `error.message` of the
/// OpenAI-style JSON (also used by Azure, Anthropic and most compatible
/// servers), else a string `error`, else a cut of the body itself — so an
/// HTML error page of a proxy still says something.
pub(crate) fn upstream_error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let error = value.get("error");
        let message = error
            .and_then(|error| error.get("message"))
            .or(error)
            .or_else(|| value.get("message"))
            .and_then(serde_json::Value::as_str);
        if let Some(message) = message {
            return cut(message, 2000);
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_owned();
    }
    cut(&collapse_whitespace(trimmed), MESSAGE_CUT_CHARS)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `Retry-After` as delta-seconds or as an HTTP date (a date in the past
/// means: retry now).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    parse_retry_after(value, SystemTime::now())
}

pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Wraps a body stream so that waiting longer than `idle` for the next chunk
/// ends it with [`LlmError::Timeout`]. Dropping the wrapper drops the body,
/// which closes the connection.
pub(crate) fn with_idle_timeout<S>(
    body: S,
    idle: Duration,
    backend: String,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
{
    futures::stream::unfold(Some((body, backend)), move |state| async move {
        let (mut body, backend) = state?;
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some((body, backend)))),
            Ok(Some(Err(err))) => Some((Err(BodyError::Read(err)), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(BodyError::Idle(LlmError::Timeout {
                    backend,
                    after: idle,
                })),
                None,
            )),
        }
    })
}

#[derive(Debug)]
pub(crate) enum BodyError {
    Read(reqwest::Error),
    Idle(LlmError),
}

/// The chain of causes of an error: reqwest's own message is often just
/// "error sending request", the reason is further down.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_text_and_marks_long_text_on_a_char_boundary() {
        assert_eq!(cut("short", 10), "short");
        let long = "é".repeat(20);
        let cut_text = cut(&long, 5);
        assert!(cut_text.starts_with("ééééé…"), "{cut_text}");
        assert!(cut_text.contains("40 bytes"), "{cut_text}");
    }

    #[test]
    fn error_message_prefers_the_json_error_message() {
        let body = r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#;
        assert_eq!(upstream_error_message(body), "Rate limit reached");
        assert_eq!(
            upstream_error_message(r#"{"error":"model not loaded"}"#),
            "model not loaded"
        );
        assert_eq!(
            upstream_error_message(r#"{"message":"bad gateway"}"#),
            "bad gateway"
        );
    }

    #[test]
    fn error_message_of_an_html_page_is_a_collapsed_cut() {
        let page = format!(
            "<html>\n  <body>\n    <h1>502 Bad Gateway</h1>{}\n</body></html>",
            "x".repeat(5000)
        );
        let message = upstream_error_message(&page);
        assert!(message.starts_with("<html> <body> <h1>502 Bad Gateway</h1>"));
        assert!(
            message.chars().count() < MESSAGE_CUT_CHARS + 40,
            "{message}"
        );
        assert_eq!(upstream_error_message("  \n"), "(empty body)");
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }
}
