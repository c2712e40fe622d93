//! HTTP helpers shared by the backends: sending a request and mapping its
//! failures, reading bounded bodies, an upstream's error answer,
//! `Retry-After`, and the idle timeout over a streamed body.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Response, StatusCode};

use bridge_util::Secret;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};

use crate::LlmError;

/// What an HTTP backend checks and builds from its configuration once, so
/// a mistake shows at start-up rather than at the first request.
#[derive(Debug)]
pub(crate) struct Connection {
    /// Without a trailing `/`.
    pub base_url: String,
    /// Sent with every request; the credential and the extra headers are
    /// marked sensitive (a proxy's header may carry one too), so they stay
    /// out of `Debug`.
    pub headers: HeaderMap,
    pub client: reqwest::Client,
}

impl Connection {
    /// Checks `base_url` (http or https), then builds the headers: `Accept:
    /// text/event-stream`, `fixed`, the `credential` header (its value a
    /// secret) and `extra`. Errors name the backend `name` and the input.
    pub fn new(
        name: &str,
        base_url: &str,
        fixed: &[(&'static str, &'static str)],
        credential: Option<(HeaderName, Secret)>,
        extra: &[(String, Secret)],
        connect_timeout: Duration,
    ) -> Result<Self, LlmError> {
        let not_configured = |what: String| LlmError::NotConfigured(format!("{name}: {what}"));
        let base_url = base_url.trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url)
            .map_err(|err| not_configured(format!("invalid base URL {base_url:?}: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(not_configured(format!(
                "base URL {base_url:?} is not http(s)"
            )));
        }
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        for (header, value) in fixed {
            headers.insert(
                HeaderName::from_static(header),
                HeaderValue::from_static(value),
            );
        }
        if let Some((header, value)) = credential {
            let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
                not_configured("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        for (header, value) in extra {
            let header_name = HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| not_configured(format!("invalid header name {header:?}")))?;
            let mut header_value = HeaderValue::from_str(value.expose())
                .map_err(|_| not_configured(format!("invalid value of header {header:?}")))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            // Retries are `RetryingBackend`'s, with backoff and Retry-After;
            // reqwest's own layer would only add work to every request.
            .retry(reqwest::retry::never())
            .build()
            .map_err(|err| not_configured(format!("cannot build HTTP client: {err}")))?;
        Ok(Self {
            base_url,
            headers,
            client,
        })
    }

    /// `path` under the base URL, parsed once at start-up: reqwest would
    /// otherwise parse the URL string again for every request.
    pub fn endpoint(&self, name: &str, path: &str) -> Result<reqwest::Url, LlmError> {
        let url = format!("{}{path}", self.base_url);
        reqwest::Url::parse(&url)
            .map_err(|err| LlmError::NotConfigured(format!("{name}: invalid URL {url:?}: {err}")))
    }
}

/// How much of a body or chunk goes into an error message: enough to
/// recognise it, not enough to flood a log with an HTML page.
pub(crate) const MESSAGE_CUT_CHARS: usize = 300;

/// The first `max_chars` characters of `text`, redacted, with the cut note.
pub(crate) use bridge_policy::redact::shorten as cut;

/// The model ids of a `{"data": [{"id": …}]}` listing (OpenAI's and
/// Anthropic's `GET /models`), or why `body` (fetched from `url`) is not one.
pub(crate) fn model_ids(url: &str, body: &str) -> Result<Vec<String>, String> {
    #[derive(serde::Deserialize)]
    struct ModelList {
        data: Vec<ModelEntry>,
    }
    #[derive(serde::Deserialize)]
    struct ModelEntry {
        id: String,
    }
    serde_json::from_str::<ModelList>(body)
        .map(|list| list.data.into_iter().map(|model| model.id).collect())
        .map_err(|err| {
            format!(
                "invalid model list from {url}: {err}: {}",
                cut(body.trim(), MESSAGE_CUT_CHARS)
            )
        })
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

/// How a backend asks its upstream for a chat answer: as an event stream, or
/// as one JSON document (what a caller that wants the whole answer anyway
/// pays least for, here and upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Streamed,
    Whole,
}

