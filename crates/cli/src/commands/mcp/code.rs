//! `copilot-bridge mcp code` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::McpCodeArgs;
use crate::exit::Failure;

pub async fn run(_config: &BridgeConfig, _args: McpCodeArgs) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
