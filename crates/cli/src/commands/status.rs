//! `copilot-bridge status` (being written).

use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::StatusArgs;
use crate::exit::Failure;

pub async fn run(_config: &BridgeConfig, _args: StatusArgs) -> Result<ExitCode, Failure> {
    Err(Failure::internal("not yet"))
}
