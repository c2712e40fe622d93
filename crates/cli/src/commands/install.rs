//! The commands that put copilot-bridge into an agent and take it out
//! again. The edits live in `bridge_agents`; here are the arguments and
//! the report.
//!
//! - `hooks install|uninstall|status --agent claude|copilot|codex [--scope
//!   project|user] [--dir DIR]` (docs/hooks.md): `bridge_agents::hooks`,
//!   and for Codex the hooks' trust (`bridge_agents::codex`);
//! - `copilot-extension install|uninstall [--scope user|project] [--dir
//!   DIR]` (docs/hooks.md, "The Copilot CLI extension"):
//!   `bridge_agents::copilot_extension`;
//! - `vscode install|uninstall [--editor E] [--extensions-dir DIR]`
//!   (docs/vscode.md): `bridge_agents::vscode`.

use std::path::PathBuf;
use std::process::ExitCode;

use bridge_agents::hook::agent_from_flag;
use bridge_agents::hooks::{self, Layout};
use bridge_agents::{AgentEnv, Scope, copilot_extension, vscode};
use bridge_config::BridgeConfig;
use bridge_policy::agent_tools::Agent;

use super::tool::write_stdout;
use crate::args::{
    CopilotExtensionArgs, CopilotExtensionCommand, HooksArgs, HooksCommand, VscodeArgs,
    VscodeCommand,
};
use crate::exit::Failure;

pub fn run_hooks(
    config: &BridgeConfig,
    command: HooksCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let mut trusted = true;
    let report = match command {
        HooksCommand::Install(args) => {
            let layout = layout(&args, env)?;
            let mut report = hooks::install(&super::program(config)?, &layout)?;
            // Codex runs only hooks it trusts: installed means trusted.
            if layout.agent == Agent::Codex {
                let cwd = codex_cwd(&layout)?;
                let (said, ok) = bridge_agents::codex::trust_installed(&layout, env, &cwd);
                report.push_str(&said);
                trusted = ok;
            }
            report
        }
        HooksCommand::Uninstall(args) => hooks::uninstall(&layout(&args, env)?, &config.home)?,
        HooksCommand::Status(args) => {
            let layout = layout(&args, env)?;
            let mut report = hooks::status(&layout, &config.home)?;
            if layout.agent == Agent::Codex {
                report.push_str(&bridge_agents::codex::trust_status(
                    env,
                    &codex_cwd(&layout)?,
                ));
            }
            report
        }
    };
    write_stdout(&report)?;
    Ok(if trusted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::FAILED)
    })
}

/// Where Codex is asked which hooks it runs: the project, or (user scope,
/// whose hooks every directory gets) the current directory.
fn codex_cwd(layout: &Layout) -> Result<PathBuf, Failure> {
    match &layout.project {
        Some(project) => Ok(project.clone()),
        None => super::project_dir(None),
    }
}

fn layout(args: &HooksArgs, env: &AgentEnv) -> Result<Layout, Failure> {
    let agent = agent_from_flag(&args.agent)
        .ok_or_else(|| Failure::usage(format!("unknown agent {:?}", args.agent)))?;
    with_scope(&args.scope, args.dir.as_deref(), |scope| {
        Ok(Layout::new(agent, scope, env)?)
    })
}

/// `--scope`: the user's, or the project `--dir` (default: the current
/// directory). Resolves it and hands it to `then`.
fn with_scope<T>(
    scope: &str,
    dir: Option<&std::path::Path>,
    then: impl FnOnce(Scope<'_>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    if scope == "user" {
        return then(Scope::User);
    }
    let project = super::project_dir(dir)?;
    then(Scope::Project(&project))
}

pub fn run_copilot_extension(
    config: &BridgeConfig,
    command: CopilotExtensionCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let directory = |args: &CopilotExtensionArgs| {
        with_scope(&args.scope, args.dir.as_deref(), |scope| {
            Ok(copilot_extension::directory(scope, env)?)
        })
    };
    let said = match command {
        CopilotExtensionCommand::Install(args) => {
            copilot_extension::install(&super::program(config)?, &directory(&args)?)?
        }
        CopilotExtensionCommand::Uninstall(args) => {
            copilot_extension::uninstall(&directory(&args)?)?
        }
    };
    write_stdout(&said)?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_vscode(
    config: &BridgeConfig,
    command: VscodeCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let extensions_dir = |args: &VscodeArgs| -> Result<PathBuf, Failure> {
        match &args.extensions_dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(env.vscode_extensions_dir(&args.editor)?),
        }
    };
    let said = match command {
        VscodeCommand::Install(args) => {
            vscode::install(&super::program(config)?, &extensions_dir(&args)?)?
        }
        VscodeCommand::Uninstall(args) => vscode::uninstall(&extensions_dir(&args)?)?,
    };
    write_stdout(&said)?;
    Ok(ExitCode::SUCCESS)
}
