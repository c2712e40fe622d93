//! The agents' own conventions, read from the environment in this one
//! place: where Claude Code, the Copilot CLI, Codex and VS Code keep their
//! configuration, what an agent sets in the environment of the hooks it
//! runs, and our variables naming the agents' binaries. copilot-bridge's own
//! configuration is not here (`bridge-config` reads it).
//!
//! The binary builds one [`AgentEnv`] with [`AgentEnv::from_process`];
//! tests build theirs with [`AgentEnv::from_vars`]. Every function of this
//! crate that needs one of these values takes `&AgentEnv`. A variable set
//! to the empty string counts as unset.
//!
//! Where the agents keep things (docs/hooks.md, docs/vscode.md):
//!
//! | what | user scope | project scope |
//! |---|---|---|
//! | the user's home | `HOME`, else `USERPROFILE` | — |
//! | Claude Code's settings | `CLAUDE_CONFIG_DIR`, else `~/.claude` | `.claude/` |
//! | the Copilot CLI's hooks, extensions, MCP servers | `COPILOT_HOME`, else `~/.copilot` | `.github/` |
//! | Codex's `config.toml` | `CODEX_HOME`, else `~/.codex` | — |
//! | VS Code's extensions | one directory per editor under the home ([`EDITORS`]) | — |
//!
//! What an agent sets in the environment of a hook it runs: Claude Code
//! `CLAUDECODE` and `CLAUDE_PROJECT_DIR` (the project's root); the Copilot
//! CLI `COPILOT_CLI` (also when it sends Claude's payload shape) and
//! `COPILOT_PROJECT_DIR`. The Copilot CLI takes its model from
//! `COPILOT_MODEL`.
//!
//! Where the user already sends an agent's own telemetry (OpenTelemetry):
//! `CLAUDE_CODE_ENABLE_TELEMETRY`, `OTEL_SDK_DISABLED`,
//! `OTEL_{METRICS,LOGS,TRACES}_EXPORTER` and the OTLP exporter's endpoint,
//! headers and protocol (`OTEL_EXPORTER_OTLP_{ENDPOINT,HEADERS,PROTOCOL}`
//! and their per-signal forms): `launch` leaves an agent's telemetry to
//! them ([`AgentEnv::telemetry_settings`], `crate::telemetry`).
//!
//! Ours: `COPILOT_BRIDGE_AGENT_BINARY` names the agent `launch` runs,
//! `COPILOT_BRIDGE_CLAUDE_BINARY` the orchestrator's Claude Code
//! (docs/orchestrator.md); a nested agent gets its own settings from our
//! environment ([`AgentEnv::agent_settings`]), nothing else of it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use bridge_policy::agent_tools::Agent;

use crate::error::AgentsError;
use crate::vscode::EDITORS;

/// Names the agent's binary `copilot-bridge launch` runs when `--agent`
/// does not.
pub const AGENT_BINARY_VARIABLE: &str = "COPILOT_BRIDGE_AGENT_BINARY";
/// Names Claude Code's binary for the orchestrator's `claude` sub-tasks
/// (default: `claude` on PATH).
pub const CLAUDE_BINARY_VARIABLE: &str = "COPILOT_BRIDGE_CLAUDE_BINARY";

/// Variables that configure the agents themselves (their endpoint, model,
/// credentials, home, telemetry): a nested agent gets these, and the base
/// environment, nothing else. `COPILOT_BRIDGE_*` are ours, not the agents'.
const AGENT_VARIABLE_PREFIXES: &[&str] = &[
    "ANTHROPIC_",
    "CLAUDE_",
    "COPILOT_",
    "DISABLE_",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "NODE_EXTRA_CA_CERTS",
];
const OUR_PREFIX: &str = "COPILOT_BRIDGE_";

/// Whose configuration: the user's (in their home) or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    User,
    Project(&'a Path),
}

/// The agents' variables of one environment, each home resolved once.
/// No `Debug`: the agents' settings hold their credentials.
#[derive(Clone)]
pub struct AgentEnv {
    home: Option<PathBuf>,
    claude_config_dir: Option<PathBuf>,
    copilot_home: Option<PathBuf>,
    codex_home: Option<PathBuf>,
    claude_project_dir: Option<PathBuf>,
    copilot_project_dir: Option<PathBuf>,
    in_claude_code: bool,
    in_copilot_cli: bool,
    copilot_model: Option<String>,
    agent_binary: Option<PathBuf>,
    claude_binary: Option<PathBuf>,
    agent_settings: Vec<(OsString, OsString)>,
    telemetry_settings: Vec<String>,
    desktop_session: Vec<(OsString, OsString)>,
    search_path: Option<OsString>,
}

