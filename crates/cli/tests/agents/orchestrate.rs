//! Orchestrated sub-tasks run by the real agent CLIs, nested: Claude Code
//! 2.1.328 (`claude -p`) and the Copilot CLI 1.0.102 (`copilot -p`), both
//! answering from the mock, with our hooks staged; the second gets the
//! first's result.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, TempWorkspace, agent_cli};
use serde_json::{Value, json};

use super::{StopDaemon, bridge_command, copilot_env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_and_the_copilot_cli_run_sub_tasks_nested() {
    let (Some(claude), Some(copilot)) = (
        agent_cli("claude", "claude"),
        agent_cli("copilot", "copilot"),
    ) else {
        return;
    };
    let mock = MockLlm::start(Vec::new()).await;
    mock.route(
        "Your sub-task (t1)",
        MockReply::text("t1: Claude Code counted 42 files"),
    );
    mock.route(
        "Your sub-task (t2)",
        MockReply::text("t2: the Copilot CLI checked the count"),
    );
    let workspace = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    // The Copilot CLI's staged extension starts the daemon of this state
    // directory; it must not outlive the test.
    let _stop = StopDaemon(bridge_home.path());
    let plan = bridge_home.path().join("plan.json");
    std::fs::write(
        &plan,
        json!({"tasks": [
            {"id": "t1", "description": "Count the files", "runner": "claude", "readOnly": true},
            {"id": "t2", "description": "Check the count", "runner": "copilot-cli", "readOnly": true}],
            "dependencies": {"t2": ["t1"]}})
        .to_string(),
    )
    .unwrap();
    let mut command = bridge_command(home.path(), bridge_home.path());
    command
        .current_dir(workspace.path())
        .args(["orchestrate", "--plan"])
        .arg(&plan)
        .arg("--json")
        .env("COPILOT_BRIDGE_CLAUDE_BINARY", &claude)
        .env("COPILOT_CLI_PATH", &copilot)
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "sk-mock")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        // A daemon the agents' hooks start takes a free port, not 9400,
        // which other tests' daemons may hold.
        .env("COPILOT_BRIDGE_PORT", "0");
    for (name, value) in copilot_env(home.path(), Some(&mock)) {
        command.env(name, value);
    }
    let output = tokio::time::timeout(
        Duration::from_secs(240),
        tokio::process::Command::from(command)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the orchestration ended")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["tasks"][0]["runner"], "claude");
    assert_eq!(
        result["tasks"][0]["output"],
        "t1: Claude Code counted 42 files"
    );
    assert_eq!(result["tasks"][1]["runner"], "copilot-cli");
    assert_eq!(
        result["tasks"][1]["output"],
        "t2: the Copilot CLI checked the count"
    );
    assert!(
        stderr.contains("Running t1 (wave 1, claude, workspace)"),
        "{stderr}"
    );
    // Each agent asked the mock over its own wire; the second saw the first's result.
    let requests = mock.requests();
    let asked = |path: &str, marker: &str| {
        requests
            .iter()
            .filter(|r| r.path == path && r.body.to_string().contains(marker))
            .count()
    };
    assert!(asked("/v1/messages", "Your sub-task (t1)") >= 1);
    assert!(asked("/v1/chat/completions", "Your sub-task (t2)") >= 1);
    assert!(asked("/v1/chat/completions", "t1: Claude Code counted 42 files") >= 1);
}
