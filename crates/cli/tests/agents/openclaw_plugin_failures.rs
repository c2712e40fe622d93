//! The OpenClaw plugin under the pinned Node 24 (see openclaw_plugin.rs for
//! the harness) when things go wrong: the signal aborted while the daemon
//! works, while the call is being answered, while the daemon starts; no
//! daemon and no program to start one; a stale token; and a daemon the
//! plugin starts itself.

use std::path::Path;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};

use super::openclaw_plugin::{
    Harness, assert_no_token, node, only_call, returned, run_harness, session_events, text_of,
    updates, writable_daemon,
};
use super::{StopDaemon, chat_requests};
use crate::cli_serve::{PATIENCE, Served, pid_alive, read_gateway_json, wait_until};

/// What the cancellation tests' daemon is asked: a task whose model reply
/// is slow (two chunks, [`SLOW_MS`] each), and one that answers at once.
const SLOW_TASK: &str = "SLOW: think about it for a long time";
const NEXT_TASK: &str = "NEXT: say you are free";
const SLOW_MS: u64 = 10_000;
/// How soon the next task is done when the slow one was stopped (about
/// 0.3 s here). A task the daemon was not told to stop holds the line
/// until its slow reply ends, or for the 5 s rmcp gives a closed MCP
/// session's running requests.
const NEXT_TASK_WITHIN: Duration = Duration::from_secs(3);

async fn slow_mock() -> MockLlm {
    let mock = MockLlm::start(Vec::new()).await;
    mock.route(
        SLOW_TASK,
        MockReply::Slow {
            chunks: vec!["too ".into(), "late".into()],
            delay_ms: SLOW_MS,
        },
    );
    mock.route(NEXT_TASK, MockReply::text("I am free."));
    mock
}

/// What the abort cases start from: a daemon whose model answers slowly,
/// the OpenClaw agent's own workspace, and a private HOME.
struct SlowTask {
    mock: MockLlm,
    served: Served,
    agent: TempWorkspace,
    home: tempfile::TempDir,
}

impl SlowTask {
    async fn start() -> Self {
        let mock = slow_mock().await;
        let served = writable_daemon(&mock);
        Self {
            mock,
            served,
            agent: TempWorkspace::new(),
            home: tempfile::tempdir().unwrap(),
        }
    }
}

/// The call of `report` came back promptly as cancelled.
fn assert_cancelled_result(report: &Value, tool: &str, workspace: &Path) {
    let call = only_call(report);
    let after_abort = call["returnedAfterAbortMs"].as_u64().unwrap();
    assert!(
        after_abort < 2_000,
        "execute returned {after_abort} ms after the abort: {call}"
    );
    let result = &call["result"];
    let text = text_of(result);
    assert!(
        text.starts_with(&format!(
            "{tool}: the task was cancelled before it finished."
        )),
        "{text}"
    );
    assert_eq!(result["details"]["status"], "cancelled", "{result}");
    assert_eq!(result["details"]["tool"], tool);
    assert_eq!(
        result["details"]["workingDir"],
        workspace.display().to_string()
    );
}

