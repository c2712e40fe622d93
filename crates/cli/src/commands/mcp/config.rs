//! `copilot-bridge mcp config`: ready-to-paste MCP configuration for the
//! agents we know, each naming this very binary by its absolute path.
//!
//! OpenClaw gets the code server (it delegates coding to copilot-bridge);
//! the coding agents (Copilot CLI, Claude Code, Codex) get OpenClaw's
//! memory and the daemon session's provider tools, and Claude Code the code
//! server too. When the daemon's home or port is not the default, every
//! entry carries them in `env`, so the servers find the same daemon.

use std::io::Write;
use std::process::ExitCode;

use bridge_config::{BridgeConfig, keys};
use serde_json::{Map, Value, json};

use crate::args::McpConfigArgs;
use crate::exit::Failure;

/// Agents, in the order they are printed, with the `--agent` name.
const AGENTS: &[&str] = &["openclaw", "copilot", "claude", "codex"];

/// One server entry: its name and `copilot-bridge` arguments.
struct Server {
    name: &'static str,
    args: &'static [&'static str],
}

const CODE: Server = Server {
    name: "copilot-bridge",
    args: &["mcp", "code"],
};
const MEMORY: Server = Server {
    name: "openclaw-memory",
    args: &["mcp", "memory"],
};
const SESSION: Server = Server {
    name: "copilot-bridge-session",
    args: &["mcp", "session"],
};

pub fn run(config: &BridgeConfig, args: McpConfigArgs) -> Result<ExitCode, Failure> {
    let agents = crate::commands::chosen_agents(args.agent.as_deref(), AGENTS)?;
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?
        .display()
        .to_string();
    let env = daemon_env(config);
    let text = agents
        .iter()
        .map(|agent| section(agent, &exe, &env))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = write!(std::io::stdout().lock(), "{text}");
    Ok(ExitCode::SUCCESS)
}

/// The variables a server needs to find this configuration's daemon: the
/// home and the port, when they are not the defaults.
pub(crate) fn daemon_env(config: &BridgeConfig) -> Vec<(&'static str, String)> {
    let set = |key: &str| crate::commands::is_configured(config, key);
    let mut env = Vec::new();
    if set(keys::HOME) {
        env.push(("COPILOT_BRIDGE_HOME", config.home.display().to_string()));
    }
    if set(keys::PORT) {
        env.push(("COPILOT_BRIDGE_PORT", config.port.to_string()));
    }
    env
}

fn section(agent: &str, exe: &str, env: &[(&str, String)]) -> String {
    let entries = |servers: &[Server], shape: &dyn Fn(Map<String, Value>) -> Map<String, Value>| {
        entries(servers, exe, env, shape)
    };
    match agent {
        "openclaw" => format!(
            "# OpenClaw: ~/.openclaw/openclaw.json (or run `copilot-bridge openclaw register`)\n{}\n",
            pretty(&json!({"mcp": {"servers": entries(&[CODE], &|entry| entry)}}))
        ),
        "copilot" => format!(
            "# GitHub Copilot CLI: ~/.copilot/mcp-config.json\n{}\n",
            pretty(&agent_servers("copilot", exe, env))
        ),
        "claude" => format!(
            "# Claude Code: .mcp.json in your project (or `claude mcp add-json NAME 'ENTRY'`)\n{}\n",
            pretty(&agent_servers("claude", exe, env))
        ),
        _ => {
            let mut text = String::from("# Codex: ~/.codex/config.toml\n");
            for server in [MEMORY, SESSION] {
                text.push_str(&format!(
                    "[mcp_servers.{}]\ncommand = {}\nargs = {}\n",
                    server.name,
                    toml_string(exe),
                    toml_array(server.args)
                ));
                if !env.is_empty() {
                    let pairs: Vec<String> = env
                        .iter()
                        .map(|(name, value)| format!("{name} = {}", toml_string(value)))
                        .collect();
                    text.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
                }
                text.push('\n');
            }
            text
        }
    }
}

/// The `{"mcpServers": …}` document of a coding agent (`claude` or
/// `copilot`), as its MCP configuration file holds it.
pub(crate) fn agent_servers(agent: &str, exe: &str, env: &[(&str, String)]) -> Value {
    if agent == "claude" {
        json!({"mcpServers": entries(&[CODE, MEMORY, SESSION], exe, env, &|mut entry| {
            entry.insert("type".to_owned(), json!("stdio"));
            entry
        })})
    } else {
        json!({"mcpServers": entries(&[MEMORY, SESSION], exe, env, &|mut entry| {
            entry.insert("type".to_owned(), json!("local"));
            entry.insert("tools".to_owned(), json!(["*"]));
            entry
        })})
    }
}

fn entries(
    servers: &[Server],
    exe: &str,
    env: &[(&str, String)],
    shape: &dyn Fn(Map<String, Value>) -> Map<String, Value>,
) -> Value {
    let mut out = Map::new();
    for server in servers {
        let mut entry = Map::new();
        entry.insert("command".to_owned(), json!(exe));
        entry.insert("args".to_owned(), json!(server.args));
        if !env.is_empty() {
            let env: Map<String, Value> = env
                .iter()
                .map(|(name, value)| ((*name).to_owned(), json!(value)))
                .collect();
            entry.insert("env".to_owned(), Value::Object(env));
        }
        out.insert(server.name.to_owned(), Value::Object(shape(entry)));
    }
    Value::Object(out)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A TOML basic string: JSON's escaping is a valid subset of it.
fn toml_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn toml_array(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| toml_string(item)).collect();
    format!("[{}]", quoted.join(", "))
}
