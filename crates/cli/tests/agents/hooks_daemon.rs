//! Real Claude Code with `hooks install` and a daemon running: its session
//! is a hub session, and a provider bound to it gates its tool calls.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, ProviderClient, agent_cli};
use serde_json::json;

use super::hooks::{install_hooks, tool_answer};
use super::{agent_command, run_agent};
use crate::cli_serve::Served;

const SESSION: &str = "5b0e3c1e-8d7a-4c51-9a0e-2f4d6b8c1a37";

#[tokio::test]
async fn a_providers_gate_denies_claude_codes_tool_call() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let arguments = json!({"command": "echo hi-from-bash", "description": "run it"}).to_string();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("call_sh_1", "Bash", arguments)],
        },
        MockReply::chunks(["done"]),
    ])
    .await;
    let served = Served::start();
    let agent_home = tempfile::tempdir().unwrap();
    let claude_dir = agent_home.path().join(".claude");
    install_hooks(
        "claude",
        agent_home.path(),
        served.state(),
        &[("CLAUDE_CONFIG_DIR", &claude_dir)],
    );
    // The session is known before Claude starts (`--session-id`), so the
    // provider can bind to it first.
    let hub_session = format!("claude-code-{SESSION}");
    let registered = served
        .rpc(
            "agent.hook",
            json!({"agent": "claude-code", "agentSession": SESSION,
                   "cwd": served.workspace.path(), "event": "session-start"}),
        )
        .await;
    assert_eq!(registered["session"], hub_session);
    let token = served.provider_token_for(&hub_session).await;
    let (mut reviewer, _) = ProviderClient::register(
        &served.ws_url(),
        &token,
        "reviewer",
        json!({"session": hub_session,
               "hooks": {"onPreToolUse": [{"match": {"tool": "Bash"}, "action": "gate", "gateId": "review"}]}}),
    )
    .await
    .unwrap();

    let mut command = agent_command(&program, agent_home.path(), served.workspace.path());
    command
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "sk-mock")
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Run the command", "--output-format", "json"])
        .args(["--session-id", SESSION, "--allowedTools", "Bash"]);
    let gatekeeping = async {
        let check = reviewer
            .expect_within("gate.check", super::AGENT_PATIENCE)
            .await
            .unwrap();
        reviewer
            .send(
                json!({"type": "gate.result", "gateId": check["gateId"], "callId": check["callId"],
                         "decision": "deny", "reason": "the reviewer says no"}),
            )
            .await
            .unwrap();
        check
    };
    let (_, check) = tokio::join!(run_agent(command, "claude"), gatekeeping);
    assert_eq!(check["tool"], "Bash", "{check}");
    let answer = tool_answer(&mock, "Claude Code");
    assert!(answer.contains("the reviewer says no"), "{answer}");
    assert!(
        !answer.contains("hi-from-bash\\n"),
        "the command ran: {answer}"
    );
}
