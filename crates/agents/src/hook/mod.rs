//! A hook command of Claude Code or the Copilot CLI (docs/hooks.md): its
//! payload read in either dialect ([`payload`]), which agent and which event
//! it is, where the agent works, and the answer in the agent's shape
//! ([`answer`]), combined with the user's own hooks chained after ours
//! ([`chain`]). Deciding the call is not here: the CLI's `hook` command
//! asks the one decision, in a running daemon or in a session of its own.

pub mod answer;
pub mod chain;
pub mod payload;

use std::path::PathBuf;

use bridge_policy::agent_tools::Agent;

pub use answer::{HookAnswer, HookDecision};
pub use payload::{AgentToolCall, Dialect, HookEvent, HookInput, PayloadError};

use crate::env::AgentEnv;
use crate::error::AgentsError;

/// The name `--agent` gives `agent` in our commands (`hook`, `hooks`,
/// `launch`), and so in the hook command lines we write.
pub fn flag_name(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "claude",
        Agent::CopilotCli => "copilot",
        Agent::Codex => "codex",
    }
}

/// The agent `--agent NAME` names.
pub fn agent_from_flag(name: &str) -> Option<Agent> {
    match name {
        "claude" => Some(Agent::ClaudeCode),
        "copilot" => Some(Agent::CopilotCli),
        "codex" => Some(Agent::Codex),
        _ => None,
    }
}

/// Why the event a hook answers is not known; the hook blocks with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("unknown hook event {0:?} (see `copilot-bridge hook --help`)")]
    Unknown(String),
    #[error("the hook event is neither given nor in the payload")]
    Missing,
}

/// The event being answered: the one `given` on the command line, else the
/// payload's; a payload with a tool call and no event is a pre-tool-use.
pub fn event_of(given: Option<&str>, input: &HookInput) -> Result<HookEvent, EventError> {
    match given {
        Some(name) => HookEvent::parse(name).ok_or_else(|| EventError::Unknown(name.to_owned())),
        None => match (input.event, &input.unknown_event) {
            (Some(event), _) => Ok(event),
            (None, Some(name)) => Err(EventError::Unknown(name.clone())),
            (None, None) if input.tool.is_some() => Ok(HookEvent::PreToolUse),
            (None, None) => Err(EventError::Missing),
        },
    }
}

/// The agent the hook serves: `flag` (`--agent`), else the one whose
/// payload shape it is.
pub fn agent_of(flag: Option<Agent>, dialect: Dialect, env: &AgentEnv) -> Agent {
    match flag {
        Some(agent) => agent,
        None => match dialect {
            // The Copilot CLI sends Claude's shape to hooks configured under
            // Claude's event names, and says so in its environment.
            Dialect::Claude if env.in_copilot_cli() => Agent::CopilotCli,
            Dialect::Claude => Agent::ClaudeCode,
            Dialect::Copilot => Agent::CopilotCli,
        },
    }
}

/// The shape to answer in before the payload says: `flag` (`--agent`),
/// else the agent's environment, else Claude's.
pub fn fallback_dialect(flag: Option<Agent>, env: &AgentEnv) -> Dialect {
    match flag {
        Some(Agent::CopilotCli) => Dialect::Copilot,
        // Codex speaks Claude Code's hook language.
        Some(Agent::ClaudeCode | Agent::Codex) => Dialect::Claude,
        None if env.in_claude_code() => Dialect::Claude,
        None if env.in_copilot_cli() => Dialect::Copilot,
        None => Dialect::Claude,
    }
}

/// Where the agent works: the project directory it names in its
/// environment, else the payload's `cwd`, else ours.
pub fn workspace_root(
    agent: Agent,
    input: &HookInput,
    env: &AgentEnv,
) -> Result<PathBuf, AgentsError> {
    if let Some(dir) = env.project_dir(agent) {
        return Ok(dir.to_owned());
    }
    if let Some(cwd) = &input.cwd {
        return Ok(cwd.clone());
    }
    std::env::current_dir().map_err(AgentsError::CurrentDir)
}

/// The agent's own session id, as the hub's session ids can carry it.
pub fn agent_session_id(input: &HookInput) -> String {
    let own: String = input
        .session_id
        .as_deref()
        .unwrap_or("unknown")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    if own.is_empty() {
        "unknown".to_owned()
    } else {
        own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(session_id: Option<&str>) -> HookInput {
        HookInput {
            dialect: Dialect::Claude,
            event: None,
            unknown_event: None,
            session_id: session_id.map(str::to_owned),
            cwd: None,
            tool: None,
            tool_output: None,
            prompt: None,
            error: None,
        }
    }

    #[test]
    fn session_ids_keep_only_what_our_ids_can_carry() {
        assert_eq!(
            agent_session_id(&input(Some("a/b c;d-1.2_3"))),
            "abcd-1.2_3"
        );
        assert_eq!(agent_session_id(&input(Some("///"))), "unknown");
        assert_eq!(agent_session_id(&input(None)), "unknown");
        assert_eq!(agent_session_id(&input(Some(&"x".repeat(100)))).len(), 64);
    }

    #[test]
    fn the_copilot_cli_is_known_by_its_environment_when_it_speaks_claudes_shape() {
        let copilot = AgentEnv::from_vars([("COPILOT_CLI", "1")]);
        let plain = AgentEnv::from_vars([("PATH", "/bin")]);
        assert_eq!(agent_of(None, Dialect::Claude, &copilot), Agent::CopilotCli);
        assert_eq!(agent_of(None, Dialect::Claude, &plain), Agent::ClaudeCode);
        assert_eq!(
            agent_of(Some(Agent::ClaudeCode), Dialect::Copilot, &copilot),
            Agent::ClaudeCode
        );
        assert_eq!(fallback_dialect(None, &copilot), Dialect::Copilot);
        assert_eq!(fallback_dialect(None, &plain), Dialect::Claude);
    }
}
