//! The configuration as this command loaded it, and the state directory:
//! a private directory of this user (`bridge_util::owner_only`), its files
//! of secrets readable by nobody else.

use std::os::unix::fs::PermissionsExt;

use bridge_config::BridgeConfig;
use bridge_server::state_file::{APPROVER_TOKEN_FILE, FILE_NAME, TOKEN_FILE};

use super::{Check, invocation, shell_word};
use crate::args::GlobalArgs;

pub(super) fn checks(global: &GlobalArgs, config: &BridgeConfig) -> Vec<Check> {
    vec![configuration(global, config), state_directory(config)]
}

/// Loads the configuration again to see whether it loaded (`main` falls
/// back to the defaults without config.toml for this command).
fn configuration(global: &GlobalArgs, config: &BridgeConfig) -> Check {
    const NAME: &str = "configuration";
    let loaded = global
        .loader()
        .map_err(|failure| failure.message)
        .and_then(|loader| loader.load().map_err(|err| err.to_string()));
    let file = config
        .config_file
        .clone()
        .or_else(|| global.config.clone())
        .unwrap_or_else(|| config.home.join("config.toml"));
    match loaded {
        Err(error) => Check::fail(
            NAME,
            format!("{error}; the defaults are in force for the other checks"),
            format!("edit {} (see docs/configuration.md)", shell_word(&file)),
        ),
        Ok(loaded) => {
            let mut message = match &loaded.config_file {
                Some(file) => format!("loaded {}", file.display()),
                None => format!("no {}; the defaults are in force", file.display()),
            };
            if loaded.warnings.is_empty() {
                return Check::ok(NAME, message);
            }
            message.push_str(&format!("; {}", loaded.warnings.join("; ")));
            Check::warn(
                NAME,
                message,
                "fix the file the warning names (see docs/configuration.md)",
            )
        }
    }
}

fn state_directory(config: &BridgeConfig) -> Check {
    const NAME: &str = "state directory";
    let home = &config.home;
    let shown = shell_word(home);
    let metadata = match std::fs::metadata(home) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Check::ok(
                NAME,
                format!(
                    "{shown} does not exist yet; the first command that needs it makes it (mode 0700)"
                ),
            );
        }
        Err(err) => {
            return Check::fail(
                NAME,
                format!("cannot read {shown}: {err}"),
                "choose a state directory of your own with --home or COPILOT_BRIDGE_HOME",
            );
        }
    };
    if let Err(err) = bridge_util::owner_only::check_private_dir(home) {
        return Check::fail(
            NAME,
            err.to_string(),
            "choose a state directory of your own with --home or COPILOT_BRIDGE_HOME",
        );
    }
    for name in [FILE_NAME, TOKEN_FILE, APPROVER_TOKEN_FILE] {
        let path = home.join(name);
        let Ok(file) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let mode = file.permissions().mode() & 0o777;
        if !file.is_file() || mode & 0o077 != 0 {
            return Check::fail(
                NAME,
                format!(
                    "{} holds a secret but is {} (mode {mode:o})",
                    path.display(),
                    if file.is_file() {
                        "readable by others"
                    } else {
                        "not a regular file"
                    }
                ),
                format!(
                    "chmod 600 {} (or remove it: {} makes a new one)",
                    shell_word(&path),
                    invocation(config)
                ),
            );
        }
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::warn(
            NAME,
            format!(
                "{shown} is open to other users (mode {mode:o}); the next daemon start narrows it to 0700"
            ),
            format!("chmod 700 {shown}"),
        );
    }
    Check::ok(NAME, format!("{shown} (mode {mode:o}, yours)"))
}
