//! What kind of failure a tool call ended in, whichever source reported it.
//!
//! A failed call's `code` is its source's own vocabulary: the workspace
//! tools' snake_case codes (`policy_denied`, `not_found`, …), a provider's
//! `errorCode` (`TIMEOUT`, `DISCONNECTED`, …; see
//! [`crate::provider::tool_error_code`]) or the MCP client's (`mcp_timeout`,
//! …). The code is kept as it came and shown on the wire; decisions are
//! made on the [`FailureKind`] it maps to, by exhaustive matches, so a new
//! kind is a compile error wherever it must be handled.

/// The kind of a failed tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The policy, a rule or a gate refused the call (`policy_denied`).
    Denied,
    /// No such tool in the session (`unknown_tool`).
    UnknownTool,
    /// The arguments do not fit the tool's schema (`invalid_arguments`).
    InvalidArguments,
    /// What the call names does not exist (`not_found`, `NOT_FOUND`).
    NotFound,
    /// The file changed since it was read (`conflict`).
    Conflict,
    /// More than the tool may read or write (`too_large`).
    TooLarge,
    /// A text tool met a binary file (`binary_file`).
    BinaryFile,
    /// The tool needs configuration it lacks (`not_configured`).
    NotConfigured,
    /// The call ran out of time (`timeout`, `TIMEOUT`, `mcp_timeout`).
    Timeout,
    /// The call was cancelled before it ended (`CANCELLED`).
    Cancelled,
    /// The provider went away during the call (`DISCONNECTED`).
    Disconnected,
    /// Whoever serves the tool is down or restarting (`UNAVAILABLE`,
    /// `mcp_unavailable`).
    Unavailable,
    /// The provider may not do what it asked (`UNAUTHORIZED`).
    Unauthorized,
    /// Refused before it started: too many calls at once (`rate_limited`,
    /// `RATE_LIMITED`, `too_many_tool_calls`).
    RateLimited,
    /// The file system refused (`io_error`).
    Io,
    /// The tool ran and reported failure: a command's exit status, an MCP
    /// tool's `isError` (`failed`, `mcp_tool_error`).
    Failed,
    /// The tool's server broke (`INTERNAL`, `mcp_error`).
    Internal,
    /// A code this bridge does not know (a provider's own); its message is
    /// all there is to judge it by.
    Other,
}

impl FailureKind {
    /// The kind a source's `code` stands for; [`FailureKind::Other`] for a
    /// code no source of this bridge documents.
    pub fn of_code(code: &str) -> Self {
        match code {
            "policy_denied" => Self::Denied,
            "unknown_tool" => Self::UnknownTool,
            "invalid_arguments" => Self::InvalidArguments,
            "not_found" | "NOT_FOUND" => Self::NotFound,
            "conflict" => Self::Conflict,
            "too_large" => Self::TooLarge,
            "binary_file" => Self::BinaryFile,
            "not_configured" => Self::NotConfigured,
            "timeout" | "TIMEOUT" | "mcp_timeout" => Self::Timeout,
            "CANCELLED" => Self::Cancelled,
            "DISCONNECTED" => Self::Disconnected,
            "UNAVAILABLE" | "mcp_unavailable" => Self::Unavailable,
            "UNAUTHORIZED" => Self::Unauthorized,
            "rate_limited" | "RATE_LIMITED" | "too_many_tool_calls" => Self::RateLimited,
            "io_error" => Self::Io,
            "failed" | "mcp_tool_error" => Self::Failed,
            "INTERNAL" | "mcp_error" => Self::Internal,
            _ => Self::Other,
        }
    }

    /// The workspace tools' code for this kind (the snake_case vocabulary
    /// documented in docs/tools.md); `None` for kinds only other sources
    /// report.
    pub fn tool_code(self) -> Option<&'static str> {
        Some(match self {
            Self::Denied => "policy_denied",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::TooLarge => "too_large",
            Self::BinaryFile => "binary_file",
            Self::NotConfigured => "not_configured",
            Self::Timeout => "timeout",
            Self::Io => "io_error",
            Self::Failed => "failed",
            Self::Cancelled
            | Self::Disconnected
            | Self::Unavailable
            | Self::Unauthorized
            | Self::RateLimited
            | Self::Internal
            | Self::Other => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_vocabulary_maps_to_one_kind() {
        assert_eq!(FailureKind::of_code("timeout"), FailureKind::Timeout);
        assert_eq!(FailureKind::of_code("TIMEOUT"), FailureKind::Timeout);
        assert_eq!(FailureKind::of_code("mcp_timeout"), FailureKind::Timeout);
        assert_eq!(FailureKind::of_code("NOT_FOUND"), FailureKind::NotFound);
        assert_eq!(FailureKind::of_code("SOMETHING_NEW"), FailureKind::Other);
        // The provider vocabulary is SCREAMING: another case is another code.
        assert_eq!(FailureKind::of_code("Timeout"), FailureKind::Other);
    }

    #[test]
    fn a_tool_code_maps_back_to_its_kind() {
        for code in [
            "policy_denied",
            "unknown_tool",
            "invalid_arguments",
            "not_found",
            "conflict",
            "too_large",
            "binary_file",
            "not_configured",
            "timeout",
            "io_error",
            "failed",
        ] {
            let kind = FailureKind::of_code(code);
            assert_eq!(kind.tool_code(), Some(code));
        }
    }
}
