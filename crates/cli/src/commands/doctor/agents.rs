//! The coding agents we join (Claude Code, the Copilot CLI, Codex): each
//! one found on `PATH` with its version, and what of the hub it is set up
//! with (`bridge_agents::installed`: hooks of the user and of the project,
//! the Copilot CLI extension, our MCP entries), each naming a binary that
//! must still exist. An agent that is not installed is no failure.

use std::path::{Path, PathBuf};

use bridge_agents::installed::{self, Binary, Install};
use bridge_agents::{AgentEnv, Scope, copilot_extension};
use bridge_config::BridgeConfig;
use bridge_policy::agent_tools::Agent;
use bridge_server::GatewayFile;

use super::{Check, invocation, program_version, shell_word};

/// The agents, with the `--agent` name and the program on `PATH`.
const AGENTS: [(Agent, &str); 3] = [
    (Agent::ClaudeCode, "claude"),
    (Agent::CopilotCli, "copilot"),
    (Agent::Codex, "codex"),
];

pub(super) async fn checks(config: &BridgeConfig, env: &AgentEnv, project: &Path) -> Vec<Check> {
    // The port agents must reach: the running daemon's, else the configured one.
    let hub_port = GatewayFile::read(&config.home)
        .map(|file| file.port)
        .or((config.port != 0).then_some(config.port));
    let versions = AGENTS.map(|(_, name)| {
        let found = env.find_program(name);
        tokio::spawn(async move {
            let version = match &found {
                Some(path) => program_version(path).await,
                None => None,
            };
            (found, version)
        })
    });
    let mut checks = Vec::new();
    for ((agent, name), version) in AGENTS.into_iter().zip(versions) {
        let (found, version) = version.await.unwrap_or((None, None));
        let mut check = check(config, env, project, agent, name, found, version);
        endpoint(&mut check, config, env, agent, name, hub_port);
        checks.push(check);
    }
    checks
}

/// One install of ours, with the command that writes it again for this
/// program.
struct Found {
    what: String,
    install: Install,
    reinstall: String,
}

fn check(
    config: &BridgeConfig,
    env: &AgentEnv,
    project: &Path,
    agent: Agent,
    name: &str,
    path: Option<PathBuf>,
    version: Option<String>,
) -> Check {
    let check_name = format!("agent {name}");
    let mut problems = Vec::new();
    let found = installs(config, env, project, agent, name, &mut problems);
    let program_text = match (&path, &version) {
        (Some(path), Some(version)) => format!("{} ({version})", path.display()),
        (Some(path), None) => format!("{} (no answer to --version)", path.display()),
        (None, _) => "not on PATH".to_owned(),
    };
    if let Some(problem) = problems.first() {
        return Check::warn(
            check_name,
            format!("{program_text}; {problem}"),
            "correct the file it names, or remove it (see docs/hooks.md)",
        );
    }
    let missing: Vec<&Found> = found
        .iter()
        .filter(|found| found.install.missing_binary().is_some())
        .collect();
    if !missing.is_empty() {
        let gone: Vec<String> = missing
            .iter()
            .map(|found| {
                format!(
                    "{} in {} run {}, which no longer exists",
                    found.what,
                    found.install.file.display(),
                    found
                        .install
                        .missing_binary()
                        .map(Path::display)
                        .map(|path| path.to_string())
                        .unwrap_or_default()
                )
            })
            .collect();
        let mut fixes: Vec<&str> = missing.iter().map(|f| f.reinstall.as_str()).collect();
        fixes.dedup();
        return Check::warn(
            check_name,
            format!("{program_text}; {}", gone.join("; ")),
            fixes.join(" && "),
        );
    }
    let set_up = if found.is_empty() {
        format!(
            "not set up for the hub (to join it: {} hooks install --agent {name}; docs/hooks.md)",
            invocation(config)
        )
    } else {
        let list: Vec<String> = found
            .iter()
            .map(|found| match &found.install.binary {
                Binary::Path(path) => format!("{} ({})", found.what, path.display()),
                Binary::Portable => format!(
                    "{} (copilot-bridge from COPILOT_BRIDGE_BIN or PATH)",
                    found.what
                ),
            })
            .collect();
        format!("set up: {}", list.join(", "))
    };
    Check::ok(check_name, format!("{program_text}; {set_up}"))
}

/// What of ours `agent`'s files hold; files that cannot be read go to
/// `problems`.
fn installs(
    config: &BridgeConfig,
    env: &AgentEnv,
    project: &Path,
    agent: Agent,
    name: &str,
    problems: &mut Vec<String>,
) -> Vec<Found> {
    let program = invocation(config);
    let dir = shell_word(project);
    let mut found = Vec::new();
    let scopes = [
        (Scope::User, "user".to_owned(), "--scope user".to_owned()),
        (
            Scope::Project(project),
            "project".to_owned(),
            format!("--scope project --dir {dir}"),
        ),
    ];
    for (scope, label, flags) in &scopes {
        match installed::hooks(agent, *scope, env) {
            Ok(hooks) => found.extend(hooks.into_iter().map(|install| Found {
                what: format!("hooks ({label})"),
                install,
                reinstall: format!(
                    "{program} hooks uninstall --agent {name} {flags} && {program} hooks install --agent {name} {flags}"
                ),
            })),
            Err(err) => problems.push(err.to_string()),
        }
        if agent == Agent::CopilotCli {
            let extension = copilot_extension::directory(*scope, env)
                .map_err(|err| err.to_string())
                .and_then(|dir| installed::add_on(&dir).map_err(|err| err.to_string()));
            match extension {
                Ok(Some(install)) => found.push(Found {
                    what: format!("extension ({label})"),
                    install,
                    reinstall: format!("{program} copilot-extension install {flags}"),
                }),
                Ok(None) => {}
                Err(err) => problems.push(err),
            }
        }
    }
    match installed::mcp_entries(agent, env, project) {
        Ok(entries) => found.extend(entries.into_iter().map(|install| Found {
            what: "MCP servers".to_owned(),
            reinstall: format!(
                "{program} mcp config --agent {name} (paste its entries into {})",
                install.file.display()
            ),
            install,
        })),
        Err(err) => problems.push(err.to_string()),
    }
    found
}

/// Adds where the agent sends its model requests (`setup`'s settings):
/// through the hub, elsewhere, or to a loopback port the hub is not on
/// (a warning, unless the check already warns).
fn endpoint(
    check: &mut Check,
    config: &BridgeConfig,
    env: &AgentEnv,
    agent: Agent,
    name: &str,
    hub_port: Option<u16>,
) {
    let Some((source, url)) = installed::model_endpoint(agent, env) else {
        return;
    };
    let url = bridge_policy::redact::shorten(&url, 120);
    let authority = url
        .split_once("://")
        .map_or(url.as_str(), |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
    let loopback = ["127.0.0.1", "localhost", "[::1]"].contains(&host);
    let port: Option<u16> = port.parse().ok();
    match hub_port {
        Some(hub) if loopback && port == Some(hub) => {
            check
                .message
                .push_str(&format!("; model requests through the hub ({source})"));
        }
        Some(hub) if loopback && check.status == super::Status::Ok => {
            *check = Check::warn(
                check.name.clone(),
                format!(
                    "{}; {source} sends its model requests to {url}, but the daemon's port is {hub}",
                    check.message
                ),
                format!(
                    "{} setup --agent {name} (and set what it prints)",
                    invocation(config)
                ),
            );
        }
        _ => check
            .message
            .push_str(&format!("; model requests to {url} ({source})")),
    }
}
