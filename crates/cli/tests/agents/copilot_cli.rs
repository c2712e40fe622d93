//! GitHub Copilot CLI (`@github/copilot`, pinned in
//! scripts/install-test-deps.sh) in BYOK mode (`COPILOT_PROVIDER_*`,
//! `copilot help providers`) through the facade, both wire formats:
//! `openai` reaches `/v1/chat/completions`, `anthropic` `/v1/messages`.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};

use super::{agent_command, chat_requests, exports, run_agent, serve_with, setup, tool_round_trip};
use crate::cli_serve::Served;

/// `copilot -p PROMPT` with the facade as its `kind` provider: stdout.
async fn copilot(served: &Served, kind: &str, prompt: &str, extra: &[&str]) -> Option<String> {
    let program = agent_cli("copilot", "copilot")?;
    let home = tempfile::tempdir().unwrap();
    // Anthropic clients add /v1 themselves.
    let base_url = match kind {
        "anthropic" => served.url(""),
        _ => served.url("/v1"),
    };
    // What `copilot-bridge setup` tells a user to export (it gives the
    // OpenAI wire; the Anthropic one is its documented variant).
    let exported = exports(&setup(served, "copilot").await);
    assert_eq!(exported.len(), 4, "{exported:?}");
    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command
        .envs(exported)
        .env("COPILOT_HOME", home.path().join(".copilot"))
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", base_url)
        .env("COPILOT_PROVIDER_TYPE", kind)
        .env("COPILOT_MODEL", "gpt-4.1")
        .args(["-p", prompt])
        .args(extra);
    let (stdout, _) = run_agent(command, "copilot").await;
    Some(stdout)
}

#[tokio::test]
async fn a_text_turn_over_the_openai_wire() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(printed) = copilot(&served, "openai", "Say hello", &[]).await else {
        return;
    };
    assert!(printed.contains("Hello from the mock."), "{printed}");
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 1);
    // The CLI asked for gpt-4.1, which the backend does not serve: its own
    // model answered.
    assert_eq!(requests[0].body["model"], "mock-model");
    let last = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["content"].to_string().contains("Say hello"), "{last}");
}

#[tokio::test]
async fn copilot_views_a_file_with_its_own_tool_over_the_anthropic_wire() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    let notes = workspace.path().join("notes.txt");
    let arguments = serde_json::json!({"path": notes}).to_string();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("call_view_1", "view", arguments)],
        },
        MockReply::chunks(["The file says pineapple."]),
    ])
    .await;
    let served = serve_with(&mock, workspace);
    let Some(printed) = copilot(
        &served,
        "anthropic",
        "What does notes.txt say?",
        &["--allow-all-tools"],
    )
    .await
    else {
        return;
    };
    assert!(printed.contains("The file says pineapple."), "{printed}");

    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    let (_, output) = tool_round_trip(&requests[1], "Copilot CLI");
    assert_eq!(output["tool_call_id"], "call_view_1");
    assert!(
        output["content"].as_str().unwrap().contains("pineapple"),
        "{output}"
    );
}
