//! What `copilot-bridge mcp config` prints: ready-to-paste MCP
//! configuration for the agents we know, each naming this very binary by
//! its absolute path; and the MCP servers `launch` stages for Claude Code
//! and the Copilot CLI.
//!
//! OpenClaw gets the code server (it delegates coding to copilot-bridge);
//! the coding agents (Copilot CLI, Claude Code, Codex) get OpenClaw's
//! memory and the daemon session's provider tools, and Claude Code the code
//! server too. When the daemon's home or port is not the default, every
//! entry carries them in `env`, so the servers find the same daemon.

use bridge_policy::agent_tools::Agent;
use serde_json::{Map, Value, json};

use crate::program::Program;

/// Agents, in the order they are printed, with the `--agent` name.
pub const AGENTS: &[&str] = &["openclaw", "copilot", "claude", "codex"];

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
/// The name our configurations give the daemon session's server, whose
/// `approve` tool is Claude Code's permission prompt (docs/approvals.md).
pub const SESSION_SERVER_NAME: &str = "copilot-bridge-session";

const SESSION: Server = Server {
    name: SESSION_SERVER_NAME,
    args: &["mcp", "session"],
};

/// The configuration of each of `agents` (names of [`AGENTS`]), one
/// commented section each.
pub fn text(agents: &[&str], program: &Program) -> String {
    let exe = program.path_text();
    let env = program.daemon_env();
    agents
        .iter()
        .map(|agent| section(agent, &exe, &env))
        .collect::<Vec<_>>()
        .join("\n")
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
            pretty(&servers(Agent::CopilotCli, exe, env))
        ),
        "claude" => format!(
            "# Claude Code: .mcp.json in your project (or `claude mcp add-json NAME 'ENTRY'`)\n{}\n",
            pretty(&servers(Agent::ClaudeCode, exe, env))
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

/// The `{"mcpServers": …}` document of a coding agent, as its MCP
/// configuration file holds it.
pub fn agent_servers(agent: Agent, program: &Program) -> Value {
    servers(agent, &program.path_text(), &program.daemon_env())
}

fn servers(agent: Agent, exe: &str, env: &[(&str, String)]) -> Value {
    match agent {
        Agent::ClaudeCode => {
            json!({"mcpServers": entries(&[CODE, MEMORY, SESSION], exe, env, &|mut entry| {
                entry.insert("type".to_owned(), json!("stdio"));
                entry
            })})
        }
        // Codex's `mcp_servers.NAME` tables take the same fields.
        Agent::Codex => {
            json!({"mcpServers": entries(&[CODE, MEMORY, SESSION], exe, env, &|entry| entry)})
        }
        Agent::CopilotCli => {
            json!({"mcpServers": entries(&[MEMORY, SESSION], exe, env, &|mut entry| {
                entry.insert("type".to_owned(), json!("local"));
                entry.insert("tools".to_owned(), json!(["*"]));
                entry
            })})
        }
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
