//! `copilot-bridge openclaw register|unregister|persona`: puts copilot-bridge
//! into OpenClaw (docs/openclaw.md), takes it out again, and prints the
//! persona snippet that teaches an OpenClaw agent when to delegate.
//!
//! `register` makes three changes, each idempotent:
//!
//! - **the plugin** (assets/openclaw-plugin/, shipped inside this binary):
//!   written to `<home>/openclaw-plugin/`, installed the way `openclaw
//!   plugins install --link` does it (its directory in `plugins.load.paths`,
//!   `plugins.entries.copilot-bridge` enabled, with this program and its
//!   state directory as the plugin's config): the tools `copilot_code`,
//!   `copilot_code_verbose` and `copilot_orchestrate`;
//! - **the MCP server** `mcp.servers.copilot-bridge`: the daemon's
//!   `/mcp/code` over streamable HTTP, working in the default agent's
//!   workspace (`?workspace=`), its token a `${COPILOT_BRIDGE_TOKEN}`
//!   reference, with a request timeout that fits a coding task;
//! - **the token**: kept in `<home>/token` (the daemon uses it on every
//!   start) and given to OpenClaw in `<OpenClaw state>/.env`, which OpenClaw
//!   loads at start, mode 0600.
//!
//! Edits are spliced into the text (`json_edit`), the old file is backed
//! up to `<file>.bak-<timestamp>` first, and the new one replaces it
//! atomically. A second `register` finds nothing to change and writes
//! nothing, not even a backup.

mod dotenv;
mod register;

pub use dotenv::holds as dotenv_holds;
pub use register::TOKEN_VARIABLE;

use std::io::Write;
use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::OpenclawCommand;
use crate::exit::Failure;

/// The persona snippet (`openclaw persona`).
pub const PERSONA: &str = include_str!("../../../assets/openclaw-persona.md");

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
    let plan = register::Plan::new(config, &args, running.as_ref().map(|c| c.file()))?;
    tokio::task::spawn_blocking(move || {
        if registering {
            plan.register()
        } else {
            plan.unregister()
        }
    })
    .await
    .map_err(|err| Failure::internal(format!("the OpenClaw registration failed: {err}")))?
}
