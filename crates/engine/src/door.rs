//! Which way a session's client came to the hub: what the dashboard groups
//! sessions by, and what a person reads beside a session's name.

use bridge_policy::agent_tools::Agent;
use serde::Serialize;

/// The door a session (or a conversation through the facade) came in by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Door {
    /// A `/rpc` client (`session.create`), and the daemon's default session
    /// every door without a session of its own shares.
    Rpc,
    /// Our MCP servers' tasks (`copilot_code*`).
    Mcp,
    /// An agent's hooks (and, through the facade, its model requests).
    ClaudeCode,
    Codex,
    CopilotCli,
    #[serde(rename = "openclaw")]
    OpenClaw,
    #[serde(rename = "vscode")]
    VsCode,
    /// A command of this binary in its own process (`run`, `tool`).
    Cli,
    /// An orchestrator's sub-task.
    Orchestrator,
    /// A facade client the hub does not recognize (any OpenAI or Anthropic
    /// SDK).
    Facade,
}

impl Door {
    /// The door of `agent`'s hook sessions.
    pub fn of_agent(agent: Agent) -> Self {
        match agent {
            Agent::ClaudeCode => Self::ClaudeCode,
            Agent::Codex => Self::Codex,
            Agent::CopilotCli => Self::CopilotCli,
        }
    }

    /// How people call it.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Rpc => "/rpc",
            Self::Mcp => "MCP",
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::CopilotCli => "Copilot CLI",
            Self::OpenClaw => "OpenClaw",
            Self::VsCode => "VS Code",
            Self::Cli => "copilot-bridge",
            Self::Orchestrator => "orchestrator",
            Self::Facade => "OpenAI/Anthropic API",
        }
    }
}
