//! The orchestrator's nested agent CLIs (`claude` and `copilot-cli`
//! sub-tasks): each launched with our hooks and MCP servers staged as
//! `copilot-bridge launch` stages them (`bridge_agents::launch`, in a
//! private directory that lives as long as the orchestrator), and the
//! agents' own settings from this process's environment
//! (`AgentEnv::agent_settings`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bridge_agents::AgentEnv;
use bridge_agents::launch::stage;
use bridge_config::BridgeConfig;
use bridge_engine::orchestrate::SubTaskRunner;
use bridge_engine::runner::Runner;
use bridge_engine::runner::agent_cli::{AgentCli, AgentCliRunner};
use bridge_policy::agent_tools::Agent;

use crate::commands::launch::stage_dir;
use crate::exit::Failure;

/// The runners, and the directory their staged files live in.
pub struct NestedRunners {
    pub runners: Vec<(SubTaskRunner, Arc<dyn Runner>)>,
    pub stage: tempfile::TempDir,
}

pub fn runners(config: &BridgeConfig, env: &AgentEnv) -> Result<NestedRunners, Failure> {
    let stage_root = stage_dir()?;
    let program = crate::commands::program(config)?;
    let claude_binary = env
        .claude_binary()
        .map_or_else(|| PathBuf::from("claude"), Path::to_owned);
    let copilot_binary = config
        .cli_path
        .clone()
        .unwrap_or_else(|| PathBuf::from("copilot"));
    let staged_env = |staged: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
        let mut all = env.agent_settings().to_vec();
        all.extend(
            staged
                .iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value))),
        );
        all
    };
    let claude_staged = stage(
        Agent::ClaudeCode,
        &program,
        &stage_root.path().join("claude"),
    )?;
    let claude = AgentCliRunner::new(AgentCli::Claude, claude_binary)
        .with_args(claude_staged.args)
        .with_env(staged_env(&claude_staged.env));
    let copilot_staged = stage(
        Agent::CopilotCli,
        &program,
        &stage_root.path().join("copilot"),
    )?;
    let copilot = AgentCliRunner::new(AgentCli::Copilot, copilot_binary)
        .with_args(copilot_staged.args)
        .with_env(staged_env(&copilot_staged.env));
    Ok(NestedRunners {
        runners: vec![
            (SubTaskRunner::Claude, Arc::new(claude)),
            (SubTaskRunner::CopilotCli, Arc::new(copilot)),
        ],
        stage: stage_root,
    })
}
