//! `copilot-bridge mcp session` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::McpSessionArgs;
use crate::exit::Failure;

pub async fn run(_config: &BridgeConfig, _args: McpSessionArgs) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