/// The daemon stopped the slow task: its one line of tasks is free for the
/// next at once (a running task would hold it for the whole slow reply),
/// and when the task had asked the model, the daemon hung up on it and
/// logged the task cancelled. An abort that comes early may stop the task
/// before it asked anything.
async fn assert_daemon_cancelled(node: &Path, served: &Served, mock: &MockLlm, agent: &Path) {
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let report = run_harness(
        node,
        &json!({
            "pluginConfig": {"home": served.state()},
            "ctx": {"workspaceDir": agent},
            "calls": [{"tool": "copilot_code", "params": {"task": NEXT_TASK}}]
        }),
        home.path(),
        &[],
    )
    .await;
    let result = &only_call(&report)["result"];
    assert!(text_of(result).starts_with("I am free."), "{result}");
    assert_eq!(result["details"]["status"], "completed");
    assert!(
        started.elapsed() < NEXT_TASK_WITHIN,
        "the next task waited for the slow one: {:?}",
        started.elapsed()
    );
    assert_no_token(&report, &served.token);

    tokio::time::timeout(Duration::from_secs(3), mock.chat_bodies_closed())
        .await
        .expect("the daemon hung up on the model");
    let asked = chat_requests(mock)
        .iter()
        .any(|request| request.body.to_string().contains(SLOW_TASK));
    if !asked {
        return;
    }
    let cancelled = |events: &[Value]| {
        events
            .iter()
            .any(|e| e["type"] == "session.error" && e["data"]["errorType"] == "cancelled")
            && events
                .iter()
                .any(|e| e["type"] == "session.idle" && e["data"]["status"] == "cancelled")
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        let events = session_events(served.state());
        if cancelled(&events) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no cancelled task in the session logs: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_the_signal_cancels_the_daemons_task_promptly() {
    let Some(node) = node() else { return };
    let SlowTask {
        mock,
        served,
        agent,
        home,
    } = SlowTask::start().await;
    let started = Instant::now();
    let mut harness = Harness::start(
        &node,
        &json!({
            "pluginConfig": {"home": served.state()},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_code_verbose", "params": {"task": SLOW_TASK}, "abort": {"onStdin": true}}]
        }),
        home.path(),
        home.path(),
        &[],
    )
    .await;
    harness.running().await;
    // The daemon's task waits on the model's slow reply.
    let deadline = Instant::now() + PATIENCE;
    while mock.open_chat_bodies() == 0 {
        assert!(
            Instant::now() < deadline,
            "the task never reached the model: {}",
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    harness.abort().await;
    let report = harness.report().await;
    assert_cancelled_result(&report, "copilot_code_verbose", agent.path());
    assert_no_token(&report, &served.token);
    assert_daemon_cancelled(&node, &served, &mock, agent.path()).await;
    eprintln!("cancelled and ran the next task: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_while_the_call_is_answered_still_cancels_the_daemons_task() {
    let Some(node) = node() else { return };
    let SlowTask {
        mock,
        served,
        agent,
        home,
    } = SlowTask::start().await;
    let started = Instant::now();
    // The daemon has taken the call; the abort comes before the plugin
    // has read the answer's headers.
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": served.state()},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_code", "params": {"task": SLOW_TASK}, "abort": {"onResponseTo": "tools/call"}}]
        }),
        home.path(),
        &[],
    )
    .await;
    assert_cancelled_result(&report, "copilot_code", agent.path());
    assert_daemon_cancelled(&node, &served, &mock, agent.path()).await;
    eprintln!(
        "cancelled early and ran the next task: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_while_the_daemon_starts_returns_at_once() {
    let Some(node) = node() else { return };
    // A `binary` whose `daemon start` takes its time.
    let bin = tempfile::tempdir().unwrap();
    let binary = bin.path().join("slow-copilot-bridge");
    std::fs::write(&binary, "#!/bin/sh\nexec sleep 3\n").unwrap();
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = TempWorkspace::new();
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": bridge_home.path(), "binary": binary},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_code", "params": {"task": "anything"}, "abort": {"afterMs": 300}}]
        }),
        home.path(),
        &[],
    )
    .await;
    assert_cancelled_result(&report, "copilot_code", agent.path());
    let after_abort = only_call(&report)["returnedAfterAbortMs"].as_u64().unwrap();
    assert!(after_abort < 1_000, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_daemon_and_no_binary_is_a_failed_result_not_an_exception() {
    let Some(node) = node() else { return };
    let home = tempfile::tempdir().unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    let agent = TempWorkspace::new();
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": bridge_home.path(), "binary": "/nonexistent/copilot-bridge"},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [
                {"tool": "copilot_code", "params": {"task": "anything"}},
                {"tool": "copilot_orchestrate", "params": {"task": "anything"}}
            ]
        }),
        home.path(),
        &[],
    )
    .await;
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for (call, tool) in calls.iter().zip(["copilot_code", "copilot_orchestrate"]) {
        let result = &returned(call)["result"];
        let text = text_of(result);
        assert!(text.starts_with(&format!("{tool}: ")), "{text}");
        assert!(
            text.contains("is not running and could not be started"),
            "{text}"
        );
        assert!(
            text.contains("/nonexistent/copilot-bridge was not found"),
            "{text}"
        );
        assert_eq!(result["details"]["status"], "failed", "{result}");
        assert!(updates(call).is_empty(), "{call}");
    }
    assert!(!bridge_home.path().join("gateway.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_a_clear_http_401_result_without_the_token() {
    const WRONG: &str = "btk-wrong-token-0123456789abcdef";
    let Some(node) = node() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let served = writable_daemon(&mock);
    // The daemon's gateway.json with another token (a stale copy).
    let stale = tempfile::tempdir().unwrap();
    let mut file = served.file.clone();
    file["token"] = json!(WRONG);
    std::fs::write(stale.path().join("gateway.json"), file.to_string()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = TempWorkspace::new();
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": stale.path(), "binary": "/nonexistent/copilot-bridge"},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_code_verbose", "params": {"task": "anything"}}]
        }),
        home.path(),
        &[],
    )
    .await;
    let call = only_call(&report);
    let result = &call["result"];
    let text = text_of(result);
    assert!(
        text.starts_with("copilot_code_verbose: copilot-bridge's daemon refused the plugin's credentials (HTTP 401)"),
        "{text}"
    );
    assert!(text.contains("gateway.json may be stale"), "{text}");
    assert_eq!(result["details"]["status"], "failed", "{result}");
    assert!(updates(call).is_empty(), "{call}");
    assert_no_token(&report, WRONG);
    assert_no_token(&report, &served.token);
    assert!(chat_requests(&mock).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_daemon_the_plugin_starts_one_and_the_task_runs() {
    const TASK: &str = "AUTOSTART: create started.txt";
    let Some(node) = node() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    mock.route(
        TASK,
        MockReply::tool_call(
            "call_w_1",
            "create_file",
            &json!({"path": "started.txt", "content": "the plugin started me\n"}),
        ),
    );
    mock.route(TASK, MockReply::text("I created started.txt."));
    let bridge_home = tempfile::tempdir().unwrap();
    let stop = StopDaemon(bridge_home.path());
    let home = tempfile::tempdir().unwrap();
    let agent = TempWorkspace::new();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let base_url = format!("{}/v1", mock.base_url());
    // OpenClaw's environment, which the daemon it starts inherits.
    let env = [
        ("COPILOT_BRIDGE_NO_GH", "1"),
        ("OLLAMA_HOST", dead_url.as_str()),
        ("COPILOT_BYOK_PROVIDER", "openai"),
        ("COPILOT_BYOK_BASE_URL", base_url.as_str()),
        ("COPILOT_BYOK_API_KEY", "sk-upstream"),
        ("COPILOT_BYOK_MODEL", "mock-model"),
        ("COPILOT_BRIDGE_READ_ONLY", "false"),
    ];
    let binary = assert_cmd::cargo::cargo_bin("copilot-bridge");
    let started = Instant::now();
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": bridge_home.path(), "binary": binary},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_code", "params": {"task": TASK}}]
        }),
        home.path(),
        &env,
    )
    .await;
    eprintln!(
        "daemon start and a task through the plugin: {:?}",
        started.elapsed()
    );
    let gateway =
        read_gateway_json(bridge_home.path()).expect("the plugin started the daemon of its home");
    let pid = u32::try_from(gateway["pid"].as_u64().unwrap()).unwrap();
    assert!(pid_alive(pid));
    let call = only_call(&report);
    let result = &call["result"];
    let text = text_of(result);
    assert!(text.starts_with("I created started.txt."), "{text}");
    assert!(text.contains("`create_file`"), "{text}");
    assert_eq!(result["details"]["status"], "completed", "{result}");
    assert!(
        updates(call).is_empty(),
        "copilot_code streams no steps: {call}"
    );
    assert_eq!(
        std::fs::read_to_string(agent.path().join("started.txt")).unwrap(),
        "the plugin started me\n"
    );
    assert!(!home.path().join("started.txt").exists());
    assert_eq!(mock.routed_remaining(), 0);
    assert_no_token(&report, gateway["token"].as_str().unwrap());
    drop(stop);
    wait_until("the started daemon stopped", || !pid_alive(pid));
}
