//! `copilot-bridge mcp config`: ready-to-paste MCP configuration for the
//! agents we know, each naming this very binary by its absolute path.
//!
//! OpenClaw gets the code server (it delegates coding to copilot-bridge);
//! the coding agents (Copilot CLI, Claude Code, Codex) get OpenClaw's
//! memory and the daemon session's provider tools.

use std::io::Write;
use std::process::ExitCode;

use bridge_config::BridgeConfig;
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

pub fn run(_config: &BridgeConfig, args: McpConfigArgs) -> Result<ExitCode, Failure> {
    let agents: Vec<&str> = match args.agent.as_deref() {
        None => AGENTS.to_vec(),
        Some(agent) => {
            let agent = agent.trim().to_ascii_lowercase();
            let known = AGENTS
                .iter()
                .find(|known| **known == agent)
                .ok_or_else(|| {
                    Failure::usage(format!(
                        "unknown agent {agent:?} for --agent; choose one of {}",
                        AGENTS.join(", ")
                    ))
                })?;
            vec![*known]
        }
    };
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?
        .display()
        .to_string();
    let text = agents
        .iter()
        .map(|agent| section(agent, &exe))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = write!(std::io::stdout().lock(), "{text}");
    Ok(ExitCode::SUCCESS)
}

fn section(agent: &str, exe: &str) -> String {
    match agent {
        "openclaw" => format!(
            "# OpenClaw: ~/.openclaw/openclaw.json (or run `copilot-bridge openclaw register`)\n{}\n",
            pretty(&json!({"mcp": {"servers": entries(&[CODE], exe, |entry| entry)}}))
        ),
        "copilot" => format!(
            "# GitHub Copilot CLI: ~/.copilot/mcp-config.json\n{}\n",
            pretty(
                &json!({"mcpServers": entries(&[MEMORY, SESSION], exe, |mut entry| {
                    entry.insert("type".to_owned(), json!("local"));
                    entry.insert("tools".to_owned(), json!(["*"]));
                    entry
                })})
            )
        ),
        "claude" => format!(
            "# Claude Code: .mcp.json in your project (or `claude mcp add-json NAME 'ENTRY'`)\n{}\n",
            pretty(
                &json!({"mcpServers": entries(&[MEMORY, SESSION], exe, |mut entry| {
                    entry.insert("type".to_owned(), json!("stdio"));
                    entry
                })})
            )
        ),
        _ => {
            let mut text = String::from("# Codex: ~/.codex/config.toml\n");
            for server in [MEMORY, SESSION] {
                text.push_str(&format!(
                    "[mcp_servers.{}]\ncommand = {}\nargs = {}\n\n",
                    server.name,
                    toml_string(exe),
                    toml_array(server.args)
                ));
            }
            text
        }
    }
}

fn entries(
    servers: &[Server],
    exe: &str,
    shape: impl Fn(Map<String, Value>) -> Map<String, Value>,
) -> Value {
    let mut out = Map::new();
    for server in servers {
        let mut entry = Map::new();
        entry.insert("command".to_owned(), json!(exe));
        entry.insert("args".to_owned(), json!(server.args));
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
