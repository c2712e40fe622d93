//! The real agents, unmodified, through the daemon's facade: each pinned
//! release (scripts/install-test-deps.sh) runs offline with a private HOME,
//! telemetry and updates off, against `serve` whose backend is the
//! testkit's mock upstream. Each test asserts on what the agent printed and
//! on what the mock received.

mod claude_code;
mod claude_code_telemetry;
mod codex;
mod codex_hooks;
mod codex_telemetry;
mod copilot_cli;
mod copilot_extension;
mod dashboard;
mod hooks;
mod hooks_daemon;
mod launch;
mod openclaw;
mod openclaw_gateway;
mod openclaw_plugin;
mod openclaw_plugin_failures;
mod orchestrate;
mod vscode;
mod vscode_approvals;

use std::path::Path;
use std::time::Duration;

use bridge_testkit::{MockLlm, RecordedRequest, TempWorkspace};
use serde_json::Value;

use crate::cli_serve::Served;
use crate::support::Bridge;

/// An agent's whole run, model turns and its own tools included.
pub(crate) const AGENT_PATIENCE: Duration = Duration::from_secs(120);

/// `serve` in `workspace` with the mock as its OpenAI-wire backend.
pub fn serve_with(mock: &MockLlm, workspace: TempWorkspace) -> Served {
    serve_with_env(mock, workspace, &[])
}

/// [`serve_with`], with `extra` in the daemon's environment.
pub fn serve_with_env(mock: &MockLlm, workspace: TempWorkspace, extra: &[(&str, &str)]) -> Served {
    serve_in(mock, Bridge::new(), workspace, extra)
}

/// [`serve_with_env`] with `bridge`'s state directory (a restart keeps it).
pub fn serve_in(
    mock: &MockLlm,
    bridge: Bridge,
    workspace: TempWorkspace,
    extra: &[(&str, &str)],
) -> Served {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let base_url = format!("{}/v1", mock.base_url());
    let mut env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1"),
        ("OLLAMA_HOST", dead_url.as_str()),
        ("COPILOT_BYOK_PROVIDER", "openai"),
        ("COPILOT_BYOK_BASE_URL", base_url.as_str()),
        ("COPILOT_BYOK_API_KEY", "sk-upstream"),
        ("COPILOT_BYOK_MODEL", "mock-model"),
    ];
    env.extend_from_slice(extra);
    Served::start_in(bridge, workspace, &env)
}

/// A command with nothing of the developer's environment: PATH, a private
/// HOME under `home`, and `env`.
fn agent_command(program: &Path, home: &Path, cwd: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .current_dir(cwd)
        .kill_on_drop(true);
    command
}

/// Runs `command` to its end within [`AGENT_PATIENCE`]: (stdout, stderr).
async fn run_agent(mut command: tokio::process::Command, what: &str) -> (String, String) {
    let output = tokio::time::timeout(AGENT_PATIENCE, command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {AGENT_PATIENCE:?}"))
        .unwrap_or_else(|err| panic!("{what} could not start: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    (stdout, stderr)
}

/// What `copilot-bridge setup --agent AGENT` prints for `served`.
async fn setup(served: &Served, agent: &str) -> String {
    let output = served
        .cli()
        .args(["setup", "--agent", agent, "--model", "mock-model"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "setup failed: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The `export NAME=VALUE` lines of `text`.
fn exports(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.strip_prefix("export "))
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// In the history of a request after a tool turn: the model's first tool
/// call and the agent's tool message answering it.
fn tool_round_trip(request: &RecordedRequest, agent: &str) -> (Value, Value) {
    let messages = request.body["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .unwrap_or_else(|| panic!("the model's tool call is in the history {agent} sent back"));
    let output = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{agent} sent the tool's result back"));
    (call["tool_calls"][0].clone(), output.clone())
}

/// `copilot-bridge` as a user runs it beside an agent: nothing of the
/// developer's environment, `home` as HOME and `bridge_home` as the state
/// directory.
pub(crate) fn bridge_command(home: &Path, bridge_home: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("copilot-bridge"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_BRIDGE_HOME", bridge_home);
    command
}

/// Stops the daemon a test's agent started in the state directory it
/// names (`launch`, the Copilot CLI extension), when the test ends.
pub(crate) struct StopDaemon<'a>(pub &'a Path);

impl Drop for StopDaemon<'_> {
    fn drop(&mut self) {
        let _ = bridge_command(self.0, self.0)
            .args(["daemon", "stop"])
            .output();
    }
}

/// The Copilot CLI's environment with its home under `home`, offline; with
/// `mock`, its model is the mock over the OpenAI wire (BYOK).
pub(crate) fn copilot_env(home: &Path, mock: Option<&MockLlm>) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("COPILOT_HOME", home.join(".copilot").display().to_string()),
        ("COPILOT_OFFLINE", "true".to_owned()),
    ];
    if let Some(mock) = mock {
        env.push((
            "COPILOT_PROVIDER_BASE_URL",
            format!("{}/v1", mock.base_url()),
        ));
        env.push(("COPILOT_PROVIDER_TYPE", "openai".to_owned()));
        env.push(("COPILOT_PROVIDER_API_KEY", "sk-mock".to_owned()));
        env.push(("COPILOT_MODEL", "gpt-4.1".to_owned()));
    }
    env
}

/// The model asks for `command` through `tool` (call id `call_sh_1`), then
/// says "done".
pub(crate) async fn mock_asking(tool: &str, command: &str) -> MockLlm {
    let arguments = serde_json::json!({"command": command, "description": "run it"}).to_string();
    MockLlm::start(vec![
        bridge_testkit::MockReply::ToolCalls {
            text: None,
            calls: vec![bridge_testkit::MockToolCall::new(
                "call_sh_1",
                tool,
                arguments,
            )],
        },
        bridge_testkit::MockReply::chunks(["done"]),
    ])
    .await
}

/// The chat requests the mock received (not the daemon's model probes).
fn chat_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}
