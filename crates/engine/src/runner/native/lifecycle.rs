//! The loop's own lifecycle steps (the SDK calls them hooks; they are not
//! the providers' hook rules of `crate::hooks`): `onUserPromptSubmitted`,
//! `onPostToolUse` and the decisions of `onErrorOccurred`. (`onPreToolUse`
//! is [`Session::call_tool`](crate::Session::call_tool)'s.)

use std::time::Duration;

use bridge_protocol::{FailureKind, ToolEffect};
use bridge_util::recovery::{Backoff, ErrorClass, ErrorPolicy, RecoveryAction, classify};

use crate::call::ToolFailure;

/// Bytes of one tool result the model gets: more is cut, with a note that
/// says how much (docs/runners.md).
pub const TOOL_RESULT_LIMIT: usize = 10 * 1024;

/// The prompt as `onUserPromptSubmitted` leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SubmittedPrompt {
    pub text: String,
    /// Whether redaction changed anything.
    pub redacted: bool,
    /// Where injected context came from: `project_context` and the owners
    /// of ambient context.
    pub injected: Vec<String>,
}

/// Appends the project context (`COPILOT_PROJECT_CONTEXT`) and the
/// session's ambient context to the task, then redacts the whole prompt:
/// context is text like any other and may quote a secret.
pub(super) fn submit_prompt(
    task: &str,
    project_context: Option<&str>,
    ambient: &[(String, String)],
) -> SubmittedPrompt {
    let mut text = task.trim().to_owned();
    let mut injected = Vec::new();
    for (source, block) in context_blocks(project_context, ambient) {
        text.push_str("\n\n");
        text.push_str(&block);
        injected.push(source);
    }
    let redacted = bridge_policy::redact(&text);
    let changed = matches!(redacted, std::borrow::Cow::Owned(_)) && redacted != text;
    SubmittedPrompt {
        text: redacted.into_owned(),
        redacted: changed,
        injected,
    }
}

/// The context a prompt gets, as `(source, block)`: the project context
/// in `<project_context>`, then each provider's ambient context in
/// `<context source="…">`; empty ones left out. Not redacted: the caller
/// redacts what it sends.
pub fn context_blocks(
    project_context: Option<&str>,
    ambient: &[(String, String)],
) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    if let Some(context) = project_context.map(str::trim).filter(|c| !c.is_empty()) {
        blocks.push((
            "project_context".to_owned(),
            format!("<project_context>\n{context}\n</project_context>"),
        ));
    }
    for (owner, context) in ambient {
        let context = context.trim();
        if !context.is_empty() {
            blocks.push((
                owner.clone(),
                format!("<context source=\"{owner}\">\n{context}\n</context>"),
            ));
        }
    }
    blocks
}

/// `onPostToolUse`'s cut: at most `limit` bytes (on a character boundary)
/// plus a note saying how much was cut. Returns the text and the bytes cut.
///
/// The text is redacted before it is cut
/// ([`bridge_policy::redact::redact_and_cut`]): results reach here
/// redacted as values, but the cut must not rely on that to never show
/// half a secret.
pub fn truncate_for_model(text: String, limit: usize) -> (String, usize) {
    if text.len() <= limit {
        return (text, 0);
    }
    let total = text.len();
    let cut = bridge_policy::redact::redact_and_cut(&text, limit);
    let omitted = cut.omitted_bytes;
    let mut kept = cut.text.into_owned();
    kept.push_str(&format!(
        "\n…[copilot-bridge cut this tool result: {omitted} of {total} bytes not shown; \
         ask for less, e.g. a line range or a narrower search]"
    ));
    (kept, omitted)
}

/// The class of a failed tool call for `onErrorOccurred`. The tools' own
/// verdicts (denied, conflict, a failed command) are results for the model,
/// never retried; only failures of the way to the tool can pass.
pub(super) fn tool_failure_class(failure: &ToolFailure) -> ErrorClass {
    match failure.kind {
        FailureKind::Timeout | FailureKind::Disconnected | FailureKind::Unavailable => {
            ErrorClass::Transient
        }
        FailureKind::RateLimited => ErrorClass::RateLimit,
        FailureKind::NotFound => ErrorClass::NotFound,
        FailureKind::Denied
        | FailureKind::InvalidArguments
        | FailureKind::UnknownTool
        | FailureKind::Conflict => ErrorClass::Other,
        // Kinds that do not say whether what was named exists: the message may.
        FailureKind::TooLarge
        | FailureKind::BinaryFile
        | FailureKind::NotConfigured
        | FailureKind::Cancelled
        | FailureKind::Unauthorized
        | FailureKind::Failed
        | FailureKind::Io
        | FailureKind::Internal
        | FailureKind::Other => match classify(None, &failure.message) {
            ErrorClass::NotFound => ErrorClass::NotFound,
            _ => ErrorClass::Other,
        },
    }
}

