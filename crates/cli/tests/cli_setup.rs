//! `copilot-bridge setup` without a running daemon: the configured port and
//! a command that reads the token when the lines are pasted. (With a daemon,
//! its output is what the agent conformance tests run the agents with.)

use crate::support::Bridge;

#[test]
fn without_a_daemon_it_names_the_configured_port_and_where_the_token_will_be() {
    let bridge = Bridge::new();
    let output = bridge
        .cmd()
        .env("COPILOT_BRIDGE_PORT", "9555")
        .args(["setup"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    let state = bridge.state.path().display().to_string();
    assert!(text.contains("No daemon is running"), "{text}");
    assert!(
        text.contains("export ANTHROPIC_BASE_URL=http://127.0.0.1:9555\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "export ANTHROPIC_AUTH_TOKEN=$(jq -r .token {state}/gateway.json)"
        )),
        "{text}"
    );
    assert!(text.contains("wire_api = \"responses\""), "{text}");
    assert!(
        text.contains("export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9555/v1"),
        "{text}"
    );
    assert!(text.contains("\"api\": \"openai-completions\""), "{text}");

    let output = bridge
        .cmd()
        .args(["setup", "--agent", "vim"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown agent \"vim\""));
}

#[tokio::test]
async fn with_a_daemon_it_names_the_models_the_backend_serves_and_how_to_map_others() {
    let mock = bridge_testkit::MockLlm::start(Vec::new()).await;
    let served = crate::agents::serve_with(&mock, bridge_testkit::TempWorkspace::new());
    let setup = |extra: &[&str]| {
        let mut command = served.cli();
        command.args(["setup", "--agent", "codex"]).args(extra);
        command
    };
    let output = setup(&[]).output().await.unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    // The backend's own model, not a name it may not serve.
    assert!(text.contains("model = \"mock-model\""), "{text}");
    assert!(
        text.contains("# Models it serves: mock-model (openai's own), gpt-4o-mini (openai)"),
        "{text}"
    );
    assert!(text.contains("[models.map]"), "{text}");
    assert!(
        text.contains("\"claude-*\" = \"openai/mock-model\""),
        "{text}"
    );
    assert!(!text.contains("No backend lists"), "{text}");

    let output = setup(&["--model", "llama-9"]).output().await.unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("model = \"llama-9\""), "{text}");
    assert!(
        text.contains(
            "# No backend lists \"llama-9\": requests for it get openai's \"mock-model\"."
        ),
        "{text}"
    );
}