/// What a desktop notification (`notify-send`) needs to reach the user's
/// session.
const DESKTOP_VARIABLES: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
];

impl AgentEnv {
    /// This process's environment.
    pub fn from_process() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// The environment `vars` (a later assignment of a name wins, as in a
    /// process's environment).
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let vars: Vec<(OsString, OsString)> = vars
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        let get = |name: &str| -> Option<OsString> {
            vars.iter()
                .rev()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
                .filter(|value| !value.is_empty())
        };
        let path = |name: &str| get(name).map(PathBuf::from);
        // Each name once, as its last assignment says.
        let mut telemetry_settings: Vec<String> = Vec::new();
        for name in vars.iter().filter_map(|(name, _)| name.to_str()) {
            if is_telemetry_setting(name)
                && get(name).is_some()
                && !telemetry_settings.iter().any(|seen| seen == name)
            {
                telemetry_settings.push(name.to_owned());
            }
        }
        let home = path("HOME").or_else(|| path("USERPROFILE"));
        let under_home = |variable: &str, dir: &str| {
            path(variable).or_else(|| home.as_ref().map(|home| home.join(dir)))
        };
        Self {
            claude_config_dir: under_home("CLAUDE_CONFIG_DIR", ".claude"),
            copilot_home: under_home("COPILOT_HOME", ".copilot"),
            codex_home: under_home("CODEX_HOME", ".codex"),
            claude_project_dir: path("CLAUDE_PROJECT_DIR"),
            copilot_project_dir: path("COPILOT_PROJECT_DIR"),
            in_claude_code: get("CLAUDECODE").is_some(),
            in_copilot_cli: get("COPILOT_CLI").is_some(),
            copilot_model: get("COPILOT_MODEL").and_then(|model| model.into_string().ok()),
            agent_binary: path(AGENT_BINARY_VARIABLE),
            claude_binary: path(CLAUDE_BINARY_VARIABLE),
            agent_settings: agent_settings(&vars),
            telemetry_settings,
            desktop_session: DESKTOP_VARIABLES
                .iter()
                .filter_map(|name| get(name).map(|value| (OsString::from(name), value)))
                .collect(),
            search_path: get("PATH"),
            home,
        }
    }

    /// The user's home.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Claude Code's user settings directory (`settings.json` is in it).
    pub fn claude_config_dir(&self) -> Option<&Path> {
        self.claude_config_dir.as_deref()
    }

    /// The Copilot CLI's home (`hooks/`, `extensions/`, `mcp-config.json`).
    pub fn copilot_home(&self) -> Option<&Path> {
        self.copilot_home.as_deref()
    }

    /// Codex's home (`config.toml`).
    pub fn codex_home(&self) -> Option<&Path> {
        self.codex_home.as_deref()
    }

    /// Claude Code's configuration directory of `scope`; `None` when the
    /// user's cannot be found (no home).
    pub fn claude_dir(&self, scope: Scope<'_>) -> Option<PathBuf> {
        match scope {
            Scope::User => self.claude_config_dir.clone(),
            Scope::Project(dir) => Some(dir.join(".claude")),
        }
    }

    /// The Copilot CLI's configuration directory of `scope` (its home, or a
    /// project's `.github/`); `None` when the user's cannot be found.
    pub fn copilot_dir(&self, scope: Scope<'_>) -> Option<PathBuf> {
        match scope {
            Scope::User => self.copilot_home.clone(),
            Scope::Project(dir) => Some(dir.join(".github")),
        }
    }

    /// Codex's directory of `scope` (`CODEX_HOME`, default `~/.codex`, or
    /// a project's `.codex/`); `None` when the user's cannot be found.
    pub fn codex_dir(&self, scope: Scope<'_>) -> Option<PathBuf> {
        match scope {
            Scope::User => self.codex_home.clone(),
            Scope::Project(dir) => Some(dir.join(".codex")),
        }
    }

    /// The extensions directory of `editor` (a name of [`EDITORS`]).
    pub fn vscode_extensions_dir(&self, editor: &str) -> Result<PathBuf, AgentsError> {
        let relative = EDITORS
            .iter()
            .find(|(name, _)| *name == editor)
            .map(|(_, dir)| *dir)
            .ok_or_else(|| AgentsError::UnknownEditor(editor.to_owned()))?;
        let home = self.home().ok_or(AgentsError::NoHomeForEditor)?;
        Ok(home.join(relative))
    }

    /// The project directory `agent` names in its hook's environment.
    pub fn project_dir(&self, agent: Agent) -> Option<&Path> {
        match agent {
            Agent::ClaudeCode => self.claude_project_dir.as_deref(),
            Agent::CopilotCli => self.copilot_project_dir.as_deref(),
            // Codex names none: its hooks run in the session's directory,
            // which the payload's `cwd` says.
            Agent::Codex => None,
        }
    }

    /// Whether Claude Code runs us (as a hook).
    pub fn in_claude_code(&self) -> bool {
        self.in_claude_code
    }

    /// Whether the Copilot CLI runs us (as a hook).
    pub fn in_copilot_cli(&self) -> bool {
        self.in_copilot_cli
    }

    /// The model the Copilot CLI is told to use.
    pub fn copilot_model(&self) -> Option<&str> {
        self.copilot_model.as_deref()
    }

    /// The agent binary `launch` runs when `--agent` does not name one.
    pub fn agent_binary(&self) -> Option<&Path> {
        self.agent_binary.as_deref()
    }

    /// Claude Code's binary for nested sub-tasks, when not `claude` on PATH.
    pub fn claude_binary(&self) -> Option<&Path> {
        self.claude_binary.as_deref()
    }

    /// The agents' own settings in this environment, for a nested agent.
    pub fn agent_settings(&self) -> &[(OsString, OsString)] {
        &self.agent_settings
    }

    /// The names of the variables set (not empty) here that say where an
    /// agent's own telemetry goes (see the module's documentation), in
    /// the environment's order.
    pub fn telemetry_settings(&self) -> &[String] {
        &self.telemetry_settings
    }

    /// Where a program named without a path is found (`PATH`).
    pub fn search_path(&self) -> Option<&OsStr> {
        self.search_path.as_deref()
    }

    /// The file `name` that `PATH` finds first.
    pub fn find_program(&self, name: &str) -> Option<PathBuf> {
        std::env::split_paths(self.search_path()?)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    }

    /// The variables of the user's desktop session, for a notification
    /// (`copilot-bridge approvals watch`); empty without a desktop.
    pub fn desktop_session(&self) -> &[(OsString, OsString)] {
        &self.desktop_session
    }
}

