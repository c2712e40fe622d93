//! `copilot-bridge hook` as the real agents run it once `copilot-bridge
//! hooks install --scope user` put it in their configuration (Claude
//! Code's settings.json, the Copilot CLI's `$COPILOT_HOME/hooks/`), each
//! agent talking straight to the mock upstream (no daemon runs: the hook
//! decides with the local policy). The model asks for a shell command; the
//! assertions are on what ran, what the agent sent back to the model, and
//! the audit log.

use std::path::{Path, PathBuf};

use bridge_testkit::{MockLlm, TempWorkspace, agent_cli};
use serde_json::Value;

use super::{
    agent_command, bridge_command, chat_requests, copilot_env, mock_asking, run_agent,
    tool_round_trip,
};

/// A command our shell analysis calls dangerous (`sudo`), which leaves a
/// file behind if the agent runs it anyway.
const DANGEROUS: &str = "touch pwned.txt; sudo true";
/// A read-only command that runs without approval.
const SAFE: &str = "echo hi-from-bash";

/// `copilot-bridge hooks install --agent AGENT --scope user` as a user
/// runs it: the agent's configuration under `agent_home` (`env` names it
/// as the agent will see it), the audit log in `bridge_home`.
pub(super) fn install_hooks(
    agent: &str,
    agent_home: &Path,
    bridge_home: &Path,
    env: &[(&str, &Path)],
) {
    let mut install = bridge_command(agent_home, bridge_home);
    install.args(["hooks", "install", "--agent", agent, "--scope", "user"]);
    for (name, value) in env {
        install.env(name, value);
    }
    let output = install.output().unwrap();
    assert!(output.status.success(), "hooks install: {output:?}");
}

/// The tool result the agent sent back to the model, as text: an OpenAI
/// `tool` message (the Copilot CLI) or an Anthropic `tool_result` block
/// (Claude Code).
pub(super) fn tool_answer(mock: &MockLlm, agent: &str) -> String {
    let requests = chat_requests(mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    if requests[1].path.ends_with("/messages") {
        let blocks: Vec<&Value> = requests[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|message| message["content"].as_array())
            .flatten()
            .collect();
        let result = blocks
            .iter()
            .find(|block| block["type"] == "tool_result")
            .unwrap_or_else(|| panic!("{agent} sent the tool's result back: {blocks:?}"));
        assert_eq!(result["tool_use_id"], "call_sh_1");
        return result["content"].to_string();
    }
    let (call, answer) = tool_round_trip(&requests[1], agent);
    assert_eq!(call["id"], "call_sh_1");
    answer["content"].to_string()
}

/// Every audit entry under `home`.
fn audit_entries(home: &Path) -> Vec<Value> {
    let dir = home.join("audit");
    let Ok(files) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut entries = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        entries.extend(text.lines().map(|line| serde_json::from_str(line).unwrap()));
    }
    entries
}

struct Run {
    workspace: TempWorkspace,
    bridge_home: tempfile::TempDir,
    _agent_home: tempfile::TempDir,
}

/// `claude -p` with our hooks in its settings, against the mock.
async fn claude(mock: &MockLlm, extra: &[&str]) -> Option<Run> {
    let program = agent_cli("claude", "claude")?;
    let workspace = TempWorkspace::new();
    let bridge_home = tempfile::tempdir().unwrap();
    let agent_home = tempfile::tempdir().unwrap();
    let claude_dir = agent_home.path().join(".claude");
    install_hooks(
        "claude",
        agent_home.path(),
        bridge_home.path(),
        &[("CLAUDE_CONFIG_DIR", &claude_dir)],
    );
    let mut command = agent_command(&program, agent_home.path(), workspace.path());
    command
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "sk-mock")
        .env("CLAUDE_CONFIG_DIR", agent_home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Run the command", "--output-format", "json"])
        .args(extra);
    run_agent(command, "claude").await;
    Some(Run {
        workspace,
        bridge_home,
        _agent_home: agent_home,
    })
}

/// `claude -p` in a project where `hooks install --scope project` wrote
/// the shared settings and this machine's part, against the mock.
async fn claude_in_project(mock: &MockLlm, extra: &[&str]) -> Option<Run> {
    let program = agent_cli("claude", "claude")?;
    let workspace = TempWorkspace::new();
    let bridge_home = tempfile::tempdir().unwrap();
    let agent_home = tempfile::tempdir().unwrap();
    let mut install = bridge_command(agent_home.path(), bridge_home.path());
    install
        .args([
            "hooks", "install", "--agent", "claude", "--scope", "project", "--dir",
        ])
        .arg(workspace.path());
    let output = install.output().unwrap();
    assert!(output.status.success(), "hooks install: {output:?}");
    let shared = std::fs::read_to_string(workspace.path().join(".claude/settings.json")).unwrap();
    assert!(
        !shared.contains(&*bridge_home.path().display().to_string())
            && !shared.contains("/target/"),
        "the shared settings name no path of this machine: {shared}"
    );
    // Neither the binary nor the state directory comes from Claude's own
    // environment: only from settings.local.json.
    let mut command = agent_command(&program, agent_home.path(), workspace.path());
    command
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "sk-mock")
        .env("CLAUDE_CONFIG_DIR", agent_home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Run the command", "--output-format", "json"])
        .args(extra);
    run_agent(command, "claude").await;
    Some(Run {
        workspace,
        bridge_home,
        _agent_home: agent_home,
    })
}

