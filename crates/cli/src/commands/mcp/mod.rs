//! `copilot-bridge mcp`: our MCP servers over stdio, and configuration for
//! agents. stdout carries the protocol; logs go to stderr.

mod code;
pub(crate) mod config;
mod memory;
mod session;

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::{GlobalArgs, McpCommand};
use crate::exit::Failure;

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    command: McpCommand,
) -> Result<ExitCode, Failure> {
    match command {
        McpCommand::Code(args) => code::run(config, args).await,
        McpCommand::Memory(args) => memory::run(config, args).await,
        McpCommand::Session(args) => session::run(global, config, args).await,
        McpCommand::Config(args) => config::run(config, args),
    }
}
