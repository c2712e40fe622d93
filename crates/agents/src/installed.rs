//! What of ours is installed where, and which copilot-bridge binary each
//! install runs: the hooks `hooks install` wrote (hooks/), the Copilot CLI
//! extension (copilot_extension.rs), the VS Code extension (vscode.rs), the
//! MCP entries `mcp config` prints (mcp_config.rs) once pasted into an
//! agent's file, and OpenClaw's registration (openclaw/). Read only: what
//! `copilot-bridge doctor` checks (docs/cli.md, "doctor"), above all that
//! a binary an agent runs still exists after an upgrade or a move.

use std::path::{Path, PathBuf};

use bridge_policy::agent_tools::Agent;
use serde_json::Value;

use crate::env::{AgentEnv, Scope};
use crate::error::AgentsError;
use crate::hooks::{self, BINARY_VARIABLE, Layout, is_our_wrapper};
use crate::json_edit::{self, read_if_present};
use crate::mcp_config::SESSION_SERVER_NAME;

/// The binary an install runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binary {
    /// This path, named in the agent's file.
    Path(PathBuf),
    /// `${COPILOT_BRIDGE_BIN:-copilot-bridge}`: a project's shared hooks,
    /// whose binary this machine sets or `PATH` finds.
    Portable,
}

/// One install of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// The file that holds it.
    pub file: PathBuf,
    pub binary: Binary,
}

impl Install {
    /// The binary it names, when that is a path that no longer exists.
    pub fn missing_binary(&self) -> Option<&Path> {
        match &self.binary {
            Binary::Path(path) if !path.is_file() => Some(path),
            _ => None,
        }
    }
}

/// The program a hook's command line runs: the first word, as
/// `hooks::command` quotes it for `sh` (or the portable expression).
pub fn program_of(command: &str) -> Option<Binary> {
    let command = command.trim_start();
    if command.starts_with(&format!("\"${{{BINARY_VARIABLE}:-")) {
        return Some(Binary::Portable);
    }
    let mut rest = command.strip_prefix('\'')?;
    let mut path = String::new();
    loop {
        let end = rest.find('\'')?;
        path.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        // `'\''`: a quote inside the quoted word.
        match rest.strip_prefix("\\''") {
            Some(after) => {
                path.push('\'');
                rest = after;
            }
            None => return Some(Binary::Path(PathBuf::from(path))),
        }
    }
}

/// Our hooks for `agent` in `scope`, one install per file and binary;
/// empty when none are installed.
pub fn hooks(agent: Agent, scope: Scope<'_>, env: &AgentEnv) -> Result<Vec<Install>, AgentsError> {
    let layout = Layout::new(agent, scope, env)?;
    let file = layout.our_file();
    let Some(text) = read_if_present(&file)? else {
        return Ok(Vec::new());
    };
    let document = json_edit::parse(&text).map_err(|source| AgentsError::Unreadable {
        path: file.clone(),
        source,
    })?;
    let mut installs: Vec<Install> = Vec::new();
    for (event, _) in hooks::events(agent) {
        let entries = json_edit::get_at(&document, &["hooks", event]).and_then(Value::as_array);
        for command in entries.into_iter().flatten().flat_map(commands) {
            if !is_our_wrapper(command) {
                continue;
            }
            let Some(binary) = program_of(command) else {
                continue;
            };
            let install = Install {
                file: file.clone(),
                binary,
            };
            if !installs.contains(&install) {
                installs.push(install);
            }
        }
    }
    Ok(installs)
}

/// The command lines of one hook entry, in either agent's shape
/// (`hooks::entry`).
fn commands(entry: &Value) -> Vec<&str> {
    match entry.get("hooks").and_then(Value::as_array) {
        Some(group) => group
            .iter()
            .filter_map(|hook| hook["command"].as_str())
            .collect(),
        None => entry["bash"].as_str().into_iter().collect(),
    }
}

