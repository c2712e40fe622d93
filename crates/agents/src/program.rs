//! This copilot-bridge, as the agents are to run it: what every hook
//! command, MCP entry and add-on configuration we write names, so that what
//! the agent starts finds the same daemon and audit log as the command that
//! wrote it.

use std::path::PathBuf;

/// The program agents run and the daemon it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// This program's absolute path.
    pub path: PathBuf,
    /// The state directory (the daemon's `gateway.json`, the audit log).
    pub home: PathBuf,
    /// Whether the state directory was configured rather than left at its
    /// default: only then do the command lines and MCP entries we write
    /// name it (a default one is found without being told).
    pub home_configured: bool,
    /// The daemon's port, when it was configured.
    pub port: Option<u16>,
    /// How long an ask waits for a person at the daemon
    /// (`approvals.timeout_secs`): a hook that may wait that long must be
    /// given longer by its agent.
    pub approval_timeout_secs: u64,
}

/// The shortest time an agent is told to let our hook run.
const MIN_HOOK_TIMEOUT_SECS: u64 = 90;
/// Beyond the approval timeout, what a waiting hook needs to hear the
/// daemon's answer.
const HOOK_GRACE_SECS: u64 = 10;

impl Program {
    /// The timeout our hook entries give the agent: long enough for a call
    /// that waits for a person, so the agent never times the hook out
    /// first (an agent that does may run the tool).
    pub fn hook_timeout_secs(&self) -> u64 {
        MIN_HOOK_TIMEOUT_SECS.max(self.approval_timeout_secs.saturating_add(HOOK_GRACE_SECS))
    }

    /// The variables an MCP server we run needs to find this
    /// configuration's daemon: the home and the port, when they are not
    /// the defaults.
    pub fn daemon_env(&self) -> Vec<(&'static str, String)> {
        let mut env = Vec::new();
        if self.home_configured {
            env.push(("COPILOT_BRIDGE_HOME", self.home.display().to_string()));
        }
        if let Some(port) = self.port {
            env.push(("COPILOT_BRIDGE_PORT", port.to_string()));
        }
        env
    }

    /// [`Self::path`] as text, for the agents' JSON and TOML files.
    pub fn path_text(&self) -> String {
        self.path.display().to_string()
    }
}
