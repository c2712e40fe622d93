//! `copilot-bridge serve`: the daemon in the foreground (also what `daemon
//! start` runs detached).

use std::process::ExitCode;

use bridge_config::BridgeConfig;
use bridge_server::{ConnectionLimits, Daemon, DaemonError, DaemonOptions};

use crate::args::{GlobalArgs, ServeArgs};
use crate::exit::{self, Failure};

pub async fn run(
    global: &GlobalArgs,
    config: BridgeConfig,
    args: ServeArgs,
) -> Result<ExitCode, Failure> {
    // config.toml is read again by the same loader while the daemon runs
    // (docs/configuration.md, "Changes while the daemon runs").
    let loader = global.loader()?;
    let cwd = std::env::current_dir()
        .map_err(|err| Failure::internal(format!("cannot read the current directory: {err}")))?;
    let trust_project_providers = args.trust_project_providers || config.trust_project_providers;
    let limits = ConnectionLimits::configured(&config.connections);
    let options = DaemonOptions {
        config,
        cwd,
        detached: args.detached,
        trust_project_providers,
        limits,
    };
    let daemon = Daemon::start(options)
        .await
        .map_err(daemon_failure)?
        .follow_config(loader);
    daemon.run().await;
    Ok(ExitCode::SUCCESS)
}

fn daemon_failure(err: DaemonError) -> Failure {
    let code = match err {
        DaemonError::Config(_) => exit::CONFIG,
        _ => exit::FAILED,
    };
    Failure::new(code, err.to_string())
}
