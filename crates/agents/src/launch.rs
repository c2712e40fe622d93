//! The hub staged around one run of Claude Code or the Copilot CLI, leaving
//! the user's own configuration as it is (docs/hooks.md, "launch"): our
//! hook for every event and our MCP servers, written into a private
//! directory the caller made and removes when the agent is done. Used by
//! `copilot-bridge launch` and by the orchestrator's nested agents.
//!
//! Claude Code gets `--settings FILE` (the hooks) and `--mcp-config FILE`;
//! the Copilot CLI a plugin with `hooks/hooks.json` (`--plugin-dir DIR`,
//! which needs `--experimental`) and `--additional-mcp-config @FILE`;
//! Codex `-c hooks.EVENT=…` and `-c mcp_servers.NAME=…` flags (which its
//! hook trust must cover: `crate::codex`). A
//! `claude -p` run also gets `--permission-prompt-tool` naming the session
//! server's `approve` ([`permission_prompt_args`]).

use std::path::Path;

use bridge_policy::agent_tools::Agent;
use serde_json::{Map, Value, json};

use crate::error::AgentsError;
use crate::hooks::{entry, events, hook_command};
use crate::mcp_config::agent_servers;
use crate::program::Program;

/// Tells our Copilot CLI extension (assets/copilot-extension/extension.mjs)
/// that the staged hooks decide the CLI's tool calls, so it only brings
/// the providers' tools.
pub const HOOKS_ACTIVE_VARIABLE: &str = "COPILOT_BRIDGE_HOOKS_ACTIVE";

/// What the agent is started with for a staged run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    /// Arguments before the user's own.
    pub args: Vec<String>,
    /// Variables to set.
    pub env: Vec<(&'static str, &'static str)>,
}

/// Claude Code's permission prompts, sent to the hub's approval queue: the
/// `approve` tool of the staged session server.
pub fn permission_prompt_tool() -> String {
    format!("mcp__{}__approve", crate::mcp_config::SESSION_SERVER_NAME)
}

/// What a staged Claude Code run without a terminal (`-p`/`--print`)
/// is given so its permission prompts reach a person through the hub,
/// unless the user named a permission-prompt tool of their own.
pub fn permission_prompt_args(agent: Agent, user_args: &[String]) -> Vec<String> {
    let flag_of = |arg: &String| {
        arg.split_once('=')
            .map_or(arg.clone(), |(flag, _)| flag.to_owned())
    };
    let printing = user_args
        .iter()
        .any(|arg| matches!(arg.as_str(), "-p" | "--print"));
    let chosen = user_args
        .iter()
        .any(|arg| flag_of(arg) == "--permission-prompt-tool");
    if agent == Agent::ClaudeCode && printing && !chosen {
        vec![
            "--permission-prompt-tool".to_owned(),
            permission_prompt_tool(),
        ]
    } else {
        Vec::new()
    }
}

/// The agent's whole command line: `staged`'s arguments and the user's.
/// Claude Code gets the user's first: its `--mcp-config` takes any number
/// of values, so a bare prompt after ours would be read as one more config
/// (`launch claude -- 'PROMPT'`); ours come last, each option followed by
/// its value, and the permission-prompt tool of a `-p` run with them.
/// The Copilot CLI gets ours first, as its nested runs are normalized.
pub fn command_line(agent: Agent, staged: &Staged, user_args: &[String]) -> Vec<String> {
    let ours = staged
        .args
        .iter()
        .cloned()
        .chain(permission_prompt_args(agent, user_args));
    match agent {
        Agent::ClaudeCode => user_args.iter().cloned().chain(ours).collect(),
        // Codex's `-c` flags go before its subcommand (`exec`, …).
        Agent::CopilotCli | Agent::Codex => ours.chain(user_args.iter().cloned()).collect(),
    }
}

/// Stages our hooks and MCP servers for `agent` in `dir` (created if
/// needed).
pub fn stage(agent: Agent, program: &Program, dir: &Path) -> Result<Staged, AgentsError> {
    match agent {
        Agent::ClaudeCode => stage_claude(program, dir),
        Agent::CopilotCli => stage_copilot(program, dir),
        Agent::Codex => Ok(stage_codex(program)),
    }
}

/// Our hook for each of `agent`'s events, without a chain: a staged run
/// has no hooks of the user's to run through ours.
fn hooks(agent: Agent, program: &Program) -> Map<String, Value> {
    events(agent)
        .iter()
        .map(|(event, ours)| {
            let command = hook_command(program, agent, ours, None);
            let timeout = program.hook_timeout_secs();
            (
                (*event).to_owned(),
                json!([entry(agent, &command, timeout)]),
            )
        })
        .collect()
}

fn stage_claude(program: &Program, dir: &Path) -> Result<Staged, AgentsError> {
    let agent = Agent::ClaudeCode;
    let settings = dir.join("settings.json");
    write_json(&settings, &json!({"hooks": hooks(agent, program)}))?;
    let mcp = dir.join("mcp.json");
    write_json(&mcp, &agent_servers(agent, program))?;
    Ok(Staged {
        args: vec![
            "--settings".to_owned(),
            settings.display().to_string(),
            "--mcp-config".to_owned(),
            mcp.display().to_string(),
        ],
        env: Vec::new(),
    })
}

/// The Copilot CLI's plugin (our hooks and the extension, which needs
/// `--experimental`) and MCP servers.
fn stage_copilot(program: &Program, dir: &Path) -> Result<Staged, AgentsError> {
    let agent = Agent::CopilotCli;
    let plugin = dir.join("copilot-bridge");
    write_json(
        &plugin.join("plugin.json"),
        &json!({"name": "copilot-bridge", "version": env!("CARGO_PKG_VERSION"),
                "description": "copilot-bridge's policy and providers in this session"}),
    )?;
    write_json(
        &plugin.join("hooks/hooks.json"),
        &json!({"version": 1, "hooks": hooks(agent, program)}),
    )?;
    let mcp = dir.join("mcp.json");
    write_json(&mcp, &agent_servers(agent, program))?;
    Ok(Staged {
        args: vec![
            "--plugin-dir".to_owned(),
            plugin.display().to_string(),
            "--additional-mcp-config".to_owned(),
            format!("@{}", mcp.display()),
            "--experimental".to_owned(),
        ],
        env: vec![(HOOKS_ACTIVE_VARIABLE, "1")],
    })
}

/// Codex's hooks and MCP servers, as configuration flags for this run.
fn stage_codex(program: &Program) -> Staged {
    let mut args = crate::codex::session_flag_hooks(program);
    let servers = agent_servers(Agent::Codex, program);
    for (name, server) in servers["mcpServers"].as_object().into_iter().flatten() {
        args.push("-c".to_owned());
        args.push(format!(
            "mcp_servers.{name}={}",
            crate::codex::toml_inline(server)
        ));
    }
    Staged {
        args,
        env: Vec::new(),
    }
}

/// Writes `value` to `file` in the private stage directory (plainly: the
/// directory is ours, fresh, and gone after the run).
fn write_json(file: &Path, value: &Value) -> Result<(), AgentsError> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|source| AgentsError::CreateDir {
            path: dir.to_owned(),
            source,
        })?;
    }
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    std::fs::write(file, text).map_err(|source| AgentsError::Write {
        path: file.to_owned(),
        source,
    })
}
