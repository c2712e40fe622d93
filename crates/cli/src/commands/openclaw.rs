//! `copilot-bridge openclaw register|unregister` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::OpenclawCommand;
use crate::exit::Failure;

pub async fn run(_config: &BridgeConfig, _command: OpenclawCommand) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
