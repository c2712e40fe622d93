//! OpenClaw as OpenClaw itself configures it: its gateway (URL, port,
//! token), whether the daemon connects to it, and where each of its agents
//! keeps its workspace (and so its memory). The values come from the
//! bridge's own sources first (flags, environment, config.toml), then from
//! OpenClaw's own configuration file, `openclaw.json`
//! (crates/config/src/openclaw_file.rs), then OpenClaw's defaults
//! (docs/configuration.md, "OpenClaw").

use std::path::PathBuf;

use bridge_util::Secret;

/// OpenClaw's default gateway port.
pub const DEFAULT_GATEWAY_PORT: u16 = 18789;
/// The agent id OpenClaw uses when none is configured.
pub const DEFAULT_AGENT_ID: &str = "main";
/// The longest agent id OpenClaw accepts.
pub const MAX_AGENT_ID_CHARS: usize = 64;

/// `auto`, `on` or `off`: whether the daemon connects to the OpenClaw
/// gateway (`openclaw.gateway`) and whether sessions get OpenClaw's memory
/// tools (`openclaw.memory`); `auto` decides by what is on this machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AutoSwitch {
    /// By what is on this machine: for the gateway, OpenClaw
    /// [configured](OpenClawConfig::configured_on_this_machine); for memory,
    /// a workspace holding memory notes.
    #[default]
    Auto,
    On,
    Off,
}

impl AutoSwitch {
    pub const ALLOWED: &'static str = "auto, on or off";

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

impl std::str::FromStr for AutoSwitch {
    type Err = &'static str;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "on" | "true" | "1" | "yes" => Ok(Self::On),
            "off" | "false" | "0" | "no" => Ok(Self::Off),
            _ => Err(Self::ALLOWED),
        }
    }
}

/// How `openclaw.workspace` ranks against OpenClaw's configuration file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WorkspaceRank {
    /// Set for the bridge (a flag, config.toml, `OPENCLAW_WORKSPACE`):
    /// the default agent's workspace, whatever openclaw.json says.
    #[default]
    Explicit,
    /// OpenClaw's own `OPENCLAW_WORKSPACE_DIR`: ranked where OpenClaw ranks
    /// it, after the workspaces openclaw.json names.
    OpenClawEnv,
}

/// One agent of openclaw.json's `agents.list` (or `agents.entries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenClawAgent {
    /// Normalized as OpenClaw normalizes ids ([`normalize_agent_id`]).
    pub id: String,
    /// `workspace`, `~` expanded.
    pub workspace: Option<PathBuf>,
    /// `default: true`.
    pub default: bool,
}

/// The OpenClaw gateway and agents this bridge works with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenClawConfig {
    /// `OPENCLAW_HOST` (default 127.0.0.1).
    pub host: String,
    /// `OPENCLAW_GATEWAY_PORT` or `OPENCLAW_PORT`, else `gateway.port` of
    /// openclaw.json, else 18789.
    pub port: u16,
    /// `OPENCLAW_GATEWAY_URL` (ws:// only): wins over host and port.
    pub gateway_url: Option<String>,
    /// `OPENCLAW_GATEWAY_TOKEN`, else `gateway.auth.token` of openclaw.json.
    pub gateway_token: Option<Secret>,
    pub gateway_mode: AutoSwitch,
    /// `openclaw.memory`: whether every session the hub creates gets the
    /// memory tools (`auto`: when the default agent's workspace holds
    /// memory; see `bridge_compose::openclaw`).
    pub memory_mode: AutoSwitch,
    /// `openclaw.workspace`: the default agent's workspace when set.
    pub workspace: Option<PathBuf>,
    /// Where `workspace` ranks ([`Self::workspace_for`]).
    pub workspace_rank: WorkspaceRank,
    /// `OPENCLAW_STATE_DIR`, else `~/.openclaw`.
    pub state_dir: PathBuf,
    /// `OPENCLAW_CONFIG_PATH`, else `openclaw.json` in the state directory.
    pub config_path: PathBuf,
    /// Whether `config_path` exists (whether or not it could be read).
    pub config_exists: bool,
    /// `agents.defaults.workspace` of openclaw.json, `~` expanded.
    pub defaults_workspace: Option<PathBuf>,
    /// `agents.list` of openclaw.json, in its order.
    pub agents: Vec<OpenClawAgent>,
}

