//! What `launch` and the orchestrator's nested agents stage for one run:
//! our hook on every event (no chain: a staged run has no hooks of the
//! user's to run through ours) and our MCP servers, reaching the same
//! daemon.

use std::path::{Path, PathBuf};

use bridge_agents::Program;
use bridge_agents::launch::{HOOKS_ACTIVE_VARIABLE, stage};
use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

fn program(home: &Path) -> Program {
    Program {
        path: PathBuf::from("/opt/bin/copilot-bridge"),
        home: home.to_owned(),
        home_configured: true,
        port: Some(9555),
        approval_timeout_secs: 120,
    }
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn claude_code_gets_settings_with_our_hooks_and_an_mcp_config() {
    let dir = tempfile::tempdir().unwrap();
    let staged = stage(Agent::ClaudeCode, &program(Path::new("/state")), dir.path()).unwrap();
    let settings = dir.path().join("settings.json");
    let mcp = dir.path().join("mcp.json");
    assert_eq!(
        staged.args,
        [
            "--settings",
            &settings.display().to_string(),
            "--mcp-config",
            &mcp.display().to_string()
        ]
    );
    assert!(staged.env.is_empty());
    let hooks = read(&settings)["hooks"].clone();
    assert_eq!(hooks.as_object().unwrap().len(), 5);
    assert_eq!(
        hooks["PreToolUse"][0]["hooks"][0]["command"],
        "'/opt/bin/copilot-bridge' --home '/state' hook pre-tool-use --agent claude"
    );
    let servers = read(&mcp)["mcpServers"].clone();
    let names: Vec<&String> = servers.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        [
            "copilot-bridge",
            "copilot-bridge-session",
            "openclaw-memory"
        ]
    );
    assert_eq!(
        servers["copilot-bridge"],
        json!({"type": "stdio", "command": "/opt/bin/copilot-bridge", "args": ["mcp", "code"],
            "env": {"COPILOT_BRIDGE_HOME": "/state", "COPILOT_BRIDGE_PORT": "9555"}})
    );
}

#[test]
fn the_copilot_cli_gets_a_plugin_with_our_hooks_and_is_told_they_decide() {
    let dir = tempfile::tempdir().unwrap();
    let staged = stage(Agent::CopilotCli, &program(Path::new("/state")), dir.path()).unwrap();
    let plugin = dir.path().join("copilot-bridge");
    assert_eq!(
        staged.args,
        [
            "--plugin-dir".to_owned(),
            plugin.display().to_string(),
            "--additional-mcp-config".to_owned(),
            format!("@{}", dir.path().join("mcp.json").display()),
            "--experimental".to_owned(),
        ]
    );
    assert_eq!(staged.env, [(HOOKS_ACTIVE_VARIABLE, "1")]);
    assert_eq!(read(&plugin.join("plugin.json"))["name"], "copilot-bridge");
    let hooks = read(&plugin.join("hooks/hooks.json"));
    assert_eq!(hooks["version"], 1);
    assert_eq!(
        hooks["hooks"]["preToolUse"][0],
        json!({"type": "command", "timeoutSec": 130,
            "bash": "'/opt/bin/copilot-bridge' --home '/state' hook pre-tool-use --agent copilot"})
    );
    let servers = read(&dir.path().join("mcp.json"))["mcpServers"].clone();
    assert_eq!(servers["openclaw-memory"]["type"], "local");
    assert_eq!(servers["openclaw-memory"]["tools"], json!(["*"]));
    assert!(
        servers.get("copilot-bridge").is_none(),
        "the Copilot CLI codes itself"
    );
}

#[test]
fn a_claude_run_without_a_terminal_sends_its_permission_prompts_to_the_hub() {
    let args = |list: &[&str]| list.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
    let wired = bridge_agents::launch::permission_prompt_args;
    assert_eq!(
        wired(Agent::ClaudeCode, &args(&["-p", "run the tests"])),
        [
            "--permission-prompt-tool",
            "mcp__copilot-bridge-session__approve"
        ]
    );
    assert_eq!(wired(Agent::ClaudeCode, &args(&["--print", "x"])).len(), 2);
    // Interactive runs ask on their terminal; a tool the user named stays.
    assert!(wired(Agent::ClaudeCode, &args(&["fix the bug"])).is_empty());
    assert!(
        wired(
            Agent::ClaudeCode,
            &args(&["-p", "x", "--permission-prompt-tool=mcp__mine__ok"])
        )
        .is_empty()
    );
    assert!(wired(Agent::CopilotCli, &args(&["-p", "x"])).is_empty());
}

#[test]
fn claudes_own_arguments_come_first_so_a_bare_prompt_stays_a_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let staged = stage(Agent::ClaudeCode, &program(dir.path()), dir.path()).unwrap();
    let user = vec!["Say hello".to_owned(), "-p".to_owned()];
    let line = bridge_agents::launch::command_line(Agent::ClaudeCode, &staged, &user);
    assert_eq!(&line[..2], user.as_slice(), "{line:?}");
    // Ours follow, each option with its one value, the prompt tool of -p last.
    assert_eq!(&line[2..6], staged.args.as_slice(), "{line:?}");
    assert_eq!(line[6], "--permission-prompt-tool", "{line:?}");
    let copilot = stage(Agent::CopilotCli, &program(dir.path()), dir.path()).unwrap();
    let line = bridge_agents::launch::command_line(Agent::CopilotCli, &copilot, &user);
    assert_eq!(&line[..copilot.args.len()], copilot.args.as_slice());
    assert_eq!(&line[copilot.args.len()..], user.as_slice());
}
