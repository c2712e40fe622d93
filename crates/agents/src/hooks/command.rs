//! The hook entries `install` writes: the command line of our wrapper (this
//! machine's, or the portable one of a project's shared files), the entry
//! around it in each agent's shape, and how ours are told from the user's.

use std::fmt::Write as _;
use std::path::Path;

use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

use crate::hook::flag_name;
use crate::program::Program;

/// How a hook's command line names the project directory: the variable
/// the agent gives its hooks, or (Codex gives none and runs its hooks in
/// the session's directory) the repository's top, else that directory.
fn project_dir_expression(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "\"$CLAUDE_PROJECT_DIR\"",
        Agent::CopilotCli => "\"$COPILOT_PROJECT_DIR\"",
        Agent::Codex => "\"$(git rev-parse --show-toplevel 2>/dev/null || pwd)\"",
    }
}

/// The variable a machine sets to the binary project-scope hooks run
/// (`copilot-bridge` on `PATH` when unset).
pub const BINARY_VARIABLE: &str = "COPILOT_BRIDGE_BIN";

/// Our hook's command line for a project's shared files: no path of this
/// machine, the chain file found through the agent's project directory.
pub fn portable_hook_command(agent: Agent, event: &str, chain_in_project: &str) -> String {
    format!(
        "\"${{{BINARY_VARIABLE}:-copilot-bridge}}\" hook {event} --agent {} --chain {}/{}",
        flag_name(agent),
        project_dir_expression(agent),
        quote(chain_in_project)
    )
}

/// A hook entry running `command` for every tool, in `agent`'s shape, which
/// the agent lets run `timeout_secs`.
pub fn entry(agent: Agent, command: &str, timeout_secs: u64) -> Value {
    match agent {
        // Codex reads Claude Code's shape (`timeout` in seconds).
        Agent::ClaudeCode | Agent::Codex => json!({"matcher": "*", "hooks": [
            {"type": "command", "command": command, "timeout": timeout_secs}
        ]}),
        Agent::CopilotCli => {
            json!({"type": "command", "bash": command, "timeoutSec": timeout_secs})
        }
    }
}

/// The command line of our hook for `agent`'s `event` (our name): this
/// very binary, the state directory when it is not the default one (so the
/// hook finds the same daemon and audit log), and the chain file if any.
pub fn hook_command(program: &Program, agent: Agent, event: &str, chain: Option<&Path>) -> String {
    let mut command = format!("{} ", quote(&program.path_text()));
    if program.home_configured {
        let _ = write!(
            command,
            "--home {} ",
            quote(&program.home.display().to_string())
        );
    }
    let _ = write!(command, "hook {event} --agent {}", flag_name(agent));
    if let Some(chain) = chain {
        let _ = write!(command, " --chain {}", quote(&chain.display().to_string()));
    }
    command
}

/// `text` in single quotes for `sh`.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Whether a hook entry is one of our wrappers.
pub fn is_ours(entry: &Value) -> bool {
    let commands = entry
        .get("hooks")
        .and_then(Value::as_array)
        .map(|group| {
            group
                .iter()
                .filter_map(|hook| hook["command"].as_str())
                .collect()
        })
        .unwrap_or_else(|| entry["bash"].as_str().into_iter().collect::<Vec<_>>());
    commands.into_iter().any(is_our_wrapper)
}

/// Whether a hook's command line is one of our wrappers (`hook EVENT …
/// --chain FILE`).
pub fn is_our_wrapper(command: &str) -> bool {
    command.contains(" hook ") && command.contains(" --chain ")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn program(home_configured: bool) -> Program {
        Program {
            path: PathBuf::from("/opt/it's/copilot-bridge"),
            home: PathBuf::from("/state"),
            home_configured,
            port: None,
            approval_timeout_secs: 120,
        }
    }

    #[test]
    fn an_agent_lets_our_hook_wait_longer_than_an_ask_may() {
        let mut program = program(false);
        assert_eq!(program.hook_timeout_secs(), 130);
        let command = "'/cb' hook pre-tool-use --agent copilot";
        let timeout = program.hook_timeout_secs();
        assert_eq!(
            entry(Agent::ClaudeCode, command, timeout)["hooks"][0]["timeout"],
            130
        );
        assert_eq!(
            entry(Agent::CopilotCli, command, timeout)["timeoutSec"],
            130
        );
        program.approval_timeout_secs = 0;
        assert_eq!(program.hook_timeout_secs(), 90, "never shorter than before");
    }

    #[test]
    fn the_command_names_a_configured_home_and_quotes_for_sh() {
        let chain = Path::new("/p/.claude/copilot-bridge-hooks.json");
        assert_eq!(
            hook_command(
                &program(true),
                Agent::ClaudeCode,
                "pre-tool-use",
                Some(chain)
            ),
            r"'/opt/it'\''s/copilot-bridge' --home '/state' hook pre-tool-use --agent claude --chain '/p/.claude/copilot-bridge-hooks.json'"
        );
        assert_eq!(
            hook_command(&program(false), Agent::CopilotCli, "session-end", None),
            r"'/opt/it'\''s/copilot-bridge' hook session-end --agent copilot"
        );
    }

    #[test]
    fn only_wrappers_with_a_chain_are_ours() {
        let ours = entry(
            Agent::ClaudeCode,
            "'/cb' hook pre-tool-use --agent claude --chain '/c'",
            90,
        );
        assert!(is_ours(&ours));
        // A staged (launch) hook has no chain, and the user's hooks are not ours.
        assert!(!is_ours(&entry(
            Agent::CopilotCli,
            "'/cb' hook pre-tool-use --agent copilot",
            90
        )));
        assert!(!is_ours(&entry(Agent::CopilotCli, "./lint.sh", 90)));
    }
}
