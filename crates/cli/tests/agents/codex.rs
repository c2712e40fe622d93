//! Codex (`@openai/codex`, pinned in scripts/install-test-deps.sh) through
//! `/v1/responses`, configured as docs/facade.md gives it: a
//! `[model_providers]` entry with `wire_api = "responses"`.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};

use super::{agent_command, chat_requests, exports, run_agent, serve_with, setup, tool_round_trip};
use crate::cli_serve::Served;

/// `codex exec PROMPT` against `served`: what it printed on stdout and
/// on stderr (its log of the turn, for the failure messages).
async fn codex(served: &Served, prompt: &str) -> Option<(String, String)> {
    let program = agent_cli("codex", "codex")?;
    let home = tempfile::tempdir().unwrap();
    // Exactly what `copilot-bridge setup` tells a user: the config.toml
    // block, then the key in the environment.
    let printed = setup(served, "codex").await;
    let (config, shell) = printed
        .split_once("# and in the shell")
        .expect("setup prints the config block, then the shell part");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command
        .env("CODEX_HOME", home.path())
        .envs(exports(shell))
        // Codex's own sandbox needs user namespaces, which a CI machine's
        // kernel may refuse (the command then fails inside Codex and the
        // output never reaches the model); these tests are about the hub's
        // wire, and the hub's policy is the guard they rely on.
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            prompt,
        ]);
    Some(run_agent(command, "codex").await)
}

#[tokio::test]
async fn a_text_turn_through_the_responses_api() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some((printed, log)) = codex(&served, "Say hello").await else {
        return;
    };
    assert_eq!(printed.trim(), "Hello from the mock.", "{log}");

    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 1);
    let sent = &requests[0].body;
    assert_eq!(sent["model"], "mock-model");
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system", "Codex's developer prompt");
    assert_eq!(messages.last().unwrap()["content"], "Say hello");
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"exec_command"), "{tools:?}");
}

#[tokio::test]
async fn codex_runs_its_shell_tool_and_finishes_the_turn() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_cat_1",
                "exec_command",
                // Not a login shell, and Codex's longest wait for output
                // (30 s): on a loaded machine the default (a login shell,
                // 10 s) can hand back a session id instead of the output,
                // and this test is about the facade's round trip.
                r#"{"cmd":"cat notes.txt","login":false,"yield_time_ms":30000}"#,
            )],
        },
        MockReply::chunks(["The file says pineapple."]),
    ])
    .await;
    let served = serve_with(&mock, workspace);
    let Some((printed, log)) = codex(&served, "What does notes.txt say?").await else {
        return;
    };
    assert_eq!(printed.trim(), "The file says pineapple.", "{log}");

    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    let (call, output) = tool_round_trip(&requests[1], "Codex");
    assert_eq!(call["id"], "call_cat_1");
    assert_eq!(output["tool_call_id"], "call_cat_1");
    assert!(
        output["content"].as_str().unwrap().contains("pineapple"),
        "{output}\ncodex's log: {log}"
    );
}