impl Delivery {
    pub(crate) fn is_streamed(self) -> bool {
        self == Self::Streamed
    }

    /// The `Accept` header that goes with it.
    pub(crate) fn accept(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Self::Streamed => "text/event-stream",
            Self::Whole => "application/json",
        })
    }
}

/// The model a request goes to: its own, else the backend's default; an
/// error naming the backend when there is neither.
pub(crate) fn model_for(
    backend: &str,
    requested: Option<&String>,
    default: &str,
) -> Result<String, LlmError> {
    let model = requested.map_or(default, String::as_str);
    if model.is_empty() {
        return Err(LlmError::NotConfigured(format!(
            "{backend}: no model in the request and no default model configured"
        )));
    }
    Ok(model.to_owned())
}

/// How one wire format reads a chat answer: a whole JSON document into
/// events, or an event stream decoded as it comes.
#[derive(Clone, Copy)]
pub(crate) struct WireReader {
    pub whole: fn(&str, &str) -> Result<Vec<crate::ChatEvent>, LlmError>,
    pub events: fn(String, EventBody, usize) -> crate::ChatStream,
}

/// `url` parsed once, for a backend whose URL is only known per request;
/// the error names the backend and the URL.
pub(crate) fn parse_url(backend: &str, url: &str) -> Result<reqwest::Url, LlmError> {
    reqwest::Url::parse(url).map_err(|err| LlmError::Protocol {
        backend: backend.to_owned(),
        message: format!("invalid URL {url:?}: {err}"),
    })
}

/// `request` with the W3C `traceparent` of the span the caller runs under
/// (a run of the hub's agent, a facade request's client trace), so the
/// backend's own tracing joins the trace (docs/telemetry.md). Nothing when
/// there is none: with telemetry off there never is.
fn with_trace_context(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    use opentelemetry::trace::TraceContextExt as _;
    let context = opentelemetry::Context::current();
    let span = context.span();
    let span = span.span_context();
    if !span.is_valid() {
        return request;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        span.trace_id(),
        span.span_id(),
        span.trace_flags().to_u8()
    );
    let request = request.header("traceparent", traceparent);
    let state = span.trace_state().header();
    if state.is_empty() {
        request
    } else {
        request.header("tracestate", state)
    }
}

/// How much of an error or model-list body is read: an upstream must not
/// make us buffer without bound.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// One backend's view of its upstream: its name for errors and the limit
/// for getting an answer's headers and reading a non-streamed body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Upstream<'a> {
    pub(crate) backend: &'a str,
    pub(crate) request_timeout: Duration,
}

