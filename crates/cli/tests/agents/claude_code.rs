//! Claude Code (`@anthropic-ai/claude-code`, pinned in
//! scripts/install-test-deps.sh) with its default model setting, through
//! `/v1/messages` with `ANTHROPIC_BASE_URL` as docs/facade.md gives it.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};
use serde_json::Value;

use super::{
    agent_command, chat_requests, exports, run_agent, serve_with, serve_with_env, setup,
    tool_round_trip,
};
use crate::cli_serve::Served;

/// `claude -p PROMPT --output-format json` against `served`; its JSON result.
async fn claude(served: &Served, prompt: &str, extra: &[&str]) -> Option<Value> {
    let program = agent_cli("claude", "claude")?;
    let home = tempfile::tempdir().unwrap();
    let mut command = agent_command(&program, home.path(), served.workspace.path());
    // Exactly what `copilot-bridge setup` tells a user to export.
    let exported = exports(&setup(served, "claude").await);
    assert_eq!(exported.len(), 2, "{exported:?}");
    command
        .envs(exported)
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", prompt, "--output-format", "json"])
        .args(extra);
    let (stdout, _) = run_agent(command, "claude").await;
    Some(
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|err| panic!("claude printed no JSON result ({err}): {stdout}")),
    )
}

#[tokio::test]
async fn a_text_turn_with_claude_codes_default_settings() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(result) = claude(&served, "Say hello", &[]).await else {
        return;
    };
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["result"], "Hello from the mock.");

    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 1, "one model turn");
    let sent = &requests[0].body;
    // Claude Code asked for its own default model (a claude-… name the
    // backend does not serve): the backend's configured model answered.
    assert_eq!(sent["model"], "mock-model");
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let prompt = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect::<String>();
    assert!(prompt.contains("Say hello"), "{sent}");
    // Its tools reach the model as functions.
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"Read") && tools.contains(&"Bash"),
        "{tools:?}"
    );
}

#[tokio::test]
async fn claude_code_runs_its_own_read_tool_and_finishes_the_turn() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    let notes = workspace.path().join("notes.txt");
    let arguments = serde_json::json!({"file_path": notes}).to_string();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("call_read_1", "Read", arguments)],
        },
        MockReply::chunks(["The file says pineapple."]),
    ])
    .await;
    let served = serve_with(&mock, workspace);
    let Some(result) = claude(
        &served,
        "What does notes.txt say?",
        &["--allowedTools", "Read"],
    )
    .await
    else {
        return;
    };
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["result"], "The file says pineapple.");
    assert_eq!(result["num_turns"], 2);

    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    let (call, answer) = tool_round_trip(&requests[1], "Claude Code");
    assert_eq!(call["id"], "call_read_1");
    assert_eq!(call["function"]["name"], "Read");
    assert_eq!(answer["tool_call_id"], "call_read_1");
    assert!(
        answer["content"].as_str().unwrap().contains("pineapple"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_wrong_token_ends_claude_codes_turn_at_once() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let mock = MockLlm::start(vec![MockReply::chunks(["never sent"])]).await;
    let served = serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_REQUEST_LOG", "1")],
    );
    let home = tempfile::tempdir().unwrap();
    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command
        .env("ANTHROPIC_BASE_URL", served.url(""))
        .env("ANTHROPIC_AUTH_TOKEN", "not-the-daemons-token")
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Say hello", "--output-format", "json"]);
    let started = std::time::Instant::now();
    let output = tokio::time::timeout(super::AGENT_PATIENCE, command.output())
        .await
        .expect("claude ends")
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // `x-should-retry: false` on the 401: no retries. Without it Claude
    // Code retried with backoff past two minutes (measured); with it the
    // turn ends in about a second on an idle machine, so 30 s tells the
    // two apart with room for a loaded one.
    assert!(
        took < std::time::Duration::from_secs(30),
        "took {took:?}: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("invalid_api_key") || stdout.contains("API key"),
        "took {took:?}: {stdout}\n{stderr}"
    );
    assert!(chat_requests(&mock).is_empty(), "nothing reached the model");
    // The mechanism, whatever the machine's speed: one refused request,
    // never a retry.
    let journal = std::fs::read_to_string(served.state().join("requests.jsonl")).unwrap();
    let refused = journal
        .lines()
        .filter(|line| line.contains("/v1/messages") && line.contains("\"status\":401"))
        .count();
    assert_eq!(refused, 1, "Claude Code asked once: {journal}");
}
