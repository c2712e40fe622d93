//! `copilot-bridge openclaw register|unregister|persona` (docs/openclaw.md):
//! the changes are `bridge_agents::openclaw`'s; here the running daemon it
//! registers, the token it keeps, and the report.

use std::io::Write;
use std::process::ExitCode;

use bridge_agents::AgentsError;
use bridge_agents::openclaw::{PERSONA, Plan, RunningDaemon};
use bridge_config::BridgeConfig;
use bridge_server::state_file::keep_token;

use crate::args::OpenclawCommand;
use crate::exit::Failure;

pub async fn run(config: &BridgeConfig, command: OpenclawCommand) -> Result<ExitCode, Failure> {
    let (registering, args) = match command {
        OpenclawCommand::Register(args) => (true, args),
        OpenclawCommand::Unregister(args) => (false, args),
        OpenclawCommand::Persona => {
            let _ = std::io::stdout().lock().write_all(PERSONA.as_bytes());
            return Ok(ExitCode::SUCCESS);
        }
    };
    let running = bridge_server::find_running(&config.home).await;
    let daemon = running.as_ref().map(|client| client.file());
    let plan = Plan::new(
        config,
        &super::program(config)?,
        args.config_file,
        daemon.map(|file| RunningDaemon {
            host: &file.host,
            port: file.port,
        }),
        args.dry_run,
    );
    // The token OpenClaw sends: the configured one, else the one the daemon
    // keeps (the running daemon's, kept now so it need not restart).
    let configured = config.token.as_ref().map(|token| token.expose().to_owned());
    let running_token = daemon.map(|file| file.token.clone());
    let home = config.home.clone();
    let token = move || match configured {
        Some(token) => Ok(token),
        None => keep_token(&home, running_token.as_deref())
            .map_err(|source| AgentsError::KeepToken { home, source }),
    };
    let said = tokio::task::spawn_blocking(move || {
        if registering {
            plan.register(token)
        } else {
            plan.unregister()
        }
    })
    .await
    .map_err(|err| Failure::internal(format!("the OpenClaw registration failed: {err}")))??;
    let _ = std::io::stdout().lock().write_all(said.as_bytes());
    Ok(ExitCode::SUCCESS)
}
