//! Claude Code 2.1.328 (pinned in scripts/install-test-deps.sh), unmodified
//! and offline, with its own telemetry on and pointed at the hub exactly as
//! `copilot-bridge setup --agent claude` prints it (the header from its
//! `otelHeadersHelper`, never a literal token): it works through the
//! facade while its metrics and events reach the test's collector through
//! the hub, marked as forwarded, beside the hub's own `chat` spans of its
//! requests. And the same when `launch claude` starts it, which sets its
//! telemetry variables itself because the daemon exports.

use std::time::Duration;

use bridge_testkit::otlp::OtlpReceiver;
use bridge_testkit::{MockReply, agent_cli};

use super::{StopDaemon, agent_command, bridge_command, exports, run_agent, setup};
use crate::cli_serve::Served;

const EXPORTED: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_s_own_telemetry_reaches_the_collector_through_the_hub() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let (receiver, _mock, served) =
        crate::cli_telemetry::exporting_hub(vec![MockReply::text("Hello through the hub.")]).await;
    let printed = setup(&served, "claude").await;
    let exported = exports(&printed);
    let names: Vec<&str> = exported.iter().map(|(name, _)| name.as_str()).collect();
    for name in [
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_ENABLE_TELEMETRY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ] {
        assert!(names.contains(&name), "{name} in {printed}");
    }
    assert!(
        !exported
            .iter()
            .any(|(name, value)| name.starts_with("OTEL_") && value.contains(&served.token)),
        "no literal token in the telemetry lines: {printed}"
    );
    // The settings line setup prints, as the user pastes it.
    let setting = printed
        .lines()
        .find_map(|line| line.strip_prefix("#   {"))
        .map(|rest| format!("{{{rest}"))
        .unwrap_or_else(|| panic!("a settings line in {printed}"));
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join(".claude");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("settings.json"), &setting).unwrap();

    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command
        .envs(exported)
        .env("CLAUDE_CONFIG_DIR", &config_dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500")
        .env("OTEL_LOGS_EXPORT_INTERVAL", "500")
        .args(["-p", "Say hello", "--output-format", "json"]);
    let (stdout, _) = run_agent(command, "claude").await;
    assert!(stdout.contains("Hello through the hub."), "{stdout}");

    claude_code_s_telemetry_arrives(&receiver, &served).await;
    // And the hub's own span of its model request, beside them.
    the_hub_s_chat_span(&receiver).await;
}

/// Waits for Claude Code's own metrics and events at the collector, each
/// marked as forwarded by the hub.
async fn claude_code_s_telemetry_arrives(receiver: &OtlpReceiver, served: &Served) {
    let forwarded = |resource: &serde_json::Map<String, serde_json::Value>| {
        resource["service.name"] == "claude-code"
            && resource
                .get("copilot_bridge.forwarded_by")
                .and_then(|mark| mark.as_str())
                .is_some_and(|mark| mark.starts_with("copilot-bridge "))
    };
    let deadline = tokio::time::Instant::now() + EXPORTED;
    loop {
        let metrics = receiver.metrics();
        let logs = receiver.logs();
        let got_metrics = metrics
            .iter()
            .any(|(name, resource)| name.starts_with("claude_code.") && forwarded(resource));
        let got_events = logs.iter().any(|log| forwarded(&log.resource));
        if got_metrics && got_events {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Claude Code's telemetry through the hub: metrics {:?}, events {:?}\n{}",
            metrics.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            logs.iter().map(|log| &log.body).collect::<Vec<_>>(),
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The hub's own `chat` span of a model request, with its tokens.
async fn the_hub_s_chat_span(receiver: &OtlpReceiver) {
    let chat = receiver
        .wait_for_span(EXPORTED, |span| span.name.starts_with("chat "))
        .await
        .unwrap_or_else(|| panic!("the hub's chat span: {:?}", receiver.spans()));
    assert_eq!(chat.resource["service.name"], "copilot-bridge");
    assert!(
        chat.attributes["gen_ai.usage.input_tokens"]
            .as_i64()
            .unwrap()
            > 0,
        "{:?}",
        chat.attributes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_claude_sends_its_telemetry_through_the_hub_that_exports() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let (receiver, _mock, served) =
        crate::cli_telemetry::exporting_hub(vec![MockReply::text("Hello through the hub.")]).await;
    let _stop = StopDaemon(served.state());
    let home = tempfile::tempdir().unwrap();
    // Nothing of telemetry but how often Claude Code exports: launch sets
    // the rest, the header from the live token.
    let mut command = tokio::process::Command::from(bridge_command(home.path(), served.state()));
    command
        .current_dir(served.workspace.path())
        .kill_on_drop(true)
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500")
        .env("OTEL_LOGS_EXPORT_INTERVAL", "500")
        .args(["launch", "claude", "--via-hub", "--agent"])
        .arg(&program)
        .args(["--", "-p", "Say hello", "--output-format", "json"]);
    let (stdout, _) = run_agent(command, "launch claude").await;
    assert!(stdout.contains("Hello through the hub."), "{stdout}");
    claude_code_s_telemetry_arrives(&receiver, &served).await;
    the_hub_s_chat_span(&receiver).await;
}