impl OpenClawConfig {
    /// The defaults, with OpenClaw's state in `state_dir` and no
    /// configuration file read.
    pub fn in_state_dir(state_dir: impl Into<PathBuf>) -> Self {
        let state_dir = state_dir.into();
        Self {
            host: "127.0.0.1".to_owned(),
            port: DEFAULT_GATEWAY_PORT,
            gateway_url: None,
            gateway_token: None,
            gateway_mode: AutoSwitch::Auto,
            memory_mode: AutoSwitch::Auto,
            workspace: None,
            workspace_rank: WorkspaceRank::Explicit,
            config_path: state_dir.join("openclaw.json"),
            config_exists: false,
            defaults_workspace: None,
            agents: Vec::new(),
            state_dir,
        }
    }

    /// The gateway's WebSocket URL: `OPENCLAW_GATEWAY_URL`, else
    /// `ws://HOST:PORT`.
    pub fn gateway_url(&self) -> String {
        if let Some(url) = &self.gateway_url {
            return url.clone();
        }
        let host = &self.host;
        if host.contains(':') && !host.starts_with('[') {
            format!("ws://[{host}]:{}", self.port)
        } else {
            format!("ws://{host}:{}", self.port)
        }
    }

    /// OpenClaw looks set up here: its configuration file exists, or a
    /// gateway URL or token was given.
    pub fn configured_on_this_machine(&self) -> bool {
        self.config_exists || self.gateway_url.is_some() || self.gateway_token.is_some()
    }

    /// Whether the daemon connects to the gateway: `on`, or `auto` with
    /// OpenClaw [configured on this machine](Self::configured_on_this_machine).
    pub fn gateway_enabled(&self) -> bool {
        match self.gateway_mode {
            AutoSwitch::On => true,
            AutoSwitch::Off => false,
            AutoSwitch::Auto => self.configured_on_this_machine(),
        }
    }

    /// The default agent, as OpenClaw picks it: the one entry of
    /// `agents.list` marked `default: true`, else the only entry, else `main`.
    pub fn default_agent_id(&self) -> &str {
        self.workspace_owner().unwrap_or(DEFAULT_AGENT_ID)
    }

    /// The agent OpenClaw gives its own workspace (`agents.defaults.workspace`,
    /// `OPENCLAW_WORKSPACE_DIR`, `<state>/workspace`): the one marked
    /// `default: true`, else the only one, else `main` when no agents are
    /// listed; none when several are listed and none is marked.
    fn workspace_owner(&self) -> Option<&str> {
        let mut marked = self.agents.iter().filter(|agent| agent.default);
        if let (Some(agent), None) = (marked.next(), marked.next()) {
            return Some(&agent.id);
        }
        match self.agents.as_slice() {
            [] => Some(DEFAULT_AGENT_ID),
            [only] => Some(&only.id),
            _ => None,
        }
    }

    /// The agent's entry in `agents.list` (`agent_id` normalized).
    pub fn agent(&self, agent_id: &str) -> Option<&OpenClawAgent> {
        let id = normalize_agent_id(agent_id);
        self.agents.iter().find(|agent| agent.id == id)
    }

    /// Where an agent's workspace is (`None`: the default agent), and how
    /// that was found. OpenClaw's order, for the default agent:
    /// `openclaw.workspace` set for the bridge, its `agents.list` entry's
    /// `workspace`, `agents.defaults.workspace`, `OPENCLAW_WORKSPACE_DIR`,
    /// `<state>/workspace`; for any other agent: its entry's `workspace`,
    /// `<agents.defaults.workspace>/<id>`, `<state>/workspace-<id>`. (When
    /// several agents are listed and none is marked default, OpenClaw gives
    /// none of them the default workspace; nor does this, `main` included.)
    /// An id is normalized as OpenClaw does ([`normalize_agent_id`]), so
    /// the path never leaves the directory it is joined to.
    pub fn workspace_for(&self, agent_id: Option<&str>) -> (PathBuf, &'static str) {
        let default_id = self.default_agent_id();
        let id = agent_id.map_or_else(|| default_id.to_owned(), normalize_agent_id);
        if id == default_id
            && let (Some(dir), WorkspaceRank::Explicit) = (&self.workspace, self.workspace_rank)
        {
            return (dir.clone(), "openclaw.workspace");
        }
        if let Some(dir) = self.agent(&id).and_then(|agent| agent.workspace.clone()) {
            return (dir, "agents.list[].workspace");
        }
        if self.workspace_owner() == Some(id.as_str()) {
            if let Some(dir) = &self.defaults_workspace {
                return (dir.clone(), "agents.defaults.workspace");
            }
            if let Some(dir) = &self.workspace {
                return (dir.clone(), "OPENCLAW_WORKSPACE_DIR");
            }
            return (self.state_dir.join("workspace"), "<state>/workspace");
        }
        if let Some(dir) = &self.defaults_workspace {
            return (dir.join(&id), "agents.defaults.workspace/<id>");
        }
        (
            self.state_dir.join(format!("workspace-{id}")),
            "<state>/workspace-<id>",
        )
    }
}

