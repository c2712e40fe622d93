//! `copilot-bridge mcp`: our MCP servers over stdio, and configuration for
//! agents (`mcp config`, the entries of `bridge_agents::mcp_config`).
//! stdout carries the protocol; logs go to stderr.

mod code;
mod memory;
mod session;

use std::io::Write;
use std::process::ExitCode;

use bridge_agents::{AgentEnv, mcp_config};
use bridge_config::BridgeConfig;

use crate::args::{GlobalArgs, McpCommand};
use crate::exit::Failure;

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    command: McpCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    match command {
        McpCommand::Code(args) => code::run(config, args, env).await,
        McpCommand::Memory(args) => memory::run(config, args).await,
        McpCommand::Session(args) => session::run(global, config, args).await,
        McpCommand::Approvals(args) => session::run_approvals(global, config, args).await,
        McpCommand::Config(args) => {
            let agents = super::chosen_agents(args.agent.as_deref(), mcp_config::AGENTS)?;
            let text = mcp_config::text(&agents, &super::program(config)?);
            let _ = write!(std::io::stdout().lock(), "{text}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
