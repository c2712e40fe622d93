//! `copilot-bridge copilot-extension install|uninstall [--scope user|project]
//! [--dir DIR]`, the edits: the Copilot CLI extension that puts an
//! interactive Copilot CLI session inside the hub
//! (assets/copilot-extension/extension.mjs; see docs/hooks.md, "The Copilot
//! CLI extension").
//!
//! It is written to `$COPILOT_HOME/extensions/copilot-bridge/` (user) or
//! `DIR/.github/extensions/copilot-bridge/` (project), with a config.json
//! naming this program and its state directory, so the extension reaches
//! (or starts) the same daemon whatever environment the CLI gives it.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::env::{AgentEnv, Scope};
use crate::error::AgentsError;
use crate::json_edit::write_atomically;
use crate::program::Program;

/// The extension's source, shipped inside the binary.
pub const EXTENSION_SOURCE: &str = include_str!("../assets/copilot-extension/extension.mjs");
/// The extension's directory name under `extensions/`.
const NAME: &str = "copilot-bridge";

/// Where the extension of `scope` goes: the Copilot CLI's home, or the
/// project's `.github/`, under `extensions/`.
pub fn directory(scope: Scope<'_>, env: &AgentEnv) -> Result<PathBuf, AgentsError> {
    env.copilot_dir(scope)
        .map(|dir| dir.join("extensions").join(NAME))
        .ok_or(AgentsError::NoCopilotHome)
}

/// Writes the extension and its config.json (this program, its state
/// directory) into `dir`.
pub fn write_extension(program: &Program, dir: &Path) -> Result<(), AgentsError> {
    let settings = json!({"binary": program.path, "home": program.home});
    write_atomically(&dir.join("extension.mjs"), EXTENSION_SOURCE)?;
    write_atomically(
        &dir.join("config.json"),
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&settings).unwrap_or_default()
        ),
    )
}

/// Installs the extension in `dir`: what to tell the user.
pub fn install(program: &Program, dir: &Path) -> Result<String, AgentsError> {
    write_extension(program, dir)?;
    Ok(format!(
        "Installed the copilot-bridge extension in {}.\n\
         The Copilot CLI loads extensions in experimental mode: run `copilot --experimental` \
         (or set \"experimental\": true in its settings.json).\n",
        dir.display()
    ))
}

/// Removes the extension in `dir`: what to tell the user.
pub fn uninstall(dir: &Path) -> Result<String, AgentsError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(format!("Removed {}.\n", dir.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Ok("The copilot-bridge extension is not installed there.\n".to_owned())
        }
        Err(source) => Err(AgentsError::Remove {
            path: dir.to_owned(),
            source,
        }),
    }
}
