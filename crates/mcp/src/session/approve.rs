//! The permission-prompt tool `approve`: Claude Code's
//! `--permission-prompt-tool mcp__copilot-bridge__approve` sends the
//! prompts of a run without a terminal (`claude -p`) here, and they wait in
//! the hub's approval queue for a person (docs/approvals.md).
//!
//! Input `{tool_name, input, tool_use_id}`; the answer is the JSON text
//! `{"behavior":"allow","updatedInput":{…}}` or
//! `{"behavior":"deny","message":"…"}`, the shape Claude Code reads. The
//! tool only relays: a call is allowed only by a person's answer (now, or
//! a grant they gave earlier), never by the tool itself.

use std::sync::Arc;

use bridge_engine::Session;
use bridge_policy::Approver;
use bridge_policy::agent_tools::Agent;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};

/// The tool's name (`mcp__<server>__approve` to the agent).
pub const APPROVE_TOOL: &str = "approve";

/// The hook name the relayed prompts are audited under.
const AUDITED_AS: &str = "permission-prompt";

/// Who answers the prompts (the daemon's approval queue).
#[derive(Clone)]
pub struct PermissionPrompts {
    approver: Arc<dyn Approver>,
}

impl PermissionPrompts {
    pub fn new(approver: Arc<dyn Approver>) -> Self {
        Self { approver }
    }

    pub(crate) fn tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "The tool the agent wants to run."},
                "input": {"type": "object", "description": "Its input."},
                "tool_use_id": {"type": "string", "description": "The agent's id of the call."},
            },
            "required": ["tool_name", "input"],
        });
        let schema = schema.as_object().cloned().unwrap_or_default();
        Tool::new(
            APPROVE_TOOL,
            "Claude Code's permission prompt, answered by a person through the copilot-bridge approval queue (`copilot-bridge approvals`). Returns {\"behavior\":\"allow\",\"updatedInput\":…} or {\"behavior\":\"deny\",\"message\":…} as JSON text.",
            Arc::new(schema),
        )
    }

    /// Relays one prompt; a malformed one is `Err` with the reason.
    pub(crate) async fn relay(
        &self,
        session: &Session,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, String> {
        let tool = args
            .get("tool_name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or("`tool_name` must be a non-empty string")?;
        let input = args
            .get("input")
            .filter(|input| input.is_object())
            .ok_or("`input` must be a JSON object")?;
        if let Some(id) = args.get("tool_use_id")
            && !id.is_string()
        {
            return Err("`tool_use_id` must be a string".to_owned());
        }
        let verdict = session
            .relay_permission_prompt(
                Agent::ClaudeCode,
                AUDITED_AS,
                tool,
                input,
                self.approver.as_ref(),
            )
            .await;
        let answer = if verdict.allowed() {
            json!({"behavior": "allow", "updatedInput": input})
        } else {
            json!({"behavior": "deny", "message": verdict.reason()})
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(
            answer.to_string(),
        )]))
    }
}
