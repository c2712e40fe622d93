use bridge_protocol::{Decision, DecisionKind, FailureKind};
use serde_json::{Value, json};

/// Why a tool call did not produce a result. Each variant has a stable
/// [`code`](ToolError::code) that doors map onto their own error shapes.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("denied by policy: {}", .0.reason_or_default())]
    Denied(Decision),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("{message}")]
    Conflict { message: String, details: Value },
    #[error("{path} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{0} is a binary file")]
    Binary(String),
    #[error("not configured: {0}")]
    NotConfigured(String),
    #[error("timed out after {0} s")]
    Timeout(u64),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    pub fn denied(decision: Decision) -> Self {
        // An "ask" that reaches a tool unanswered is a deny: fail closed, and
        // say so, so no door reads the error as "prompt the user".
        let decision = match decision.decision {
            DecisionKind::Allow => Decision::deny("internal error: allow reported as a failure"),
            DecisionKind::Ask => Decision::deny(decision.reason_or_default().to_owned()),
            DecisionKind::Deny => decision,
        };
        Self::Denied(decision)
    }

    /// Opening `shown` beneath the workspace root failed (see
    /// [`file_op`](Self::file_op)).
    pub fn from_open(tool: &str, shown: &str, err: std::io::Error) -> Self {
        Self::file_op(tool, "open", shown, err)
    }

    /// A file operation (`action`: "open", "write", ...) on `shown` beneath
    /// the workspace root failed: missing is `NotFound`, kept from leaving
    /// the workspace (a symlink swapped since the check) is a policy deny,
    /// anything else an I/O error.
    pub fn file_op(tool: &str, action: &str, shown: &str, err: std::io::Error) -> Self {
        if bridge_policy::paths::is_escape(&err) {
            return Self::denied(Decision::deny(err.to_string()));
        }
        if err.kind() == std::io::ErrorKind::NotFound {
            return Self::NotFound(shown.to_owned());
        }
        Self::io(format!("{tool}: cannot {action} {shown}"), err)
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// The same error fit to leave the bridge: secrets redacted from every
    /// text it carries (an error may quote a file: a formatter's syntax error,
    /// a task's stderr) and each text cut to [`MAX_ERROR_TEXT_CHARS`] (an
    /// error may quote the caller's input, which can be megabytes).
    pub fn sanitized(self) -> Self {
        let text = |s: String| bounded(&s);
        match self {
            Self::UnknownTool(name) => Self::UnknownTool(text(name)),
            Self::InvalidArguments(message) => Self::InvalidArguments(text(message)),
            Self::Denied(mut decision) => {
                decision.reason = decision.reason.map(text);
                Self::Denied(decision)
            }
            Self::NotFound(path) => Self::NotFound(text(path)),
            Self::Conflict {
                message,
                mut details,
            } => {
                bridge_policy::redact_value(&mut details);
                Self::Conflict {
                    message: text(message),
                    details: bridge_policy::audit::summarize_for_audit(&details),
                }
            }
            Self::TooLarge { path, size, limit } => Self::TooLarge {
                path: text(path),
                size,
                limit,
            },
            Self::Binary(path) => Self::Binary(text(path)),
            Self::NotConfigured(message) => Self::NotConfigured(text(message)),
            Self::Timeout(secs) => Self::Timeout(secs),
            Self::Io { context, source } => Self::Io {
                context: text(context),
                source: std::io::Error::new(source.kind(), text(source.to_string())),
            },
            Self::Failed(message) => Self::Failed(text(message)),
        }
    }

    /// The kind of failure this is.
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::UnknownTool(_) => FailureKind::UnknownTool,
            Self::InvalidArguments(_) => FailureKind::InvalidArguments,
            Self::Denied(_) => FailureKind::Denied,
            Self::NotFound(_) => FailureKind::NotFound,
            Self::Conflict { .. } => FailureKind::Conflict,
            Self::TooLarge { .. } => FailureKind::TooLarge,
            Self::Binary(_) => FailureKind::BinaryFile,
            Self::NotConfigured(_) => FailureKind::NotConfigured,
            Self::Timeout(_) => FailureKind::Timeout,
            Self::Io { .. } => FailureKind::Io,
            Self::Failed(_) => FailureKind::Failed,
        }
    }

    /// A stable, documented code for the error class
    /// ([`FailureKind::tool_code`]).
    pub fn code(&self) -> &'static str {
        self.kind().tool_code().unwrap_or("failed")
    }

    /// The error as JSON: `{code, message, details?}`.
    pub fn to_json(&self) -> Value {
        let mut value = json!({"code": self.code(), "message": self.to_string()});
        match self {
            Self::Conflict { details, .. } => value["details"] = details.clone(),
            Self::Denied(decision) => value["details"] = json!(decision),
            _ => {}
        }
        value
    }
}

/// Longest text an error carries out of the bridge.
pub const MAX_ERROR_TEXT_CHARS: usize = 2000;

/// `text` redacted and cut to [`MAX_ERROR_TEXT_CHARS`] characters, with a
/// note of what was left out.
fn bounded(text: &str) -> String {
    bridge_policy::redact::shorten(text, MAX_ERROR_TEXT_CHARS)
}
