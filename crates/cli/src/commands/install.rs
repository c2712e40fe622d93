//! The commands that put copilot-bridge into an agent and take it out
//! again. The edits live in `bridge_agents`; here are the arguments and
//! the report.
//!
//! - `hooks install|uninstall|status --agent claude|copilot [--scope
//!   project|user] [--dir DIR]` (docs/hooks.md): `bridge_agents::hooks`.

use std::process::ExitCode;

use bridge_agents::hook::agent_from_flag;
use bridge_agents::hooks::{self, Layout};
use bridge_agents::{AgentEnv, Scope};
use bridge_config::BridgeConfig;

use super::tool::write_stdout;
use crate::args::{HooksArgs, HooksCommand};
use crate::exit::Failure;

pub fn run_hooks(
    config: &BridgeConfig,
    command: HooksCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let report = match command {
        HooksCommand::Install(args) => {
            hooks::install(&super::program(config)?, &layout(&args, env)?)?
        }
        HooksCommand::Uninstall(args) => hooks::uninstall(&layout(&args, env)?)?,
        HooksCommand::Status(args) => hooks::status(&layout(&args, env)?, &config.home)?,
    };
    write_stdout(&report)?;
    Ok(ExitCode::SUCCESS)
}

fn layout(args: &HooksArgs, env: &AgentEnv) -> Result<Layout, Failure> {
    let agent = agent_from_flag(&args.agent)
        .ok_or_else(|| Failure::usage(format!("unknown agent {:?}", args.agent)))?;
    if args.scope == "user" {
        return Ok(Layout::new(agent, Scope::User, env)?);
    }
    let project = super::project_dir(args.dir.as_deref())?;
    Ok(Layout::new(agent, Scope::Project(&project), env)?)
}
