//! One error type for both facades, rendered in each API's own shape:
//! OpenAI's `{"error": {message, type, param, code}}` and Anthropic's
//! `{"type": "error", "error": {type, message}}`.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_llm::{BackendKind, LlmError};
use serde_json::{Value, json};

use bridge_compose::RouteError;

/// The class of an error, as OpenAI's `type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidRequest,
    Authentication,
    RateLimit,
    Server,
}

impl ErrorKind {
    fn openai(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request_error",
            Self::Authentication => "authentication_error",
            Self::RateLimit => "rate_limit_error",
            Self::Server => "server_error",
        }
    }
}

/// The header the OpenAI and Anthropic SDKs read before retrying.
pub const SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");

/// When a backend that did not answer is worth asking again.
const BACKEND_RETRY_AFTER: Duration = Duration::from_secs(2);

/// A failed facade request. `code` is stable and documented in
/// docs/facade.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacadeError {
    pub status: StatusCode,
    pub kind: ErrorKind,
    pub code: &'static str,
    pub message: String,
    /// The request field at fault, if one is.
    pub param: Option<String>,
    pub retry_after: Option<Duration>,
    /// Whether the same request sent again may succeed. `false` is said to
    /// the client as `x-should-retry: false`, which the `openai` and
    /// `anthropic` SDKs (and so Claude Code and Codex) obey instead of
    /// retrying for minutes.
    pub retryable: bool,
}

impl FacadeError {
    pub fn new(
        status: StatusCode,
        kind: ErrorKind,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            kind,
            code,
            message: message.into(),
            param: None,
            retry_after: None,
            // A rate limit, a timeout, a conflict or a server's trouble may
            // pass; a bad request or a wrong key will not.
            retryable: !status.is_client_error() || matches!(status.as_u16(), 408 | 409 | 429),
        }
    }

    /// No retry can help (a backend that is not configured, an upstream
    /// that refuses our key).
    pub fn permanent(mut self) -> Self {
        self.retryable = false;
        self
    }

    /// A 400 about the request body.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            code,
            message,
        )
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// An upstream failure of the backend `kind` (`copilot`, `openai`, …).
    /// Messages pass through the redactor: upstream error bodies may echo
    /// what they were sent.
    pub fn from_llm(backend_kind: BackendKind, err: &LlmError) -> Self {
        let message = bridge_policy::redact::redact(&err.to_string()).into_owned();
        // The design's code for "Copilot cannot answer", whichever way
        // Copilot is reached.
        let unavailable = if matches!(backend_kind, BackendKind::Copilot | BackendKind::Vscode) {
            "copilot_unavailable"
        } else {
            "backend_unavailable"
        };
        match err {
            LlmError::Http {
                status: 429,
                retry_after,
                ..
            } => Self {
                retry_after: *retry_after,
                ..Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorKind::RateLimit,
                    "rate_limit_exceeded",
                    message,
                )
            },
            LlmError::Http { status, .. } if (400..500).contains(status) => Self::new(
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST),
                ErrorKind::InvalidRequest,
                "upstream_rejected",
                message,
            ),
            LlmError::Http { .. } => Self::new(
                StatusCode::BAD_GATEWAY,
                ErrorKind::Server,
                "upstream_error",
                message,
            ),
            // The backend did not answer: it may, soon.
            LlmError::Transport { .. } => Self {
                retry_after: Some(BACKEND_RETRY_AFTER),
                ..Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorKind::Server,
                    unavailable,
                    message,
                )
            },
            // It refused our credentials: asking again changes nothing.
            LlmError::Auth { .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Server,
                unavailable,
                message,
            )
            .permanent(),
            LlmError::Timeout { .. } => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                ErrorKind::Server,
                "upstream_timeout",
                message,
            ),
            LlmError::Protocol { .. } => Self::new(
                StatusCode::BAD_GATEWAY,
                ErrorKind::Server,
                "upstream_invalid_response",
                message,
            ),
            LlmError::NotConfigured(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Server,
                unavailable,
                message,
            )
            .permanent(),
        }
    }

    /// The error for the request log: `code: message`.
    pub fn reason(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }

    /// The body in OpenAI's error shape.
    pub fn openai_body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind.openai(),
            "param": self.param,
            "code": self.code,
        }})
    }

    /// The body in Anthropic's error shape.
    pub fn anthropic_body(&self) -> Value {
        let kind = match (self.kind, self.status.as_u16()) {
            (ErrorKind::Authentication, _) => "authentication_error",
            (ErrorKind::RateLimit, _) => "rate_limit_error",
            (_, 404) => "not_found_error",
            (_, 413) => "request_too_large",
            (ErrorKind::InvalidRequest, _) => "invalid_request_error",
            (_, 503) => "overloaded_error",
            (ErrorKind::Server, _) => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": self.message, "code": self.code}})
    }

    /// An HTTP response with `body` (one of the two shapes).
    pub fn response(&self, body: Value) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if let Some(after) = self.retry_after {
            let secs = after.as_secs().max(1).to_string();
            if let Ok(value) = HeaderValue::from_str(&secs) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        if !self.retryable {
            response
                .headers_mut()
                .insert(SHOULD_RETRY, HeaderValue::from_static("false"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }

    pub fn openai_response(&self) -> Response {
        self.response(self.openai_body())
    }

    pub fn anthropic_response(&self) -> Response {
        self.response(self.anthropic_body())
    }
}

impl From<RouteError> for FacadeError {
    fn from(err: RouteError) -> Self {
        match err {
            // Nothing to send the request to until the configuration
            // changes.
            RouteError::NoBackend | RouteError::MissingBackend { .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Server,
                "backend_unavailable",
                err.to_string(),
            )
            .permanent(),
        }
    }
}

/// A request body the OpenAI-shaped endpoints refuse (chat completions,
/// responses): its code and the field at fault.
impl From<bridge_llm::translate::openai::InboundError> for FacadeError {
    fn from(error: bridge_llm::translate::openai::InboundError) -> Self {
        Self::invalid(error.code, error.message).with_param(error.param)
    }
}