/// An agent id as OpenClaw accepts it from a caller: 1 to 64 letters,
/// digits, `_` and `-`, starting with a letter or digit; lowercased. Nothing
/// else (no `/`, `.`, spaces) is rewritten into one: it is refused, saying why.
pub fn valid_agent_id(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    let chars = trimmed.chars().count();
    if trimmed.is_empty() {
        return Err("an agent id cannot be empty".to_owned());
    }
    if chars > MAX_AGENT_ID_CHARS {
        return Err(format!(
            "an agent id has at most {MAX_AGENT_ID_CHARS} characters, not {chars}"
        ));
    }
    if is_agent_id(trimmed) {
        Ok(trimmed.to_ascii_lowercase())
    } else {
        Err(format!(
            "{:?} is not an OpenClaw agent id: letters, digits, `_` and `-`, starting with a letter or digit",
            bridge_policy::redact::preview(trimmed, 80)
        ))
    }
}

fn is_agent_id(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && text.len() <= MAX_AGENT_ID_CHARS
}

/// OpenClaw's normalization of an id it read from its configuration: a
/// valid id lowercased; otherwise runs of other characters become `-`,
/// leading and trailing dashes go, 64 characters at most, and what is left
/// empty is [`DEFAULT_AGENT_ID`].
pub fn normalize_agent_id(text: &str) -> String {
    let trimmed = text.trim();
    if is_agent_id(trimmed) {
        return trimmed.to_ascii_lowercase();
    }
    let mut out = String::new();
    for c in trimmed.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let cut: String = out
        .trim_matches('-')
        .chars()
        .take(MAX_AGENT_ID_CHARS)
        .collect();
    if cut.is_empty() {
        DEFAULT_AGENT_ID.to_owned()
    } else {
        cut
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_are_checked_as_openclaw_checks_them() {
        assert_eq!(valid_agent_id(" Work_1 ").unwrap(), "work_1");
        assert_eq!(valid_agent_id(&"a".repeat(64)).unwrap(), "a".repeat(64));
        for bad in ["", "../x", "a/b", "-a", "a b", ".", "a.b", "é"] {
            assert!(valid_agent_id(bad).is_err(), "{bad:?}");
        }
        assert!(
            valid_agent_id(&"a".repeat(65))
                .unwrap_err()
                .contains("at most 64")
        );
        assert_eq!(normalize_agent_id("My Agent!"), "my-agent");
        assert_eq!(normalize_agent_id("../../etc"), "etc");
        assert_eq!(normalize_agent_id("///"), "main");
        assert_eq!(normalize_agent_id(&"b".repeat(80)).len(), 64);
    }

    #[test]
    fn the_gateway_url_wins_and_ipv6_hosts_are_bracketed() {
        let mut config = OpenClawConfig::in_state_dir("/s");
        assert_eq!(config.gateway_url(), "ws://127.0.0.1:18789");
        config.host = "::1".to_owned();
        assert_eq!(config.gateway_url(), "ws://[::1]:18789");
        config.gateway_url = Some("ws://claw.example:8080".to_owned());
        assert_eq!(config.gateway_url(), "ws://claw.example:8080");
    }

    #[test]
    fn gateway_modes() {
        let mut config = OpenClawConfig::in_state_dir("/s");
        assert!(!config.gateway_enabled());
        config.config_exists = true;
        assert!(config.gateway_enabled());
        config.gateway_mode = AutoSwitch::Off;
        assert!(!config.gateway_enabled());
        assert_eq!("ON".parse::<AutoSwitch>(), Ok(AutoSwitch::On));
        assert!("sometimes".parse::<AutoSwitch>().is_err());
    }
}
