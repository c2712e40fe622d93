//! Codex 0.169.0 (pinned in scripts/install-test-deps.sh), unmodified and
//! offline, with its own telemetry — log events, traces, metrics — going
//! through the hub to the test's collector, marked as forwarded: configured
//! exactly as `copilot-bridge setup --agent codex` prints it (its
//! config.toml lines, and the shell function that gives it the header, run
//! by a real shell), and started by `launch codex`, which sets the same only
//! when the daemon exports. The commands Codex runs do not get the header.

use std::path::Path;
use std::time::Duration;

use bridge_testkit::otlp::OtlpReceiver;
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};
use serde_json::{Map, Value};

use super::{
    StopDaemon, agent_command, chat_requests, run_agent, serve_with, setup, tool_round_trip,
};
use crate::cli_serve::Served;
use crate::cli_telemetry::with_telemetry;

const EXPORTED: Duration = Duration::from_secs(30);

/// The model has Codex's shell print the header it got, then says "done".
async fn mock_asking_for_the_header() -> MockLlm {
    MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_env_1",
                "exec_command",
                // Not a login shell, and Codex's longest wait for output:
                // see codex.rs.
                r#"{"cmd":"echo \"header=[$OTEL_EXPORTER_OTLP_HEADERS]\"","login":false,"yield_time_ms":30000}"#,
            )],
        },
        MockReply::chunks(["done"]),
    ])
    .await
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Waits for Codex's log events, spans and metrics at the collector, each
/// marked as forwarded by the hub; and for the hub's own `chat` span of
/// Codex's model request, in Codex's trace (Codex sends `traceparent`
/// with its request, and the facade continues it), under a span of Codex's.
async fn codex_s_telemetry_arrives(receiver: &OtlpReceiver, served: &Served) {
    forwarded_signals(receiver, served).await;
    let deadline = tokio::time::Instant::now() + EXPORTED;
    loop {
        let spans = receiver.spans();
        let codex: Vec<_> = spans
            .iter()
            .filter(|span| span.resource["service.name"] == "codex_exec")
            .collect();
        let joined = spans.iter().any(|chat| {
            chat.name.starts_with("chat ")
                && chat.resource["service.name"] == "copilot-bridge"
                && codex.iter().any(|span| {
                    span.trace_id == chat.trace_id && span.span_id == chat.parent_span_id
                })
        });
        if joined {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hub's chat span in Codex's trace: {:?}\n{}",
            spans
                .iter()
                .filter(|span| span.name.starts_with("chat "))
                .map(|span| (&span.trace_id, &span.parent_span_id))
                .collect::<Vec<_>>(),
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Codex's log events, spans and metrics, each marked as forwarded.
async fn forwarded_signals(receiver: &OtlpReceiver, served: &Served) {
    let forwarded = |resource: &Map<String, Value>| {
        resource["service.name"]
            .as_str()
            .is_some_and(|name| name.starts_with("codex"))
            && resource
                .get("copilot_bridge.forwarded_by")
                .and_then(Value::as_str)
                .is_some_and(|mark| mark.starts_with("copilot-bridge "))
    };
    let deadline = tokio::time::Instant::now() + EXPORTED;
    loop {
        let logs = receiver.logs();
        let spans = receiver.spans();
        let metrics = receiver.metrics();
        let events = logs.iter().any(|log| {
            forwarded(&log.resource)
                && log
                    .attributes
                    .get("event.name")
                    .and_then(Value::as_str)
                    .is_some_and(|name| name.starts_with("codex."))
        });
        let traced = spans.iter().any(|span| forwarded(&span.resource));
        let measured = metrics
            .iter()
            .any(|(name, resource)| name.starts_with("codex.") && forwarded(resource));
        if events && traced && measured {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Codex's telemetry through the hub: events {events}, spans {traced}, metrics {measured}\n\
             logs: {:?}\nspans: {:?}\nmetrics: {:?}\n{}",
            logs.iter()
                .map(|log| (&log.attributes, &log.resource))
                .take(5)
                .collect::<Vec<_>>(),
            spans
                .iter()
                .map(|span| &span.name)
                .take(20)
                .collect::<Vec<_>>(),
            metrics
                .iter()
                .map(|(name, _)| name)
                .take(20)
                .collect::<Vec<_>>(),
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_configured_by_setup_sends_its_telemetry_through_the_hub() {
    let Some(program) = agent_cli("codex", "codex") else {
        return;
    };
    let receiver = OtlpReceiver::start().await;
    let mock = mock_asking_for_the_header().await;
    let endpoint = receiver.endpoint();
    let served =
        super::serve_with_env(&mock, TempWorkspace::new(), &with_telemetry(&endpoint, &[]));
    let printed = setup(&served, "codex").await;
    let (config, shell) = printed
        .split_once("# and in the shell")
        .expect("setup prints the config block, then the shell part");
    assert!(config.contains("[otel]"), "{printed}");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    // A shell runs the lines as a user pastes them, then `codex` as the
    // user types it: the function setup printed.
    let script = format!(
        "{shell}\ncodex exec --skip-git-repo-check --sandbox danger-full-access 'What header?'\n"
    );
    let mut command = agent_command(Path::new("sh"), home.path(), served.workspace.path());
    command
        .env("PATH", path_with(program.parent().unwrap()))
        .env("CODEX_HOME", home.path())
        .args(["-c", &script]);
    let (stdout, stderr) = run_agent(command, "codex").await;
    assert_eq!(stdout.trim(), "done", "{stderr}");

    // Its command ran without the header Codex itself got.
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer: {stderr}");
    let (_, output) = tool_round_trip(&requests[1], "Codex");
    let output = output["content"].to_string();
    assert!(output.contains("header=[]"), "{output}");
    assert!(!output.contains(&served.token), "{output}");

    codex_s_telemetry_arrives(&receiver, &served).await;
}

/// `launch codex --via-hub` with `served`'s state directory, through a
/// wrapper that records each start of Codex (its arguments, its OTEL_
/// variables) in `record` and runs the real one: the wrapper's stdout.
async fn launch_codex(served: &Served, program: &Path, record: &Path) -> String {
    let dir = record.parent().unwrap();
    let wrapper = dir.join("codex");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n\
             {{ echo start; for arg in \"$@\"; do echo \"arg $arg\"; done; env | grep '^OTEL_' | sed 's/^/env /'; }} >> '{}'\n\
             exec '{}' \"$@\"\n",
            record.display(),
            program.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        super::AGENT_PATIENCE,
        served
            .cli()
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .args([
                "launch",
                "codex",
                "--via-hub",
                "--model",
                "mock-model",
                "--agent",
            ])
            .arg(&wrapper)
            .args([
                "--",
                "exec",
                "--skip-git-repo-check",
                "--sandbox",
                "danger-full-access",
                "Say hello",
            ])
            .output(),
    )
    .await
    .expect("launch ends")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "launch: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The lines the wrapper recorded for the start that ran the turn (not
/// the app-server launch asks to trust its hooks).
fn the_run(record: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(record).unwrap();
    text.split("start\n")
        .find(|start| start.lines().any(|line| line == "arg exec"))
        .unwrap_or_else(|| panic!("a start of `codex exec` in {text}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_codex_sends_its_telemetry_through_the_hub_only_when_it_exports() {
    let Some(program) = agent_cli("codex", "codex") else {
        return;
    };
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![
        MockReply::text("Hello through the hub."),
        MockReply::text("Hello again."),
    ])
    .await;
    let endpoint = receiver.endpoint();
    let served =
        super::serve_with_env(&mock, TempWorkspace::new(), &with_telemetry(&endpoint, &[]));
    let _stop = StopDaemon(served.state());
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("starts.txt");
    let stdout = launch_codex(&served, &program, &record).await;
    assert_eq!(stdout.trim(), "Hello through the hub.");
    let run = the_run(&record);
    let logs = format!(
        "arg otel.exporter={{ otlp-http = {{ endpoint = \"{}\", protocol = \"binary\" }} }}",
        served.url("/v1/logs")
    );
    assert!(run.contains(&logs), "{run:#?}");
    assert!(
        run.contains(
            &"arg shell_environment_policy.set.OTEL_EXPORTER_OTLP_HEADERS=\"\"".to_owned()
        ),
        "{run:#?}"
    );
    // The token only in Codex's environment, never in its arguments.
    assert!(
        run.contains(&format!(
            "env OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer {}",
            served.token
        )),
        "{run:#?}"
    );
    assert!(
        !run.iter()
            .any(|line| line.starts_with("arg ") && line.contains(&served.token)),
        "{run:#?}"
    );
    codex_s_telemetry_arrives(&receiver, &served).await;

    // A daemon that exports nothing: nothing of telemetry.
    let quiet = serve_with(&mock, TempWorkspace::new());
    let _stop = StopDaemon(quiet.state());
    let record = dir.path().join("quiet.txt");
    let stdout = launch_codex(&quiet, &program, &record).await;
    assert_eq!(stdout.trim(), "Hello again.");
    let run = the_run(&record);
    assert!(
        !run.iter()
            .any(|line| line.contains("otel.") || line.starts_with("env OTEL_")),
        "{run:#?}"
    );
}
