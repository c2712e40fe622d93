//! The one path of a tool call through a session: policy, provider rules,
//! execution, redaction, audit, event.

use std::time::Instant;

use bridge_policy::AuditEntry;
use bridge_policy::audit::{Redacted, redact_result};
use bridge_protocol::{Decision, FailureKind};
use serde::Serialize;
use serde_json::{Value, json};

use crate::events::SessionEvent;
use crate::session::Session;
use crate::tools::{ToolInvocation, ToolOwner};
use bridge_util::ids;

/// Which door a call came through (recorded in the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrigin {
    Rpc,
    Gateway,
    Mcp,
    Engine,
    Hook,
    /// `copilot-bridge tool` on the command line.
    Cli,
}

impl CallOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Gateway => "gateway",
            Self::Mcp => "mcp",
            Self::Engine => "engine",
            Self::Hook => "hook",
            Self::Cli => "cli",
        }
    }
}

/// Why a call produced no result. `code` is the source's own vocabulary,
/// shown on the wire as it came: the workspace tools' codes
/// (`policy_denied`, `not_found`, ...), a provider's `errorCode`
/// (`CANCELLED`, `DISCONNECTED`, ...) or the MCP client's. Decisions are
/// made on `kind` ([`FailureKind::of_code`]), never on the code's text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolFailure {
    #[serde(skip)]
    pub kind: FailureKind,
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolFailure {
    /// A failure with the source's own `code`; its kind is the one the
    /// code stands for.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        let code = code.into();
        Self {
            kind: FailureKind::of_code(&code),
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn denied(reason: impl Into<String>) -> Self {
        Self::new("policy_denied", reason)
    }

    pub fn is_denied(&self) -> bool {
        self.kind == FailureKind::Denied
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

/// What an audit entry is about: `event` (`toolCall`, `preToolUse`, ...)
/// at `door` (`rpc`, `copilot-cli`, ...) decided `decision` about `tool`.
pub(crate) struct AuditEvent<'a> {
    pub event: &'a str,
    pub door: &'a str,
    pub tool: &'a str,
    pub decision: &'a Decision,
    pub elapsed_ms: u64,
}

/// What one call decided and produced, before redaction.
struct Ran {
    owner: Option<ToolOwner>,
    decision: Decision,
    outcome: Result<Value, ToolFailure>,
    context: Vec<String>,
    /// The arguments as the audit entry and the event record them, when
    /// either will be written.
    recorded_args: Option<Redacted>,
    /// When a person was asked: the answer's record.
    approval: Option<Value>,
}

/// A record for the audit entry: a copy when the event needs it too
/// (`shared`), else moved out.
fn for_audit(record: &mut Option<Redacted>, shared: bool) -> Option<Redacted> {
    if shared {
        record.clone()
    } else {
        record.take()
    }
}

impl Session {
    /// Calls `name` the way every door must: the permission policy (and, for
    /// workspace tools, path containment), approval when the policy asks,
    /// the provider hook rules and gates, the tool, then secret redaction,
    /// one audit entry and a `tool.execution_complete` event.
    ///
    /// Hot path: the arguments are copied once (for their redacted record)
    /// and moved into the tool; the result is redacted once and summarized
    /// once; the records are copied only when both the audit entry and the
    /// event are written, and the log does not redact them again.
    pub async fn call_tool(&self, name: &str, args: Value, origin: CallOrigin) -> CallOutcome {
        let started = Instant::now();
        let call_id = ids::unique_id("c");
        let args = if args.is_null() { json!({}) } else { args };
        let Ran {
            owner,
            decision,
            mut outcome,
            context,
            mut recorded_args,
            approval,
        } = self.decide_and_run(name, &call_id, args).await;
        let mut output = match &mut outcome {
            Ok(value) => redact_result(value, self.keeps_records()),
            Err(_) => None,
        };
        let outcome = outcome.map_err(|mut err| {
            err.message = bridge_policy::redact(&err.message).into_owned();
            err
        });
        let elapsed = started.elapsed();
        let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        if let Some(telemetry) = bridge_telemetry::active() {
            crate::telemetry::record_tool_call(
                telemetry,
                crate::telemetry::ToolSpan {
                    session: self.id(),
                    tool: name,
                    call_id: &call_id,
                    origin,
                    decision: &decision,
                    elapsed,
                    outcome: outcome.as_ref().map(|_| ()),
                    approval: approval.as_ref(),
                    arguments: recorded_args.as_ref(),
                    result: output.as_ref(),
                },
            );
        }
        let event_owner = owner.as_ref().filter(|_| self.has_event_subscribers());
        if self.audit().is_some() {
            let shared = event_owner.is_some();
            // None when nobody kept records as the call began (a subscriber since).
            let input =
                for_audit(&mut recorded_args, shared).unwrap_or_else(|| Redacted::new(Value::Null));
            let audited_output = match &outcome {
                Ok(value) => {
                    for_audit(&mut output, shared).unwrap_or_else(|| Redacted::record_of(value))
                }
                Err(err) => Redacted::record_of(&json!({"error": err})),
            };
            self.audit_entry(
                AuditEvent {
                    event: "toolCall",
                    door: origin.as_str(),
                    tool: name,
                    decision: &decision,
                    elapsed_ms,
                },
                input,
                audited_output,
                approval.map(Redacted::new),
            );
        }
        if let Some(owner) = event_owner {
            let (kind, output) = match (&outcome, output) {
                (Ok(_), Some(output)) => ("success", output.into_value()),
                (Ok(value), None) => ("success", Redacted::record_of(value).into_value()),
                (Err(err), _) => ("failure", Value::String(err.to_string())),
            };
            // Built by hand: `json!` would copy the output through serde.
            let result = Value::Object(serde_json::Map::from_iter([
                ("type".to_owned(), Value::from(kind)),
                ("output".to_owned(), output),
            ]));
            self.emit(SessionEvent::ToolExecutionComplete {
                tool: name.to_owned(),
                provider: owner.provider_name().map(str::to_owned),
                args: recorded_args.map_or(Value::Null, Redacted::into_value),
                result,
                duration_ms: elapsed_ms,
                decision: Some(decision.clone()),
            });
        }
        CallOutcome {
            call_id,
            result: outcome,
            context,
        }
    }

    async fn decide_and_run(&self, name: &str, call_id: &str, args: Value) -> Ran {
        let ended = |owner: Option<ToolOwner>, decision, failure, context, approval| Ran {
            recorded_args: self.keeps_records().then(|| Redacted::record_of(&args)),
            owner,
            decision,
            outcome: Err(failure),
            context,
            approval,
        };
        let Some(entry) = self.tool(name) else {
            // A tool the rules block is not offered (so not in the table):
            // a caller that names it anyway is told it is blocked.
            let guard = self.guard();
            if guard.blocks_tool(name) {
                let decision = guard.check_permission(name, &args);
                let reason = decision.reason_or_default().to_owned();
                return ended(
                    None,
                    decision,
                    ToolFailure::denied(reason),
                    Vec::new(),
                    None,
                );
            }
            let reason = format!("unknown tool {name:?} in session {}", self.id());
            return ended(
                None,
                Decision::deny(reason.clone()),
                ToolFailure::new("unknown_tool", reason),
                Vec::new(),
                None,
            );
        };
        let owner = Some(entry.owner.clone());
        if !args.is_object() {
            let reason = format!(
                "arguments of {name} must be a JSON object, got {}",
                bridge_protocol::json_kind(&args)
            );
            return ended(
                owner,
                Decision::deny(reason.clone()),
                ToolFailure::new("invalid_arguments", reason),
                Vec::new(),
                None,
            );
        }
        let accesses = entry.handler.accesses(&args);
        let verdict = self.decide_with(name, &args, &entry.owner, accesses).await;
        if let Some(refusal) = verdict.refusal {
            return ended(
                owner,
                verdict.decision,
                refusal,
                verdict.context,
                verdict.approval,
            );
        }
        if verdict.asks() {
            // A question left to a caller who is not here to put it: the
            // tool does not run unapproved.
            let reason = format!("approval required and not given: {}", verdict.reason());
            return ended(
                owner,
                Decision::deny(reason.clone()),
                ToolFailure::denied(reason),
                verdict.context,
                verdict.approval,
            );
        }
        // The record is taken before the tool gets the arguments by value.
        let recorded = self.keeps_records().then(|| Redacted::record_of(&args));
        let invocation = ToolInvocation {
            session_id: self.id_arc().clone(),
            call_id: call_id.to_owned(),
            tool: name.to_owned(),
            args,
        };
        let outcome = entry.handler.call(invocation).await;
        let decision = match &outcome {
            Err(failure) if failure.is_denied() => Decision::deny(failure.message.clone()),
            _ => verdict.decision,
        };
        Ran {
            owner,
            decision,
            outcome,
            context: verdict.context,
            recorded_args: recorded,
            approval: verdict.approval,
        }
    }

    /// One audit entry about `what`: `input` is the record of the
    /// arguments (see [`Redacted::record_of`]), `output` the summarized
    /// result or the reason, `approval` a person's answer.
    pub(crate) fn audit_entry(
        &self,
        what: AuditEvent<'_>,
        input: Redacted,
        output: Redacted,
        approval: Option<Redacted>,
    ) {
        let Some(audit) = self.audit() else { return };
        let entry = AuditEntry {
            // Stamped by the log with the time of the append, formatted on
            // its writer thread rather than here.
            timestamp: String::new(),
            session_id: self.id().to_owned(),
            hook: format!("{}:{}", what.event, what.door),
            tool: what.tool.to_owned(),
            input,
            output,
            decision: what.decision.decision.as_str().to_owned(),
            elapsed_ms: what.elapsed_ms,
            approval: approval.map(Box::new),
        };
        if let Err(err) = audit.append_redacted(entry) {
            tracing::error!(tool = what.tool, error = %err, "audit log append failed");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use bridge_policy::AuditLog;
    use bridge_protocol::{ToolEffect, ToolSpec};
    use serde_json::{Value, json};

    use crate::{
        CallOrigin, RegistrySettings, SessionDefaults, SessionEvent, SessionRegistry, SessionSpec,
        ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
    };

    /// Keeps what it was called with; answers with the arguments.
    struct Recorder(Mutex<Vec<Value>>);

    #[async_trait]
    impl ToolHandler for Recorder {
        async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
            self.0.lock().unwrap().push(invocation.args.clone());
            Ok(json!({"echo": invocation.args}))
        }
    }

    /// The tool gets the arguments as sent; the caller, the audit entry and
    /// the event only ever see them redacted.
    #[tokio::test]
    async fn the_tool_gets_raw_arguments_and_every_record_is_redacted() {
        let workspace = tempfile::tempdir().unwrap();
        let audit_dir = tempfile::tempdir().unwrap();
        let audit_log = AuditLog::new(audit_dir.path());
        let defaults = SessionDefaults {
            audit: Some(audit_log.clone()),
            ..SessionDefaults::restrictive().unwrap()
        };
        let registry = SessionRegistry::new(defaults, RegistrySettings::default());
        let session = registry
            .create(SessionSpec {
                id: Some("s".to_owned()),
                label: "s".to_owned(),
                cwd: workspace.path().to_path_buf(),
                foreground: true,
                door: crate::Door::Cli,
            })
            .unwrap();
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let owner = ToolOwner::Provider("p".to_owned());
        let spec = ToolSpec {
            name: "login".to_owned(),
            description: "test".to_owned(),
            input_schema: json!({"type": "object"}),
            effect: ToolEffect::Execute,
        };
        let entry = ToolEntry {
            spec,
            owner: owner.clone(),
            handler: recorder.clone(),
        };
        session.register_tools(&owner, vec![entry]).unwrap();
        let mut events = session.subscribe();
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let args = json!({"user": "alice", "token": secret, "long": "x".repeat(10_000)});
        let outcome = session
            .call_tool("login", args.clone(), CallOrigin::Gateway)
            .await;

        assert_eq!(recorder.0.lock().unwrap().as_slice(), &[args]);
        let result = outcome.result.unwrap();
        assert_eq!(result["echo"]["user"], "alice");
        assert!(!result.to_string().contains(secret));
        let SessionEvent::ToolExecutionComplete {
            args: event_args,
            result: event_result,
            ..
        } = events.recv().await.unwrap()
        else {
            panic!("expected tool.execution_complete");
        };
        assert_eq!(event_args["user"], "alice");
        assert!(!event_args.to_string().contains(secret), "{event_args}");
        assert!(
            event_args["long"].as_str().unwrap().len() < 10_000,
            "event arguments are summarized"
        );
        assert_eq!(event_result["type"], "success");
        assert!(!event_result.to_string().contains(secret));
        audit_log.flush().unwrap();
        let audit: String = std::fs::read_dir(audit_dir.path())
            .unwrap()
            .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
            .collect();
        let line: Value = serde_json::from_str(audit.trim()).unwrap();
        assert_eq!(line["input"], event_args, "audit and event record the same");
        assert_eq!(line["output"], event_result["output"]);
        assert!(!audit.contains(secret));
    }
}
