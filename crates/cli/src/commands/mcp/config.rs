//! `copilot-bridge mcp config` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::McpConfigArgs;
use crate::exit::Failure;

pub fn run(_config: &BridgeConfig, _args: McpConfigArgs) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
