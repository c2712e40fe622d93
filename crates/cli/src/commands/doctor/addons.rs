//! The add-ons outside the coding agents: the VS Code extension in each
//! editor's extensions directory (`bridge_agents::vscode`) and copilot-bridge's
//! registration in OpenClaw (`bridge_agents::openclaw`): there, of the
//! version this program ships, naming a binary that exists, reaching this
//! daemon with its token. Files only, nothing on the network.

use bridge_agents::installed::{self, Install};
use bridge_agents::{AgentEnv, openclaw, vscode};
use bridge_config::BridgeConfig;
use bridge_server::state_file::kept_token;

use super::{Check, invocation};

pub(super) fn checks(config: &BridgeConfig, env: &AgentEnv) -> Vec<Check> {
    let mut checks = vscode_checks(config, env);
    checks.push(openclaw_check(config, env));
    checks
}

fn vscode_checks(config: &BridgeConfig, env: &AgentEnv) -> Vec<Check> {
    let shipped = vscode::version().ok();
    let mut checks = Vec::new();
    for (editor, _) in vscode::EDITORS {
        let Ok(dir) = env.vscode_extensions_dir(editor) else {
            continue;
        };
        let name = format!("vscode extension ({editor})");
        let fix = format!("{} vscode install --editor {editor}", invocation(config));
        for (version, folder) in installed::vscode_extensions(&dir) {
            let install = installed::add_on(&folder).ok().flatten();
            let check = match (&install, &shipped) {
                (None, _) => Check::warn(
                    &name,
                    format!(
                        "{} has no config.json naming a copilot-bridge binary",
                        folder.display()
                    ),
                    &fix,
                ),
                (Some(install), _) if install.missing_binary().is_some() => Check::warn(
                    &name,
                    format!(
                        "{} runs {}, which no longer exists",
                        folder.display(),
                        binary_text(install)
                    ),
                    &fix,
                ),
                (Some(_), Some(shipped)) if *shipped != version => Check::warn(
                    &name,
                    format!(
                        "version {version} in {}; this copilot-bridge ships {shipped}",
                        dir.display()
                    ),
                    &fix,
                ),
                (Some(install), _) => Check::ok(
                    &name,
                    format!(
                        "version {version} in {}, running {}",
                        dir.display(),
                        binary_text(install)
                    ),
                ),
            };
            checks.push(check);
        }
    }
    if checks.is_empty() {
        checks.push(Check::ok(
            "vscode extension",
            format!(
                "not installed (to give VS Code's models and workspace to the hub: {} vscode install; docs/vscode.md)",
                invocation(config)
            ),
        ));
    }
    checks
}

fn binary_text(install: &Install) -> String {
    match &install.binary {
        installed::Binary::Path(path) => path.display().to_string(),
        installed::Binary::Portable => "copilot-bridge from PATH".to_owned(),
    }
}

fn openclaw_check(config: &BridgeConfig, env: &AgentEnv) -> Check {
    const NAME: &str = "openclaw";
    let file = &config.openclaw.config_path;
    let fix = format!("{} openclaw register", invocation(config));
    let on_path = match env.find_program("openclaw") {
        Some(path) => format!("{} on PATH", path.display()),
        None => "not on PATH".to_owned(),
    };
    let registration = match installed::openclaw(file) {
        Ok(Some(registration)) => registration,
        Ok(None) => {
            return Check::ok(
                NAME,
                format!(
                    "{on_path}; copilot-bridge is not registered in {} (to register: {fix}; docs/openclaw.md)",
                    file.display()
                ),
            );
        }
        Err(err) => {
            return Check::warn(
                NAME,
                format!("{on_path}; {err}"),
                format!("correct {} (OpenClaw reads it as JSON5)", file.display()),
            );
        }
    };
    if let Some(install) = &registration.plugin
        && install.missing_binary().is_some()
    {
        return Check::warn(
            NAME,
            format!(
                "the plugin registered in {} runs {}, which no longer exists",
                file.display(),
                binary_text(install)
            ),
            fix,
        );
    }
    let Some(url) = &registration.server_url else {
        return Check::warn(
            NAME,
            format!(
                "{} has the plugin but not the MCP server mcp.servers.copilot-bridge",
                file.display()
            ),
            fix,
        );
    };
    let port = config.port.to_string();
    let url_port = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|authority| authority.rsplit_once(':'))
        .map(|(_, port)| port);
    if config.port != 0 && url_port != Some(port.as_str()) {
        return Check::warn(
            NAME,
            format!(
                "the MCP server registered in {} is {}, not the configured port {port}",
                file.display(),
                bridge_policy::redact::shorten(url, 120)
            ),
            fix,
        );
    }
    let token_given = match kept_token(&config.home) {
        Ok(Some(token)) => openclaw::has_token(&config.openclaw.state_dir, &token),
        _ => false,
    };
    if !token_given {
        return Check::warn(
            NAME,
            format!(
                "OpenClaw's {} does not give it the daemon's kept token as {}",
                openclaw::dotenv_file(&config.openclaw.state_dir).display(),
                openclaw::TOKEN_VARIABLE
            ),
            fix,
        );
    }
    Check::ok(NAME, format!("{on_path}; registered in {}", file.display()))
}
