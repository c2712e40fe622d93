//! Our policy over the CLI's tools: its `preToolUse` hook and its
//! permission prompts are answered by the same checks every call through
//! [`Session::call_tool`](crate::Session::call_tool) gets (permission rules
//! with path containment, approval, provider hook rules and gates), and
//! each decision is audited.

use std::time::Instant;

use bridge_policy::AuditEntry;
use bridge_policy::Guard;
use bridge_policy::audit::{now_timestamp, summarize_for_audit};
use bridge_protocol::{Decision, DecisionKind};
use serde_json::{Value, json};

use crate::hooks;
use crate::session::Session;
use crate::tools::ToolOwner;

/// What we tell the CLI about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolVerdict {
    pub allowed: bool,
    pub reason: String,
    /// Text that context rules and gates add for the agent.
    pub context: Vec<String>,
}

impl ToolVerdict {
    fn deny(reason: String) -> Self {
        Self {
            allowed: false,
            reason,
            context: Vec::new(),
        }
    }
}

/// Decides whether the CLI may run `tool` with `args`. The CLI's tools act
/// on this session's workspace, so path-like arguments must stay inside it.
pub async fn check_cli_tool(
    session: &Session,
    hook: &str,
    tool: &str,
    args: &Value,
) -> ToolVerdict {
    let started = Instant::now();
    let verdict = decide(session, tool, args).await;
    if !verdict.allowed {
        session.log("copilot-cli", &format!("denied {tool}: {}", verdict.reason));
    }
    if let Some(audit) = session.audit() {
        let mut input = args.clone();
        bridge_policy::redact_value(&mut input);
        let entry = AuditEntry {
            timestamp: now_timestamp(),
            session_id: session.id().to_owned(),
            hook: format!("{hook}:copilot-cli"),
            tool: tool.to_owned(),
            input: summarize_for_audit(&input),
            output: json!({"reason": bridge_policy::redact(&verdict.reason)}),
            decision: if verdict.allowed { "allow" } else { "deny" }.to_owned(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        if let Err(err) = audit.append(&entry) {
            tracing::error!(tool, error = %err, "audit log append failed");
        }
    }
    verdict
}

async fn decide(session: &Session, tool: &str, args: &Value) -> ToolVerdict {
    let guard = session.guard();
    // The CLI runs its own tools, so the checks our shell and write tools
    // make inside their handlers (shell analysis, read-only mode, the
    // workspace's write globs) must be made here, or they never happen.
    let decision = strictest(
        guard.check_call(tool, args),
        effect_decision(guard, tool, args),
    );
    let reason = match decision.decision {
        DecisionKind::Allow => decision.reason_or_default().to_owned(),
        DecisionKind::Deny => return ToolVerdict::deny(decision.reason_or_default().to_owned()),
        DecisionKind::Ask => {
            if !session
                .approver()
                .approve(tool, args, decision.reason_or_default())
            {
                return ToolVerdict::deny(format!(
                    "approval required and not given: {}",
                    decision.reason_or_default()
                ));
            }
            format!("approved: {}", decision.reason_or_default())
        }
    };
    let rules = session.rules_snapshot();
    let verdict = hooks::evaluate(
        &rules,
        session.id_arc(),
        tool,
        &ToolOwner::Workspace,
        args,
        session.settings().gate_timeout,
    )
    .await;
    if let Some(reason) = verdict.denied {
        return ToolVerdict {
            allowed: false,
            reason,
            context: verdict.context,
        };
    }
    if let Some(audit) = session.audit()
        && let Err(err) = audit.ensure_writable()
    {
        return ToolVerdict::deny(format!(
            "the audit log cannot be written ({err}); no tool runs unaudited"
        ));
    }
    ToolVerdict {
        allowed: true,
        reason,
        context: verdict.context,
    }
}

/// The Copilot CLI's tools that run a shell command (`command`), or type
/// input into a running shell (`input`).
const CLI_SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "powershell",
    "write_bash",
    "write_powershell",
];
/// The Copilot CLI's tools that change files.
const CLI_WRITE_TOOLS: &[&str] = &[
    "write",
    "create",
    "edit",
    "str_replace",
    "str_replace_editor",
    "insert",
    "apply_patch",
];
/// Where those tools name the file they change.
const CLI_PATH_KEYS: &[&str] = &["path", "file_path", "fileName", "filename"];

/// What our own tool of the same effect would decide inside its handler:
/// a shell command goes through shell analysis (dangerous commands denied,
/// unknown ones need approval), a write through read-only mode and the
/// workspace's write globs. Other tools: allow (the rules decide).
fn effect_decision(guard: &Guard, tool: &str, args: &Value) -> Decision {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| args.get(*key).and_then(Value::as_str))
            .filter(|text| !text.trim().is_empty())
    };
    if CLI_SHELL_TOOLS.contains(&tool) {
        return match text(&["command", "input"]) {
            Some(command) => guard.check_shell(command, guard.root().path()),
            None => Decision::deny(format!(
                "{tool} without a command copilot-bridge can check is refused"
            )),
        };
    }
    let reads_only =
        tool == "str_replace_editor" && args.get("command").and_then(Value::as_str) == Some("view");
    if CLI_WRITE_TOOLS.contains(&tool) && !reads_only {
        return match text(CLI_PATH_KEYS) {
            Some(path) => match guard.resolve_write(path) {
                Ok(_) => Decision::allow(),
                Err(denied) => denied,
            },
            // A patch names its files inside its text: without a path to
            // check, only a writable workspace may take it.
            None if guard.read_only() => Decision::deny(format!(
                "{tool} changes files and the workspace is read-only"
            )),
            None => Decision::allow(),
        };
    }
    Decision::allow()
}

/// Deny wins over ask, ask over allow; an ask keeps every reason.
fn strictest(first: Decision, second: Decision) -> Decision {
    match (&first.decision, &second.decision) {
        (DecisionKind::Deny, _) => first,
        (_, DecisionKind::Deny) => second,
        (DecisionKind::Ask, DecisionKind::Ask) => Decision::ask(format!(
            "{}; {}",
            first.reason_or_default(),
            second.reason_or_default()
        )),
        (DecisionKind::Ask, _) => first,
        _ => second,
    }
}

/// The tool name and arguments our policy sees for a CLI permission prompt
/// (`permissionRequest`), by its kind. `None` for a kind we do not know:
/// such a prompt is refused rather than guessed at.
pub fn permission_subject(request: &Value) -> Option<(String, Value)> {
    let text = |key: &str| request.get(key).and_then(Value::as_str).map(str::to_owned);
    let kind = text("kind")?;
    match kind.as_str() {
        // A prompt without the field our check reads is refused (`None`),
        // not checked as an empty command or path.
        "shell" => Some((
            "bash".to_owned(),
            json!({"command": text("fullCommandText")?}),
        )),
        "write" => Some((
            "write".to_owned(),
            json!({"path": text("fileName").or_else(|| text("path"))?}),
        )),
        "read" => Some((
            "view".to_owned(),
            json!({"path": text("path").or_else(|| text("fileName"))?}),
        )),
        "url" => Some(("web_fetch".to_owned(), json!({"url": text("url")?}))),
        "mcp" | "custom-tool" => {
            let tool = text("toolName")?;
            let args = request
                .get("args")
                .or_else(|| request.get("arguments"))
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            Some((tool, args))
        }
        _ => None,
    }
}