/// `onErrorOccurred` for a failed tool call: retry a transient failure of a
/// read-only tool within the policy's budget; skip (report to the model)
/// everything else. A tool that writes or executes is never run twice: its
/// first attempt may have had its effect.
pub(super) fn tool_recovery(
    policy: &ErrorPolicy,
    failure: &ToolFailure,
    effect: Option<ToolEffect>,
    retries_made: u32,
) -> RecoveryAction {
    let class = tool_failure_class(failure);
    let retryable = matches!(class, ErrorClass::Transient | ErrorClass::RateLimit)
        && effect == Some(ToolEffect::Read);
    if retryable && policy.decide(class, retries_made) == RecoveryAction::Retry {
        RecoveryAction::Retry
    } else {
        RecoveryAction::Skip
    }
}

/// The loop's own retries (a broken-off answer, a failed read-only tool)
/// wait `retry_base_delay`, doubling, at most this long.
pub(super) fn retry_backoff(base: Duration) -> Backoff {
    Backoff::new(base, Duration::from_secs(10))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_prompt_gets_context_and_loses_secrets() {
        let ambient = vec![("ci".to_owned(), "CI is green".to_owned())];
        let prompt = submit_prompt(
            "fix it with ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            Some("Rust workspace"),
            &ambient,
        );
        assert!(prompt.redacted);
        assert!(
            !prompt
                .text
                .contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789")
        );
        assert!(prompt.text.contains("<project_context>\nRust workspace\n"));
        assert!(
            prompt
                .text
                .contains("<context source=\"ci\">\nCI is green\n")
        );
        assert_eq!(prompt.injected, ["project_context", "ci"]);
        let plain = submit_prompt("list files", None, &[]);
        assert_eq!(plain.text, "list files");
        assert!(!plain.redacted);
    }

    #[test]
    fn results_over_the_limit_are_cut_on_a_char_boundary_with_a_note() {
        let (text, cut) = truncate_for_model("é".repeat(10), 5);
        assert!(text.starts_with("éé"));
        assert_eq!(cut, 16);
        assert!(text.contains("16 of 20 bytes not shown"), "{text}");
        let (text, cut) = truncate_for_model("short".to_owned(), 10);
        assert_eq!((text.as_str(), cut), ("short", 0));
    }

    #[test]
    fn a_token_the_cut_goes_through_is_not_half_shown() {
        let token = format!("gh{}_{}", "p", "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL1234");
        let result = format!("{{\"stdout\":\"{} {token} rest\"}}", "x".repeat(80));
        let (text, cut) = truncate_for_model(result.clone(), 100);
        assert!(!text.contains("gh"), "{text}");
        assert!(text.contains("[REDACTED]\n…[copilot-bridge cut"), "{text}");
        assert_eq!(cut, result.len() - 100);
    }

    #[test]
    fn only_transient_failures_of_read_tools_are_retried() {
        let policy = ErrorPolicy::default();
        let timeout = ToolFailure::new("timeout", "no answer");
        assert_eq!(
            tool_recovery(&policy, &timeout, Some(ToolEffect::Read), 0),
            RecoveryAction::Retry
        );
        assert_eq!(
            tool_recovery(&policy, &timeout, Some(ToolEffect::Read), 2),
            RecoveryAction::Skip
        );
        assert_eq!(
            tool_recovery(&policy, &timeout, Some(ToolEffect::Execute), 0),
            RecoveryAction::Skip
        );
        let denied = ToolFailure::denied("blocked");
        assert_eq!(
            tool_recovery(&policy, &denied, Some(ToolEffect::Read), 0),
            RecoveryAction::Skip
        );
    }

    #[test]
    fn every_source_s_vocabulary_classifies_alike() {
        for code in [
            "timeout",
            "TIMEOUT",
            "mcp_timeout",
            "DISCONNECTED",
            "mcp_unavailable",
        ] {
            let failure = ToolFailure::new(code, "no answer");
            assert_eq!(
                tool_failure_class(&failure),
                ErrorClass::Transient,
                "{code}"
            );
        }
        for code in ["rate_limited", "RATE_LIMITED"] {
            let failure = ToolFailure::new(code, "busy");
            assert_eq!(
                tool_failure_class(&failure),
                ErrorClass::RateLimit,
                "{code}"
            );
        }
        let provider_own = ToolFailure::new("NO_SUCH_PAGE", "the page was not found");
        assert_eq!(tool_failure_class(&provider_own), ErrorClass::NotFound);
        let conflict = ToolFailure::new("conflict", "the file was not found unchanged");
        assert_eq!(tool_failure_class(&conflict), ErrorClass::Other);
    }
}
