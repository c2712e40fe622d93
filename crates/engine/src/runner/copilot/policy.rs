//! Our policy over the CLI's tools: its `preToolUse` and `preMcpToolCall`
//! hooks and its permission prompts are answered by the one decision every
//! call gets ([`Session::decide`]), and each answer is audited.
//!
//! The CLI runs its own tools, so we tell the decision who runs them: the
//! CLI itself ([`Agent::CopilotCli`]: its shell and file tools, whose
//! commands and writes the decision checks), or an MCP server of the
//! session, whose tools the CLI names `server-tool` where our rules (and
//! every other door) say `server__tool`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bridge_policy::agent_tools::Agent;
use bridge_policy::{Approval, ApprovalFuture, Approver, Ask, Scope, Surface};
use bridge_util::sync::lock;
use serde_json::{Value, json};

use crate::decide::Verdict;
use crate::mcp_client::exposed_name;
use crate::session::Session;
use crate::tools::ToolOwner;

/// How the CLI names tools, for the MCP servers its session was given.
#[derive(Debug, Clone, Default)]
pub struct CliToolNames {
    /// The session's MCP servers, longest name first, so `a-b-tool` is
    /// read as server `a-b` when both `a` and `a-b` exist.
    mcp_servers: Vec<String>,
    /// The server this process serves the session's own tools on
    /// (crate::runner::served_tools): their calls are decided when they run.
    hub_server: Option<String>,
}

impl CliToolNames {
    pub fn new<'a>(mcp_servers: impl IntoIterator<Item = &'a String>) -> Self {
        let mut mcp_servers: Vec<String> = mcp_servers.into_iter().cloned().collect();
        mcp_servers.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Self {
            mcp_servers,
            hub_server: None,
        }
    }

    /// The same names, `server` being the one this process serves.
    #[must_use]
    pub fn with_hub_server(mut self, server: &str) -> Self {
        self.hub_server = Some(server.to_owned());
        self
    }

    /// Whether `owner` is the server this process serves the session's own
    /// tools on.
    pub fn served_by_hub(&self, owner: &ToolOwner) -> bool {
        matches!((owner, &self.hub_server), (ToolOwner::Mcp(server), Some(hub)) if server == hub)
    }

    /// The name our policy knows a CLI tool by, and who runs it.
    pub fn subject(&self, cli_name: &str) -> (String, ToolOwner) {
        for server in &self.mcp_servers {
            if let Some(tool) = cli_name
                .strip_prefix(server.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .filter(|tool| !tool.is_empty())
            {
                return (
                    exposed_name(server, tool),
                    ToolOwner::Mcp(server.to_owned()),
                );
            }
        }
        (cli_name.to_owned(), ToolOwner::Agent(Agent::CopilotCli))
    }
}

/// Decides whether the CLI may run `tool` (already in our naming) with
/// `args`, and audits the answer as `hook` of the Copilot CLI.
pub async fn check_cli_tool(
    session: &Session,
    hook: &str,
    tool: &str,
    owner: &ToolOwner,
    args: &Value,
) -> Verdict {
    session
        .check_agent_tool(Agent::CopilotCli, hook, tool, owner, args)
        .await
}

/// The session's approver for one run of the CLI, which asks about one
/// tool call twice — its `preToolUse` hook, then its permission prompt: a
/// person's "allow" of the first answers the second, so nobody is asked
/// the same thing twice.
pub(crate) struct AskedOnce {
    inner: Arc<dyn Approver>,
    /// The calls a person allowed and the CLI has not asked about again
    /// (tool, redacted arguments, who allowed), newest last.
    allowed: Mutex<VecDeque<(String, Value, Surface)>>,
}

/// Calls remembered at once (the CLI asks again right after its hook).
const REMEMBERED: usize = 16;

impl AskedOnce {
    pub(crate) fn new(inner: Arc<dyn Approver>) -> Self {
        Self {
            inner,
            allowed: Mutex::default(),
        }
    }
}

