//! What a request to the gateway can end in.

use std::time::Duration;

use serde_json::Value;

/// A failed request. Every variant names the method (or the gateway's URL)
/// and why; a caller that has a local answer falls back to it on
/// [`GatewayError::NotConnected`].
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No connection right now (connecting, refused, or between attempts):
    /// the request was not sent.
    #[error("the OpenClaw gateway at {url} is not connected: {reason}")]
    NotConnected { url: String, reason: String },
    /// No answer within the request's timeout; the pending entry is gone,
    /// so a late answer is dropped.
    #[error("the OpenClaw gateway did not answer {method} within {after:?}")]
    Timeout { method: String, after: Duration },
    /// The gateway answered with an error (`ok: false`).
    #[error("the OpenClaw gateway refused {method}: {code}: {message}")]
    Remote {
        method: String,
        code: String,
        message: String,
        details: Value,
    },
    /// The connection ended before the answer came.
    #[error("the connection to the OpenClaw gateway closed before {method} was answered")]
    Closed { method: String },
    /// The request frame is bigger than the gateway's `maxPayload`; it was
    /// not sent.
    #[error(
        "the {method} request is {size} bytes, more than the OpenClaw gateway's maxPayload of {max} bytes; not sent"
    )]
    TooLarge {
        method: String,
        size: usize,
        max: u64,
    },
    /// The gateway answered with a payload this client cannot use.
    #[error("the OpenClaw gateway answered {method} with {reason}")]
    BadResponse { method: String, reason: String },
}

impl GatewayError {
    /// The error code a remote refusal carried (`INVALID_REQUEST`, ...).
    pub fn remote_code(&self) -> Option<&str> {
        match self {
            Self::Remote { code, .. } => Some(code),
            _ => None,
        }
    }
}
