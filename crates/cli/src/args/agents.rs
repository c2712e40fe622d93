//! The flags of the commands that put copilot-bridge into the agents
//! (docs/hooks.md, docs/vscode.md, docs/agents.md): `hook`, `hooks`,
//! `launch`, `copilot-extension`, `vscode`, `setup`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum VscodeCommand {
    /// Write the extension (and which daemon it reaches) into the editor's extensions directory; older versions are replaced.
    Install(VscodeArgs),
    /// Remove it.
    Uninstall(VscodeArgs),
}

#[derive(Debug, Args)]
pub struct VscodeArgs {
    /// Which editor's extensions directory under your home: code (~/.vscode/extensions), insiders, codium, code-server, or remote (~/.vscode-server/extensions: VS Code's Remote - SSH, WSL and Dev Containers server, where the workspace is).
    #[arg(long, value_name = "EDITOR", default_value = "code", value_parser = ["code", "insiders", "codium", "code-server", "remote"])]
    pub editor: String,
    /// The extensions directory itself (overrides --editor).
    #[arg(long, value_name = "DIR")]
    pub extensions_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum CopilotExtensionCommand {
    /// Write the extension (and which daemon it reaches) into the Copilot CLI's extensions directory.
    Install(CopilotExtensionArgs),
    /// Remove it.
    Uninstall(CopilotExtensionArgs),
}

#[derive(Debug, Args)]
pub struct CopilotExtensionArgs {
    /// user ($COPILOT_HOME/extensions/) or project (DIR/.github/extensions/).
    #[arg(long, value_name = "SCOPE", default_value = "user", value_parser = ["project", "user"])]
    pub scope: String,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// claude, copilot or codex.
    #[arg(value_name = "AGENT", value_parser = ["claude", "copilot", "codex"])]
    pub kind: String,
    /// Send the agent's model requests through the daemon's facade (the daemon is started if none runs).
    #[arg(long)]
    pub via_hub: bool,
    /// The agent's binary (default: COPILOT_BRIDGE_AGENT_BINARY, else `claude`, `copilot` or `codex` on PATH).
    #[arg(long, value_name = "BINARY")]
    pub agent: Option<PathBuf>,
    /// With --via-hub: the model the agent asks for (Claude Code: ANTHROPIC_MODEL; Copilot CLI: COPILOT_MODEL; Codex: its model; default: the daemon's default backend's model).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The agent's own arguments, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Put our hook in front of every tool call; the agent's own hooks of those events run through it.
    Install(HooksArgs),
    /// Take our hook out and put the agent's own hooks back.
    Uninstall(HooksArgs),
    /// Which events our hook answers, and how many of yours run through it.
    Status(HooksArgs),
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    /// claude, copilot or codex.
    #[arg(long, value_name = "AGENT", value_parser = ["claude", "copilot", "codex"])]
    pub agent: String,
    /// project (.claude/settings.json, .github/hooks/, .codex/hooks.json) or user (~/.claude/settings.json, $COPILOT_HOME/hooks/, $CODEX_HOME/hooks.json).
    #[arg(long, value_name = "SCOPE", default_value = "project", value_parser = ["project", "user"])]
    pub scope: String,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// session-start, session-end, user-prompt-submit, pre-tool-use, permission-request (Codex), post-tool-use or error (the agents' own names work too); default: the payload's hook_event_name.
    #[arg(value_name = "EVENT")]
    pub event: Option<String>,
    /// The agent whose hook this is: claude, copilot or codex (default: told by the payload and the agent's environment).
    #[arg(long, value_name = "AGENT", value_parser = ["claude", "copilot", "codex"])]
    pub agent: Option<String>,
    /// Also run the user's own hooks kept in FILE (written by `hooks install`) and give one answer for both.
    #[arg(long, value_name = "FILE")]
    pub chain: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// Only this agent's settings: claude, codex, copilot, openclaw.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// The model the agents ask for, where they must name one (Codex, Copilot CLI, OpenClaw; default gpt-4.1).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}
