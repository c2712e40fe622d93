//! The command line.

use std::path::PathBuf;

use bridge_config::{BridgeConfig, ConfigLoader};
use clap::{Args, Parser, Subcommand};

use crate::exit::Failure;

mod agents;
mod chat;
mod doctor;
mod hook_only;
mod install;

pub use agents::{
    CopilotExtensionArgs, CopilotExtensionCommand, HookArgs, HooksArgs, HooksCommand, LaunchArgs,
    SetupArgs, VscodeArgs, VscodeCommand,
};
pub use chat::ChatArgs;
pub use doctor::DoctorArgs;
pub use install::{CompletionArgs, ServiceCommand, ServiceInstallArgs, VersionArgs};

/// One local hub for coding agents, LLM backends and tool providers, with one
/// security layer in the middle.
#[derive(Debug, Parser)]
#[command(name = "copilot-bridge", version, about, long_about = None)]
#[command(after_help = "Exit codes: 0 ok, 1 the command failed, 2 usage error, \
3 configuration error, 4 denied by policy. See docs/cli.md.")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Settings every command accepts; each overrides its environment variable.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// State directory (overrides COPILOT_BRIDGE_HOME).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Config file to read instead of $COPILOT_BRIDGE_HOME/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log level: debug, info, warning, error, none, all (overrides COPILOT_LOG_LEVEL).
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Daemon port (overrides COPILOT_BRIDGE_PORT).
    #[arg(long, global = true, value_name = "PORT")]
    pub port: Option<String>,
    /// Allow writes (sets read_only = false; overrides COPILOT_BRIDGE_READ_ONLY).
    #[arg(long, global = true)]
    pub writable: bool,
}

impl GlobalArgs {
    pub fn load_config(&self) -> Result<BridgeConfig, Failure> {
        self.loader()?.load().map_err(Failure::config)
    }

    /// The loader of this command's configuration: the process's
    /// environment and these flags (a daemon reloads config.toml with it).
    pub fn loader(&self) -> Result<ConfigLoader, Failure> {
        use bridge_config::keys;
        let mut loader = ConfigLoader::from_process();
        if let Some(home) = &self.home {
            let home = home.to_str().ok_or_else(|| {
                Failure::new(
                    crate::exit::CONFIG,
                    format!("configuration error: --home {home:?} is not valid UTF-8"),
                )
            })?;
            loader = loader.flag(keys::HOME, home, "--home");
        }
        if let Some(path) = &self.config {
            loader = loader.config_file(path);
        }
        if let Some(level) = &self.log_level {
            loader = loader.flag(keys::LOG_LEVEL, level, "--log-level");
        }
        if let Some(port) = &self.port {
            loader = loader.flag(keys::PORT, port, "--port");
        }
        if self.writable {
            loader = loader.flag(keys::READ_ONLY, "false", "--writable");
        }
        Ok(loader)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Run one workspace tool through the policy and print its JSON result.
    Tool(ToolArgs),
    /// List the workspace tools (with their argument schemas: --json).
    Tools(ToolsArgs),
    /// Check the LLM backend: which one is selected and why, auth, models, one tiny chat.
    Validate,
    /// Run the daemon in the foreground: provider gateway, /rpc and /healthz on one port.
    Serve(ServeArgs),
    /// Start, stop or inspect a background daemon.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Print a fresh project provider token (TAP_PROVIDER_TOKEN) minted by the running daemon.
    ProviderToken(ProviderTokenArgs),
    /// List the pairing codes external providers are waiting for.
    Pair,
    /// Run a coding task with the agent and print the result as Markdown (see docs/runners.md).
    Run(RunArgs),
    /// Split a task into sub-tasks and run them in parallel waves (see docs/orchestrator.md).
    Orchestrate(OrchestrateArgs),
    /// List, show, resume or delete saved sessions (see docs/sessions.md).
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// See and answer the tool calls waiting for a person at the daemon, keep or revoke rules (see docs/approvals.md).
    Approvals(ApprovalsArgs),
    /// Print the audit log (every tool call, its decision and why), filtered; --follow prints new entries as they come.
    Audit(AuditArgs),
    /// Talk to the hub's own agent in the terminal, in a daemon session (starts the daemon if none runs; see docs/chat.md).
    Chat(ChatArgs),
    /// Open the dashboard in the browser on a one-time login link (starts the daemon if none runs; see docs/dashboard.md).
    Ui(UiArgs),
    /// Serve one of copilot-bridge's MCP servers over stdio, or print MCP configuration for agents (see docs/mcp-servers.md).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Register copilot-bridge with OpenClaw, or remove it (see docs/mcp-servers.md).
    #[command(subcommand)]
    Openclaw(OpenclawCommand),
    /// The running daemon: backends, endpoint URLs, providers, sessions, policy (see docs/facade.md).
    Status(StatusArgs),
    /// Print what to paste so Claude Code, Codex, Copilot CLI or OpenClaw send their model requests through the daemon (see docs/agents.md).
    Setup(SetupArgs),
    /// Answer a Claude Code or Copilot CLI hook: the hook JSON on stdin, the decision on stdout (see docs/hooks.md).
    Hook(HookArgs),
    /// Install, remove or show copilot-bridge's hooks in Claude Code's or the Copilot CLI's configuration (see docs/hooks.md).
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Run Claude Code or the Copilot CLI with the hub's hooks and MCP servers staged for this run (--via-hub: the daemon's facade as its model endpoint).
    Launch(LaunchArgs),
    /// Install or remove the Copilot CLI extension that joins interactive Copilot CLI sessions to the hub (see docs/hooks.md).
    #[command(subcommand)]
    CopilotExtension(CopilotExtensionCommand),
    /// Install or remove the Copilot Bridge extension for VS Code: the editor's workspace and chat models for every agent (see docs/vscode.md).
    #[command(subcommand)]
    Vscode(VscodeCommand),
    // copilot-bridge itself as an installed program (args/install.rs, docs/install.md).
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish (see docs/install.md).
    Completion(CompletionArgs),
    /// Print the version, the git commit, the build date and the target (--json for JSON).
    Version(VersionArgs),
    /// Install, remove or inspect the user service (systemd user unit, launchd agent) that keeps the daemon running (see docs/install.md).
    #[command(subcommand)]
    Service(ServiceCommand),
    /// Check the setup: state directory, daemon, port, backends, agents, add-ons, .agent-policy.yaml; each with the command that fixes it (see docs/cli.md).
    Doctor(DoctorArgs),
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The code tools (copilot_read_file, copilot_create_file, copilot_list_files, copilot_code_task) over stdio.
    Code(McpCodeArgs),
    /// OpenClaw's memory (openclaw_memory_search, openclaw_memory_read, openclaw_user_prefs) over stdio.
    Memory(McpMemoryArgs),
    /// A daemon session's provider tools over stdio (starts the daemon if needed).
    Session(McpSessionArgs),
    /// Claude Code's permission-prompt tool `approve` over stdio: `claude -p --permission-prompt-tool mcp__copilot-bridge__approve` (see docs/approvals.md).
    Approvals(McpSessionArgs),
    /// Print ready-to-paste MCP configuration for OpenClaw, Copilot CLI, Claude Code and Codex.
    Config(McpConfigArgs),
}

