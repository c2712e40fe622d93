pub mod approvals;
pub mod audit;
pub mod chat;
pub mod config;
pub mod daemon;
pub mod doctor;
pub mod hook;
pub mod install;
pub mod launch;
pub mod mcp;
pub mod openclaw;
pub mod orchestrate;
pub mod remote;
pub mod run;
pub mod serve;
pub mod service;
pub mod sessions;
pub mod setup;
pub mod status;
pub mod tool;
pub mod ui;
pub mod validate;
pub mod version;

/// Whether `key` was set (flag, environment, file) rather than left at its
/// default: what a command must pass on for another process to find the
/// same daemon.
pub(crate) fn is_configured(config: &bridge_config::BridgeConfig, key: &str) -> bool {
    config
        .sources
        .get(key)
        .is_some_and(|source| !matches!(source, bridge_config::Source::Default))
}

/// The agents `--agent` picks from `known` (case-insensitive), all of
/// them without it; exit 2 for a name not in `known`.
pub(crate) fn chosen_agents(
    agent: Option<&str>,
    known: &[&'static str],
) -> Result<Vec<&'static str>, crate::exit::Failure> {
    let Some(agent) = agent else {
        return Ok(known.to_vec());
    };
    let agent = agent.trim().to_ascii_lowercase();
    known
        .iter()
        .find(|name| **name == agent)
        .map(|name| vec![*name])
        .ok_or_else(|| {
            crate::exit::Failure::usage(format!(
                "unknown agent {agent:?} for --agent; choose one of {}",
                known.join(", ")
            ))
        })
}

/// This program as the agents are to run it, with the daemon this
/// configuration reaches (`bridge_agents::Program`).
pub(crate) fn program(
    config: &bridge_config::BridgeConfig,
) -> Result<bridge_agents::Program, crate::exit::Failure> {
    let path = std::env::current_exe().map_err(|err| {
        crate::exit::Failure::internal(format!("cannot find this program's own path: {err}"))
    })?;
    Ok(bridge_agents::Program {
        path,
        home: config.home.clone(),
        home_configured: is_configured(config, bridge_config::keys::HOME),
        port: is_configured(config, bridge_config::keys::PORT).then_some(config.port),
        approval_timeout_secs: config.approval_timeout_secs,
    })
}

/// `--dir`, else the current directory: the project a command works on.
pub(crate) fn project_dir(
    dir: Option<&std::path::Path>,
) -> Result<std::path::PathBuf, crate::exit::Failure> {
    match dir {
        Some(dir) => Ok(dir.to_owned()),
        None => std::env::current_dir().map_err(|err| {
            crate::exit::Failure::usage(format!("cannot read the current directory: {err}"))
        }),
    }
}