/// The `binary` an add-on's `config.json` in `dir` names (the Copilot CLI
/// extension, the VS Code extension); `None` without one.
pub fn add_on(dir: &Path) -> Result<Option<Install>, AgentsError> {
    let file = dir.join("config.json");
    let Some(text) = read_if_present(&file)? else {
        return Ok(None);
    };
    let binary = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|config| config["binary"].as_str().map(PathBuf::from));
    Ok(binary.map(|path| Install {
        file,
        binary: Binary::Path(path),
    }))
}

/// The VS Code extension's folders in `extensions` (one per installed
/// version, `vscode::install` keeps one), with the version each holds.
pub fn vscode_extensions(extensions: &Path) -> Vec<(String, PathBuf)> {
    let prefix = "copilot-bridge.copilot-bridge-";
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(extensions)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix(prefix)?.to_owned();
            Some((version, entry.path()))
        })
        .collect();
    found.sort();
    found
}

/// Our MCP servers (`mcp_config`'s names) in the file an agent reads them
/// from: the Copilot CLI's `mcp-config.json`, Claude Code's project
/// `.mcp.json` (`project`), Codex's `config.toml`.
pub fn mcp_entries(
    agent: Agent,
    env: &AgentEnv,
    project: &Path,
) -> Result<Vec<Install>, AgentsError> {
    let file = match agent {
        Agent::CopilotCli => env
            .copilot_dir(Scope::User)
            .map(|dir| dir.join("mcp-config.json")),
        Agent::ClaudeCode => Some(project.join(".mcp.json")),
        Agent::Codex => env
            .codex_dir(Scope::User)
            .map(|dir| dir.join("config.toml")),
    };
    let Some(file) = file else {
        return Ok(Vec::new());
    };
    let Some(text) = read_if_present(&file)? else {
        return Ok(Vec::new());
    };
    let commands = if agent == Agent::Codex {
        toml_commands(&text)
    } else {
        json_edit::parse(&text)
            .ok()
            .and_then(|document| document["mcpServers"].as_object().cloned())
            .into_iter()
            .flatten()
            .filter(|(name, _)| is_our_server(name))
            .filter_map(|(_, entry)| entry["command"].as_str().map(str::to_owned))
            .collect()
    };
    let mut installs: Vec<Install> = Vec::new();
    for command in commands {
        let install = Install {
            file: file.clone(),
            binary: Binary::Path(PathBuf::from(command)),
        };
        if !installs.contains(&install) {
            installs.push(install);
        }
    }
    Ok(installs)
}

fn is_our_server(name: &str) -> bool {
    ["copilot-bridge", "openclaw-memory", SESSION_SERVER_NAME].contains(&name)
}

/// The `command` of our `[mcp_servers.NAME]` tables in Codex's TOML, as
/// `mcp_config` writes them (a basic string on its own line).
fn toml_commands(text: &str) -> Vec<String> {
    let mut ours = false;
    let mut commands = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(table) = line.strip_prefix('[') {
            let name = table.trim_end_matches(']').trim();
            ours = name
                .strip_prefix("mcp_servers.")
                .is_some_and(|server| is_our_server(server.trim_matches('"')));
            continue;
        }
        if !ours {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim() == "command"
            && let Ok(Value::String(command)) = serde_json::from_str(value.trim())
        {
            commands.push(command);
        }
    }
    commands
}

/// Where `agent` sends its model requests, when it is told as `setup`
/// prints it (crates/agents/src/setup.rs): Claude Code's
/// `ANTHROPIC_BASE_URL` and the Copilot CLI's `COPILOT_PROVIDER_BASE_URL`
/// in this environment, Codex's `[model_providers.copilot-bridge]`
/// `base_url` in its config.toml. What names it, and the URL.
pub fn model_endpoint(agent: Agent, env: &AgentEnv) -> Option<(String, String)> {
    let variable = match agent {
        Agent::ClaudeCode => "ANTHROPIC_BASE_URL",
        Agent::CopilotCli => "COPILOT_PROVIDER_BASE_URL",
        Agent::Codex => {
            let file = env.codex_dir(Scope::User)?.join("config.toml");
            let text = read_if_present(&file).ok()??;
            let url = toml_value(&text, "model_providers.copilot-bridge", "base_url")?;
            return Some((
                format!("{} [model_providers.copilot-bridge]", file.display()),
                url,
            ));
        }
    };
    env.agent_settings()
        .iter()
        .find(|(name, _)| name == variable)
        .and_then(|(_, value)| value.to_str())
        .map(|url| (variable.to_owned(), url.to_owned()))
}