impl Upstream<'_> {
    /// Sends a request and waits for its headers, mapping failures and
    /// non-2xx answers to [`LlmError`]s.
    pub(crate) async fn send(
        self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<Response, LlmError> {
        let request = with_trace_context(request);
        let sent = tokio::time::timeout(self.request_timeout, request.send()).await;
        let response = match sent {
            Err(_) => return Err(self.timeout()),
            Ok(Err(err)) if err.is_timeout() => return Err(self.timeout()),
            Ok(Err(err)) => {
                return Err(LlmError::Transport {
                    backend: self.backend.to_owned(),
                    url: url.to_owned(),
                    message: error_chain(&err),
                });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let body = self.body_start(response).await;
        let message = upstream_error_message(&body);
        tracing::debug!(backend = %self.backend, %status, %message, "upstream refused the request");
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => LlmError::Auth {
                backend: self.backend.to_owned(),
                message: format!("HTTP {}: {message}", status.as_u16()),
            },
            _ => LlmError::Http {
                backend: self.backend.to_owned(),
                status: status.as_u16(),
                message,
                retry_after,
            },
        })
    }

    /// A body that is only quoted in an error message: its start is enough,
    /// and failing to read it must not hide the error it explains.
    pub(crate) async fn body_start(self, response: Response) -> String {
        match self.read_body(response).await {
            Ok((text, _)) => text,
            Err(err) => format!("(body unreadable: {err})"),
        }
    }

    /// The body of a chat answer, by its content type: a JSON document (the
    /// server ignored `stream: true`, or `extra` turned streaming off) is
    /// read whole for replay; an event stream is handed on chunk by chunk
    /// under `idle`; anything else is a protocol error quoting the body.
    pub(crate) async fn answer_body(
        self,
        response: Response,
        idle: Duration,
    ) -> Result<AnswerBody, LlmError> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let media_type = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media_type.as_str() {
            "application/json" => Ok(AnswerBody::Whole(self.whole_body(response).await?)),
            "text/event-stream" => Ok(AnswerBody::Events(Box::pin(with_idle_timeout(
                response.bytes_stream(),
                idle,
                self.backend.to_owned(),
            )))),
            _ => {
                let body = self.body_start(response).await;
                Err(LlmError::Protocol {
                    backend: self.backend.to_owned(),
                    message: format!(
                        "expected an event stream, got content type {content_type:?}: {}",
                        cut(body.trim(), MESSAGE_CUT_CHARS)
                    ),
                })
            }
        }
    }

    /// The events of a chat answer, however the upstream sent it
    /// ([`Self::answer_body`]), read by `wire`.
    pub(crate) async fn answer_events(
        self,
        response: Response,
        idle: Duration,
        wire: WireReader,
    ) -> Result<crate::ChatStream, LlmError> {
        match self.answer_body(response, idle).await? {
            AnswerBody::Whole(body) => {
                let events = (wire.whole)(self.backend, &body)?;
                Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
            }
            AnswerBody::Events(body) => Ok((wire.events)(
                self.backend.to_owned(),
                body,
                crate::sse::DEFAULT_MAX_LINE_BYTES,
            )),
        }
    }

    /// A body that is parsed, so it must be complete.
    pub(crate) async fn whole_body(self, response: Response) -> Result<String, LlmError> {
        let (text, complete) = self.read_body(response).await?;
        if !complete {
            return Err(self.protocol(format!(
                "answer larger than {MAX_BODY_BYTES} bytes: {}",
                cut(&text, MESSAGE_CUT_CHARS)
            )));
        }
        Ok(text)
    }

    /// The body as text, at most [`MAX_BODY_BYTES`] of it, within the request
    /// timeout; the flag tells whether it was complete.
    async fn read_body(self, response: Response) -> Result<(String, bool), LlmError> {
        let read = async {
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|err| {
                    self.protocol(format!("cannot read the body: {}", error_chain(&err)))
                })?;
                let room = MAX_BODY_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    return Ok((String::from_utf8_lossy(&body).into_owned(), false));
                }
                body.extend_from_slice(&chunk);
            }
            let text = String::from_utf8(body)
                .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned());
            Ok((text, true))
        };
        tokio::time::timeout(self.request_timeout, read)
            .await
            .map_err(|_| self.timeout())?
    }

    fn timeout(self) -> LlmError {
        LlmError::Timeout {
            backend: self.backend.to_owned(),
            after: self.request_timeout,
        }
    }

    fn protocol(self, message: String) -> LlmError {
        LlmError::Protocol {
            backend: self.backend.to_owned(),
            message,
        }
    }
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

/// A streamed answer's body, chunk by chunk.
pub(crate) type EventBody = std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// A chat answer's body, as [`Upstream::answer_body`] found it.
pub(crate) enum AnswerBody {
    Whole(String),
    Events(EventBody),
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
        assert!(cut_text.contains("30 more bytes"), "{cut_text}");
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
