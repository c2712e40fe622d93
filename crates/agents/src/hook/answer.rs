//! A hook's answer, in the shape the agent reads (see docs/hooks.md).
//!
//! copilot-bridge never widens what the agent's own permissions allow: a
//! call our policy lets through gets no decision at all (`{}`), so the
//! agent's own rules and prompts still apply; only "deny" and "ask" are
//! said explicitly, and "allow" only to Codex's `PermissionRequest` when a
//! person approved the call in the hub's queue (it asked in the agent's
//! stead).

use serde_json::{Value, json};

use super::payload::{Dialect, HookEvent};

/// What the hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Nothing to object to: no decision, the agent goes on as it would.
    Pass,
    /// The agent should ask its user, for this reason.
    Ask(String),
    /// The call must not run, for this reason.
    Deny(String),
    /// A person approved the call through the hub's approval queue.
    Approved,
}

impl HookDecision {
    /// The hook's decision for a decision of the hub, with its reason.
    pub fn from_outcome(outcome: bridge_protocol::DecisionKind, reason: &str) -> Self {
        match outcome {
            bridge_protocol::DecisionKind::Allow => Self::Pass,
            bridge_protocol::DecisionKind::Ask => Self::Ask(reason.to_owned()),
            bridge_protocol::DecisionKind::Deny => Self::Deny(reason.to_owned()),
        }
    }
}

/// One answer: what goes to stdout, and the exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    pub stdout: Value,
    pub exit_code: u8,
    /// Said on stderr too, where both agents show a hook's words.
    pub stderr: Option<String>,
}

/// The answer to `event` in `dialect`, with `context` for the agent where
/// the event takes some.
pub fn render(
    dialect: Dialect,
    event: HookEvent,
    decision: &HookDecision,
    context: &[String],
) -> HookAnswer {
    let context = (!context.is_empty()).then(|| context.join("\n\n"));
    let stderr = match decision {
        HookDecision::Deny(reason) => Some(format!("copilot-bridge denied this call: {reason}")),
        _ => None,
    };
    let stdout = match dialect {
        Dialect::Claude => claude(event, decision, context),
        Dialect::Copilot => copilot(decision, context),
    };
    HookAnswer {
        stdout,
        exit_code: 0,
        stderr,
    }
}

fn claude(event: HookEvent, decision: &HookDecision, context: Option<String>) -> Value {
    let mut specific = json!({"hookEventName": event.claude_name()});
    match decision {
        HookDecision::Pass => {}
        // Said only where the agent would ask its user otherwise.
        HookDecision::Approved => {
            if event == HookEvent::PermissionRequest {
                specific["decision"] = json!({"behavior": "allow"});
            }
        }
        // Codex asks its own user when a PermissionRequest hook says
        // nothing: an ask is that.
        HookDecision::Ask(_) if event == HookEvent::PermissionRequest => {}
        HookDecision::Deny(reason) if event == HookEvent::PermissionRequest => {
            specific["decision"] = json!({"behavior": "deny", "message": reason});
        }
        HookDecision::Ask(reason) | HookDecision::Deny(reason) => {
            if event == HookEvent::PreToolUse {
                let kind = if matches!(decision, HookDecision::Ask(_)) {
                    "ask"
                } else {
                    "deny"
                };
                specific["permissionDecision"] = json!(kind);
                specific["permissionDecisionReason"] = json!(reason);
            } else {
                // Other events block with the top-level decision.
                return json!({"decision": "block", "reason": reason});
            }
        }
    }
    if let Some(context) = context
        && matches!(
            event,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::UserPromptSubmit
                | HookEvent::SessionStart
        )
    {
        specific["additionalContext"] = json!(context);
    }
    if specific.as_object().is_some_and(|fields| fields.len() == 1) {
        return json!({});
    }
    json!({ "hookSpecificOutput": specific })
}

fn copilot(decision: &HookDecision, context: Option<String>) -> Value {
    let mut answer = match decision {
        HookDecision::Pass | HookDecision::Approved => json!({}),
        HookDecision::Ask(reason) => {
            json!({"permissionDecision": "ask", "permissionDecisionReason": reason})
        }
        HookDecision::Deny(reason) => {
            json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
        }
    };
    if let Some(context) = context {
        answer["additionalContext"] = json!(context);
    }
    answer
}

/// When the payload could not even be read: block in the way every agent
/// understands, exit code 2 with the reason on stderr (and a deny in the
/// assumed dialect on stdout, for agents that read it).
pub fn unreadable(dialect: Dialect, reason: &str) -> HookAnswer {
    let denied = render(
        dialect,
        HookEvent::PreToolUse,
        &HookDecision::Deny(reason.to_owned()),
        &[],
    );
    HookAnswer {
        exit_code: 2,
        ..denied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_gets_hook_specific_output_only_for_what_it_must_act_on() {
        let deny = render(
            Dialect::Claude,
            HookEvent::PreToolUse,
            &HookDecision::Deny("no".into()),
            &[],
        );
        assert_eq!(
            deny.stdout,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(deny.exit_code, 0);
        let pass = render(
            Dialect::Claude,
            HookEvent::PreToolUse,
            &HookDecision::Pass,
            &[],
        );
        assert_eq!(pass.stdout, json!({}));
        let context = render(
            Dialect::Claude,
            HookEvent::UserPromptSubmit,
            &HookDecision::Pass,
            &["a".into(), "b".into()],
        );
        assert_eq!(
            context.stdout,
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "a\n\nb"}})
        );
    }

    #[test]
    fn the_copilot_cli_gets_its_flat_permission_decision() {
        let ask = render(
            Dialect::Copilot,
            HookEvent::PreToolUse,
            &HookDecision::Ask("check".into()),
            &[],
        );
        assert_eq!(
            ask.stdout,
            json!({"permissionDecision": "ask", "permissionDecisionReason": "check"})
        );
        let pass = render(
            Dialect::Copilot,
            HookEvent::PreToolUse,
            &HookDecision::Pass,
            &[],
        );
        assert_eq!(pass.stdout, json!({}));
    }

    #[test]
    fn an_unreadable_payload_blocks_with_exit_code_2() {
        let answer = unreadable(Dialect::Copilot, "not JSON");
        assert_eq!(answer.exit_code, 2);
        assert_eq!(answer.stdout["permissionDecision"], "deny");
        assert!(answer.stderr.unwrap().contains("not JSON"));
    }

    #[test]
    fn codexs_permission_request_hears_a_deny_or_a_persons_approval() {
        let render_it = |decision: HookDecision| {
            render(
                Dialect::Claude,
                HookEvent::PermissionRequest,
                &decision,
                &[],
            )
            .stdout
        };
        assert_eq!(
            render_it(HookDecision::Deny("no".into())),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "no"}}})
        );
        assert_eq!(
            render_it(HookDecision::Approved),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"}}})
        );
        // Codex asks its user itself.
        assert_eq!(render_it(HookDecision::Ask("check".into())), json!({}));
        assert_eq!(render_it(HookDecision::Pass), json!({}));
        let pre = render(
            Dialect::Claude,
            HookEvent::PreToolUse,
            &HookDecision::Approved,
            &[],
        );
        assert_eq!(pre.stdout, json!({}), "no widening before the sandbox");
    }
}