/// The basic string `key` of the TOML table `[table]`, read line by line
/// as `mcp_config` and `setup` write it.
fn toml_value(text: &str, table: &str, key: &str) -> Option<String> {
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[') {
            inside = name.trim_end_matches(']').trim() == table;
            continue;
        }
        if inside
            && let Some((name, value)) = line.split_once('=')
            && name.trim() == key
            && let Ok(Value::String(value)) = serde_json::from_str(value.trim())
        {
            return Some(value);
        }
    }
    None
}

/// Our registration in OpenClaw's configuration file, as `openclaw
/// register` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenClawRegistration {
    /// `plugins.entries.copilot-bridge.config.binary`.
    pub plugin: Option<Install>,
    /// `mcp.servers.copilot-bridge.url`.
    pub server_url: Option<String>,
}

/// What `config_file` (OpenClaw's `openclaw.json`) registers of ours;
/// `None` when the file does not exist or names nothing of ours.
pub fn openclaw(config_file: &Path) -> Result<Option<OpenClawRegistration>, AgentsError> {
    let Some(text) = read_if_present(config_file)? else {
        return Ok(None);
    };
    let document = json_edit::parse(&text).map_err(|source| AgentsError::Unreadable {
        path: config_file.to_owned(),
        source,
    })?;
    let id = crate::openclaw::ID;
    let plugin = json_edit::get_at(&document, &["plugins", "entries", id, "config", "binary"])
        .and_then(Value::as_str)
        .map(|binary| Install {
            file: config_file.to_owned(),
            binary: Binary::Path(PathBuf::from(binary)),
        });
    let server_url = json_edit::get_at(&document, &["mcp", "servers", id, "url"])
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((plugin.is_some() || server_url.is_some())
        .then_some(OpenClawRegistration { plugin, server_url }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_hook_is_its_first_word_unquoted() {
        assert_eq!(
            program_of(
                r"'/opt/it'\''s/copilot-bridge' --home '/s' hook pre-tool-use --agent claude --chain '/c'"
            ),
            Some(Binary::Path(PathBuf::from("/opt/it's/copilot-bridge")))
        );
        assert_eq!(
            program_of(
                r#""${COPILOT_BRIDGE_BIN:-copilot-bridge}" hook x --agent claude --chain "$CLAUDE_PROJECT_DIR"/'.claude/c'"#
            ),
            Some(Binary::Portable)
        );
        assert_eq!(program_of("./lint.sh"), None);
    }

    #[test]
    fn codex_is_told_the_hub_in_its_model_providers_table() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(
            temp.path().join("config.toml"),
            "model_provider = \"copilot-bridge\"\n[model_providers.other]\nbase_url = \"http://x\"\n[model_providers.copilot-bridge]\nname = \"copilot-bridge\"\nbase_url = \"http://127.0.0.1:9400/v1\"\n",
        )
        .unwrap();
        let env = AgentEnv::from_vars([("CODEX_HOME", temp.path())]);
        let (source, url) = model_endpoint(Agent::Codex, &env).unwrap();
        assert_eq!(url, "http://127.0.0.1:9400/v1");
        assert!(source.ends_with("config.toml [model_providers.copilot-bridge]"));
        let env = AgentEnv::from_vars([("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")]);
        assert_eq!(
            model_endpoint(Agent::ClaudeCode, &env),
            Some((
                "ANTHROPIC_BASE_URL".to_owned(),
                "http://127.0.0.1:9".to_owned()
            ))
        );
        assert_eq!(model_endpoint(Agent::CopilotCli, &env), None);
    }

    #[test]
    fn codex_mcp_commands_are_read_from_our_tables_only() {
        let text = "[mcp_servers.other]\ncommand = \"/x\"\n\n[mcp_servers.openclaw-memory]\ncommand = \"/opt/cb\"\nargs = [\"mcp\", \"memory\"]\n";
        assert_eq!(toml_commands(text), ["/opt/cb"]);
    }
}
