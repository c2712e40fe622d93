//! Real Claude Code working through the hub, watched on the dashboard's
//! Sessions page in headless Chromium: its model requests through
//! `/v1/messages` (as `setup` tells a user) and its tool calls through
//! `hooks install`'s hook land in one transcript (its session id names
//! both), which streams the answer while the agent waits for it.

use bridge_testkit::browser::Browser;
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};
use serde_json::json;

use super::hooks::install_hooks;
use super::{agent_command, exports, run_agent, serve_with, setup};
use crate::cli_ui_browser::{logged_in_tab, screenshots};

const SESSION: &str = "7d3c9a51-2b64-4e0f-8c1d-5a6b7c8d9e0f";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_session_streams_on_the_sessions_page() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let arguments = json!({"command": "echo hi-from-bash", "description": "say hi"}).to_string();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("call_sh_1", "Bash", arguments)],
        },
        // Slow enough to be seen while it streams.
        MockReply::Slow {
            chunks: vec![
                "It printed ".into(),
                "hi-from-bash".into(),
                ", and that is all.".into(),
            ],
            delay_ms: 2_000,
        },
    ])
    .await;
    let served = serve_with(&mock, TempWorkspace::new());
    let run = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::start(run.path()).await.unwrap() else {
        return;
    };
    let mut tab = logged_in_tab(&browser, &served, "/ui/sessions", "Sessions").await;

    let agent_home = tempfile::tempdir().unwrap();
    let claude_dir = agent_home.path().join(".claude");
    install_hooks(
        "claude",
        agent_home.path(),
        served.state(),
        &[("CLAUDE_CONFIG_DIR", &claude_dir)],
    );
    let mut command = agent_command(&program, agent_home.path(), served.workspace.path());
    command
        .envs(exports(&setup(&served, "claude").await))
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Run the command", "--output-format", "json"])
        .args(["--session-id", SESSION, "--allowedTools", "Bash"]);
    let agent = tokio::spawn(run_agent(command, "claude"));

    // The session shows up in the list by itself, under its agent.
    let id = format!("claude-code-{SESSION}");
    let row = format!("document.querySelector('[data-session=\"{id}\"]')");
    tab.wait_until(&format!("{row} && {row}.innerText.includes('Claude Code')"))
        .await
        .unwrap();
    tab.navigate(&served.url(&format!("/ui/sessions/{id}")))
        .await
        .unwrap();
    // The prompt, the hook's decision on the agent's Bash call, what the
    // call gave the model, and the answer while it streams.
    let transcript = "(document.getElementById('transcript')?.innerText ?? '')";
    tab.wait_until(&format!("{transcript}.includes('Run the command')"))
        .await
        .unwrap();
    tab.wait_until(&format!(
        "{transcript}.includes('claude-code asked to run Bash') && {transcript}.includes('Decision: allowed')"
    ))
    .await
    .unwrap();
    tab.wait_until(
        "document.querySelector('.streaming-answer')?.innerText.includes('It printed') \
         && !document.querySelector('[data-type=\"assistant.message\"]')?.innerText.includes('and that is all')",
    )
    .await
    .unwrap();
    tab.eval("document.querySelector('.streaming-answer').scrollIntoView()")
        .await
        .unwrap();
    tab.screenshot(&screenshots().join("session-streaming.png"))
        .await
        .unwrap();
    tab.wait_until(&format!(
        "!document.querySelector('.streaming-answer') && {transcript}.includes('It printed hi-from-bash, and that is all.')"
    ))
    .await
    .unwrap();
    let shown = tab
        .eval("document.getElementById('transcript').innerText")
        .await
        .unwrap();
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains("Tool result sent to the model") && shown.contains("hi-from-bash"),
        "{shown}"
    );
    assert!(shown.contains("asks to run Bash"), "{shown}");
    tab.eval("window.scrollTo(0, document.body.scrollHeight)")
        .await
        .unwrap();
    tab.screenshot(&screenshots().join("session.png"))
        .await
        .unwrap();

    let (stdout, _) = agent.await.unwrap();
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        result["result"], "It printed hi-from-bash, and that is all.",
        "{result}"
    );
    // The list says which door it came by and that it answered.
    tab.navigate(&served.url("/ui/sessions")).await.unwrap();
    tab.wait_until(&format!("{row}?.innerText.includes('Claude Code')"))
        .await
        .unwrap();
    tab.screenshot(&screenshots().join("sessions.png"))
        .await
        .unwrap();
}