#[derive(Debug, Args)]
pub struct McpCodeArgs {
    /// Workspace the tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpMemoryArgs {
    /// OpenClaw's workspace or memory root (default: detected; also OPENCLAW_WORKSPACE).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpSessionArgs {
    /// The daemon session whose provider tools to serve (default: the daemon's default session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct McpConfigArgs {
    /// Only this agent's configuration: openclaw, copilot, claude, codex.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum OpenclawCommand {
    /// Install copilot-bridge's plugin (copilot_code, copilot_code_verbose, copilot_orchestrate) and MCP server in OpenClaw (idempotent, backs up first; see docs/openclaw.md).
    Register(OpenclawArgs),
    /// Remove what `register` added (idempotent, backs up first).
    Unregister(OpenclawArgs),
    /// Print the persona snippet that teaches an OpenClaw agent when to delegate to Copilot and how to write the task.
    Persona,
}

#[derive(Debug, Args)]
pub struct OpenclawArgs {
    /// OpenClaw's configuration file (default: ~/.openclaw/openclaw.json, or OPENCLAW_CONFIG_PATH).
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Print the change instead of writing it.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Spawn the providers a workspace's tap.config.json declares
    /// (also COPILOT_BRIDGE_TRUST_PROJECT_PROVIDERS).
    #[arg(long)]
    pub trust_project_providers: bool,
    /// Started by `daemon start`: exit once idle (not for users).
    #[arg(long, hide = true)]
    pub detached: bool,
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start the daemon in the background (no-op when one is running).
    Start(ServeArgs),
    /// Stop the running daemon.
    Stop,
    /// Say whether a daemon is running, with its pid, port, sessions and providers.
    Status {
        /// Print the daemon's full status as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ProviderTokenArgs {
    /// The session the token binds its provider to (default: the daemon's default session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration, secrets redacted, with the source of each value.
    Show {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// The tool, e.g. read_file, search_code, apply_patch (see `copilot-bridge tools`,
    /// or for --session the session's tools, providers' included).
    pub name: String,
    /// Arguments as a JSON object; `-` reads them from standard input.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "session")]
    pub cwd: Option<PathBuf>,
    /// Call the tool in this session of the running daemon (`default` = its
    /// default session) instead of locally: provider tools work too.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Print compact JSON instead of pretty JSON.
    #[arg(long)]
    pub compact: bool,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the full JSON specs (name, description, input schema, effect).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do, in plain words.
    pub task: String,
    /// Model to use (default: COPILOT_BYOK_MODEL, else the backend's default).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Stop the run after this many seconds (default: no limit).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Who does the work: native (our agent loop) or copilot (the GitHub Copilot CLI).
    #[arg(long, value_name = "RUNNER", default_value = "native",
          value_parser = ["native", "copilot"])]
    pub runner: String,
    /// Model turns before the run stops.
    #[arg(long, value_name = "N", default_value_t = crate::commands::run::default_max_turns())]
    pub max_turns: u32,
    /// Print a numbered live log of each step before the result.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print the run report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct OrchestrateArgs {
    /// What to do, in plain words (with --plan: optional, a title for the plan).
    #[arg(required_unless_present_any = ["plan", "resume"])]
    pub task: Option<String>,
    /// Run this plan (JSON or YAML in the TaskPlan shape) instead of asking the model for one.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub plan: Option<PathBuf>,
    /// Print the plan (as a plan file) and stop.
    #[arg(long, conflicts_with = "resume")]
    pub plan_only: bool,
    /// Continue an orchestration: run only its sub-tasks that had not completed.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// A value for `{{KEY}}` in the plan file's descriptions (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Sub-tasks that run at once.
    #[arg(long, value_name = "N", default_value_t = bridge_engine::orchestrate::DEFAULT_MAX_CONCURRENCY)]
    pub max_concurrency: usize,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub cwd: Option<PathBuf>,
    /// Model for planning and native sub-tasks.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Runner of sub-tasks that do not name one: native, copilot, claude or copilot-cli.
    #[arg(long, value_name = "RUNNER", default_value = "native")]
    pub runner: String,
    /// Stop the whole plan after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print the result as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Print the login URL (it works once, for 60 seconds) instead of opening a browser.
    #[arg(long)]
    pub no_open: bool,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Keep printing new entries as they are written (Ctrl-C to stop).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Only this session's entries.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only entries with this decision.
    #[arg(long, value_parser = ["allow", "ask", "deny"])]
    pub decision: Option<String>,
    /// Only calls of this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only the last N entries that match (then new ones, with --follow).
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
    /// Print each entry as its JSON line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub command: Option<ApprovalsCommand>,
    /// Print JSON instead of a table (without a subcommand: `list --json`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// The asks waiting for an answer, oldest first (the default).
    List {
        /// Only the asks of this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Allow the call of ask ID (once, unless --session or --rule).
    Allow {
        /// The ask's id (see `approvals list`).
        id: String,
        /// Also allow the same command or tool for the rest of the session.
        #[arg(long, conflicts_with = "rule")]
        session: bool,
        /// Keep a rule for the workspace: the same command or tool is allowed in every session there.
        #[arg(long)]
        rule: bool,
        /// How long the rule lasts: 90s, 30m, 8h, 7d (default: until revoked).
        #[arg(long = "for", value_name = "DURATION", requires = "rule", value_parser = parse_duration_secs)]
        for_secs: Option<u64>,
    },
    /// Deny the call of ask ID.
    Deny {
        /// The ask's id (see `approvals list`).
        id: String,
        /// Why: the caller is told.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Print each ask as it arrives and how it was answered; on a terminal, answer it inline.
    Watch {
        /// No desktop notification (notify-send) for a new ask.
        #[arg(long)]
        no_notify: bool,
        /// Print each event as one JSON line; never prompt.
        #[arg(long)]
        json: bool,
    },
    /// The rules kept per workspace.
    Rules {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a rule (its text as `approvals rules` shows it, e.g. "run cargo test").
    Revoke {
        rule: String,
        /// Only in this workspace (default: in every workspace).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

/// `90s`, `30m`, `8h`, `7d` or plain seconds, as seconds (at least 1).
fn parse_duration_secs(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let per_unit = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        _ => {
            return Err(format!(
                "{text:?} is not a duration (e.g. 90s, 30m, 8h, 7d)"
            ));
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(per_unit))
        .filter(|secs| *secs > 0)
        .ok_or_else(|| format!("{text:?} is not a duration (e.g. 90s, 30m, 8h, 7d)"))
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the saved sessions, most recently updated first.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's transcript: prompts, answers, tool calls, errors, usage.
    Show {
        /// The session id (see `sessions list`).
        id: String,
        /// Print the session's events as JSON instead of a transcript.
        #[arg(long)]
        json: bool,
    },
    /// Continue a session with a new task, in its workspace, with its model and runner.
    Resume(SessionsResumeArgs),
    /// Delete a session's log.
    Rm {
        /// The session id (see `sessions list`).
        id: String,
    },
}

#[derive(Debug, Args)]
pub struct SessionsResumeArgs {
    /// The session id (see `sessions list`).
    pub id: String,
    /// What to do next, in plain words.
    pub task: String,
    /// Model to use (default: the one the session used).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Stop the run after this many seconds (default: no limit).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Model turns before the run stops.
    #[arg(long, value_name = "N", default_value_t = crate::commands::run::default_max_turns())]
    pub max_turns: u32,
    /// Print a numbered live log of each step before the result.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print the run report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}
