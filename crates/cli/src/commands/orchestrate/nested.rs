//! The orchestrator's nested agent CLIs (`claude` and `copilot-cli`
//! sub-tasks): each launched with our hooks and MCP servers staged as
//! `copilot-bridge launch` stages them (in a private directory that lives
//! as long as the orchestrator), and the agent's own settings from this
//! process's environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use bridge_config::BridgeConfig;
use bridge_engine::orchestrate::SubTaskRunner;
use bridge_engine::runner::Runner;
use bridge_engine::runner::agent_cli::{AgentCli, AgentCliRunner};

use crate::commands::launch::{stage_claude, stage_copilot, stage_dir};
use crate::exit::Failure;

/// Names Claude Code's binary (default: `claude` on PATH).
pub const CLAUDE_BINARY_VARIABLE: &str = "COPILOT_BRIDGE_CLAUDE_BINARY";

/// Variables that configure the agents themselves (their endpoint, model,
/// credentials, home, telemetry): the agent gets these, and the base
/// environment, nothing else.
const AGENT_VARIABLE_PREFIXES: &[&str] = &[
    "ANTHROPIC_",
    "CLAUDE_",
    "COPILOT_",
    "DISABLE_",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "NODE_EXTRA_CA_CERTS",
];

/// The runners, and the directory their staged files live in.
pub struct NestedRunners {
    pub runners: Vec<(SubTaskRunner, Arc<dyn Runner>)>,
    pub stage: tempfile::TempDir,
}

pub fn runners(config: &BridgeConfig) -> Result<NestedRunners, Failure> {
    let stage = stage_dir()?;
    let claude_dir = stage.path().join("claude");
    let copilot_dir = stage.path().join("copilot");
    let env = agent_env();
    let claude_binary = std::env::var_os(CLAUDE_BINARY_VARIABLE)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("claude"));
    let copilot_binary = config
        .cli_path
        .clone()
        .unwrap_or_else(|| PathBuf::from("copilot"));
    let claude = AgentCliRunner::new(AgentCli::Claude, claude_binary)
        .with_args(stage_claude(config, &claude_dir)?)
        .with_env(env.clone());
    let mut copilot_env = env;
    copilot_env.push(("COPILOT_BRIDGE_HOOKS_ACTIVE".into(), "1".into()));
    let copilot = AgentCliRunner::new(AgentCli::Copilot, copilot_binary)
        .with_args(stage_copilot(config, &copilot_dir)?)
        .with_env(copilot_env);
    Ok(NestedRunners {
        runners: vec![
            (SubTaskRunner::Claude, Arc::new(claude)),
            (SubTaskRunner::CopilotCli, Arc::new(copilot)),
        ],
        stage,
    })
}

fn agent_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str().is_some_and(|name| {
                AGENT_VARIABLE_PREFIXES
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
                    && !name.starts_with("COPILOT_BRIDGE_")
            })
        })
        .collect()
}
