//! `copilot-bridge copilot-extension install|uninstall [--scope user|project]
//! [--dir DIR]`: the Copilot CLI extension that puts an interactive Copilot
//! CLI session inside the hub (assets/copilot-extension/extension.mjs; see
//! docs/hooks.md, "The Copilot CLI extension").
//!
//! It is written to `$COPILOT_HOME/extensions/copilot-bridge/` (user) or
//! `DIR/.github/extensions/copilot-bridge/` (project), with a config.json
//! naming this program and its state directory, so the extension reaches
//! (or starts) the same daemon whatever environment the CLI gives it.

use std::path::PathBuf;
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use serde_json::json;

use super::tool::write_stdout;
use crate::args::{CopilotExtensionArgs, CopilotExtensionCommand};
use crate::exit::Failure;
use bridge_agents::json_edit::write_atomically;

/// The extension's source, shipped inside the binary.
pub const EXTENSION_SOURCE: &str = include_str!("../../assets/copilot-extension/extension.mjs");
/// The extension's directory name under `extensions/`.
const NAME: &str = "copilot-bridge";

fn directory(args: &CopilotExtensionArgs) -> Result<PathBuf, Failure> {
    if args.scope == "user" {
        let copilot_home = match std::env::var_os("COPILOT_HOME") {
            Some(dir) => PathBuf::from(dir),
            None => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".copilot"))
                .ok_or_else(|| Failure::usage("neither COPILOT_HOME nor HOME is set"))?,
        };
        return Ok(copilot_home.join("extensions").join(NAME));
    }
    let project = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|err| Failure::usage(format!("cannot read the current directory: {err}")))?,
    };
    Ok(project.join(".github/extensions").join(NAME))
}

/// Writes the extension and its config.json (this program, its state
/// directory) into `dir`.
pub(crate) fn write_extension(config: &BridgeConfig, dir: &std::path::Path) -> Result<(), Failure> {
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?;
    let settings = json!({"binary": exe, "home": config.home});
    write_atomically(&dir.join("extension.mjs"), EXTENSION_SOURCE)?;
    Ok(write_atomically(
        &dir.join("config.json"),
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&settings).unwrap_or_default()
        ),
    )?)
}

pub fn run(config: &BridgeConfig, command: CopilotExtensionCommand) -> Result<ExitCode, Failure> {
    match command {
        CopilotExtensionCommand::Install(args) => {
            let dir = directory(&args)?;
            write_extension(config, &dir)?;
            write_stdout(&format!(
                "Installed the copilot-bridge extension in {}.\n\
                 The Copilot CLI loads extensions in experimental mode: run `copilot --experimental` \
                 (or set \"experimental\": true in its settings.json).\n",
                dir.display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        CopilotExtensionCommand::Uninstall(args) => {
            let dir = directory(&args)?;
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => write_stdout(&format!("Removed {}.\n", dir.display()))?,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    write_stdout("The copilot-bridge extension is not installed there.\n")?;
                }
                Err(err) => {
                    return Err(Failure::internal(format!(
                        "cannot remove {}: {err}",
                        dir.display()
                    )));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
