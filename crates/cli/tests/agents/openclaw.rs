//! OpenClaw (`openclaw`, pinned with its Node 24 in
//! scripts/install-test-deps.sh) with the facade as a custom provider, the
//! `models.providers` entry `copilot-bridge setup` prints, running its
//! embedded agent (`openclaw agent --local`).

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli, repo_root};
use serde_json::{Value, json};

use super::{agent_command, chat_requests, run_agent, serve_with, setup, tool_round_trip};
use crate::cli_serve::Served;

/// `openclaw agent --local --message PROMPT --json` against `served`: its
/// JSON answer.
async fn openclaw(served: &Served, prompt: &str) -> Option<Value> {
    let program = agent_cli("openclaw", "openclaw")?;
    let node = repo_root().join(".peers/node24/node_modules/node/bin");
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join(".openclaw");
    std::fs::create_dir_all(&state).unwrap();
    // What setup prints, plus the workspace and no update check.
    let printed = setup(served, "openclaw").await;
    let block = printed
        .split_once("\n{")
        .map(|(_, rest)| format!("{{{rest}"))
        .expect("setup prints the openclaw.json block");
    let mut config: Value = serde_json::from_str(block.trim()).unwrap();
    config["agents"]["defaults"]["workspace"] = json!(served.workspace.path());
    config["update"] = json!({"checkOnStart": false});
    let config_path = state.join("openclaw.json");
    std::fs::write(&config_path, config.to_string()).unwrap();

    let mut command = agent_command(&program, home.path(), served.workspace.path());
    let path = format!(
        "{}:{}",
        node.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    command
        .env("PATH", path)
        .env("OPENCLAW_STATE_DIR", &state)
        .env("OPENCLAW_CONFIG_PATH", &config_path)
        .args([
            "agent",
            "--local",
            "--agent",
            "main",
            "--json",
            "--message",
            prompt,
        ]);
    let (stdout, _) = run_agent(command, "openclaw").await;
    Some(
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|err| panic!("openclaw printed no JSON answer ({err}): {stdout}")),
    )
}

fn reply_text(answer: &Value) -> String {
    answer["payloads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|payload| payload["text"].as_str())
        .collect()
}

#[tokio::test]
async fn a_text_turn_through_chat_completions() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(answer) = openclaw(&served, "Say hello").await else {
        return;
    };
    assert_eq!(reply_text(&answer), "Hello from the mock.", "{answer}");
    assert_eq!(answer["meta"]["agentMeta"]["provider"], "copilot-bridge");
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "mock-model");
}

#[tokio::test]
async fn openclaw_reads_a_file_with_its_own_tool_and_finishes_the_turn() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_read_1",
                "read",
                r#"{"path":"notes.txt"}"#,
            )],
        },
        MockReply::chunks(["The file says pineapple."]),
    ])
    .await;
    let served = serve_with(&mock, workspace);
    let Some(answer) = openclaw(&served, "What does notes.txt say?").await else {
        return;
    };
    assert_eq!(reply_text(&answer), "The file says pineapple.", "{answer}");
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    let (call, output) = tool_round_trip(&requests[1], "OpenClaw");
    assert_eq!(call["function"]["name"], "read");
    // OpenClaw renames call ids to its own shape; the pair still matches.
    assert_eq!(output["tool_call_id"], call["id"]);
    assert!(
        output["content"].to_string().contains("pineapple"),
        "{output}"
    );
}
