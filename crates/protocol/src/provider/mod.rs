//! Provider Interface v2: the messages between the gateway and providers
//! (docs/providers.md).
//!
//! Both directions are internally tagged by `type`. Unknown fields are
//! ignored; an unknown `type` parses as [`ProviderMessage::Unknown`] so the
//! gateway can answer `UNKNOWN_TYPE` and keep the connection. Field names on
//! the wire are camelCase except `startup_context`, which the spec spells in
//! snake case.

pub mod chat;
mod from_gateway;
mod from_provider;
mod parse;

pub use from_gateway::*;
pub use from_provider::*;
pub use parse::{ParseError, ParseErrorKind, parse_provider_message, peek_type};

/// The protocol version this gateway speaks.
pub const PROTOCOL_VERSION: u32 = 2;

use serde::{Deserialize, Serialize};

/// The codes of gateway `error` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidJson,
    UnknownType,
    InvalidSession,
    AuthFailed,
    DuplicateInstance,
    ToolConflict,
    RateLimited,
    PayloadTooLarge,
    UnsupportedVersion,
    Unauthorized,
    /// Ours, not in the spec's list: a `hello` that declares nothing and
    /// leaves it to its `reconnectToken` to restore the registration, with
    /// a token the gateway does not know (expired, or from before a
    /// restart). Nothing is registered; the provider sends `hello` again
    /// with its tools.
    ReconnectExpired,
}

impl ErrorCode {
    /// Fatal errors close the connection after the `error` is sent.
    pub fn is_fatal(self) -> bool {
        matches!(self, Self::AuthFailed | Self::UnsupportedVersion)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "INVALID_JSON",
            Self::UnknownType => "UNKNOWN_TYPE",
            Self::InvalidSession => "INVALID_SESSION",
            Self::AuthFailed => "AUTH_FAILED",
            Self::DuplicateInstance => "DUPLICATE_INSTANCE",
            Self::ToolConflict => "TOOL_CONFLICT",
            Self::RateLimited => "RATE_LIMITED",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Self::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::ReconnectExpired => "RECONNECT_EXPIRED",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `errorCode` values of a failed `tool.result` (the spec's list; providers
/// may send others, so the wire field stays a string).
pub mod tool_error_code {
    pub const NOT_FOUND: &str = "NOT_FOUND";
    pub const TIMEOUT: &str = "TIMEOUT";
    pub const CANCELLED: &str = "CANCELLED";
    pub const DISCONNECTED: &str = "DISCONNECTED";
    pub const UNAUTHORIZED: &str = "UNAUTHORIZED";
    pub const INTERNAL: &str = "INTERNAL";
    /// Ours: the call was refused before it reached the provider (queue full).
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
}

#[cfg(test)]
mod tests;