/// `copilot -p` with our hooks in `$COPILOT_HOME/hooks/`, against the mock.
async fn copilot(mock: &MockLlm) -> Option<Run> {
    let program = agent_cli("copilot", "copilot")?;
    let workspace = TempWorkspace::new();
    let bridge_home = tempfile::tempdir().unwrap();
    let agent_home = tempfile::tempdir().unwrap();
    let copilot_home: PathBuf = agent_home.path().join(".copilot");
    install_hooks(
        "copilot",
        agent_home.path(),
        bridge_home.path(),
        &[("COPILOT_HOME", &copilot_home)],
    );
    let mut command = agent_command(&program, agent_home.path(), workspace.path());
    command
        .envs(copilot_env(agent_home.path(), Some(mock)))
        .args(["-p", "Run the command", "--allow-all-tools"]);
    run_agent(command, "copilot").await;
    Some(Run {
        workspace,
        bridge_home,
        _agent_home: agent_home,
    })
}

fn assert_denied_and_not_run(run: &Run, mock: &MockLlm, agent: &str, who: &str) {
    assert!(
        !run.workspace.path().join("pwned.txt").exists(),
        "{agent} ran the denied command"
    );
    let answer = tool_answer(mock, agent);
    assert!(
        answer.contains("superuser"),
        "{agent} told the model: {answer}"
    );
    let entries = audit_entries(run.bridge_home.path());
    let denied = entries
        .iter()
        .find(|entry| entry["decision"] == "deny")
        .unwrap_or_else(|| panic!("no deny in the audit log: {entries:?}"));
    assert_eq!(denied["hook"], format!("pre-tool-use:{who}"), "{denied}");
}

fn assert_ran_and_recorded(run: &Run, mock: &MockLlm, agent: &str, who: &str) {
    let answer = tool_answer(mock, agent);
    assert!(
        answer.contains("hi-from-bash"),
        "{agent} told the model: {answer}"
    );
    let entries = audit_entries(run.bridge_home.path());
    let hooks: Vec<&str> = entries
        .iter()
        .filter_map(|entry| entry["hook"].as_str())
        .collect();
    assert_eq!(
        hooks,
        [
            format!("pre-tool-use:{who}"),
            format!("post-tool-use:{who}")
        ],
        "{entries:?}"
    );
}

#[tokio::test]
async fn claude_code_is_denied_a_dangerous_command_by_the_hook() {
    let mock = mock_asking("Bash", DANGEROUS).await;
    // Claude's own permissions would let it run: only the hook stops it.
    let Some(run) = claude(&mock, &["--allowedTools", "Bash"]).await else {
        return;
    };
    assert_denied_and_not_run(&run, &mock, "Claude Code", "claude-code");
}

#[tokio::test]
async fn claude_code_runs_a_safe_command_the_hook_lets_through() {
    let mock = mock_asking("Bash", SAFE).await;
    let Some(run) = claude(&mock, &["--allowedTools", "Bash"]).await else {
        return;
    };
    assert_ran_and_recorded(&run, &mock, "Claude Code", "claude-code");
}

#[tokio::test]
async fn the_copilot_cli_is_denied_a_dangerous_command_by_the_hook() {
    let mock = mock_asking("bash", DANGEROUS).await;
    let Some(run) = copilot(&mock).await else {
        return;
    };
    assert_denied_and_not_run(&run, &mock, "Copilot CLI", "copilot-cli");
}

#[tokio::test]
async fn the_copilot_cli_runs_a_safe_command_the_hook_lets_through() {
    let mock = mock_asking("bash", SAFE).await;
    let Some(run) = copilot(&mock).await else {
        return;
    };
    assert_ran_and_recorded(&run, &mock, "Copilot CLI", "copilot-cli");
}

#[tokio::test]
async fn claude_code_obeys_hooks_installed_for_the_project_with_no_path_of_this_machine() {
    let mock = mock_asking("Bash", DANGEROUS).await;
    let Some(run) = claude_in_project(&mock, &["--allowedTools", "Bash"]).await else {
        return;
    };
    assert_denied_and_not_run(&run, &mock, "Claude Code", "claude-code");
}
