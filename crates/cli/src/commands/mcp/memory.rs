//! `copilot-bridge mcp memory` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::McpMemoryArgs;
use crate::exit::Failure;

pub async fn run(_config: &BridgeConfig, _args: McpMemoryArgs) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
