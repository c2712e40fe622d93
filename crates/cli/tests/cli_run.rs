//! `copilot-bridge run` end to end: the built binary against the mock LLM,
//! in a temporary git repository.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::Value;

use crate::support::Bridge;

/// A URL where nothing listens.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A git repository with a file to fix and a check that fails until it is.
fn repository() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("src/greeting.txt", "hello wrold\n");
    ws.write("check.sh", "grep -q 'hello world' src/greeting.txt\n");
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(status.success());
    ws
}

/// `config.toml` in the bridge's state directory.
pub(crate) fn configure(bridge: &Bridge, toml: &str) {
    std::fs::write(bridge.state.path().join("config.toml"), toml).unwrap();
}

/// `copilot-bridge run TASK --cwd WS` aimed at the mock as an OpenAI backend.
pub(crate) fn run_against(
    bridge: &Bridge,
    mock: &MockLlm,
    ws: &TempWorkspace,
    task: &str,
) -> assert_cmd::Command {
    let mut cmd = bridge.cmd();
    cmd.env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m")
        .args(["run", task, "--cwd"])
        .arg(ws.path())
        .timeout(Duration::from_secs(60));
    cmd
}

pub(crate) fn text(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The chat requests the mock received, in order.
pub(crate) fn chats(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .map(|r| r.body)
        .collect()
}

/// The tool messages of a chat request.
pub(crate) fn tool_messages(chat: &Value) -> Vec<String> {
    chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The one session log under the state directory; every line must parse.
fn session_log(bridge: &Bridge) -> (PathBuf, Vec<Value>) {
    let dir = bridge.state.path().join("sessions");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let content = std::fs::read_to_string(&files[0]).unwrap();
    let events = content
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect();
    (files[0].clone(), events)
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_reads_patches_and_tests_a_repository_then_answers() {
    let diff =
        "--- a/src/greeting.txt\n+++ b/src/greeting.txt\n@@ -1 +1 @@\n-hello wrold\n+hello world\n";
    let patch_args = serde_json::json!({"unifiedDiff": diff}).to_string();
    let (head, tail) = patch_args.split_at(patch_args.len() / 2);
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: Some("Let me look.".into()),
            calls: vec![MockToolCall {
                id: "call_read".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"pa".into(), "th\": \"src/greeting.txt\"}".into()],
            }],
        },
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall {
                id: "call_patch".into(),
                name: "apply_patch".into(),
                argument_chunks: vec![head.into(), tail.into()],
            }],
        },
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_test",
                "run_task",
                r#"{"name": "check"}"#,
            )],
        },
        MockReply::text("Fixed the typo in `src/greeting.txt`; the check passes."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    configure(&bridge, "[tools.tasks.check]\ncommand = \"sh check.sh\"\n");
    let output = run_against(&bridge, &mock, &ws, "fix the typo in the greeting")
        .arg("--writable")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(ws.read("src/greeting.txt"), "hello world\n");
    assert!(stdout.starts_with("Fixed the typo"), "{stdout}");
    for expected in [
        "## Tool calls",
        "| 1 | `read_file` |",
        "| 2 | `apply_patch` |",
        "| 3 | `run_task` |",
        "## Statistics",
        "- status: completed",
        "- turns: 4",
        "- tool calls: 3 (0 failed)",
        "in 4 requests",
    ] {
        assert!(stdout.contains(expected), "{expected:?} missing:\n{stdout}");
    }

    let chats = chats(&mock);
    assert_eq!(chats.len(), 4);
    let first = &chats[0];
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(
        first["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("fix the typo")
    );
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"apply_patch") && offered.contains(&"run_task"),
        "{offered:?}"
    );
    assert!(
        tool_messages(&chats[1])[0].contains("hello wrold"),
        "{:?}",
        tool_messages(&chats[1])
    );
    let test_result: Value = serde_json::from_str(&tool_messages(&chats[3])[2]).unwrap();
    assert_eq!(test_result["ok"], true, "{test_result}");
    assert_eq!(test_result["result"]["exitCode"], 0, "{test_result}");

    let (_, events) = session_log(&bridge);
    let kinds = kinds(&events);
    assert_eq!(kinds[0], "session.start");
    for expected in [
        "user.message",
        "assistant.turn_start",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
        "session.usage",
        "session.idle",
    ] {
        assert!(
            kinds.contains(&expected),
            "{expected} missing from {kinds:?}"
        );
    }
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "tool.execution_complete")
            .count(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_prints_numbered_steps_before_the_result() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("c1", "list_files", "{}")],
        },
        MockReply::text("Two files."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let output = run_against(&bridge, &mock, &ws, "list the files")
        .arg("--verbose")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let steps: Vec<&str> = stdout
        .lines()
        .take_while(|l| !l.starts_with("Two files"))
        .collect();
    assert!(
        steps[0].starts_with("1. turn 1: asking the model"),
        "{stdout}"
    );
    assert!(
        steps
            .iter()
            .any(|l| l.contains(". model → calls list_files")),
        "{stdout}"
    );
    assert!(
        steps.iter().any(|l| l.contains(". tool list_files {}")),
        "{stdout}"
    );
    assert!(
        steps.iter().any(|l| l.contains(". ✓ list_files (")),
        "{stdout}"
    );
    for (index, line) in steps.iter().enumerate() {
        assert!(
            line.starts_with(&format!("{}. ", index + 1)),
            "{line:?} in\n{stdout}"
        );
    }
    assert!(stdout.contains("Two files.\n"), "{stdout}");
    assert!(
        !stderr.contains("waiting for the model"),
        "no indicator without a terminal: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_is_reported_to_the_model_and_the_run_goes_on() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("c1", "shell", r#"{"command": "ls"}"#)],
        },
        MockReply::text("The shell is blocked here."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    configure(&bridge, "[permissions]\nblocked_tools = [\"shell\"]\n");
    let output = run_against(&bridge, &mock, &ws, "list files with ls")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let told = tool_messages(&chats(&mock)[1]);
    assert!(told[0].contains("policy_denied"), "{told:?}");
    assert!(stdout.contains("| 1 | `shell` |"), "{stdout}");
    assert!(stdout.contains("failed: policy_denied"), "{stdout}");
    let (_, events) = session_log(&bridge);
    assert!(
        events.iter().any(|e| e["type"] == "hook.end"
            && e["data"]["hook"] == "onPreToolUse"
            && e["data"]["decision"] == "deny"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_tool_without_an_approver_is_denied_and_the_model_is_told() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "c1",
                "read_file",
                r#"{"path": "check.sh"}"#,
            )],
        },
        MockReply::text("I was not allowed to read it."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    configure(&bridge, "[permissions]\nask_tools = [\"read_file\"]\n");
    let output = run_against(&bridge, &mock, &ws, "read check.sh")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let told = tool_messages(&chats(&mock)[1]);
    assert!(
        told[0].contains("approval required and not given"),
        "{told:?}"
    );
    assert!(
        !told[0].contains("grep -q"),
        "the file was not read: {told:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_with_retry_after_is_waited_out() {
    let mock = MockLlm::start(vec![
        MockReply::Error {
            status: 429,
            body: "Rate limit reached".into(),
            retry_after_secs: Some(1),
        },
        MockReply::text("Hello after the wait."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let started = Instant::now();
    let output = run_against(&bridge, &mock, &ws, "say hello")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.starts_with("Hello after the wait."), "{stdout}");
    assert_eq!(chats(&mock).len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After honoured"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_stream_ends_in_a_clear_error_and_a_readable_log() {
    let start = r#"data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]}"#;
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/event-stream".into(),
        body_chunks: vec![format!("{start}\n\n"), "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": tru\n\n".into()],
    }])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let output = run_against(&bridge, &mock, &ws, "read it")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stderr.contains("run failed: the model request failed"),
        "{stderr}"
    );
    assert!(stdout.contains("- status: failed"), "{stdout}");
    let (_, events) = session_log(&bridge);
    let error = events
        .iter()
        .find(|e| e["type"] == "session.error")
        .expect("session.error");
    assert_eq!(error["data"]["errorType"], "model");
    assert_eq!(events.last().unwrap()["type"], "session.idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_tool_call_arguments_are_reported_to_the_model() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"path\": ".into(), "\"check.sh".into()],
            }],
        },
        MockReply::text("Sorry, my call was broken."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let output = run_against(&bridge, &mock, &ws, "read check.sh")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let told = tool_messages(&chats(&mock)[1]);
    assert!(told[0].contains("not valid JSON"), "{told:?}");
    let (_, events) = session_log(&bridge);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "session.error" && e["data"]["errorType"] == "invalid_tool_call"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_backend_fails_fast_naming_the_settings() {
    let ws = repository();
    let bridge = Bridge::new();
    let started = Instant::now();
    let output = bridge
        .cmd()
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .args(["run", "do something", "--cwd"])
        .arg(ws.path())
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("COPILOT_BYOK_PROVIDER"), "{stderr}");
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    assert!(stderr.contains("copilot-bridge validate"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        !bridge.state.path().join("sessions").exists(),
        "no session was started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumes_after_a_crash_tore_its_last_line() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "c1",
                "read_file",
                r#"{"path": "check.sh"}"#,
            )],
        },
        MockReply::text("It greps the greeting."),
        MockReply::text("Yes, the check is still the same."),
    ])
    .await;
    let ws = repository();
    let bridge = Bridge::new();
    let output = run_against(&bridge, &mock, &ws, "what does check.sh do?")
        .output()
        .unwrap();
    assert!(output.status.success(), "{:?}", text(&output));
    let (path, events) = session_log(&bridge);
    let id = path.file_stem().unwrap().to_str().unwrap().to_owned();
    // A crash mid-write: the last line loses its end and its newline.
    let content = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &content[..content.len() - 10]).unwrap();
    assert!(events.len() > 5);

    let mut resume = bridge.cmd();
    resume
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m")
        .args(["sessions", "resume", &id, "is that still true?"])
        .timeout(Duration::from_secs(60));
    let output = resume.output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.starts_with("Yes, the check is still the same."),
        "{stdout}"
    );
    let chats = chats(&mock);
    let resumed = &chats[2]["messages"];
    let roles: Vec<&str> = resumed
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"],
        "{resumed:#}"
    );
    assert!(
        resumed[3]["content"].as_str().unwrap().contains("grep -q"),
        "{resumed:#}"
    );
    assert_eq!(resumed[4]["content"], "It greps the greeting.");
    assert!(
        resumed[5]["content"]
            .as_str()
            .unwrap()
            .starts_with("is that still true?")
    );
    let content = std::fs::read_to_string(&path).unwrap();
    for line in content.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|err| panic!("{err}: {line}"));
    }
    assert!(content.contains("\"session.resume\""));
}

mod integrations;