fn agent_settings(vars: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    vars.iter()
        .filter(|(name, _)| is_agent_setting(name))
        .cloned()
        .collect()
}

/// Whether `name` says where or whether an agent exports its telemetry:
/// what Claude Code's OpenTelemetry SDK reads, and the headers Codex's
/// exporter takes from the environment (crate::telemetry). Not the
/// variables that only tune an export (timeouts, compression, intervals).
pub(crate) fn is_telemetry_setting(name: &str) -> bool {
    const SWITCHES: &[&str] = &[
        "CLAUDE_CODE_ENABLE_TELEMETRY",
        "OTEL_SDK_DISABLED",
        "OTEL_METRICS_EXPORTER",
        "OTEL_LOGS_EXPORTER",
        "OTEL_TRACES_EXPORTER",
    ];
    SWITCHES.contains(&name)
        || name
            .strip_prefix("OTEL_EXPORTER_OTLP_")
            .is_some_and(|rest| {
                ["ENDPOINT", "HEADERS", "PROTOCOL"]
                    .iter()
                    .any(|what| rest.ends_with(what))
            })
}

fn is_agent_setting(name: &OsStr) -> bool {
    name.to_str().is_some_and(|name| {
        AGENT_VARIABLE_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
            && !name.starts_with(OUR_PREFIX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_variables_count_as_unset() {
        let env = AgentEnv::from_vars([("HOME", "/h"), ("COPILOT_HOME", ""), ("CLAUDECODE", "")]);
        assert_eq!(env.copilot_home(), Some(Path::new("/h/.copilot")));
        assert!(!env.in_claude_code());
    }

    #[test]
    fn nested_agents_get_their_own_settings_and_none_of_ours() {
        let env = AgentEnv::from_vars([
            ("ANTHROPIC_API_KEY", "k"),
            ("COPILOT_MODEL", "m"),
            ("COPILOT_BRIDGE_TOKEN", "secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("GH_TOKEN", "gh"),
        ]);
        let names: Vec<&OsStr> = env
            .agent_settings()
            .iter()
            .map(|(name, _)| name.as_os_str())
            .collect();
        assert_eq!(names, ["ANTHROPIC_API_KEY", "COPILOT_MODEL", "GH_TOKEN"]);
    }

    #[test]
    fn telemetry_settings_are_where_and_whether_not_how_fast() {
        let env = AgentEnv::from_vars([
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x=1"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
            ("CLAUDE_CODE_ENABLE_TELEMETRY", ""),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert_eq!(
            env.telemetry_settings(),
            [
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
                "OTEL_SDK_DISABLED"
            ]
        );
    }
}
