//! The one path of a tool call through a session: policy, provider rules,
//! execution, redaction, audit, event.

use std::time::Instant;

use bridge_policy::audit::{now_timestamp, summarize_for_audit};
use bridge_policy::{AuditEntry, redact_value};
use bridge_protocol::{Decision, DecisionKind};
use serde::Serialize;
use serde_json::{Value, json};

use crate::events::SessionEvent;
use crate::hooks;
use crate::ids;
use crate::session::Session;
use crate::tools::{ToolInvocation, ToolOwner};

/// Which door a call came through (recorded in the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrigin {
    Rpc,
    Gateway,
    Mcp,
    Engine,
    Hook,
}

impl CallOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Gateway => "gateway",
            Self::Mcp => "mcp",
            Self::Engine => "engine",
            Self::Hook => "hook",
        }
    }
}

/// Why a call produced no result. `code` is the source's own vocabulary:
/// the workspace tools' codes (`policy_denied`, `not_found`, ...) or a
/// provider's `errorCode` (`CANCELLED`, `DISCONNECTED`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolFailure {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolFailure {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn denied(reason: impl Into<String>) -> Self {
        Self::new("policy_denied", reason)
    }

    pub fn is_denied(&self) -> bool {
        self.code == "policy_denied"
    }
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// What a door gets back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallOutcome {
    pub call_id: String,
    pub result: Result<Value, ToolFailure>,
    /// Text that `context` rules and gates asked to add for the agent.
    pub context: Vec<String>,
}

impl CallOutcome {
    /// `{ok: true, result, context?}` or `{ok: false, error, context?}`.
    pub fn to_json(&self) -> Value {
        let mut value = match &self.result {
            Ok(result) => json!({"ok": true, "result": result}),
            Err(err) => json!({"ok": false, "error": err}),
        };
        if !self.context.is_empty() {
            value["context"] = json!(self.context);
        }
        value
    }
}

impl Session {
    /// Calls `name` the way every door must: the permission policy (and, for
    /// workspace tools, path containment), approval when the policy asks,
    /// the provider hook rules and gates, the tool, then secret redaction,
    /// one audit entry and a `tool.execution_complete` event.
    pub async fn call_tool(&self, name: &str, args: Value, origin: CallOrigin) -> CallOutcome {
        let started = Instant::now();
        let call_id = ids::unique_id("c");
        let args = if args.is_null() { json!({}) } else { args };
        let (owner, decision, mut outcome, context) =
            self.decide_and_run(name, &call_id, &args).await;
        if let Ok(value) = &mut outcome {
            redact_value(value);
        }
        let outcome = outcome.map_err(|mut err| {
            err.message = bridge_policy::redact(&err.message).into_owned();
            err
        });
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.audit_call(name, &args, &decision, &outcome, origin, elapsed_ms);
        if owner.is_some() {
            let result = match &outcome {
                Ok(value) => json!({"type": "success", "output": summarize_for_audit(value)}),
                Err(err) => json!({"type": "failure", "output": err.to_string()}),
            };
            let mut event_args = args;
            redact_value(&mut event_args);
            self.emit(SessionEvent::ToolExecutionComplete {
                tool: name.to_owned(),
                provider: owner
                    .as_ref()
                    .and_then(|o| o.provider_name().map(str::to_owned)),
                args: summarize_for_audit(&event_args),
                result,
                duration_ms: elapsed_ms,
            });
        }
        CallOutcome {
            call_id,
            result: outcome,
            context,
        }
    }

    async fn decide_and_run(
        &self,
        name: &str,
        call_id: &str,
        args: &Value,
    ) -> (
        Option<ToolOwner>,
        Decision,
        Result<Value, ToolFailure>,
        Vec<String>,
    ) {
        let Some(entry) = self.tool(name) else {
            let reason = format!("unknown tool {name:?} in session {}", self.id());
            return (
                None,
                Decision::deny(reason.clone()),
                Err(ToolFailure::new("unknown_tool", reason)),
                Vec::new(),
            );
        };
        let owner = Some(entry.owner.clone());
        if !args.is_object() {
            let reason = format!("arguments of {name} must be a JSON object");
            return (
                owner,
                Decision::deny(reason.clone()),
                Err(ToolFailure::new("invalid_arguments", reason)),
                Vec::new(),
            );
        }
        let guard = self.guard();
        let decision = match entry.owner {
            ToolOwner::Workspace => guard.check_call(name, args),
            _ => guard.check_permission(name, args),
        };
        let decision = match decision.decision {
            DecisionKind::Allow => decision,
            DecisionKind::Deny => {
                let failure = ToolFailure::denied(decision.reason_or_default());
                return (owner, decision, Err(failure), Vec::new());
            }
            DecisionKind::Ask => {
                if self
                    .approver()
                    .approve(name, args, decision.reason_or_default())
                {
                    Decision {
                        decision: DecisionKind::Allow,
                        reason: Some(format!("approved: {}", decision.reason_or_default())),
                    }
                } else {
                    let denied = Decision::deny(format!(
                        "approval required and not given: {}",
                        decision.reason_or_default()
                    ));
                    let failure = ToolFailure::denied(denied.reason_or_default());
                    return (owner, denied, Err(failure), Vec::new());
                }
            }
        };
        let rules = self.rules_snapshot();
        let verdict = hooks::evaluate(
            &rules,
            self.id_arc(),
            name,
            &entry.owner,
            args,
            self.settings().gate_timeout,
        )
        .await;
        if let Some(reason) = verdict.denied {
            let denied = Decision::deny(reason.clone());
            return (
                owner,
                denied,
                Err(ToolFailure::denied(reason)),
                verdict.context,
            );
        }
        if let Some(audit) = self.audit()
            && let Err(err) = audit.ensure_writable()
        {
            let reason = format!("the audit log cannot be written ({err}); no tool runs unaudited");
            return (
                owner,
                Decision::deny(reason.clone()),
                Err(ToolFailure::denied(reason)),
                verdict.context,
            );
        }
        let invocation = ToolInvocation {
            session_id: self.id_arc().clone(),
            call_id: call_id.to_owned(),
            tool: name.to_owned(),
            args: args.clone(),
        };
        let outcome = entry.handler.call(invocation).await;
        let decision = match &outcome {
            Err(failure) if failure.is_denied() => Decision::deny(failure.message.clone()),
            _ => decision,
        };
        (owner, decision, outcome, verdict.context)
    }

    fn audit_call(
        &self,
        name: &str,
        args: &Value,
        decision: &Decision,
        outcome: &Result<Value, ToolFailure>,
        origin: CallOrigin,
        elapsed_ms: u64,
    ) {
        let Some(audit) = self.audit() else { return };
        let output = match outcome {
            Ok(value) => summarize_for_audit(value),
            Err(err) => summarize_for_audit(&json!({"error": err})),
        };
        let mut input = args.clone();
        redact_value(&mut input);
        let entry = AuditEntry {
            timestamp: now_timestamp(),
            session_id: self.id().to_owned(),
            hook: format!("toolCall:{}", origin.as_str()),
            tool: name.to_owned(),
            input: summarize_for_audit(&input),
            output,
            decision: decision.decision.as_str().to_owned(),
            elapsed_ms,
        };
        if let Err(err) = audit.append(&entry) {
            tracing::error!(tool = name, error = %err, "audit log append failed");
        }
    }
}
