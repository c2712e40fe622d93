//! `copilot_code`, `copilot_code_verbose` and `copilot_orchestrate` from the
//! official MCP Python SDK (tests/peers/python/mcp_probe.py), over stdio
//! (`copilot-bridge mcp code`) and streamable HTTP (`/mcp/code` of `serve`),
//! against the mock LLM, with progress notifications.

use std::path::Path;

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_mcp_code::{
    first_text, mock_env, probe, reading_task, stdio_mode, workspace, writable_bridge,
};
use crate::cli_serve::Served;
use crate::support::{Bridge, python};

fn progress_messages(result: &Value) -> Vec<String> {
    result["progress"]
        .as_array()
        .unwrap_or_else(|| panic!("no progress in {result}"))
        .iter()
        .filter_map(|p| p["message"].as_str().map(str::to_owned))
        .collect()
}

/// What the mock answers: two coding tasks that read a file, then a plan
/// of two read-only sub-tasks answered by their markers.
fn script(mock: &MockLlm) {
    reading_task(mock);
    reading_task(mock);
    mock.push(MockReply::text(
        json!({"tasks": [
            {"id": "t1", "description": "Read the greeting", "estimatedComplexity": "S", "files": [], "readOnly": true},
            {"id": "t2", "description": "Summarize t1", "estimatedComplexity": "S", "files": [], "readOnly": true}],
            "dependencies": {"t2": ["t1"]}})
        .to_string(),
    ));
    mock.route(
        "Your sub-task (t1)",
        MockReply::text("t1: the greeting is hello world"),
    );
    mock.route(
        "Your sub-task (t2)",
        MockReply::text("t2: it greets the world"),
    );
}

fn the_three_tools(
    python: &Path,
    mode: &[&str],
    env: &[(&str, String)],
    bridge: &Bridge,
    mock: &MockLlm,
) {
    script(mock);
    let results = probe(
        python,
        mode,
        env,
        bridge,
        json!([
            {"call": "copilot_code", "args": {"task": "What does the greeting say?"}},
            {"call": "copilot_code_verbose", "args": {"task": "What does the greeting say?"}, "progress": true},
            {"call": "copilot_orchestrate", "args": {"task": "Explain the greeting", "maxConcurrency": 2}, "progress": true},
            {"call": "copilot_orchestrate", "args": {"task": "x", "maxConcurrency": 0}},
            {"call": "copilot_code", "args": {"task": ""}}
        ]),
    );
    // copilot_code: the answer, the tool calls and the statistics.
    let code = first_text(&results[0]);
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(
        code.starts_with("The greeting says **hello world**."),
        "{code}"
    );
    assert!(
        code.contains("## Tool calls") && code.contains("`read_file`"),
        "{code}"
    );
    assert!(
        code.contains("## Statistics") && code.contains("- turns: 2"),
        "{code}"
    );
    // copilot_code_verbose: numbered steps first, a notification per tool call.
    let verbose = first_text(&results[1]);
    assert!(
        verbose.starts_with("## Steps\n\n1. turn 1: asking the model\n"),
        "{verbose}"
    );
    assert!(verbose.contains(". ✓ read_file ("), "{verbose}");
    assert!(
        verbose.contains("## Result\n\nThe greeting says **hello world**."),
        "{verbose}"
    );
    let notes = progress_messages(&results[1]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("✓ read_file"), "{notes:?}");
    // copilot_orchestrate: the report, the result as structured content,
    // each sub-task's start and end as progress.
    let report = first_text(&results[2]);
    assert_eq!(results[2]["isError"], false, "{}", results[2]);
    assert!(report.starts_with("## Orchestrated: completed"), "{report}");
    assert!(report.contains("t2: it greets the world"), "{report}");
    let structured = &results[2]["structuredContent"];
    assert_eq!(structured["status"], "completed");
    assert_eq!(structured["waves"], json!([["t1"], ["t2"]]));
    let notes = progress_messages(&results[2]);
    for expected in [
        "Running t1 (wave 1",
        "Finished t1 in",
        "Running t2 (wave 2",
        "Finished t2 in",
        "Done 2 of 2 sub-tasks completed",
    ] {
        assert!(
            notes.iter().any(|n| n.starts_with(expected)),
            "{expected}: {notes:?}"
        );
    }
    // t2 was given t1's result.
    let t2_request = mock
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Your sub-task (t2)"))
        .unwrap();
    assert!(
        t2_request
            .body
            .to_string()
            .contains("the greeting is hello world")
    );
    assert_eq!(results[3]["error"]["code"], -32602, "{}", results[3]);
    assert_eq!(results[4]["error"]["code"], -32602, "{}", results[4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_delegates_tasks_over_stdio() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let (bridge, ws) = (writable_bridge(), workspace());
    let mode = stdio_mode(&ws);
    let env = mock_env(&mock);
    tokio::task::spawn_blocking(move || {
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        the_three_tools(&python, &mode, &env, &bridge, &mock);
        // The orchestration's log is in the state directory.
        let sessions = std::fs::read_dir(bridge.state.path().join("sessions"))
            .unwrap()
            .count();
        assert!(sessions >= 3, "{sessions} session logs");
        drop(ws);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_delegates_tasks_over_streamable_http() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let env = mock_env(&mock);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = Served::start_in(writable_bridge(), workspace(), &env_refs);
    let url = served.url("/mcp/code");
    tokio::task::spawn_blocking(move || {
        let mode = ["http", url.as_str(), "--token", served.token.as_str()];
        the_three_tools(&python, &mode, &[], &Bridge::new(), &mock);
        let _: &TempWorkspace = &served.workspace;
    })
    .await
    .unwrap();
}
