//! More of `cli_run`: split off to keep files readable.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copilot_runner_delegates_to_the_cli_and_logs_the_session() {
    let ws = repository();
    ws.write("README.md", "# Hello\n");
    let bridge = Bridge::new();
    let fake = bridge_testkit::built_binary("fake-copilot-cli");
    let record = ws.path().join(".fake-record.jsonl");
    // The CLI gets the launcher's minimal environment, not ours: the fake's
    // settings travel in a wrapper, as a user's own wrapper script would.
    let wrapper = bridge.state.path().join("copilot-wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec env FAKE_COPILOT_SCRIPT=task FAKE_COPILOT_RECORD='{}' '{}' \"$@\"\n",
            record.display(),
            fake.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let output = bridge
        .cmd()
        .env("COPILOT_CLI_PATH", &wrapper)
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", "http://127.0.0.1:9/v1")
        .env("COPILOT_BYOK_API_KEY", "sk-test-key")
        .env("COPILOT_BYOK_MODEL", "m")
        .args([
            "run",
            "What does the README say?",
            "--runner",
            "copilot",
            "--cwd",
        ])
        .arg(ws.path())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("The README says hello."), "{stdout}");
    // The BYOK settings reached the CLI's session configuration.
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert!(recorded.contains("session.create"), "{recorded}");
    assert!(recorded.contains("http://127.0.0.1:9/v1"), "{recorded}");
    // ... and only there: the key is not in the CLI's environment.
    let environment = recorded
        .lines()
        .find(|line| line.contains("_environment"))
        .unwrap_or_default();
    assert!(environment.contains("\"PATH\""), "{environment}");
    assert!(!environment.contains("COPILOT_BYOK"), "{environment}");
    // The session log has the prompt and the answer.
    let (_, events) = session_log(&bridge);
    let kinds = kinds(&events);
    assert!(kinds.contains(&"user.message"), "{kinds:?}");
    assert!(kinds.contains(&"assistant.message"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_calls_a_tool_of_an_mcp_server_over_stdio() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "c1",
                "test__echo",
                r#"{"text": "ping from the model"}"#,
            )],
        },
        MockReply::text("The server echoed it."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let server = bridge_testkit::built_binary("mcp-test-server");
    configure(
        &bridge,
        &format!(
            "[mcp.servers.test]\ncommand = {:?}\ntools = [\"echo\", \"add\"]\n",
            server.display().to_string()
        ),
    );
    let output = run_against(&bridge, &mock, &ws, "echo something through MCP")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // The model was offered the server's filtered tools under their full names.
    let first = &chats(&mock)[0];
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"test__echo") && offered.contains(&"test__add"),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"test__fail"),
        "filtered out: {offered:?}"
    );
    // The tool ran in the server and its answer went back to the model.
    let told = tool_messages(&chats(&mock)[1]);
    assert!(told[0].contains("ping from the model"), "{told:?}");
    assert!(stdout.contains("`test__echo`"), "{stdout}");
}
