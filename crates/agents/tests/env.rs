//! Where the agents keep things, resolved from one environment.

use std::path::Path;

use bridge_agents::{AgentEnv, AgentsError, Scope};
use bridge_policy::agent_tools::Agent;

#[test]
fn the_copilot_clis_home_is_copilot_home_else_dot_copilot_in_the_home() {
    let set = AgentEnv::from_vars([("HOME", "/home/u"), ("COPILOT_HOME", "/opt/copilot")]);
    assert_eq!(set.copilot_home(), Some(Path::new("/opt/copilot")));
    assert_eq!(
        set.copilot_dir(Scope::User).as_deref(),
        Some(Path::new("/opt/copilot"))
    );
    let unset = AgentEnv::from_vars([("HOME", "/home/u")]);
    assert_eq!(unset.copilot_home(), Some(Path::new("/home/u/.copilot")));
    // A project's configuration is the project's whatever the home.
    assert_eq!(
        set.copilot_dir(Scope::Project(Path::new("/w"))).as_deref(),
        Some(Path::new("/w/.github"))
    );
}

#[test]
fn claude_codes_settings_are_in_claude_config_dir_else_dot_claude_in_the_home() {
    let set = AgentEnv::from_vars([("HOME", "/home/u"), ("CLAUDE_CONFIG_DIR", "/etc/claude")]);
    assert_eq!(set.claude_config_dir(), Some(Path::new("/etc/claude")));
    let unset = AgentEnv::from_vars([("HOME", "/home/u")]);
    assert_eq!(
        unset.claude_dir(Scope::User).as_deref(),
        Some(Path::new("/home/u/.claude"))
    );
    assert_eq!(
        unset.claude_dir(Scope::Project(Path::new("/w"))).as_deref(),
        Some(Path::new("/w/.claude"))
    );
}

#[test]
fn codex_home_is_codex_home_else_dot_codex_in_the_home() {
    let set = AgentEnv::from_vars([("HOME", "/home/u"), ("CODEX_HOME", "/srv/codex")]);
    assert_eq!(set.codex_home(), Some(Path::new("/srv/codex")));
    let unset = AgentEnv::from_vars([("HOME", "/home/u")]);
    assert_eq!(unset.codex_home(), Some(Path::new("/home/u/.codex")));
}

#[test]
fn without_a_home_only_explicit_directories_are_known() {
    let env = AgentEnv::from_vars([("COPILOT_HOME", "/opt/copilot")]);
    assert_eq!(env.copilot_home(), Some(Path::new("/opt/copilot")));
    assert_eq!(env.claude_dir(Scope::User), None);
    assert_eq!(env.codex_home(), None);
    assert!(matches!(
        env.vscode_extensions_dir("code"),
        Err(AgentsError::NoHomeForEditor)
    ));
    // USERPROFILE is the home where HOME is not set.
    let windows = AgentEnv::from_vars([("USERPROFILE", "/users/u")]);
    assert_eq!(
        windows.vscode_extensions_dir("remote").unwrap(),
        Path::new("/users/u/.vscode-server/extensions")
    );
}

#[test]
fn an_agent_names_its_project_in_its_hooks_environment() {
    let env = AgentEnv::from_vars([
        ("CLAUDE_PROJECT_DIR", "/p/claude"),
        ("COPILOT_PROJECT_DIR", "/p/copilot"),
        ("COPILOT_CLI", "1"),
    ]);
    assert_eq!(
        env.project_dir(Agent::ClaudeCode),
        Some(Path::new("/p/claude"))
    );
    assert_eq!(
        env.project_dir(Agent::CopilotCli),
        Some(Path::new("/p/copilot"))
    );
    assert!(env.in_copilot_cli() && !env.in_claude_code());
}

#[test]
fn an_unknown_editor_is_refused_by_name() {
    let env = AgentEnv::from_vars([("HOME", "/home/u")]);
    let err = env.vscode_extensions_dir("notepad").unwrap_err();
    assert_eq!(err.to_string(), "unknown editor \"notepad\"");
}