impl Approver for AskedOnce {
    fn approve(&self, ask: Ask) -> ApprovalFuture<'_> {
        let remembered = {
            let mut allowed = lock(&self.allowed);
            allowed
                .iter()
                .position(|(tool, args, _)| *tool == ask.tool && *args == ask.arguments)
                .and_then(|index| allowed.remove(index))
        };
        if let Some((_, _, surface)) = remembered {
            return Box::pin(std::future::ready(Approval::Allowed {
                scope: Scope::Once,
                surface,
                waited: std::time::Duration::ZERO,
            }));
        }
        Box::pin(async move {
            let key = (ask.tool.clone(), ask.arguments.clone());
            let answer = self.inner.approve(ask).await;
            if let Approval::Allowed { surface, .. } = &answer {
                let mut allowed = lock(&self.allowed);
                allowed.push_back((key.0, key.1, *surface));
                while allowed.len() > REMEMBERED {
                    allowed.pop_front();
                }
            }
            answer
        })
    }

    fn leaves_asking_to_caller(&self) -> bool {
        self.inner.leaves_asking_to_caller()
    }
}

/// The tool our policy sees for a CLI permission prompt
/// (`permissionRequest`), by its kind: its name in our naming, who runs it,
/// and its arguments. `None` for a kind we do not know: such a prompt is
/// refused rather than guessed at.
pub fn permission_subject(request: &Value) -> Option<(String, ToolOwner, Value)> {
    let text = |key: &str| request.get(key).and_then(Value::as_str).map(str::to_owned);
    let cli = |name: &str, args: Value| {
        Some((name.to_owned(), ToolOwner::Agent(Agent::CopilotCli), args))
    };
    let args = || {
        request
            .get("args")
            .or_else(|| request.get("arguments"))
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    };
    let kind = text("kind")?;
    match kind.as_str() {
        // A prompt without the field our check reads is refused (`None`),
        // not checked as an empty command or path.
        "shell" => cli("bash", json!({"command": text("fullCommandText")?})),
        "write" => cli(
            "write",
            json!({"path": text("fileName").or_else(|| text("path"))?}),
        ),
        "read" => cli(
            "view",
            json!({"path": text("path").or_else(|| text("fileName"))?}),
        ),
        "url" => cli("web_fetch", json!({"url": text("url")?})),
        "mcp" => {
            let server = text("serverName")?;
            let tool = text("toolName")?;
            Some((exposed_name(&server, &tool), ToolOwner::Mcp(server), args()))
        }
        "custom-tool" => cli(&text("toolName")?, args()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_tools_are_known_by_our_name_and_their_server() {
        let servers = ["bridgecode".to_owned(), "a".to_owned(), "a-b".to_owned()];
        let names = CliToolNames::new(&servers);
        assert_eq!(
            names.subject("bridgecode-copilot_list_files"),
            (
                "bridgecode__copilot_list_files".to_owned(),
                ToolOwner::Mcp("bridgecode".to_owned())
            )
        );
        assert_eq!(
            names.subject("a-b-tool"),
            ("a-b__tool".to_owned(), ToolOwner::Mcp("a-b".to_owned()))
        );
        assert_eq!(
            names.subject("a-tool"),
            ("a__tool".to_owned(), ToolOwner::Mcp("a".to_owned()))
        );
        assert!(!names.served_by_hub(&ToolOwner::Mcp("a".to_owned())));
        let names = names.with_hub_server("a-b");
        assert!(names.served_by_hub(&names.subject("a-b-tool").1));
        assert!(!names.served_by_hub(&names.subject("a-tool").1));
        assert!(!names.served_by_hub(&ToolOwner::Agent(Agent::CopilotCli)));
        for own in ["bash", "bridgecode", "bridgecode-", "view"] {
            assert_eq!(
                names.subject(own),
                (own.to_owned(), ToolOwner::Agent(Agent::CopilotCli))
            );
        }
    }
}
