use std::sync::Arc;
use std::time::Instant;

use bridge_policy::audit::{now_timestamp, summarize_for_audit};
use bridge_policy::{AuditEntry, AuditLog, redact_value};
use bridge_protocol::{Decision, DecisionKind};
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolRegistry};

/// Answers a policy "ask": may this call run?
pub trait Approver: Send + Sync {
    fn approve(&self, tool: &str, args: &Value, reason: &str) -> bool;
}

/// The approver of non-interactive doors: every "ask" is a deny.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve(&self, _tool: &str, _args: &Value, _reason: &str) -> bool {
        false
    }
}

/// Runs tools the way every door must: policy before, redaction and audit
/// after.
#[derive(Clone)]
pub struct ToolRunner {
    registry: ToolRegistry,
    ctx: ToolContext,
    approver: Arc<dyn Approver>,
    audit: Option<AuditLog>,
    session_id: String,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner")
            .field("registry", &self.registry)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl ToolRunner {
    pub fn new(registry: ToolRegistry, ctx: ToolContext) -> Self {
        Self {
            registry,
            ctx,
            approver: Arc::new(DenyAll),
            audit: None,
            session_id: String::new(),
        }
    }

    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    pub fn with_audit(mut self, audit: AuditLog, session_id: impl Into<String>) -> Self {
        self.audit = Some(audit);
        self.session_id = session_id.into();
        self
    }

    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Runs `name` with `args`: permission and path checks, approval when the
    /// policy asks, the tool itself, then secret redaction of the result and
    /// one audit entry.
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let started = Instant::now();
        let (decision, outcome) = self.decide_and_run(name, &args).await;
        let outcome = match outcome {
            Ok(mut value) => {
                redact_value(&mut value);
                Ok(value)
            }
            Err(err) => Err(err.sanitized()),
        };
        self.audit(name, &args, &decision, &outcome, started);
        outcome
    }

    async fn decide_and_run(
        &self,
        name: &str,
        args: &Value,
    ) -> (Decision, Result<Value, ToolError>) {
        let Some(tool) = self.registry.get(name) else {
            let decision = Decision::deny(format!("unknown tool {name:?}"));
            return (decision, Err(ToolError::UnknownTool(name.to_owned())));
        };
        if !args.is_object() {
            let decision = Decision::deny("arguments are not a JSON object");
            return (
                decision,
                Err(ToolError::InvalidArguments(format!(
                    "arguments of {name} must be a JSON object, got {}",
                    json_type(args)
                ))),
            );
        }
        let decision = self.ctx.guard.check_call(name, args);
        // Before approval: nobody should approve a call that cannot run.
        if !decision.is_deny()
            && let Some(Err(err)) = self.audit.as_ref().map(AuditLog::ensure_writable)
        {
            let denied = Decision::deny(format!(
                "the audit log cannot be written ({err}); no tool runs unaudited"
            ));
            return (denied.clone(), Err(ToolError::denied(denied)));
        }
        let decision = match decision.decision {
            DecisionKind::Allow => decision,
            DecisionKind::Deny => return (decision.clone(), Err(ToolError::denied(decision))),
            DecisionKind::Ask => {
                if self
                    .approver
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
                    return (denied.clone(), Err(ToolError::denied(denied)));
                }
            }
        };
        let outcome = tool.call(&self.ctx, args.clone()).await;
        let decision = match &outcome {
            Err(ToolError::Denied(inner)) => inner.clone(),
            _ => decision,
        };
        (decision, outcome)
    }

    fn audit(
        &self,
        name: &str,
        args: &Value,
        decision: &Decision,
        outcome: &Result<Value, ToolError>,
        started: Instant,
    ) {
        let Some(audit) = &self.audit else { return };
        // The output is already redacted; the input is redacted here, before
        // it is cut, so no secret is cut in half and missed.
        let output = match outcome {
            Ok(value) => summarize_for_audit(value),
            Err(err) => summarize_for_audit(&serde_json::json!({"error": err.to_json()})),
        };
        let mut input = args.clone();
        redact_value(&mut input);
        let input = summarize_for_audit(&input);
        let entry = AuditEntry {
            timestamp: now_timestamp(),
            session_id: self.session_id.clone(),
            hook: "toolCall".to_owned(),
            tool: name.to_owned(),
            input,
            output,
            decision: decision.decision.as_str().to_owned(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        if let Err(err) = audit.append(&entry) {
            tracing::error!(tool = name, error = %err, "audit log append failed");
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
